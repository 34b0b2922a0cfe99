"""Run an experiment file: chunk, index, retrieve and score every variant, with caching.

For each variant (baseline first) :func:`run_experiment`

1. chunks the corpus (cached by corpus fingerprint, chunker name and tokenizer);
2. builds the retriever (and reranker), fits it on the chunk texts and searches every golden
   question to ``depth`` (BM25 indexes, embeddings and the finished run are cached by content);
   or reads the imported run of a ``run = ...`` variant;
3. scores the run on the span labels (:func:`ragmeter.labels.evaluate_spans`: R, Hit, RR, AllR at
   the prompt k and/or budget, plus recall at ``headroom_k``) and, for chunk-level metrics such as
   nDCG, on chunk qrels derived from the spans (:func:`ragmeter.labels.chunk_qrels` + the engine);
   with ``level = "document"`` every metric is scored instead on documents: the chunk ranking
   rolled up to documents (:func:`ragmeter.labels.rollup_run`) against document qrels
   (:func:`ragmeter.labels.document_qrels`);
4. writes ``OUTPUT/<variant>/run.trec`` (or ``run.parquet``), ``config.json`` (resolved
   settings, golden-set version, timings, cache hits) and ``evaluation.json`` (per query), plus
   the rolled-up ``document_run.trec`` at document level.

Re-running an unchanged experiment reads everything from the cache: no chunking, no index, no
encoder call; only scoring runs again.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._errors import InputError, UsageError
from ..data import golden_version_of
from ..io import Run
from ..metrics import Evaluation, Metric
from ..retrieval import (
    Cache,
    EncoderPool,
    ProgressSink,
    build_reranked,
    build_retriever,
    describe,
    digest,
    is_pipeline,
    progress_for,
    texts_digest,
)
from ._config import (
    Experiment,
    Settings,
    Variant,
    effective_changes,
    load_experiment,
    settings_config,
)
from ._outputs import ranked_rows, read_cached_run, slug, write_cached_run, write_json, write_run
from ._provenance import versions as _versions

if TYPE_CHECKING:
    import pyarrow as pa

#: the key of the measured mean context tokens in an evaluation's config
#: (:data:`ragmeter.paired._changes.MEASURED_CONTEXT`)
MEASURED_CONTEXT = "context_tokens"


@dataclass(frozen=True)
class VariantResult:
    """One variant's run, its span-level and chunk-level evaluations, and how it was made."""

    name: str
    label: str
    settings: Settings
    changes: tuple[str, ...]
    run: Run
    #: span-level metrics at the prompt k / budget, plus R@headroom_k; at level = "document"
    #: every metric on documents (the run rolled up to documents).
    evaluation: Evaluation
    #: chunk-level metrics (nDCG, P, AP) on chunk qrels; None when none were asked or the run
    #: is an imported spans run (no chunking of the whole corpus to judge against).
    chunk_evaluation: Evaluation | None
    #: the chunking's name, tokenizer, chunk count and token sizes (``Chunking.stats()``).
    chunking: dict[str, Any]
    #: mean tokens of the context the generator would receive (top k, or the budget's fill).
    context_tokens: float
    timings: dict[str, float]
    cached: dict[str, bool]
    run_path: Path | None = None
    notes: tuple[str, ...] = ()
    is_baseline: bool = False
    #: the experiment's level ("span" or "document"): which ranking the metrics were scored on.
    level: str = "span"
    #: the Chunking the run's items are chunks of (for an imported spans run, one chunk per
    #: returned span); not serialised: ``ranked_table`` reads each chunk's document and span
    #: from it. None when unknown (a result built by hand).
    chunks: Any = field(default=None, repr=False, compare=False)
    #: the generated answers and their checks (:class:`._generate.VariantAnswers`) when the
    #: experiment has a ``[generator]``, else None
    answers: Any = field(default=None, repr=False, compare=False)
    #: the user's own pipeline (retriever kind python/langchain/llamaindex): each question it
    #: raised an error on (:class:`ragmeter.retrieval.pipelines.QuestionError`); None otherwise
    pipeline_errors: tuple[Any, ...] | None = field(default=None, compare=False)
    #: what makes this variant an unfair test against the baseline once it ran: the "changing
    #: k" trap (:func:`ragmeter.paired.context_trap` on the measured context tokens)
    warnings: tuple[str, ...] = ()

    def ranked_table(self, level: Literal["chunk", "document"] | None = None) -> pa.Table:
        """The ranked lists as a ``pyarrow.Table``: ``qid`` (string), ``rank`` (int32, from 1,
        ranked exactly as the metric engine ranks them), ``item`` (string), ``doc`` (string),
        ``start``/``end`` (int64, null when unknown), ``score`` (float64); queries in byte order
        of their ids, each best first. Built column-wise: 10M rows take seconds.

        ``level`` defaults to the ranking the metrics were scored on: at ``level = "document"``
        the run rolled up to documents (``item`` = ``doc`` = the document id, ``start``/``end``
        null), otherwise the chunk ranking (``item`` = the chunk id, ``doc``/``start``/``end``
        the chunk's document and character span). ``"chunk"`` asks for the chunk ranking of a
        document-level variant.
        """
        from ._ranked import ranked_table

        if level is None:
            level = "document" if self.level == "document" else "chunk"
        if level not in ("chunk", "document"):
            raise UsageError(f"level must be 'chunk' or 'document', got {level!r}")
        if level == "document" and self.chunks is None:
            raise UsageError(
                f"variant '{self.name}' has no chunking to roll its chunk run up to documents"
            )
        return ranked_table(self.run, self.chunks, documents=level == "document")

    def value(self, metric: Metric | str) -> float:
        """Mean of ``metric`` from whichever evaluation holds it."""
        for ev in (self.evaluation, self.chunk_evaluation):
            if ev is not None and str(metric) in ev.aggregate:
                return ev.mean(metric)
        raise UsageError(f"variant '{self.name}' has no metric {metric}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "baseline": self.is_baseline,
            "changes": list(self.changes),
            "settings": self.settings.to_dict(),
            "metrics": {
                **self.evaluation.aggregate,
                **(self.chunk_evaluation.aggregate if self.chunk_evaluation else {}),
            },
            "context_tokens": self.context_tokens,
            "chunking": self.chunking,
            "timings": self.timings,
            "cached": self.cached,
            "run_path": None if self.run_path is None else str(self.run_path),
            "notes": list(self.notes),
            "warnings": list(self.warnings),
            **(
                {"pipeline_errors": [e.to_dict() for e in self.pipeline_errors]}
                if self.pipeline_errors is not None
                else {}
            ),
            **({"answers": self.answers.to_dict()} if self.answers is not None else {}),
        }


