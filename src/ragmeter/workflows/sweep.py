"""Sweeps: a metric for several runs at every k (or token budget), and where the leader changes.

:func:`sweep_files` is ``ragmeter sweep``: run files scored against item qrels (rank-level) or
span labels and their chunkings (ranks or token budgets). :func:`stored_sweep` is the lab's
sweep of stored runs, from their stored ranked lists: which cutoffs to sweep when none are
given, and the prompt's own cutoffs to mark. Both return :class:`ragmeter.paired.Sweep` records.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:
    from ..chunking import Chunking
    from ..data import GoldenSet
    from ..io import Run
    from ..metrics import Metric
    from ..paired import Sweep, SweepKind
    from ..store import RunRecord, Store

__all__ = [
    "SpanSource",
    "StoredSweep",
    "item_metrics",
    "run_names",
    "span_metrics",
    "stored_sweep",
    "sweep_files",
]


# -- run files (ragmeter sweep) -------------------------------------------------------------------
def _run_tag(path: Path) -> str | None:
    """The tag of a TREC run (the sixth column of its first line), or None (JSONL, unreadable)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            first = next((x for x in f if x.strip()), "")
    except OSError:
        return None
    cols = first.split()
    return cols[5] if len(cols) == 6 and not first.lstrip().startswith("{") else None


def run_names(runs: Sequence[Path], given: Sequence[str] = ()) -> list[str]:
    """The runs' names: ``given`` in order; else the runs' tags when they tell the runs apart;
    else the file names (run.trec in every variant folder: then the folder), else the paths as
    given."""
    if given:
        if len(given) != len(runs) or len(set(given)) != len(given):
            raise UsageError(
                f"--name: give one distinct name per run ({len(runs)} runs, {len(given)} names)"
            )
        return list(given)
    for names in (
        [_run_tag(p) or p.stem for p in runs],
        [p.stem for p in runs],
        [p.parent.name or p.stem for p in runs],
    ):
        if len(set(names)) == len(names):
            return names
    return [str(p) for p in runs]


def _span_sweep(
    golden: Path,
    chunks: Sequence[Path],
    runs: Sequence[Path],
    names: Sequence[str],
    metric: Metric,
    cutoffs: str,
    kind: SweepKind,
    headroom_k: int | None,
    cover: float,
) -> Sweep:
    from ..chunking import load_chunking
    from ..data import load_golden
    from ..io import to_run
    from ..paired import sweep_spans

    if len(chunks) not in (1, len(runs)):
        raise UsageError(
            f"give --chunks once for all runs or once per run ({len(runs)}); got {len(chunks)}"
        )
    per_run = list(chunks) * len(runs) if len(chunks) == 1 else list(chunks)
    loaded = {p: load_chunking(p) for p in dict.fromkeys(per_run)}
    pairs = {n: (loaded[c], to_run(r)) for n, c, r in zip(names, per_run, runs, strict=True)}
    return sweep_spans(
        load_golden(golden),
        pairs,
        metric,
        cutoffs,
        kind=kind,
        headroom_k=headroom_k,
        cover=cover,
    )


