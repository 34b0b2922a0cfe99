"""What the experiment store remembers (``ragmeter runs list|show|delete|export|import``): list
stored runs, show one with its evaluations and settings, delete runs after naming each, export a
run's files, import files written before the store.

The command line opens the store, calls one of these and renders the records it gets back.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ..metrics import Evaluation
    from ..store import Imported, RunRecord, Store

__all__ = [
    "DamagedRun",
    "RunsListed",
    "ShownRun",
    "delete_runs",
    "export_run",
    "import_paths",
    "list_runs",
    "runs_to_delete",
    "show_run",
]


@dataclass(frozen=True)
class RunsListed:
    """Stored runs, newest first, and how many more match than were listed (beyond the limit;
    damaged runs, each already warned about, are not counted)."""

    records: list[RunRecord]
    more: int

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        """The header and one row per run (``runs list --format csv``): its fields, then a
        column per metric any run has (six decimals; empty where a run has none)."""
        names = list(dict.fromkeys(k for r in self.records for k in r.metrics))
        header = [
            *("id", "experiment", "variant", "kind", "status", "baseline", "golden_version"),
            *("started", "finished", "changes", *names),
        ]
        rows: list[list[object]] = []
        for r in self.records:
            d = r.to_dict()
            rows.append(
                [
                    *(r.id, r.experiment, r.name, r.kind, r.status, int(r.is_baseline)),
                    *(r.golden_version or "", d["started_at"], d["finished_at"] or ""),
                    "; ".join(r.changes),
                    *("" if (v := r.metrics.get(n)) is None else f"{v:.6f}" for n in names),
                ]
            )
        return header, rows


def list_runs(
    store: Store,
    *,
    experiment: str | None = None,
    golden: str | None = None,
    status: str | None = None,
    limit: int | None = None,
) -> RunsListed:
    """The runs of ``experiment`` on golden-set version ``golden`` with ``status``, newest
    first, at most ``limit`` (None: all). As :meth:`Store.runs`, runs of dead processes are
    marked interrupted first, and each damaged run is one warning naming it."""
    page = store.runs_page(experiment=experiment, golden_version=golden, status=status, limit=limit)
    records = list(page.records)
    return RunsListed(records, page.total - len(records) - len(page.damaged))


@dataclass(frozen=True)
class ShownRun:
    """One stored run: its record, its evaluation at every level it has, and its settings
    flattened to dotted names."""

    record: RunRecord
    evaluations: dict[str, Evaluation]
    settings: dict[str, object]

    def to_dict(self) -> dict[str, Any]:
        """The record with each level's question count and means (``runs show --format
        json``)."""
        d = self.record.to_dict()
        d["evaluations"] = {
            lvl: {"n_queries": e.n_queries, "metrics": dict(e.aggregate)}
            for lvl, e in self.evaluations.items()
        }
        return d


def show_run(store: Store, run_id: int) -> ShownRun:
    """The run ``run_id`` with the evaluations of all its levels and its settings."""
    from ..paired import flatten

    r = store.run(run_id)
    evals = {lvl: store.evaluation(run_id, lvl) for lvl in r.levels}
    return ShownRun(r, evals, flatten(dict(r.config)))


@dataclass(frozen=True)
class DamagedRun:
    """A run whose row cannot be read back (it can still be deleted): its id and what is
    wrong."""

    id: int
    what: str


def runs_to_delete(store: Store, run_ids: Sequence[int]) -> list[RunRecord | DamagedRun]:
    """Every run of ``run_ids`` (once each, in order) read before anything is deleted: a run
    the store lacks fails here; a damaged one is named as such."""
    from ..store import DamagedRowError

    out: list[RunRecord | DamagedRun] = []
    for i in dict.fromkeys(run_ids):
        try:
            out.append(store.run(i))
        except DamagedRowError as exc:  # a damaged run can still be deleted
            out.append(DamagedRun(i, exc.what))
    return out


def delete_runs(store: Store, run_ids: Sequence[int]) -> None:
    """Delete the runs with their evaluations and ranked lists; comparisons that used them keep
    their numbers."""
    for i in dict.fromkeys(run_ids):
        store.delete_run(i)


def export_run(
    store: Store, run_id: int, out: str | os.PathLike[str], *, force: bool = False
) -> list[Path]:
    """Write the run's files into the folder ``out`` (as ``ragmeter run`` writes a variant's);
    files already there are replaced only with ``force``. Returns the paths written."""
    from ..store import export_files

    folder = Path(out)
    r = store.run(run_id)
    there = [n for n in export_files(r) if (folder / n).exists()]
    if there and not force:
        raise UsageError(f"{out} already holds {', '.join(there)}; pass --force to replace them")
    return store.export_run(run_id, folder)


def import_paths(store: Store, paths: Sequence[str | os.PathLike[str]]) -> Imported:
    """Bring files ragmeter wrote before the store into it, all in one transaction or none;
    runs and ledger entries already stored are skipped (:meth:`Store.import_paths`)."""
    return store.import_paths(paths)