@dataclass(frozen=True)
class ExperimentResult:
    """Every variant's result, the golden-set version and what the encoders had to do."""

    experiment: Experiment
    golden_version: str | None
    variants: tuple[VariantResult, ...]
    #: model id -> encode calls that reached the model in this run (0 on a fully cached re-run).
    encoder_calls: dict[str, int] = field(default_factory=dict)
    texts_encoded: dict[str, int] = field(default_factory=dict)
    cache_hits: dict[str, int] = field(default_factory=dict)
    cache_misses: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    #: the golden set and corpus the variants were scored on (not serialised; the store keeps
    #: the golden-set version and the corpus fingerprint from them)
    golden: Any = field(default=None, repr=False, compare=False)
    corpus: Any = field(default=None, repr=False, compare=False)

    @property
    def baseline(self) -> VariantResult:
        return self.variants[0]

    def variant(self, name: str) -> VariantResult:
        for v in self.variants:
            if v.name == name:
                return v
        raise UsageError(
            f"no variant '{name}'; variants: {', '.join(v.name for v in self.variants)}"
        )

    @property
    def evaluations(self) -> dict[str, Evaluation]:
        """variant name -> span-level Evaluation (what ``ragmeter compare`` takes)."""
        return {v.name: v.evaluation for v in self.variants}

    @property
    def total_encoder_calls(self) -> int:
        return sum(self.encoder_calls.values())

    def table_rows(self) -> list[dict[str, Any]]:
        """The metric table: one dict per variant (what ``--format csv`` prints)."""
        from ._table import table_rows

        return table_rows(self)

    def to_frame(self):  # -> pandas.DataFrame
        """One row per variant (index ``variant``, baseline first): the columns of ``ragmeter
        run --format csv``, unrounded. pandas is the ``pandas`` extra (MissingExtraError
        naming it when absent)."""
        from .._extras import require
        from ._table import table_rows

        pd = require("pandas", "DataFrame output")
        return pd.DataFrame(table_rows(self, digits=None)).set_index("variant")

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        """The header and rows of ``ragmeter run --format csv``: :meth:`table_rows` as cells."""
        rows = self.table_rows()
        header = list(rows[0])
        return header, [[r.get(k, "") for k in header] for r in rows]

    def answer_rows(self) -> list[dict[str, Any]]:
        """The answers table: one row per generating variant (empty when nothing generates)."""
        return [v.answers.summary() for v in self.variants if v.answers is not None]

    def to_dict(self) -> dict[str, Any]:
        from ._table import comparison_rows, table_rows

        return {
            "experiment": self.experiment.name,
            "file": str(self.experiment.path),
            "level": self.experiment.level,
            "golden_version": self.golden_version,
            "variants": [v.to_dict() for v in self.variants],
            "table": table_rows(self),
            "vs_baseline": comparison_rows(self),
            **({"answers": self.answer_rows()} if self.answer_rows() else {}),
            "warnings": [
                *self.experiment.warnings,
                *(f"variant '{v.name}': {w}" for v in self.variants for w in v.warnings),
            ],
            "encoder_calls": self.encoder_calls,
            "texts_encoded": self.texts_encoded,
            "cache_hits": self.cache_hits,
            "cache_misses": self.cache_misses,
            "seconds": round(self.seconds, 3),
        }


