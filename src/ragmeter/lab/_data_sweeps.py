"""The sweeps view's model: a metric against k (or the token budget) for several stored runs,
from their stored ranked lists through :func:`ragmeter.workflows.sweep.stored_sweep` (the
numbers ``ragmeter sweep --golden --chunks`` computes on the run files), with the crossovers
and the headroom past the prompt's cutoff marked."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import UsageError
from ._charts import Spec, sweep_spec

if TYPE_CHECKING:  # pragma: no cover
    from ..store import RunRecord, Store


def sweep_metrics() -> tuple[str, ...]:
    """The metrics a sweep of stored runs can draw, in registry order: those computed on span
    labels at any cutoff (the registry's ``budget`` metrics: R, Hit, RR, AllR), and P and nDCG
    over k on item qrels, for runs of one chunking (:func:`ragmeter.workflows.sweep.stored_sweep`
    says why not otherwise). Read from the registry here, not at import (it loads numpy)."""
    from ..metrics import REGISTRY
    from ..workflows.sweep import item_metrics

    return tuple(m.name for m in REGISTRY.values() if m.budget or m.name in item_metrics())


def parse_ids(text: str | None) -> list[int]:
    if not text:
        return []
    try:
        return [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise UsageError(f"runs must be stored run ids separated by commas, got {text!r}") from None


@dataclass(frozen=True)
class RunName:
    id: int
    name: str


@dataclass(frozen=True)
class Crossover:
    """Where the lead changes: at this cutoff, from one run (or a tie) to another."""

    at: int
    before: str
    after: str


@dataclass(frozen=True)
class Headroom:
    run: str
    value: float | None


@dataclass(frozen=True)
class CutoffRow:
    """One cutoff of the table: each run's value, the leader, past the prompt's cutoff."""

    cutoff: int
    values: list[float]
    leader: str | None
    beyond: bool


@dataclass(frozen=True)
class SweepView:
    """Everything ``_sweep_body.html`` shows (``s``)."""

    runs: list[RunName]
    names: list[str]
    metric: str
    kind: str
    cutoffs_text: str
    label: str
    summary: str
    crossovers: list[Crossover]
    headroom_metric: str
    headroom: list[Headroom]
    prompt: int | None
    prompt_cuts: list[int]
    notes: list[str]
    table: list[CutoffRow]
    spec: Spec
    #: :meth:`ragmeter.paired.Sweep.to_dict` (``ragmeter sweep -f json``'s record)
    sweep: dict[str, Any]
    #: the ``ragmeter sweep`` lines that print the same numbers (:mod:`._commands`)
    command: str = ""


def sweeps_context(
    store: Store,
    run_ids: Sequence[int],
    *,
    metric: str = "R",
    kind: str | None = None,
    cutoffs: str | None = None,
    cache: MutableMapping[Any, Any] | None = None,
) -> SweepView:
    """The sweeps page's model: :func:`ragmeter.workflows.sweep.stored_sweep` on the stored
    runs (prepared from their ranked lists, kept in ``cache``), laid out for the page."""
    from ..workflows.sweep import SpanSource, stored_sweep
    from ._context import settings_of
    from ._prepared import prepared_run

    drawable = sweep_metrics()
    if metric not in drawable:
        raise UsageError(f"a sweep draws one of {', '.join(drawable)}, got {metric!r}")

    def prepare(run: RunRecord) -> SpanSource:
        p = prepared_run(store, run.id, cache)
        return SpanSource(
            p.ctx.golden,
            p.chunking,
            p.run,
            p.has_chunking,
            p.ctx.headroom_k,
            p.ctx.cover,
            qrels=p.qrels,
        )

    found = stored_sweep(
        store,
        run_ids,
        metric=metric,
        settings=settings_of,
        prepare=prepare,
        kind=kind,
        cutoffs=cutoffs,
    )
    s, runs, kind, prompt = found.sweep, found.runs, found.kind, found.prompt
    values = [
        {"run": name, "cutoff": cut, "value": float(v)}
        for name, row in zip(s.runs, s.values, strict=True)
        for cut, v in zip(s.cutoffs, row.tolist(), strict=True)
    ]
    table = [
        CutoffRow(
            cutoff=cut,
            values=[float(s.values[i, j]) for i in range(len(s.runs))],
            leader=lead,
            beyond=prompt is not None and cut > prompt,
        )
        for j, (cut, lead) in enumerate(zip(s.cutoffs, s.leaders, strict=True))
    ]
    return SweepView(
        runs=[RunName(r.id, r.name) for r in runs],
        names=list(s.runs),
        metric=metric,
        kind=kind,
        cutoffs_text=found.cutoffs,
        label=s.label,
        summary=s.summary(),
        crossovers=[Crossover(c, a or "tie", b or "tie") for c, a, b in s.crossovers],
        headroom_metric=str(s.headroom_metric or ""),
        headroom=[Headroom(n, s.headroom.get(n)) for n in s.runs],
        prompt=prompt,
        prompt_cuts=list(found.prompt_cuts),
        notes=list(s.notes),
        table=table,
        spec=sweep_spec(
            values,
            cutoffs=s.cutoffs,
            label=s.label,
            prompt=prompt,
            kind=kind,
            crossovers=s.crossovers,
        ),
        sweep=s.to_dict(),
        command=_command(
            store,
            runs,
            metric=metric,
            kind=kind,
            cutoffs=found.cutoffs,
            headroom=str(s.headroom_metric or ""),
            names=list(s.runs),
            cover=prepared_run(store, runs[0].id, cache).ctx.cover,
            level=prepared_run(store, runs[0].id, cache).level,
        ),
    )


def _command(
    store: Store,
    runs: Sequence[RunRecord],
    *,
    metric: str,
    kind: str,
    cutoffs: str,
    headroom: str,
    names: Sequence[str],
    cover: float,
    level: str = "chunk",
) -> str:
    """The ``ragmeter sweep`` lines that print this page's numbers, runnable as printed (P and
    nDCG of chunk runs: on the chunk qrels ``ragmeter labels export`` writes first)."""
    from ..workflows.sweep import span_metrics
    from ._commands import quoted, run_files

    made: set[str] = set()
    files = [run_files(store, r, made=made) for r in runs]
    chunks = [f.chunks for f in files]
    chunk_words = chunks[:1] if len(set(chunks)) == 1 else chunks
    cut = "--budget" if kind == "budget" else "--k"
    headroom_k = headroom.rpartition("@")[2] if "@" in headroom else "0"
    steps = [step for f in files for step in f.steps]
    if metric in span_metrics():
        labels = [f"--golden {files[0].golden}", *(f"--chunks {c}" for c in chunk_words)]
        labels.append(f"--cover {cover:g}")
    elif level == "document":  # a document-level run's golden set is its item qrels' source
        labels = [f"--qrels {files[0].golden}"]
    else:  # one chunking (stored_sweep checked): its chunk qrels
        steps.append(
            f"ragmeter labels export --golden {files[0].golden} --chunks {chunks[0]} "
            f"-o qrels-chunks.txt --cover {cover:g}"
        )
        labels = ["--qrels qrels-chunks.txt"]
    words = [
        "ragmeter sweep",
        *(f.run for f in files),
        *labels,
        f"-m {quoted(metric)} {cut} {quoted(cutoffs)} --headroom-k {headroom_k}",
        *(f"--name {quoted(n)}" for n in names),
    ]
    return "\n".join([*steps, " ".join(words)])


@dataclass(frozen=True)
class SweepRun:
    """A finished run with ranked lists the sweep form offers."""

    id: int
    name: str
    golden: str | None


@dataclass(frozen=True)
class SweepForm:
    """The sweep form: what it offers and what is asked for (``selected``: the run ids)."""

    runs_all: list[SweepRun]
    metrics: list[str]
    suggest: str | None
    runs: str = ""
    metric: str = "R"
    kind: str = ""
    cutoffs: str = ""
    selected: list[int] | None = None


def sweep_choices(store: Store) -> SweepForm:
    runs = [r for r in store.runs() if r.status == "finished" and r.has_ranked]
    newest = [r.id for r in runs if runs and r.experiment == runs[0].experiment]
    return SweepForm(
        runs_all=[SweepRun(r.id, r.name, r.golden_version) for r in runs],
        metrics=list(sweep_metrics()),
        suggest=f"/sweeps?runs={','.join(map(str, sorted(newest)))}" if newest else None,
    )
