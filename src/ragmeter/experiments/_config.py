"""Experiment files: one baseline and variants that each change one thing, in TOML.

::

    name = "fare rules: smaller chunks or a reranker?"
    golden = "golden.jsonl"          # paths are relative to this file
    corpus = "corpus.jsonl"
    output = "runs"                  # one folder per variant is written here
    k = 4                            # passages the generator receives (the prompt k) ...
    budget = 1200                    # ... and/or its context budget in tokens
    headroom_k = 50                  # recall at a large k: reranking headroom, not quality
    metrics = ["R", "Hit", "RR", "nDCG"]
    headline = "R@budget=1200"       # the one metric comparisons are read on (headline_of)
    cover = 0.5                      # share of a span a chunk must hold to count as finding it
    # optional: cache = ".ragmeter-cache", run_format = "trec" | "parquet", tokenizer = "..."

    [baseline]
    chunker = "tokens:300:0"
    retriever = "bm25"
    depth = 100

    [[variant]]
    name = "smaller chunks, same budget"
    chunker = "tokens:100:0"
    k = 12

    [[variant]]
    name = "reranker"
    reranker = { kind = "bi-encoder", model = "e5", top = 50 }

A BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/SPLIT.tsv``) may replace ``golden`` and
``corpus``: ``beir = "path/to/scifact"`` (and ``beir_split = "test"``, the default), read with
:func:`ragmeter.data.load_beir`. ``level = "document"`` scores every metric on documents: each
variant's chunk ranking is rolled up (a document at its best chunk's rank,
:func:`ragmeter.labels.rollup_run`) and judged on document qrels derived from the spans, so
figures compare with trec_eval's on BEIR qrels. The default, ``level = "span"``, scores span
metrics on the span labels and nDCG, P and AP on chunk qrels.

A variant lists only what it changes: ``chunker``, ``chunks`` (a chunk file), ``retriever``,
``reranker``, ``run`` (an imported JSONL run, see :mod:`ragmeter.retrieval.byo`), ``depth``,
``k`` or ``budget``; a retriever may be the user's own pipeline, asked in place (``{kind =
"python" | "langchain" | "llamaindex", target = "mypkg.rag:..."}``, see
:mod:`ragmeter.retrieval.pipelines`; it needs no chunker and takes no reranker); everything
else is the baseline's. ragmeter warns when a variant changes more than one thing and when
variants differ in context budget (``budget``, or ``k x chunk size`` for size-named chunkers;
within 10% of the baseline's counts as equal): one change per run, the same context-token
budget. What counts as one change is decided by
:func:`ragmeter.paired.changes` on :func:`settings_config` mappings, the same rule ``compare``,
``gate`` and the ledger apply to evaluation configs: changing the chunk size together with k so
that the budget stays within 10% is one change (the chunking, at an equal budget).

Validation: the shape of each table (keys, types, ranges, chunker and metric names, retriever
and reranker specs) is checked by the pydantic models of :mod:`._schema`; the rules that join
tables (inheritance from the baseline, required settings, depth against ``headroom_k`` and k,
unique variant names and variant folders) are checked here, and where the file may write
(:mod:`._paths`: ``output`` and ``cache`` stay inside the experiment's folder unless allowed;
reads may point anywhere). Every problem of a file is reported at once, in file
order, each with its line (:mod:`._toml_lines`) and dotted field (``variant[2].retriever.k1``).
"""

from __future__ import annotations

import re
import tomllib
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import InputError, Problem, RagmeterWarning, ValidationError
from ..metrics import Metric, parse
from ..paired import changes as _logical_changes
from ..paired import chunk_size as _chunk_size
from ..paired import context_budget, same_budget
from ..retrieval import describe, is_pipeline, spec_dict
from ._generation_settings import (
    DEFAULT_CONTEXT,
    RETRIEVED,
    generation_updates,
    source_rules,
    top_generation,
    with_generation_defaults,
)
from ._judge import JudgeSettings, read_judge
from ._paths import check_folders, check_writes
from ._sources import read_level, read_source
from ._toml_lines import Keys, key_lines, line_of

