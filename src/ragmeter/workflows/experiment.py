"""Run and record an experiment: every variant starts ``running`` and is stored ``finished`` with
all its rows the moment it completes; a failure marks the rest ``failed``, Ctrl-C or a signal
marks them ``interrupted``, and a run whose process was killed outright is found ``running`` by
a dead process and marked ``interrupted`` the next time the store is read.

``ragmeter run`` calls :func:`run_and_record`; the lab's background jobs call
:func:`run_and_record_variant` (one new variant, its baseline from the cache); the demo records
a finished result with :func:`run_spec` and :func:`record_variant`. The lab's experiments page
reads the selection ledger of the stored experiments with :func:`ledger_by_version`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..experiments import Experiment, ExperimentResult, Variant, VariantResult
    from ..paired import LedgerSummary, SelectionEstimate
    from ..store import Store


def run_and_record(
    store: Store | None,
    path: str | os.PathLike[str],
    *,
    allow_outside: bool = False,
    **run_kwargs: Any,
) -> tuple[ExperimentResult, dict[str, int]]:
    """Run the experiment file at ``path`` (see :func:`ragmeter.run_experiment`) and record
    every variant; returns the result and ``{variant name: run id}`` (with no store: the
    result alone, recorded nowhere, and no ids)."""
    from ..experiments import load_experiment, load_user_code, run_experiment
    from ..retrieval.pipelines import routed  # the runner holds the same context for the run
    from ..store import end_unfinished

    if store is None:
        return run_experiment(Path(path), allow_outside=allow_outside, **run_kwargs), {}
    exp = load_experiment(Path(path), allow_outside=allow_outside)
    # a broken module of the user's fails before any run is recorded (none is left "failed")
    with routed():  # what it prints at import goes to stderr, as during the run
        load_user_code(exp)
    ids = dict(
        zip(
            [v.name for v in exp.all_variants],
            start_variants(store, exp, exp.all_variants),
            strict=True,
        )
    )

    def finished(r: VariantResult) -> None:
        record_variant(store, exp, ids[r.name], r)

    try:
        result = run_experiment(exp, on_variant=finished, **run_kwargs)
    except (KeyboardInterrupt, SystemExit) as exc:
        end_unfinished(
            store,
            list(ids.values()),
            status="interrupted",
            message=f"stopped ({type(exc).__name__})",
        )
        raise
    except BaseException as exc:
        end_unfinished(store, list(ids.values()), status="failed", message=str(exc))
        raise
    record_sources(store, exp, result, list(ids.values()))
    return result, ids


def run_and_record_variant(
    store: Store,
    exp: Experiment,
    variant: Variant,
    *,
    on_started: Callable[[int], None] | None = None,
    failure: Callable[[BaseException], str] = str,
    **run_kwargs: Any,
) -> tuple[ExperimentResult, int]:
    """Run ``exp`` (its other variants answered from the cache, as ``ragmeter run`` left them)
    and record only ``variant``, one of its variants, as ``ragmeter run`` records it: started
    ``running``, finished with every row, or ended ``failed`` with ``failure(exc)`` as its
    message when anything raises (the error is raised again). ``on_started(run_id)`` is called
    once the run is stored; ``run_kwargs`` go to :func:`ragmeter.run_experiment` (nothing is
    written: the variant's outputs are the stored run). Returns the result and the new run's
    id."""
    from ..experiments import run_experiment
    from ..store import end_unfinished

    run_id = start_variants(store, exp, [variant])[0]
    try:
        if on_started is not None:
            on_started(run_id)

        def finished(r: VariantResult) -> None:
            if r.name == variant.name:  # the others are stored already: never twice
                record_variant(store, exp, run_id, r)

        result = run_experiment(exp, write=False, on_variant=finished, **run_kwargs)
        record_sources(store, exp, result, [run_id])
    except BaseException as exc:
        with contextlib.suppress(Exception):
            end_unfinished(store, [run_id], status="failed", message=failure(exc))
        raise
    return result, run_id


def check_store_writes(exp: Experiment, *, db: str | None, cache_dir: Path | None) -> None:
    """Before anything runs: the experiment's ``output`` and ``cache`` (or ``cache_dir`` given
    instead of the file's) may not write over the experiment store ``db`` names (None: the
    environment's, else the default), whether the run is stored or not (experiments/_paths.py,
    store/_protect.py)."""
    from ..experiments import check_store_writes as check
    from ..store import protected_paths

    check(exp, protected_paths(db), cache=cache_dir)


def check_variant(path: Path, table: Mapping[str, Any]) -> Variant:
    """The variant ``table`` (one ``[[variant]]`` table, its name left to the caller) adds to
    the experiment file at ``path``, checked as ``ragmeter run`` checks the whole file (its
    output and cache inside its folder); every problem of the table is one ``UsageError`` line,
    named by its field."""
    import tomllib

    from .._errors import UsageError, ValidationError
    from ..experiments import build_experiment  # the file's one checker

    text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    data.setdefault("variant", []).append({**table, "name": "lab variant (checked)"})
    index = len(data["variant"])
    try:
        checked = build_experiment(path, text, data, allow_outside=False)
    except ValidationError as exc:
        mine = f"variant[{index}]"
        lines = [
            f"{p.field.removeprefix(mine + '.')}: {p.message}"
            if p.field and p.field.startswith(mine)
            else str(p)
            for p in exc.problems
        ]
        raise UsageError("; ".join(lines)) from None
    return checked.variants[-1]


def variant_warnings(exp: Experiment, variants: Sequence[Variant]) -> list[str]:
    """``ragmeter run``'s warnings for ``variants`` against the baseline of ``exp`` (one that
    changes nothing, or more than one thing)."""
    from ..experiments import change_warnings  # the loader's own

    return change_warnings(exp.baseline, list(variants))


def start_variants(store: Store, exp: Experiment, variants: Sequence[Variant]) -> list[int]:
    """Record ``variants`` of ``exp`` as ``running`` (one transaction, one invocation, the
    provenance of the experiment's folder); returns their run ids in order."""
    from ..experiments import provenance
    from ..store import start_runs

    return start_runs(
        store,
        [run_spec(exp, v) for v in variants],
        provenance=provenance(Path(exp.path).parent),
    )


def run_spec(exp: Experiment, v: Variant) -> dict[str, Any]:
    """What :func:`ragmeter.store.start_runs` records for variant ``v`` of ``exp``."""
    return dict(
        experiment=exp.name,
        name=v.name,
        config={"settings": v.settings.to_dict(), "level": exp.level},
        kind="experiment",
        label=None,
        is_baseline=v.is_baseline,
        file=str(exp.path),
    )


def record_sources(
    store: Store, exp: Experiment, result: ExperimentResult, run_ids: Sequence[int]
) -> None:
    """Store the golden set the variants were scored on and tie ``run_ids`` to their corpus."""
    if result.golden is not None:
        store.put_golden(result.golden)
    if result.corpus is not None:
        store.set_corpus(list(run_ids), result.corpus, str(exp.corpus or exp.beir))


def record_variant(store: Store, exp: Experiment, run_id: int, r: VariantResult) -> None:
    """Finish the stored run ``run_id`` with the variant result ``r`` of ``exp``: its
    evaluations, ranked list, metrics and config record, as ``ragmeter run`` stores them."""
    from ..experiments import config_record_of

    store.finish_run(
        run_id,
        evaluations={
            "document" if exp.level == "document" else "span": r.evaluation,
            "chunk": r.chunk_evaluation,
        },
        ranked=r.ranked_table(),
        metrics=r.to_dict()["metrics"],
        timings=r.timings,
        seconds=r.timings.get("total"),
        context_tokens=r.context_tokens,
        notes=list(r.notes),
        golden_version=r.evaluation.golden_version,
        label=r.label,
        config=config_record_of(exp, r),
        changes=list(r.changes),
        chunking=r.chunking or None,
    )
    if getattr(r, "answers", None) is not None:
        record_generated_answers(store, run_id, r)


def record_generated_answers(store: Store, run_id: int, r: VariantResult) -> int:
    """Record the answers variant ``r`` generated (each with its exact context and, when the
    experiment has a judge, the judge's label, score or error per metric under ``judged``) and
    the checks made of them, tied to the variant's stored run ``run_id``."""
    a = r.answers
    source = None if a.folder is None else str(Path(a.folder) / "answers.jsonl")
    judged: dict[str, dict[str, Any]] = {}
    for j in a.judgements() if getattr(a, "judge", None) else ():
        judged.setdefault(j["id"], {})[j["metric"]] = {
            k: j.get(k) for k in ("ok", "score", "label", "error", "judge", "prompt", "detail")
        }
    made = generation_records(a)
    return store.record_answers(
        name=r.name,
        answers=[
            {
                **x,
                **({"judged": judged[x["id"]]} if x["id"] in judged else {}),
                **({"generation": made[x["id"]]} if x["id"] in made else {}),
            }
            for x in a.records
        ],
        report={**a.report.to_dict(), "generation": a.to_dict()},
        golden_version=r.evaluation.golden_version,
        source=source,
        run_id=run_id,
    )


def generation_records(a: Any) -> dict[str, dict[str, Any]]:
    """Per question id, how its answer was made, as the store keeps it with the answer (the
    lab's trace): the prompt as sent (the chat messages), the generator and prompt version,
    the params, the usage the backend reported (tokens, cost; empty when it reported none),
    the seconds, the cache hit and the error."""
    messages = getattr(a, "messages", None) or {}
    prompt = a.prompt.get("id") if isinstance(a.prompt, Mapping) else None
    out: dict[str, dict[str, Any]] = {}
    for g in getattr(a, "generations", ()):
        sent = messages.get(g.question_id)
        out[g.question_id] = {
            "messages": None if sent is None else [dict(m) for m in sent],
            "generator": a.generator,
            "prompt": prompt,
            "params": dict(a.params),
            "usage": dict(g.usage),
            "seconds": round(g.seconds, 4),
            "cached": g.cached,
            "error": g.error,
        }
    return out


@dataclass(frozen=True)
class VersionLedger:
    """The store's selection ledger on one golden version: its counts, and the selection
    estimate of the newest stored comparison that carried one (and that comparison's id)."""

    version: str
    summary: LedgerSummary
    estimate: SelectionEstimate | None
    comparison_id: int | None


def ledger_by_version(store: Store) -> list[VersionLedger]:
    """The store's ledger per golden version (in the order versions first appear in it; an
    entry without a version under the ledger's own "unversioned" name). A damaged comparison is
    left out with a warning naming it, as listings do."""
    from ..paired import UNVERSIONED  # the ledger's own name
    from ..store import DamagedRowError, skipped

    entries = store.ledger.entries()
    versions = list(dict.fromkeys(str(e.get("golden_version") or UNVERSIONED) for e in entries))
    stored = store.comparisons()
    out: list[VersionLedger] = []
    for v in versions:
        estimate: SelectionEstimate | None = None
        at: int | None = None
        for row in stored:  # newest first: the latest comparison that carried an estimate
            if (row["golden_version"] or UNVERSIONED) == v:
                try:
                    c = store.comparison(row["id"])
                except DamagedRowError as exc:  # said once, and the page shows the rest
                    skipped(exc)
                    continue
                if c.selection is not None:
                    estimate, at = c.selection, int(row["id"])
                    break
        out.append(VersionLedger(v, store.ledger.summary(v), estimate, at))
    return out


# -- what a finished run says ------------------------------------------------------------------
@dataclass(frozen=True)
class RunCounts:
    """What a run of an experiment had to do: the line ``ragmeter run`` ends with, and its exit
    code (``judge_failed``)."""

    variants: int
    seconds: float
    #: texts that reached an encoder in this run; None: no variant encodes (a BM25-only run,
    #: where "0 from the cache" would claim a cache that was never involved)
    encoder_calls: int | None
    #: variants whose own pipeline was asked in place (they run and encode every time)
    piped: int
    answers_made: int
    #: answers in all; 0: the experiment generates none
    answers: int
    #: HTTP requests the judge sent, over every variant; None: no judge counts its requests
    judge_requests: int | None
    judge_cache_hits: int
    #: judgements that failed (recorded as failed, never as passes)
    judge_failed: int


def run_counts(result: ExperimentResult) -> RunCounts:
    """Count :class:`RunCounts` over every variant of ``result``."""
    rows = result.answer_rows()
    usages = [
        v.answers.judge_usage
        for v in result.variants
        if v.answers is not None and v.answers.judge_usage is not None
    ]
    return RunCounts(
        variants=len(result.variants),
        seconds=result.seconds,
        encoder_calls=result.total_encoder_calls if result.encoder_calls else None,
        piped=sum(v.pipeline_errors is not None for v in result.variants),
        answers_made=sum(r["model_calls"] for r in rows),
        answers=sum(r["answers"] for r in rows),
        judge_requests=sum(u["http_requests"] for u in usages) if usages else None,
        judge_cache_hits=sum(u["cache_hits"] for u in usages),
        judge_failed=sum(r.get("judge_failed") or 0 for r in rows),
    )


@dataclass(frozen=True)
class DiagnoseFiles:
    """The files ``ragmeter diagnose`` reads to diagnose the baseline's answers of a run just
    written, and the prompt's cut (``k``, else ``budget``)."""

    golden: Path
    corpus: Path
    chunks: Path
    run: Path
    answers: Path
    k: int | None
    budget: int | None


def diagnose_files(result: ExperimentResult) -> DiagnoseFiles | None:
    """:class:`DiagnoseFiles` for the baseline of ``result``; None when it wrote no answers."""
    exp = result.experiment
    v = result.baseline
    folder = exp.output / v.name if v.answers is None else v.answers.folder
    if not result.answer_rows() or folder is None:
        return None
    run = v.run_path or folder / "run.trec"
    return DiagnoseFiles(
        exp.golden, exp.corpus, folder / "chunks.jsonl", run, folder / "answers.jsonl",
        v.settings.k, v.settings.budget,
    )  # fmt: skip