def run_experiment(
    path: str | Path | Experiment,
    *,
    console: Any = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    write: bool = True,
    allow_outside: bool = False,
    on_variant: Callable[[VariantResult], None] | None = None,
    on_variant_start: Callable[[Variant, str | None], None] | None = None,
    progress: ProgressSink | None = None,
    engine: Any = None,
) -> ExperimentResult:
    """Run every variant of the experiment file at ``path`` (see the module docstring).

    ``path`` may also be an already loaded :class:`Experiment` (``load_experiment`` checked it;
    ``allow_outside`` then does not apply). ``console`` (a rich Console) shows progress bars;
    ``cache_dir`` overrides the file's ``cache`` (default ``.ragmeter-cache/`` beside the
    experiment file); ``use_cache=False`` recomputes everything and stores nothing;
    ``write=False`` writes no output files. The file's ``output`` and ``cache`` must stay inside
    its folder unless ``allow_outside=True``.

    ``on_variant_start(variant, golden_version)`` is called before each variant starts and
    ``on_variant(result)`` as soon as it is complete (its files written), before the next one
    starts, so a caller can record an experiment variant by variant (a run killed half way
    keeps the variants already done). An exception from either callback stops the run and
    propagates. ``progress`` replaces the console's bars with another sink (the lab's
    background jobs record each step into the job the page polls). ``engine`` is where
    embedding, generation and judging run (:mod:`ragmeter.engines`): ``"local"`` (default),
    ``"ray"`` (a local Ray cluster, stopped at the end) or an engine object (the caller's to
    close, e.g. ``RayEngine(address=...)``); results are the same on every engine.
    """
    from ..engines import resolve_engine
    from ..retrieval.pipelines import routed

    if isinstance(engine, str) and engine != "local":  # named here, so stopped here
        owned = resolve_engine(engine)
        try:
            return run_experiment(
                path,
                console=console,
                cache_dir=cache_dir,
                use_cache=use_cache,
                write=write,
                allow_outside=allow_outside,
                on_variant=on_variant,
                on_variant_start=on_variant_start,
                progress=progress,
                engine=owned,
            )
        finally:
            owned.close()
    eng = resolve_engine(engine)

    started = time.perf_counter()
    if isinstance(path, Experiment):
        exp = path
    else:
        exp = load_experiment(path, allow_outside=allow_outside)
    # from here on what the user's code prints goes to stderr (stdout stays ragmeter's: run
    # --format json), and every module it names is imported and checked before any work
    with routed():
        load_user_code(exp)
        return _run(
            exp, started, eng, console, cache_dir, use_cache, write, on_variant,
            on_variant_start, progress,
        )  # fmt: skip