if TYPE_CHECKING:
    from ._schema import SettingsTable

SETTING_KEYS = (
    "chunker",
    "chunks",
    "retriever",
    "reranker",
    "run",
    "depth",
    "k",
    "budget",
    "generator",
    "prompt",
    "context",
)
DEFAULT_METRICS = ("R", "Hit", "RR", "nDCG")
DEFAULT_DEPTH = 100


@dataclass(frozen=True)
class Settings:
    """What one variant runs. ``retriever``/``reranker`` are normalised specs (dicts)."""

    chunker: str | None = None
    chunks: Path | None = None
    retriever: dict[str, Any] | None = None
    reranker: dict[str, Any] | None = None
    run: Path | None = None
    depth: int = DEFAULT_DEPTH
    k: int | None = None
    budget: int | None = None
    #: the generator table (kind, backend options, temperature, seed, max_tokens), None when the
    #: experiment retrieves only; ``prompt`` and ``context`` are set whenever it is
    generator: dict[str, Any] | None = None
    prompt: str | None = None
    context: dict[str, Any] | None = None

    @property
    def generates(self) -> bool:
        """True when this variant generates answers (a ``[generator]`` is set)."""
        return self.generator is not None

    def context_spec(self) -> Any:
        """The :class:`~ragmeter.generation._assemble.ContextSpec` of the prompt: the prompt k
        when set, else the token budget (the cut ``ragmeter diagnose`` and the answers checks
        apply), with the file's order, duplicate removal and headers."""
        from ..generation import ContextSpec

        ctx = {**DEFAULT_CONTEXT, **(self.context or {})}
        return ContextSpec(
            k=self.k,
            budget=None if self.k is not None else self.budget,
            order=ctx["order"],
            dedupe=ctx["dedupe"],
            headers=ctx["headers"],
            source=self.source,
        )

    @property
    def source(self) -> str:
        """The context source: "retrieved", or an ablation ("oracle", "none",
        "oracle+distractors") compared with the retrieved baseline."""
        return str((self.context or {}).get("source", RETRIEVED))

    @property
    def nominal_budget(self) -> int | None:
        """The context budget in tokens: ``budget``, else ``k x size`` for a size-named chunker."""
        if self.budget is not None:
            return self.budget
        size = chunk_size(self.chunker)
        return None if size is None or self.k is None else self.k * size

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (paths as strings); what goes into each variant's config.json."""
        return {
            "chunker": self.chunker,
            "chunks": None if self.chunks is None else str(self.chunks),
            "retriever": self.retriever,
            "reranker": self.reranker,
            "run": None if self.run is None else str(self.run),
            "depth": self.depth,
            "k": self.k,
            "budget": self.budget,
            # generation keys only when generating: a retrieval-only config keeps its shape, so
            # it never differs from a stored one by three null keys
            **(
                {"generator": self.generator, "prompt": self.prompt, "context": self.context}
                if self.generator is not None
                else {}
            ),
        }

    def generation_label(self) -> str | None:
        """``python mypkg.rag:answer, answer-v1, sandwich`` (None when not generating)."""
        if self.generator is None:
            return None
        g = self.generator
        what = g.get("model") or g.get("gguf") or g.get("target") or ""
        order = (self.context or DEFAULT_CONTEXT).get("order", "rank")
        source = "" if self.source == RETRIEVED else f", {self.source} context"
        return f"{g.get('kind')} {what}".strip() + f", {self.prompt}, {order}{source}"

    def label(self) -> str:
        """``bm25 > e5@50`` or ``imported run.jsonl``: the retrieval pipeline in a few words."""
        if self.run is not None:
            return f"imported {self.run.name}"
        text = describe(self.retriever)
        return text + (f" > {describe(self.reranker)}" if self.reranker else "")