def sweep_files(
    runs: Sequence[Path],
    *,
    qrels: Path | None = None,
    golden: Path | None = None,
    chunks: Sequence[Path] = (),
    metrics: str = "R,RR",
    ks: str | None = None,
    budgets: str | None = None,
    headroom_k: int = 100,
    cover: float = 0.5,
    names: Sequence[str] = (),
) -> list[Sweep]:
    """One sweep per metric (of the comma-separated ``metrics``) and cutoff kind: ranks ``ks``
    (``'1..20'`` when neither is given) and, with span labels, token ``budgets``. Item ``qrels``
    or a span-labelled ``golden`` set with the runs' ``chunks`` (once for all, or once per run).
    Recall at ``headroom_k`` (0: none) is kept once, on the first sweep, as pool headroom."""
    from ..metrics import parse_list

    if (qrels is None) == (golden is None):
        raise UsageError("give --qrels (item labels) or --golden with --chunks (span labels)")
    if budgets is not None and golden is None:
        raise UsageError("--budget needs span labels: give --golden and --chunks")
    # cutoffs travel as text: the library caps a k range at the runs' depth and says so
    kinds: list[tuple[SweepKind, str]] = []
    if ks is not None or budgets is None:
        kinds.append(("k", ks or "1..20"))
    if budgets is not None:
        kinds.append(("budget", budgets))
    named = run_names(runs, names)
    sweeps = []
    for i, m in enumerate(parse_list(metrics)):
        for j, (kind, cutoffs) in enumerate(kinds):
            head = (headroom_k or None) if i == j == 0 else None  # headroom given once
            if golden is not None:
                sweeps.append(
                    _span_sweep(golden, chunks, runs, named, m, cutoffs, kind, head, cover)
                )
            else:
                from ..paired import sweep

                sweeps.append(
                    sweep(qrels, dict(zip(named, runs, strict=True)), m, cutoffs, headroom_k=head)
                )
    return sweeps


# -- stored runs (the lab) ------------------------------------------------------------------------
@dataclass(frozen=True)
class SpanSource:
    """A stored run made ready for a span sweep: its golden set, the chunking its ranked items
    are chunks of (``has_chunking`` False when it was rebuilt from stored offsets, without token
    counts), its ranked lists as a run, and the experiment's headroom k and cover."""

    golden: GoldenSet
    #: None for a document-level run (its items are documents; sweep_spans says what it needs)
    chunking: Chunking | None
    run: Run
    has_chunking: bool
    headroom_k: int
    cover: float
    #: the item qrels nDCG (and P) are scored on: the chunk qrels derived from the spans for
    #: this chunking, or a document-level run's document qrels; None when there are none
    qrels: Any = None


@dataclass(frozen=True)
class StoredSweep:
    """A sweep of stored runs: the runs, the sweep, the kind and cutoffs swept (as text), and
    the prompt cutoffs the runs recorded (``prompt``: the smallest; past it is headroom)."""

    runs: tuple[RunRecord, ...]
    sweep: Sweep
    kind: SweepKind
    cutoffs: str
    prompt_cuts: tuple[int, ...]

    @property
    def prompt(self) -> int | None:
        return self.prompt_cuts[0] if self.prompt_cuts else None