def variant_chunking(exp: Experiment, corpus: Any, golden: Any, settings: Settings) -> Any:
    """The chunking a variant with these ``settings`` is scored on, from the runner's cache
    when it holds it, else built and cached exactly as ``ragmeter run`` builds it (the lab's
    recomputation of a stored run uses it); nothing is run or written besides that cache."""
    root = exp.cache or exp.path.parent / ".ragmeter-cache"
    pool = EncoderPool(base_dir=exp.path.parent)
    ctx = _Context(exp, corpus, golden, Cache(root), pool, progress_for(None), False)
    return ctx.chunking(settings)[0]


def load_user_code(exp: Experiment) -> None:
    """Import every module of the user's the experiment names and check what it names (each
    pipeline's target and its signature, each python generator's function), as the variants
    will load them, before any chunking, retrieval or encoding: a syntax error in a generator
    module fails in a second, not after the baseline's retrieval. Each module is imported once;
    a LangChain or LlamaIndex retriever is built only when its variant runs."""
    import json

    from ..generation import check_generator
    from ..retrieval.pipelines import check_pipeline

    base = exp.path.parent
    seen: set[str] = set()
    for v in exp.all_variants:
        s = v.settings
        checks: list[tuple[str, dict[str, Any]]] = []
        if s.run is None and s.retriever is not None and is_pipeline(s.retriever):
            checks.append(("retriever", s.retriever))
        if exp.baseline.settings.generates and s.generator is not None:
            checks.append(("generator", s.generator))
        for what, spec in checks:
            key = f"{what}:{json.dumps(spec, sort_keys=True, default=str)}"
            if key in seen:
                continue
            seen.add(key)
            if what == "retriever":
                check_pipeline(spec, base)
            else:
                check_generator(spec, base, path=exp.path)


def _run(
    exp: Experiment,
    started: float,
    eng: Any,
    console: Any,
    cache_dir: str | Path | None,
    use_cache: bool,
    write: bool,
    on_variant: Callable[[VariantResult], None] | None,
    on_variant_start: Callable[[Variant, str | None], None] | None,
    progress: ProgressSink | None,
) -> ExperimentResult:
    """:func:`run_experiment` once the experiment is loaded and its user code checked."""
    from ..data import load_corpus, load_golden

    # bars on a terminal; off one (logs, CI) plain lines at least every 30 s of a long step
    if progress is None:
        progress = progress_for(console)
    root = (
        cache_dir if cache_dir is not None else (exp.cache or exp.path.parent / ".ragmeter-cache")
    )
    cache = Cache(root if use_cache else None)
    with progress.step("load corpus and golden set", None):
        if exp.beir is not None:
            from ..data import load_beir

            corpus, golden = load_beir(exp.beir, exp.beir_split)
        else:
            corpus = load_corpus(exp.corpus)
            golden = load_golden(exp.golden, corpus)
    version = golden.version
    pool = EncoderPool(base_dir=exp.path.parent, wrap=eng.wrap_encoder)
    ctx = _Context(exp, corpus, golden, cache, pool, progress, write, eng)
    done: list[VariantResult] = []
    for v in exp.all_variants:
        if on_variant_start is not None:
            on_variant_start(v, version)
        done.append(ctx.run_variant(v))
        if on_variant is not None:
            on_variant(done[-1])
    results = tuple(done)
    result = ExperimentResult(
        experiment=exp,
        golden_version=version,
        variants=results,
        encoder_calls=pool.calls,
        texts_encoded=pool.texts_encoded,
        cache_hits=dict(cache.hits),
        cache_misses=dict(cache.misses),
        seconds=time.perf_counter() - started,
        golden=golden,
        corpus=corpus,
    )
    if write:
        write_json(result.to_dict(), exp.output / "summary.json")
    return result