@dataclass(frozen=True)
class Variant:
    """A named setting; ``changes`` lists the fields that differ from the baseline."""

    name: str
    settings: Settings
    changes: tuple[str, ...] = ()
    description: str = ""
    is_baseline: bool = False


@dataclass(frozen=True)
class Experiment:
    """A validated experiment file with every path resolved against its folder."""

    path: Path
    name: str
    golden: Path
    corpus: Path
    output: Path
    metrics: tuple[Metric, ...]
    headroom_k: int
    cover: float
    run_format: str
    baseline: Variant
    variants: tuple[Variant, ...]
    cache: Path | None = None
    tokenizer: str | None = None
    description: str = ""
    warnings: tuple[str, ...] = field(default=())
    #: "span" or "document" (see ``_sources.LEVELS``)
    level: str = "span"
    #: the BEIR folder the golden set and corpus are read from (None: golden and corpus files)
    beir: Path | None = None
    beir_split: str = "test"
    #: the experiment-wide judge of the generated answers (``[judge]``, :mod:`._judge`)
    judge: JudgeSettings | None = None
    #: answers per question (the top-level [generator]'s ``repeat``; 1: answered once)
    repeat: int = 1
    #: the one metric comparisons are read on (``headline = ...``, else :func:`headline_of`'s
    #: default), at the baseline's prompt k or budget; None only for an Experiment built by hand
    headline: Metric | None = None

    @property
    def repeats(self) -> int:
        """How many times every variant's answers are made and checked: the generator's or
        the judge's ``repeat`` (when both are over 1 they are equal); repeat 0 is the run's
        headline, the others measure how much its verdicts move."""
        return max(self.repeat, 1 if self.judge is None else self.judge.repeat)

    @property
    def all_variants(self) -> tuple[Variant, ...]:
        """The baseline first, then the variants in file order."""
        return (self.baseline, *self.variants)

    def prompt_metrics(self, settings: Settings) -> tuple[Metric, ...]:
        """The metrics at this variant's prompt k and/or budget (explicit cutoffs kept)."""
        return prompt_metrics(self.metrics, settings, self.level)

    @property
    def headline_metric(self) -> Metric | None:
        """The headline: the declared or default one (:func:`headline_of`); None only for an
        Experiment built by hand whose baseline computes no metric at its cutoffs."""
        if self.headline is not None:
            return self.headline
        found = headline_of(None, self.metrics, self.baseline.settings, self.level)
        return found if isinstance(found, Metric) else None

    def is_headline(self, metric: Metric | str | None) -> bool:
        """True when ``metric`` is this experiment's headline."""
        head = self.headline_metric
        return metric is not None and head is not None and parse(metric) == head

    def headroom_metric(self) -> Metric:
        return Metric("R", self.headroom_k)


def prompt_metrics(
    metrics: tuple[Metric, ...], settings: Settings, level: str
) -> tuple[Metric, ...]:
    """``metrics`` at the prompt k and/or budget of ``settings`` (explicit cutoffs kept)."""
    out: list[Metric] = []
    for m in metrics:
        if m.k is not None or m.budget is not None:
            out.append(m)
            continue
        if settings.k is not None:
            out.append(m.at(settings.k))
        if settings.budget is not None and "span" in m.info.levels and level != "document":
            out.append(m.at(budget=settings.budget))
    return tuple(dict.fromkeys(out))