def stored_sweep(
    store: Store,
    run_ids: Sequence[int],
    *,
    metric: str,
    settings: Callable[[RunRecord], Mapping[str, Any]],
    prepare: Callable[[RunRecord], SpanSource],
    kind: str | None = None,
    cutoffs: str | None = None,
) -> StoredSweep:
    """``metric`` against k or the token budget for stored runs of one golden-set version.

    ``settings`` reads a run's recorded variant settings (chunker, k, budget); ``prepare``
    makes a run ready to score. Without ``kind``, runs of different chunkers with budgets are
    compared at equal budgets, others at k; without ``cutoffs``, 1 to the headroom k, or six
    steps up to twice the largest recorded budget."""
    from ..paired import sweep_spans

    if not run_ids:
        raise UsageError("pick at least one run")
    runs = tuple(store.run(int(i)) for i in run_ids)
    versions = {r.golden_version for r in runs}
    if len(versions) > 1:
        raise UsageError(
            "the runs were scored on different golden-set versions "
            f"({', '.join(sorted(str(v) for v in versions))}): sweep runs of one version"
        )
    recorded = [settings(r) for r in runs]
    chunkers = {str(s.get("chunker") or s.get("chunks")) for s in recorded}
    budgets = {int(s["budget"]) for s in recorded if s.get("budget")}
    span_level = metric in span_metrics()
    if kind is None:  # chunkings differ: compare at equal context budgets (span metrics)
        kind = "budget" if len(chunkers) > 1 and budgets and span_level else "k"
    if kind not in ("k", "budget"):
        raise UsageError(f"sweep over k or budget, got {kind!r}")
    swept: SweepKind = "budget" if kind == "budget" else "k"
    sources = [(r, prepare(r)) for r in runs]
    lacking = [r.id for r, s in sources if not s.has_chunking]
    if lacking and swept == "budget":
        raise UsageError(f"runs {lacking} have no chunking here: a token budget needs one")
    first = sources[0][1]
    if not span_level:
        _check_item_metric(metric, swept, chunkers, [(r.id, src) for r, src in sources])
    if cutoffs is None:
        if swept == "budget":
            b = max(budgets) if budgets else 1200
            step = max(100, round(b / 6 / 100) * 100)
            cutoffs = f"{step}..{2 * b}:{step}"
        else:
            cutoffs = f"1..{first.headroom_k}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not span_level:  # one chunking's (or the documents') item qrels: the engine's sweep
            from ..paired import sweep

            s = sweep(
                first.qrels,
                {f"{r.id}: {r.name}": src.run for r, src in sources},
                metric,
                cutoffs,
                headroom_k=first.headroom_k,
            )
            return StoredSweep(runs, s, swept, cutoffs, _prompt_cuts(recorded, swept))
        s = sweep_spans(
            first.golden,
            {f"{r.id}: {r.name}": (src.chunking, src.run) for r, src in sources},
            metric,
            cutoffs,
            kind=swept,
            headroom_k=first.headroom_k,
            cover=first.cover,
        )
    return StoredSweep(runs, s, swept, cutoffs, _prompt_cuts(recorded, swept))


def _prompt_cuts(recorded: Sequence[Mapping[str, Any]], swept: SweepKind) -> tuple[int, ...]:
    return tuple(
        sorted(
            {
                int(st["budget"]) if swept == "budget" else int(st.get("k") or 0)
                for st in recorded
                if (st.get("budget") if swept == "budget" else st.get("k"))
            }
        )
    )


def span_metrics() -> tuple[str, ...]:
    """The metrics a sweep scores on span labels at any cutoff, k or token budget (the
    registry's ``budget`` metrics: R, Hit, RR, AllR)."""
    from ..metrics import REGISTRY

    return tuple(m.name for m in REGISTRY.values() if m.budget)


def item_metrics() -> tuple[str, ...]:
    """The metrics a sweep of stored runs scores on item qrels, over k only: nDCG (and P),
    where the runs share one chunking (or are document-level runs)."""
    return ("nDCG", "P")


def _check_item_metric(
    metric: str,
    swept: SweepKind,
    chunkers: set[str],
    sources: Sequence[tuple[int, SpanSource]],
) -> None:
    """UsageError, in words, unless ``metric`` (scored on item qrels) can be swept for these
    runs: over k, all of one chunking (the qrels' ideal order is that chunking's), with qrels."""
    if metric not in item_metrics():
        raise UsageError(
            f"a sweep draws one of {', '.join((*span_metrics(), *item_metrics()))}, got {metric!r}"
        )
    if swept == "budget":
        raise UsageError(
            f"{metric} is defined at a fixed k, not at a token budget: sweep it over k, or "
            "sweep R, Hit, RR or AllR over the budget"
        )
    if len(chunkers) > 1:
        raise UsageError(
            f"{metric} is scored on chunk qrels within one chunking, and these runs chunk "
            f"differently ({', '.join(sorted(chunkers))}): its ideal order differs between "
            "them. Sweep runs of one chunking on it, or compare chunkings on R, Hit, RR or "
            "AllR at equal token budgets"
        )
    lacking = [rid for rid, src in sources if src.qrels is None]
    if lacking:
        raise UsageError(
            f"{metric} needs every chunk of the chunking (its ideal order), which runs "
            f"{lacking} do not have here: their chunking was rebuilt from stored offsets"
        )