class _Context:
    """What every variant of one experiment run shares."""

    def __init__(
        self,
        exp: Experiment,
        corpus: Any,
        golden: Any,
        cache: Cache,
        pool: EncoderPool,
        progress: ProgressSink,
        write: bool,
        engine: Any = None,
    ) -> None:
        from ..chunking import get_tokenizer

        self.exp, self.corpus, self.golden = exp, corpus, golden
        self.cache, self.pool, self.progress, self.write = cache, pool, progress, write
        self.tokenizer = get_tokenizer(exp.tokenizer)
        self.qids = [q.id for q in golden]
        self.queries = [q.question for q in golden]
        self.queries_key = texts_digest(self.qids, self.queries)
        self._chunkings: dict[str, Any] = {}
        #: the baseline's settings and measured context, for each variant's context check
        self.baseline_config: dict[str, Any] | None = None
        self.answering = None
        if exp.baseline.settings.generates:  # assemble, generate, check: ._generate
            from ._generate import Answering

            self.answering = Answering(exp, golden, corpus, cache.root, progress, engine)

    # -- chunking ----------------------------------------------------------------------------
    def chunking(self, s: Settings) -> tuple[Any, bool]:
        """The chunking of a variant and whether it came from the cache."""
        from ..chunking import chunk_corpus, load_chunking

        if s.chunks is not None:
            return load_chunking(s.chunks, corpus=self.corpus), True
        assert s.chunker is not None
        key = digest(
            "chunking",
            self.corpus.fingerprint,
            s.chunker,
            self.tokenizer.name,
            _versions()["ragmeter"],
        )
        if key in self._chunkings:
            return self._chunkings[key], True
        cached = self.cache.load("chunkings", key, ".parquet", load_chunking)
        if cached is not None:  # a damaged entry is a miss (with a warning), rebuilt below
            self._chunkings[key] = cached
            return cached, True
        with self.progress.step(
            f"chunk {len(self.corpus)} documents ({s.chunker})", len(self.corpus)
        ) as advance:
            done = [0]

            def report(n: int, total: int) -> None:
                advance(n - done[0])
                done[0] = n

            chunking = chunk_corpus(
                self.corpus, s.chunker, tokenizer=self.tokenizer, progress=report
            )
        path = self.cache.entry("chunkings", key, ".parquet")
        if path is not None:
            chunking.save(path)
        self._chunkings[key] = chunking
        return chunking, False

    # -- retrieval ---------------------------------------------------------------------------
    def retrieve(self, v: Variant, chunking: Any, timings: dict[str, float]) -> tuple[Run, bool]:
        from ..chunking import index_texts

        s = v.settings
        assert s.retriever is not None
        # each chunk with its document's title or without (the retriever's `title`; absent: the
        # chunker's convention, title + text for `document`, BEIR's)
        texts = index_texts(chunking, self.corpus, title=s.retriever.get("title"))
        key = digest(
            "run",
            s.retriever,
            s.reranker,
            s.depth,
            chunking.name,
            texts_digest(chunking.ids, texts),
            self.queries_key,
            _model_fingerprints([s.retriever, s.reranker], self.exp.path.parent),
            _versions(),
        )
        cached = self.cache.load("runs", key, ".parquet", lambda p: read_cached_run(p, v.name))
        if cached is not None:  # a damaged entry is a miss (with a warning), rebuilt below
            return cached, True
        first = build_retriever(
            s.retriever, cache=self.cache, pool=self.pool, progress=self.progress
        )
        retriever = build_reranked(
            first, s.reranker, cache=self.cache, pool=self.pool, progress=self.progress
        )
        t = time.perf_counter()
        retriever.fit(chunking.ids, texts)
        timings["index"] = time.perf_counter() - t
        t = time.perf_counter()
        run = retriever.search(self.queries, s.depth, qids=self.qids)
        timings["search"] = time.perf_counter() - t
        run = replace(run, name=v.name)
        path = self.cache.entry("runs", key, ".parquet")
        if path is not None:
            write_cached_run(run, path)
        return run, False

    # -- one variant -------------------------------------------------------------------------
    def run_variant(self, v: Variant) -> VariantResult:
        from ..retrieval.byo import read_byo_run

        s = v.settings
        timings: dict[str, float] = {}
        cached: dict[str, bool] = {}
        t0 = time.perf_counter()
        chunking = None
        if s.chunker is not None or s.chunks is not None:
            chunking, cached["chunking"] = self.chunking(s)
        timings["chunk"] = time.perf_counter() - t0
        shape = "retriever"
        piped = None  # a pipeline's run: its errors and notes
        if s.run is not None:
            t = time.perf_counter()
            imported = read_byo_run(
                s.run, corpus=self.corpus, chunking=chunking, name=v.name, tokenizer=self.tokenizer
            )
            shape = imported.shape
            if imported.shape == "spans":
                chunking = imported.chunking
            elif chunking is None:
                raise InputError(
                    "a chunk-id run needs the chunking it was made on: set chunker "
                    "or chunks for this variant",
                    path=s.run,
                )
            run = imported.run
            timings["import"] = time.perf_counter() - t
        elif is_pipeline(s.retriever):  # the user's own pipeline, asked every question
            from ..retrieval.pipelines import load_pipeline, run_pipeline

            assert s.retriever is not None
            piped = run_pipeline(
                load_pipeline(s.retriever, self.exp.path.parent),
                self.golden,
                self.corpus,
                chunking=chunking,
                depth=s.depth,
                on_error=s.retriever["on_error"],
                name=v.name,
                tokenizer=self.tokenizer,
                progress=self.progress,
            )
            shape, run, chunking = piped.shape, piped.run, piped.chunking
            timings["pipeline"] = piped.seconds
        else:
            run, cached["run"] = self.retrieve(v, chunking, timings)
        if chunking is None:  # pragma: no cover - load_experiment requires a chunking or a run
            raise InputError("no chunking to score this variant on", path=self.exp.path)
        t = time.perf_counter()
        with self.progress.step(f"score {v.name}", None):
            evaluation, chunk_eval, notes = self.score(v, chunking, run, shape)
        timings["score"] = time.perf_counter() - t
        if piped is not None:
            notes = [*piped.notes, *notes]
        run_path = None
        if self.write:
            folder = self.exp.output / slug(v.name)
            run_path = write_run(run, folder / f"run.{self.exp.run_format}", self.exp.run_format)
            if piped is not None:  # retrieved.jsonl (re-scorable with run = ...), errors.jsonl
                piped.write(folder)
            if self.exp.level == "document":
                from ..labels import rollup_run

                write_run(
                    rollup_run(run, chunking),
                    folder / f"document_run.{self.exp.run_format}",
                    self.exp.run_format,
                    id_column="doc",
                )
        timings["total"] = time.perf_counter() - t0
        result = VariantResult(
            name=v.name,
            label=s.label(),
            settings=s,
            changes=effective_changes(self.exp.baseline.settings, s) if not v.is_baseline else (),
            run=run,
            evaluation=evaluation,
            chunk_evaluation=chunk_eval,
            chunking={"name": chunking.name, **chunking.stats()},
            context_tokens=_context_tokens(run, chunking, s),
            timings={k: round(x, 4) for k, x in timings.items()},
            cached=cached,
            run_path=run_path,
            notes=tuple(notes),
            is_baseline=v.is_baseline,
            level=self.exp.level,
            chunks=chunking,
            pipeline_errors=None if piped is None else piped.errors,
        )
        if self.answering is not None:
            answers = self.answering.answer(v, run, chunking, self.write)
            result = replace(result, answers=answers)
            if answers.source != "retrieved":  # the prompt holds the ablation's context
                result = replace(result, context_tokens=answers.context_tokens())
        result = self.check_context(v, result)
        evaluation, chunk_eval = result.evaluation, result.chunk_evaluation
        if self.write:
            folder = self.exp.output / slug(v.name)
            write_json(self.config_record(result), folder / "config.json")
            write_json(evaluation.to_dict(), folder / "evaluation.json")
            if chunk_eval is not None:
                write_json(chunk_eval.to_dict(), folder / "chunk_evaluation.json")
        return result

    def check_context(self, v: Variant, r: VariantResult) -> VariantResult:
        """``r`` with its measured context tokens in its evaluations' configs (so ``compare``,
        the gate and the lab check them) and, for a variant, the "changing k" warning when its
        generator receives more than 10% more or less context than the baseline's
        (:func:`ragmeter.paired.context_trap`). An ablation's context (the labelled evidence,
        none) is another source on purpose: neither recorded nor checked."""
        from ..paired import context_trap

        if r.answers is not None and r.answers.source != "retrieved":
            return r
        measured = {MEASURED_CONTEXT: r.context_tokens}
        r = replace(
            r,
            evaluation=replace(r.evaluation, config={**r.evaluation.config, **measured}),
            chunk_evaluation=None
            if r.chunk_evaluation is None
            else replace(r.chunk_evaluation, config={**r.chunk_evaluation.config, **measured}),
        )
        config = {**settings_config(v.settings), **measured}
        if v.is_baseline:
            self.baseline_config = config
            return r
        if self.baseline_config is None:  # pragma: no cover - the baseline always runs first
            return r
        trap = context_trap(self.baseline_config, config)
        return r if trap is None else replace(r, warnings=(*r.warnings, trap))

    def score(
        self, v: Variant, chunking: Any, run: Run, shape: str
    ) -> tuple[Evaluation, Evaluation | None, list[str]]:
        from ..labels import chunk_qrels, evaluate_spans
        from ..metrics import evaluate

        exp = self.exp
        prompt = exp.prompt_metrics(v.settings)
        span_ms = [m for m in prompt if "span" in m.info.levels]
        span_ms.append(exp.headroom_metric())
        rank_ms = [m for m in prompt if "span" not in m.info.levels]
        # compact settings (specs as labels) so a config diff between two variants names the
        # setting that changed, not every option inside a retriever spec
        s = v.settings
        config = {
            "experiment": str(exp.path),
            "settings": {
                "chunker": s.chunker or (str(s.chunks) if s.chunks else None),
                "retriever": describe(s.retriever) if s.run is None else f"imported {s.run.name}",
                "reranker": describe(s.reranker),
                "depth": s.depth,
                "k": s.k,
                "budget": s.budget,
            },
        }
        notes: list[str] = []
        if exp.level == "document":
            unlabelled = sum(1 for q in self.golden if not q.evidence)
            if unlabelled:
                notes.append(
                    f"{unlabelled} question(s) without evidence are not scored at "
                    "document level (no relevant document to find)"
                )
            return (
                self.score_documents(v, chunking, run, [*prompt, exp.headroom_metric()], config),
                None,
                notes,
            )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ev = evaluate_spans(
                self.golden,
                chunking,
                run,
                list(dict.fromkeys(span_ms)),
                cover=exp.cover,
                run_name=v.name,
            )
            ev = replace(ev, config={**ev.config, **config})
            chunk_ev = None
            if rank_ms and shape != "spans":
                qrels = chunk_qrels(self.golden, chunking, cover=exp.cover)
                chunk_ev = evaluate(
                    qrels,
                    run,
                    rank_ms,
                    run_name=v.name,
                    golden_version=ev.golden_version,
                    config={
                        **config,
                        "level": "chunk",
                        "chunking": chunking.name,
                        "cover": exp.cover,
                    },
                    slices=self.golden.slices,
                    splits=self.golden.splits,
                )
            elif rank_ms:
                notes.append(
                    f"{', '.join(map(str, rank_ms))} not computed: a spans run (imported, or "
                    "from a pipeline) has no chunking of the whole corpus to judge its ranking "
                    "against"
                )
        notes.extend(str(w.message) for w in caught if not _spans_run_warning(w, shape))
        return ev, chunk_ev, notes

    def score_documents(
        self, v: Variant, chunking: Any, run: Run, metrics: list[Metric], config: dict[str, Any]
    ) -> Evaluation:
        """Every metric on documents: the run rolled up (each document at its best chunk's rank,
        with that chunk's score) against document qrels (a document's grade = its best span's),
        by the engine with trec_eval's rules, so a one-chunk-per-document run scores exactly as
        trec_eval scores the same document run on the collection's qrels."""
        from ..labels import document_qrels, rollup_run
        from ..metrics import evaluate

        return evaluate(
            document_qrels(self.golden),
            rollup_run(run, chunking),
            list(dict.fromkeys(metrics)),
            run_name=v.name,
            golden_version=golden_version_of(self.golden),
            config={
                **config,
                "level": "document",
                "chunking": chunking.name,
                "rollup": "best chunk",
            },
            slices=self.golden.slices,
            splits=self.golden.splits,
        )

    def config_record(self, r: VariantResult) -> dict[str, Any]:
        return config_record_of(self.exp, r)