def headline_of(
    declared: Metric | None, metrics: tuple[Metric, ...], baseline: Settings, level: str
) -> Metric | str:
    """The experiment's headline metric, or why ``declared`` cannot be it (a message).

    ``declared`` with a cutoff (``AllR@budget=1200``) must be one of the baseline's prompt
    metrics; without one (``AllR``) it must be one of ``metrics`` and is read at the baseline's
    token budget when the metric is scored there, else at its prompt k: the budget is the
    cutoff variants of different chunk sizes share (100-token chunks at k = 12 against
    300-token ones at k = 4), so a budget headline compares every variant. Undeclared: AllR
    (every labelled span of the question reached the prompt: the answer's evidence is all there)
    when the experiment computes it on span labels, else its first metric, at that cutoff."""
    computed = prompt_metrics(metrics, baseline, level)
    choices = ", ".join(str(m) for m in computed) or "(none: set k or budget)"
    if declared is None:
        bare = [m for m in metrics if m.k is None and m.budget is None]
        allr = [m for m in bare if m.name == "AllR"]
        if allr and level != "document":
            declared = allr[0]
        elif bare:
            declared = bare[0]
        elif computed:
            return computed[0]
        else:
            return f"the experiment computes no metric at the baseline's cutoffs: {choices}"
    if declared.k is not None or declared.budget is not None:
        if declared in computed:
            return declared
    elif declared in metrics:
        at = [declared.at(budget=baseline.budget)] if baseline.budget is not None else []
        at += [declared.at(baseline.k)] if baseline.k is not None else []
        for m in at:
            if m in computed:
                return m
    return (
        f"the headline must be a metric the experiment computes at the baseline's prompt k or "
        f"budget; {declared} is not one of them. Choose one of: {choices}"
    )


def chunk_size(chunker: str | None) -> int | None:
    """The token size in a chunker name (``tokens:300:50`` -> 300), None when it has none."""
    return _chunk_size(chunker)


def settings_config(s: Settings) -> dict[str, Any]:
    """A variant's settings as the config mapping runs carry (``{"settings": {...}}``, as in
    each variant's config.json), so the one change rule of :func:`ragmeter.paired.changes`
    applies to experiment variants exactly as it does to evaluation configs."""
    return {"settings": s.to_dict()}


def load_experiment(
    path: str | Path, *, warn: bool = True, allow_outside: bool = False
) -> Experiment:
    """Read and validate an experiment file; every problem is reported at once with its field.

    ``output`` and ``cache`` must stay inside the file's folder unless ``allow_outside=True``
    (an experiment file from elsewhere must not make ragmeter write anywhere it likes).
    Emits a :class:`RagmeterWarning` per variant that changes more than one thing or changes
    the context budget (also kept in ``Experiment.warnings``) unless ``warn=False``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("experiment file not found", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start + 1})", path=path) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        raise InputError(
            f"not valid TOML: {exc}", path=path, line=int(m.group(1)) if m else None
        ) from None
    exp = _build(path, text, data, allow_outside)
    if warn:
        for msg in exp.warnings:
            warnings.warn(f"{path}: {msg}", RagmeterWarning, stacklevel=2)
    return exp


class _Checker:
    """Collects problems with file, line and field; each key path is placed by a scan of the
    source text (:mod:`._toml_lines`), falling back to its table's header line."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = str(path)
        self.lines = key_lines(text)
        self.problems: list[Problem] = []

    def report(self, keys: Keys, message: str) -> None:
        """A problem at a key path of the parsed file, e.g. ``("variant", 1, "k")``."""
        self.problems.append(Problem(message, self.path, line_of(self.lines, keys), _field(keys)))

    def add(self, message: str, field: str) -> None:
        """A problem at a field name: ``k``, ``baseline.k``, ``variant[2].depth``."""
        self.problems.append(Problem(message, self.path, self.line(field), field))

    def line(self, field: str) -> int | None:
        """The line of a field name (as :meth:`add` places it)."""
        return line_of(self.lines, _keys(field))


def _keys(field: str) -> Keys:
    """``variant[2].depth`` -> ``("variant", 1, "depth")``; ``baseline.k`` -> its two keys."""
    m = re.fullmatch(r"variant\[(\d+)\](?:\.(.+))?", field)
    if m is None:
        return tuple(field.split("."))
    return ("variant", int(m.group(1)) - 1, *(m.group(2).split(".") if m.group(2) else ()))


