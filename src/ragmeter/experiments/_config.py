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
``k`` or ``budget``; everything else is the baseline's. ragmeter warns when a variant changes
more than one thing and when variants differ in context budget (``budget``, or ``k x chunk
size`` for size-named chunkers; within 10% of the baseline's counts as equal): one change per
run, the same context-token budget. What counts as one change is decided by
:func:`ragmeter.paired.changes` on :func:`settings_config` mappings, the same rule ``compare``,
``gate`` and the ledger apply to evaluation configs: changing the chunk size together with k so
that the budget stays within 10% is one change (the chunking, at an equal budget).
"""

from __future__ import annotations

import re
import tomllib
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._errors import InputError, Problem, RagmeterError, RagmeterWarning, ValidationError
from ..metrics import Metric, parse
from ..paired._changes import changes as _logical_changes
from ..paired._changes import chunk_size as _chunk_size
from ..paired._changes import context_budget, same_budget
from ._sources import read_level, read_source
from ..retrieval._specs import describe, normalize_reranker, normalize_retriever

TOP_KEYS = {"name", "golden", "corpus", "output", "k", "budget", "headroom_k", "metrics", "cover",
            "cache", "run_format", "tokenizer", "baseline", "variant", "description", "level",
            "beir", "beir_split"}
SETTING_KEYS = ("chunker", "chunks", "retriever", "reranker", "run", "depth", "k", "budget")
VARIANT_KEYS = {"name", "description", *SETTING_KEYS}
RUN_FORMATS = ("trec", "parquet")
DEFAULT_METRICS = ("R", "Hit", "RR", "nDCG")
DEFAULT_DEPTH = 100
DEFAULT_HEADROOM = 50


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

    @property
    def nominal_budget(self) -> int | None:
        """The context budget in tokens: ``budget``, else ``k x size`` for a size-named chunker."""
        if self.budget is not None:
            return self.budget
        size = chunk_size(self.chunker)
        return None if size is None or self.k is None else self.k * size

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (paths as strings); what goes into each variant's config.json."""
        return {"chunker": self.chunker, "chunks": None if self.chunks is None else str(self.chunks),
                "retriever": self.retriever, "reranker": self.reranker,
                "run": None if self.run is None else str(self.run), "depth": self.depth,
                "k": self.k, "budget": self.budget}

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

    @property
    def all_variants(self) -> tuple[Variant, ...]:
        """The baseline first, then the variants in file order."""
        return (self.baseline, *self.variants)

    def prompt_metrics(self, settings: Settings) -> tuple[Metric, ...]:
        """The metrics at this variant's prompt k and/or budget (explicit cutoffs kept)."""
        out: list[Metric] = []
        for m in self.metrics:
            if m.k is not None or m.budget is not None:
                out.append(m)
                continue
            if settings.k is not None:
                out.append(m.at(settings.k))
            if settings.budget is not None and "span" in m.info.levels \
                    and self.level != "document":
                out.append(m.at(budget=settings.budget))
        return tuple(dict.fromkeys(out))

    def headroom_metric(self) -> Metric:
        return Metric("R", self.headroom_k)


def chunk_size(chunker: str | None) -> int | None:
    """The token size in a chunker name (``tokens:300:50`` -> 300), None when it has none."""
    return _chunk_size(chunker)


def settings_config(s: Settings) -> dict[str, Any]:
    """A variant's settings as the config mapping runs carry (``{"settings": {...}}``, as in
    each variant's config.json), so the one change rule of :func:`ragmeter.paired.changes`
    applies to experiment variants exactly as it does to evaluation configs."""
    return {"settings": s.to_dict()}


def load_experiment(path: str | Path, *, warn: bool = True) -> Experiment:
    """Read and validate an experiment file; every problem is reported at once with its field.

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
        raise InputError(f"not valid TOML: {exc}", path=path,
                         line=int(m.group(1)) if m else None) from None
    exp = _build(path, text, data)
    if warn:
        for msg in exp.warnings:
            warnings.warn(f"{path}: {msg}", RagmeterWarning, stacklevel=2)
    return exp


class _Checker:
    """Collects problems with file, best-effort line and field."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = str(path)
        self.lines = text.splitlines()
        self.problems: list[Problem] = []

    def line_of(self, field: str) -> int | None:
        """The line of ``field`` (``k``, ``baseline.k``, ``variant[1].retriever.kind``)."""
        m = re.match(r"^(?:(baseline)|variant\[(\d+)\])\.(\w+)", field)
        table, index, key = (None, None, field.split(".")[0]) if m is None else (
            m.group(1), m.group(2), m.group(3))
        start, seen = 0, -1
        if table == "baseline":
            start = next((i for i, ln in enumerate(self.lines) if ln.strip() == "[baseline]"), -1)
        elif index is not None:
            for i, ln in enumerate(self.lines):
                if ln.strip() == "[[variant]]":
                    seen += 1
                    if seen == int(index) - 1:
                        start = i
                        break
            else:
                return None
        if start < 0:
            return None
        in_table = table is None and index is None
        for i in range(start + (0 if in_table else 1), len(self.lines)):
            ln = self.lines[i].strip()
            if ln.startswith("[") and (in_table or i > start):
                break
            if re.match(rf"^{re.escape(key)}\s*=", ln):
                return i + 1
        return None

    def add(self, message: str, field: str) -> None:
        self.problems.append(Problem(message, self.path, self.line_of(field), field))

    def extend(self, problems: list[Problem]) -> None:
        for p in problems:
            self.problems.append(Problem(p.message, self.path,
                                         self.line_of(p.field) if p.field else None, p.field))


def _build(path: Path, text: str, data: dict[str, Any]) -> Experiment:
    base = path.parent
    ck = _Checker(path, text)
    for key in data:
        if key not in TOP_KEYS:
            ck.add(f"unknown key '{key}'; keys: {', '.join(sorted(TOP_KEYS))}", key)

    source = read_source(data, base, ck)  # golden + corpus, or a BEIR folder
    output = data.get("output", "runs")
    for key in ("output", "cache", "tokenizer", "name", "description"):
        if key in data and not isinstance(data[key], str):
            ck.add(f"'{key}' must be a string", key)
    metrics = _metrics(data.get("metrics", list(DEFAULT_METRICS)), ck)
    level = read_level(data, metrics, ck)
    headroom_k = _positive_int(data.get("headroom_k", DEFAULT_HEADROOM), "headroom_k", ck)
    cover = data.get("cover", 0.5)
    if isinstance(cover, bool) or not isinstance(cover, (int, float)) or not 0 < cover <= 1:
        ck.add(f"'cover' must be a number in (0, 1], got {cover!r}", "cover")
        cover = 0.5
    run_format = data.get("run_format", "trec")
    if run_format not in RUN_FORMATS:
        ck.add(f"'run_format' must be one of {', '.join(RUN_FORMATS)}, got {run_format!r}",
               "run_format")

    base_table = data.get("baseline")
    if not isinstance(base_table, dict):
        ck.add("a [baseline] table is required (chunker, retriever, depth, ...)", "baseline")
        base_table = {}
    top = Settings()
    for key in ("k", "budget"):
        if key in data:
            val = _positive_int(data[key], key, ck)
            if val is not None:
                top = replace(top, k=val) if key == "k" else replace(top, budget=val)
    baseline_settings = _settings(base_table, "baseline", top, base, ck, is_baseline=True,
                                  context_given="k" in data or "budget" in data)
    baseline = Variant(str(base_table.get("name", "baseline")), baseline_settings,
                       description=str(base_table.get("description", "")), is_baseline=True)

    raw_variants = data.get("variant", [])
    if not isinstance(raw_variants, list):
        ck.add("variants are [[variant]] tables", "variant")
        raw_variants = []
    variants: list[Variant] = []
    names = {baseline.name}
    for i, table in enumerate(raw_variants, start=1):
        where = f"variant[{i}]"
        if not isinstance(table, dict):
            ck.add("each [[variant]] must be a table", where)
            continue
        name = table.get("name")
        if not isinstance(name, str) or not name.strip():
            ck.add("every variant needs a name", f"{where}.name")
            name = f"variant-{i}"
        elif name in names:
            ck.add(f"variant name '{name}' is used twice; names label runs and folders",
                   f"{where}.name")
        names.add(name)
        settings = _settings(table, where, baseline_settings, base, ck)
        variants.append(Variant(name, settings, _changes(baseline_settings, settings),
                                description=str(table.get("description", ""))))

    all_settings = [baseline_settings, *(v.settings for v in variants)]
    for i, s in enumerate(all_settings):
        where = "baseline" if i == 0 else f"variant[{i}]"
        if headroom_k is not None and s.depth < headroom_k:
            ck.add(f"depth {s.depth} is below headroom_k {headroom_k}: retrieve at least as "
                   "deep as the headroom recall looks", f"{where}.depth")
        if s.k is not None and s.depth < s.k:
            ck.add(f"depth {s.depth} is below the prompt k {s.k}", f"{where}.depth")
        k_reported = any(p.field in ("k", "baseline.k", f"{where}.k") for p in ck.problems)
        if any(m.k is None and m.budget is None and ("span" not in m.info.levels
                                                     or level == "document") for m in metrics) \
                and s.k is None and not k_reported:
            ck.add("k is required: at level = \"document\" every metric is scored at the prompt k"
                   if level == "document" else
                   "k is required: metrics such as nDCG are scored at the prompt k", f"{where}.k")
    if ck.problems:
        raise ValidationError(ck.problems, what=f"experiment {path}")

    return Experiment(
        path=path, name=str(data.get("name", path.stem)), golden=source.golden,
        corpus=source.corpus, output=base / str(output), metrics=metrics,
        headroom_k=int(headroom_k or DEFAULT_HEADROOM), cover=float(cover),
        run_format=str(run_format), baseline=baseline, variants=tuple(variants),
        cache=None if "cache" not in data else base / str(data["cache"]),
        tokenizer=data.get("tokenizer"), description=str(data.get("description", "")),
        warnings=tuple(_warnings(baseline, variants)), level=level, beir=source.beir,
        beir_split=source.beir_split,
    )


def _metrics(value: Any, ck: _Checker) -> tuple[Metric, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        ck.add("'metrics' must be a list of metric names, e.g. [\"R\", \"RR\", \"nDCG\"]", "metrics")
        return ()
    out: list[Metric] = []
    for item in value:
        try:
            out.append(parse(str(item)))
        except RagmeterError as exc:  # the grammar's own message names the valid choices
            ck.add(f"metric {item!r}: {exc}", "metrics")
    return tuple(out)


def _positive_int(value: Any, field: str, ck: _Checker) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        ck.add(f"'{field.rsplit('.', 1)[-1]}' must be a positive integer, got {value!r}", field)
        return None
    return value


def _settings(table: dict[str, Any], where: str, inherit: Settings, base: Path, ck: _Checker,
              *, is_baseline: bool = False, context_given: bool = False) -> Settings:
    for key in table:
        if key not in VARIANT_KEYS:
            ck.add(f"unknown key '{key}'; a variant may set: {', '.join(SETTING_KEYS)}",
                   f"{where}.{key}")
    updates: dict[str, Any] = {}
    if "chunker" in table:
        if not isinstance(table["chunker"], str):
            ck.add("'chunker' must be a chunker name such as \"tokens:300:0\"", f"{where}.chunker")
        else:
            updates["chunker"] = table["chunker"]
            updates["chunks"] = None
    if "chunks" in table:
        if not isinstance(table["chunks"], str):
            ck.add("'chunks' must be the path of a chunk file (.parquet or .jsonl)", f"{where}.chunks")
        else:
            updates["chunks"] = base / table["chunks"]
            updates["chunker"] = None
    if "retriever" in table:
        problems: list[Problem] = []
        spec = normalize_retriever(table["retriever"], f"{where}.retriever", problems)
        ck.extend(problems)
        if spec is not None:
            updates["retriever"] = spec
            updates["run"] = None
    if "reranker" in table:
        problems = []
        spec = normalize_reranker(table["reranker"], f"{where}.reranker", problems)
        ck.extend(problems)
        if not problems:
            updates["reranker"] = spec
    if "run" in table:
        if not isinstance(table["run"], str):
            ck.add("'run' must be the path of a JSONL run to import", f"{where}.run")
        else:
            updates["run"] = base / table["run"]
            updates["retriever"] = None
            updates["reranker"] = None
    for key in ("depth", "k", "budget"):
        if key in table:
            val = _positive_int(table[key], f"{where}.{key}", ck)
            if val is not None:
                updates[key] = val
    # invalid fields were reported above and keep the inherited value, so one mistake in the
    # baseline is not reported again for every variant
    s = replace(inherit, **updates)
    if is_baseline:
        if s.chunker is None and s.chunks is None and s.run is None and "chunker" not in table \
                and "chunks" not in table:
            ck.add("set a chunker (e.g. \"tokens:300:0\"), a chunk file (chunks = ...) or an "
                   "imported run (run = ...)", f"{where}.chunker")
        if s.retriever is None and s.run is None and "retriever" not in table:
            ck.add("set a retriever (\"bm25\", \"dense\", \"e5\", \"hybrid\" or a table) or an "
                   "imported run (run = ...)", f"{where}.retriever")
        if s.k is None and s.budget is None and not context_given \
                and not {"k", "budget"} & set(table):
            ck.add("set the prompt k and/or the token budget (top level or in [baseline])",
                   f"{where}.k")
    return s


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
            out.append(f"variant '{v.name}' changes {len(eff)} things ({', '.join(eff)}): a "
                       "difference cannot be credited to one of them; change one thing per run")
        nb, nv = context_budget(settings_config(b)), context_budget(settings_config(v.settings))
        context = {"chunker", "chunks", "k", "budget", "run"} & set(v.changes)
        if nb is not None and nv is not None:
            if not same_budget(nb, nv):
                out.append(f"variant '{v.name}' has a context budget of {nv} tokens against "
                           f"the baseline's {nb} (more than 10% apart): compare variants at "
                           "the same budget")
        elif context:
            out.append(f"variant '{v.name}' may differ from the baseline in context budget "
                       f"({', '.join(sorted(context))} changed and the chunk size is not in "
                       "the chunker name): set budget = N to compare at equal context")
    return out