def config_record_of(exp: Experiment, r: VariantResult) -> dict[str, Any]:
    """What ``OUTPUT/<variant>/config.json`` holds for the variant result ``r`` of ``exp``:
    resolved settings, golden-set version, metrics, timings and cache hits (the store records
    the same mapping)."""
    return {
        "variant": r.name,
        "baseline": r.is_baseline,
        "label": r.label,
        "changes": list(r.changes),
        "experiment": str(exp.path),
        "golden": str(exp.golden),
        "corpus": str(exp.corpus),
        "level": exp.level,
        "golden_version": r.evaluation.golden_version,
        "settings": r.settings.to_dict(),
        "resolved": {
            "chunking": r.chunking,
            "cover": exp.cover,
            "metrics": [str(m) for m in exp.prompt_metrics(r.settings)],
            "headroom": str(exp.headroom_metric()),
            # the one metric the experiment's comparisons are read on (the lab and report too)
            "headline": None if exp.headline_metric is None else str(exp.headline_metric),
        },
        "metrics": r.to_dict()["metrics"],
        "context_tokens": r.context_tokens,
        "timings": r.timings,
        "cached": r.cached,
        "run_file": None if r.run_path is None else str(r.run_path),
        "notes": list(r.notes),
        "warnings": list(r.warnings),
        **({"answers": r.answers.summary()} if r.answers is not None else {}),
        **({"judge": exp.judge.to_dict()} if exp.judge is not None else {}),
    }