def _field(keys: Keys) -> str:
    """``("variant", 1, "retriever", "of", 0)`` -> ``variant[2].retriever.of[0]``: variants
    count from 1 as everywhere in messages; a metric's field is ``metrics`` (the message names
    the metric)."""
    if keys[:1] == ("metrics",):
        return "metrics"
    out = ""
    for i, k in enumerate(keys):
        if isinstance(k, int):
            out += f"[{k + 1 if i == 1 and keys[0] == 'variant' else k}]"
        else:
            out += f".{k}" if out else k
    return out


def _build(path: Path, text: str, data: dict[str, Any], allow_outside: bool) -> Experiment:
    from ._schema import validate  # pydantic loads here, not at `import ragmeter`

    base = path.parent
    ck = _Checker(path, text)
    f, valid, broken = validate(data, ck.report)
    source = read_source(f, set(data), base, ck)  # golden + corpus, or a BEIR folder
    metrics = tuple(f.metrics or (parse(m) for m in DEFAULT_METRICS))
    level = read_level(f.level, metrics, ck)
    written: dict[str, str | None] = {k: getattr(f, k) for k in ("output", "cache") if k in data}
    check_writes(written, base, ck, allow_outside=allow_outside)
    if "baseline" not in data:
        ck.add("a [baseline] table is required (chunker, retriever, depth, ...)", "baseline")
    top = top_generation(Settings(k=f.k, budget=f.budget), f, data, ck)
    raw_base = data.get("baseline")
    baseline_settings = _settings(  # the baseline's own rules only when it is a table
        f.baseline,
        valid.get("baseline", {}),
        "baseline",
        top,
        base,
        ck,
        given=set(raw_base) if isinstance(raw_base, dict) else None,
        context_given={"k", "budget"} & set(data),
    )
    name = f.baseline.name if f.baseline is not None and f.baseline.name else "baseline"
    baseline = Variant(
        name,
        baseline_settings,
        is_baseline=True,
        description=(f.baseline.description or "") if f.baseline else "",
    )

    variants: list[Variant] = []
    checked = [("baseline", baseline_settings)]
    names = {baseline.name}
    folders = [("baseline.name", baseline.name)]  # (field, name): one output folder each
    for i, table in enumerate(f.variant, start=1):
        where = f"variant[{i}]"
        if i - 1 in broken:  # not a table: reported by the schema
            continue
        vname = table.name
        if vname is None:
            if "name" not in data["variant"][i - 1]:
                ck.add("every variant needs a name", f"{where}.name")
            vname = f"variant-{i}"
        elif vname in names:
            ck.add(
                f"variant name '{vname}' is used twice; names label runs and folders",
                f"{where}.name",
            )
        names.add(vname)
        folders.append((f"{where}.name", vname))
        settings = _settings(table, valid["variant"][i - 1], where, baseline_settings, base, ck)
        variants.append(
            Variant(
                vname,
                settings,
                _changes(baseline_settings, settings),
                description=table.description or "",
            )
        )
        checked.append((where, settings))

    check_folders(folders, ck)
    source_rules(data, checked, document=level == "document" or source.beir is not None, ck=ck)
    judge = read_judge(f.judge, base, ck)
    if judge is not None and baseline_settings.generator is None:
        ck.add(
            "the judge scores generated answers: add a [generator] table (or remove [judge])",
            "judge",
        )
    repeat = 1 if f.generator is None or f.generator.repeat is None else f.generator.repeat
    if judge is not None and judge.repeat > 1 and repeat > 1 and judge.repeat != repeat:
        ck.add(
            f"the judge's repeat ({judge.repeat}) and the generator's ({repeat}) differ: give "
            "both the same number (each answer judged once per repeat), or set one of them",
            "judge.repeat",
        )
    headline = headline_of(f.headline, metrics, baseline_settings, level)
    if isinstance(headline, str):
        ck.add(headline, "headline")
    for where, s in checked:
        if s.depth < f.headroom_k:
            ck.add(
                f"depth {s.depth} is below headroom_k {f.headroom_k}: retrieve at least as "
                "deep as the headroom recall looks",
                f"{where}.depth",
            )
        if s.k is not None and s.depth < s.k:
            ck.add(f"depth {s.depth} is below the prompt k {s.k}", f"{where}.depth")
        k_reported = any(p.field in ("k", "baseline.k", f"{where}.k") for p in ck.problems)
        if (
            any(
                m.k is None
                and m.budget is None
                and ("span" not in m.info.levels or level == "document")
                for m in metrics
            )
            and s.k is None
            and not k_reported
        ):
            ck.add(
                'k is required: at level = "document" every metric is scored at the prompt k'
                if level == "document"
                else "k is required: metrics such as nDCG are scored at the prompt k",
                f"{where}.k",
            )
    if ck.problems:  # in file order; problems without a line (a key not written) last
        ck.problems.sort(key=lambda p: (p.line is None, p.line or 0))
        raise ValidationError(ck.problems, what=f"experiment {path}")

    return Experiment(
        path=path,
        name=f.name or path.stem,
        golden=source.golden,
        corpus=source.corpus,
        output=base / f.output,
        metrics=metrics,
        headroom_k=f.headroom_k,
        cover=float(f.cover),
        run_format=f.run_format,
        baseline=baseline,
        variants=tuple(variants),
        cache=None if f.cache is None else base / f.cache,
        tokenizer=f.tokenizer,
        description=f.description or "",
        warnings=tuple(_warnings(baseline, variants)),
        level=level,
        beir=source.beir,
        beir_split=source.beir_split,
        judge=judge,
        repeat=repeat,
        headline=headline if isinstance(headline, Metric) else None,
    )


def _settings(
    table: SettingsTable | None,
    raw: dict[str, Any],
    where: str,
    inherit: Settings,
    base: Path,
    ck: _Checker,
    *,
    given: set[str] | None = None,
    context_given: set[str] | None = None,
) -> Settings:
    """``inherit`` updated by the keys ``table`` sets. A key that failed validation is not set,
    so the inherited value stands and one mistake in the baseline is not reported again for
    every variant. ``given`` (the baseline's written keys) turns on the baseline's rules."""
    updates: dict[str, Any] = {}
    fields = set() if table is None else table.model_fields_set  # keys set with valid values
    if "chunker" in fields:
        updates.update(chunker=raw["chunker"], chunks=None)
    if "chunks" in fields:
        updates.update(chunks=base / raw["chunks"], chunker=None)
    if "retriever" in fields:
        updates.update(retriever=spec_dict(raw["retriever"]), run=None)
        if is_pipeline(updates["retriever"]) and "reranker" not in fields:
            updates["reranker"] = None  # the user's pipeline replaces the whole retrieval
    if "reranker" in fields:
        updates["reranker"] = spec_dict(raw["reranker"], reranker=True)
    if "run" in fields:
        updates.update(run=base / raw["run"], retriever=None, reranker=None)
    updates.update((key, raw[key]) for key in ("depth", "k", "budget") if key in fields)
    updates.update(generation_updates(inherit, raw, fields, where, ck))
    # the generator table is checked where it is written: here, or at the top level (once)
    own = "generator" in fields or (given is not None and inherit.generator is not None)
    table_at = where if "generator" in fields else ""
    s = with_generation_defaults(
        replace(inherit, **updates),
        where,
        ck,
        check=table_at if own else None,
        # the baseline's context written at the top level is reported there
        context_at="" if given is not None and not {"context", "order"} & given else None,
    )
    if given is not None:  # the baseline: what every variant inherits must be there
        if (
            s.chunker is None
            and s.chunks is None
            and s.run is None
            and not is_pipeline(s.retriever)
            and not {"chunker", "chunks"} & given
        ):
            ck.add(
                'set a chunker (e.g. "tokens:300:0"), a chunk file (chunks = ...) or an '
                "imported run (run = ...)",
                f"{where}.chunker",
            )
        if s.retriever is None and s.run is None and "retriever" not in given:
            ck.add(
                'set a retriever ("bm25", "dense", "e5", "hybrid", a table, or your own '
                'pipeline: {kind = "python", target = "mypkg.rag:retrieve"}) or an imported '
                "run (run = ...)",
                f"{where}.retriever",
            )
        if s.k is None and s.budget is None and not context_given and not {"k", "budget"} & given:
            ck.add(
                "set the prompt k and/or the token budget (top level or in [baseline])",
                f"{where}.k",
            )
    _pipeline_rules(s, inherit, where, ck, baseline=given is not None)
    return s