def _spans_run_warning(w: warnings.WarningMessage, shape: str) -> bool:
    """The span evaluator's warning about documents without chunks, which for a spans run (one
    chunk per returned span) says only that nothing was returned from them."""
    return shape == "spans" and "with no chunk in chunking" in str(w.message)


def _context_tokens(run: Run, chunking: Any, s: Settings) -> float:
    """Mean tokens the generator would receive: the top-k chunks (or the budget's fill)."""
    from ..labels import effective_k

    r = ranked_rows(run)
    if not len(r.rows):
        return 0.0
    tokens = chunking.n_tokens[chunking.rows_of(r.item)]
    starts = np.append(np.flatnonzero(r.rank == 1), len(r.rows))
    lengths = np.diff(starts)
    if s.k is not None:
        fill = np.minimum(lengths, s.k)
    else:
        fill = effective_k(tokens, starts, int(s.budget or 0))
    owner = np.repeat(np.arange(len(lengths)), lengths)
    inside = r.rank <= fill[owner]
    per_query = np.bincount(owner[inside], weights=tokens[inside], minlength=len(lengths))
    return float(np.mean(per_query.astype(np.int64)))


def _model_fingerprints(specs: list[Any], base: Path) -> list[str]:
    """The content hash of every local model folder a spec points to (``path = ...``), so a
    cached run is not reused after the weights in that folder change."""
    from ..retrieval.st import folder_digest

    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "path" in node:
                out.append(folder_digest(base / node["path"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(specs)
    return out