def _pipeline_rules(
    s: Settings, inherit: Settings, where: str, ck: _Checker, *, baseline: bool
) -> None:
    """The user's own pipeline replaces the whole retrieval: it takes no reranker, and a
    variant of a pipeline baseline that goes back to one of ragmeter's retrievers needs a
    chunking of its own (a baseline whose chunker was wrong is reported once, at the baseline)."""
    if is_pipeline(s.retriever) and s.reranker is not None:
        ck.add(
            "a reranker applies to ragmeter's own retrievers, not to your pipeline (rerank "
            "inside it, or compare the pipeline with a variant that has the reranker)",
            f"{where}.reranker",
        )
    built_in = s.retriever is not None and not is_pipeline(s.retriever)
    unchunked = s.chunker is None and s.chunks is None
    if not baseline and built_in and s.run is None and unchunked and is_pipeline(inherit.retriever):
        ck.add(
            f"retriever {describe(s.retriever)} needs a chunking: set chunker or chunks (the "
            "baseline's pipeline chunks for itself)",
            f"{where}.chunker",
        )


def _changes(base: Settings, s: Settings) -> tuple[str, ...]:
    """The raw fields that differ (a listing, not a count: see :func:`effective_changes`)."""
    return tuple(k for k in SETTING_KEYS if getattr(base, k) != getattr(s, k))


def effective_changes(base: Settings, s: Settings) -> tuple[str, ...]:
    """The logical changes from ``base`` to ``s`` by the one rule of
    :func:`ragmeter.paired.changes` (``chunking``, ``retriever``, ``reranker``, ``run``, ``k``,
    ``budget``, ``depth``): e.g. a re-chunking with k scaled to keep the budget within 10% is
    the one change ``chunking``."""
    return tuple(c.name for c in _logical_changes(settings_config(base), settings_config(s)))


def _warnings(baseline: Variant, variants: list[Variant]) -> list[str]:
    out: list[str] = []
    b = baseline.settings
    for v in variants:
        eff = effective_changes(b, v.settings)
        if not eff:
            out.append(f"variant '{v.name}' changes nothing relative to the baseline")
        elif len(eff) > 1:
            out.append(
                f"variant '{v.name}' changes {len(eff)} things ({', '.join(eff)}): a "
                "difference cannot be credited to one of them; change one thing per run"
            )
        nb, nv = context_budget(settings_config(b)), context_budget(settings_config(v.settings))
        context = {"chunker", "chunks", "k", "budget", "run"} & set(v.changes)
        if nb is not None and nv is not None:
            if not same_budget(nb, nv):
                out.append(
                    f"variant '{v.name}' has a context budget of {nv} tokens against "
                    f"the baseline's {nb} (more than 10% apart): compare variants at "
                    "the same budget"
                )
        elif context:
            out.append(
                f"variant '{v.name}' may differ from the baseline in context budget "
                f"({', '.join(sorted(context))} changed and the chunk size is not in "
                "the chunker name): set budget = N to compare at equal context"
            )
    return out
