"""Stored runs to and from the files ragmeter wrote before the store (nothing made is lost).

``export_run`` writes a run folder as ``ragmeter run`` writes one: ``config.json``,
``evaluation.json`` (and ``chunk_evaluation.json``), ``run.trec`` when the ranked lists were
stored, plus ``run.json`` (the store's record). ``import_path`` reads back:

* an experiment's output folder (``summary.json`` and one folder per variant);
* one variant folder (``config.json`` + ``evaluation.json`` [+ ``chunk_evaluation.json``,
  ``run.trec``/``run.parquet``, ``document_run.*`` at document level]; an export's
  ``run.json``, whose record then comes back as it was);
* a JSON file of evaluation records (``ragmeter eval --per-query --format json``);
* a selection ledger (``ledger.jsonl``).

An import trusts nothing it reads: :mod:`._import_plan` validates every file of every PATH and
the files of each variant against each other before anything is written, reporting every
problem at once; then :func:`insert_plans` inserts every run ``finished`` (never ``running``),
with its evaluations, ranked lists and ledger entries, in one transaction for all the PATHs,
so a failure at any point leaves the store as it was. A run or ledger entry the store already
holds is skipped, not stored twice (:mod:`._import_seen`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ._import_plan import ImportPlan, RunImport
    from ._import_seen import Identity
    from ._records import RunRecord
    from ._store import Store

#: evaluation file name per stored level
FILES = {
    "span": "evaluation.json",
    "document": "evaluation.json",
    "eval": "evaluation.json",
    "chunk": "chunk_evaluation.json",
}


def export_files(record: RunRecord) -> list[str]:
    """The names of the files :func:`export_run` writes for ``record``, in its order."""
    names = [FILES[level] for level in record.levels] + ["config.json", "run.json"]
    return names + (["run.trec"] if record.has_ranked else [])


def export_run(store: Store, run_id: int, out: Path) -> list[Path]:
    from ..experiments import write_json
    from ..io import write_text_lines

    rec = store.run(run_id)
    if rec.status != "finished":
        raise UsageError(f"run {run_id} is {rec.status}: only a finished run can be exported")
    ranked = store.ranked(run_id) if rec.has_ranked else None
    if ranked is not None:  # checked before any file is written
        from ..experiments import first_with_space

        bad = first_with_space(*(ranked.column(c).combine_chunks() for c in ("qid", "item")))
        if bad is not None:
            raise UsageError(
                f"run {run_id} cannot be exported: id {bad!r} contains whitespace, which a TREC "
                "run file (run.trec) cannot hold"
            )
    written: list[Path] = []
    for level in rec.levels:
        e = store.evaluation(run_id, level)
        written.append(write_json(e.to_dict(), out / FILES[level]))
    written.append(write_json(dict(rec.config), out / "config.json"))
    written.append(write_json(rec.to_dict(), out / "run.json"))
    if ranked is not None:
        t = ranked
        tag = "".join(ch if not ch.isspace() else "_" for ch in rec.name) or "run"
        rows = zip(
            t.column("qid").to_pylist(),
            t.column("item").to_pylist(),
            t.column("rank").to_pylist(),
            t.column("score").to_pylist(),
            strict=True,
        )
        written.append(
            write_text_lines(
                out / "run.trec", (f"{q} Q0 {d} {r} {s!r} {tag}" for q, d, r, s in rows)
            )
        )
    return written


@dataclass(frozen=True)
class PathImported:
    """What one PATH of an import gave: the runs stored, those already in the store, the
    ledger entries stored and those already there."""

    path: Path
    #: the store's id of every run the PATH holds, in its order: new, or the one already there
    ids: tuple[int, ...] = ()
    #: the runs stored by this import
    new: tuple[int, ...] = ()
    #: (the run's "experiment / variant", the id of the same run already in the store)
    skipped: tuple[tuple[str, int], ...] = ()
    ledger: int = 0
    ledger_skipped: int = 0


@dataclass(frozen=True)
class Imported:
    """What :func:`import_paths` did, PATH by PATH."""

    paths: tuple[PathImported, ...]

    @property
    def new(self) -> list[int]:
        """Every run this import stored."""
        return [i for p in self.paths for i in p.new]

    @property
    def skipped(self) -> list[tuple[str, int]]:
        return [s for p in self.paths for s in p.skipped]


def import_path(store: Store, path: Path) -> list[int]:
    """Import what ``path`` holds (see the module docstring); returns the store's id of each of
    its runs: the new run, or the same run already in the store (:mod:`._import_seen`)."""
    return list(import_paths(store, [path]).paths[0].ids)


def import_paths(store: Store, paths: Sequence[str | os.PathLike[str]]) -> Imported:
    """Import every PATH in one plan and one transaction: every file of every PATH is checked
    first (every problem of every PATH raised at once), then all is stored, or nothing. Runs and
    ledger entries already in the store (or met earlier in the import) are skipped."""
    from ._import_plan import plan_paths

    if isinstance(paths, str | bytes | os.PathLike):  # one path would be read as its letters
        raise UsageError("import_paths takes a list of paths (import_path takes one)")
    return insert_plans(store, plan_paths([Path(p) for p in paths]))


def insert_plans(store: Store, plans: Sequence[tuple[Path, ImportPlan]]) -> Imported:
    """Insert every run of every plan finished, with its evaluations and ranked lists, and every
    ledger entry, in one transaction: all of it is stored or none (never a ``running`` or
    ``interrupted`` run left behind). The Parquet bytes are made first, outside it. A run or an
    entry already in the store, or earlier in ``plans``, is skipped (:mod:`._import_seen`): it
    is looked for inside the transaction, so two imports of one folder at once store it once
    on SQLite, whose writers take turns."""
    from . import _models as m
    from ._engine import writing
    from ._import_seen import entry_key, run_identity, stored_entries, stored_twin
    from ._runs import insert_finished_run, prepare_results
    from ._values import json_ready, new_invocation

    runs = [(i, r, run_identity(r)) for i, (_, plan) in enumerate(plans) for r in plan.runs]
    first: dict[Identity, int] = {}  # identity -> the index in runs of its first
    for n, (_, _, identity) in enumerate(runs):
        first.setdefault(identity, n)
    ready = {
        n: prepare_results(store, r.evaluations, r.ranked, r.fields)
        for n, (_, r, identity) in enumerate(runs)
        if first[identity] == n
    }
    invocation = new_invocation()
    ids: list[int] = []
    is_new: list[bool] = []
    ledger: list[list[int]] = [[0, 0] for _ in plans]  # per plan: stored, skipped
    with writing(store.engine) as conn:
        for n, (_, r, identity) in enumerate(runs):
            if first[identity] != n:  # the same run earlier in this import
                ids.append(ids[first[identity]])
                is_new.append(False)
                continue
            twin = stored_twin(conn, store, r, identity)
            if twin is not None:
                ids.append(twin)
                is_new.append(False)
                continue
            ids.append(
                insert_finished_run(
                    conn,
                    store,
                    r.spec,
                    ready[n],
                    invocation=invocation,
                    provenance=r.provenance,
                    chunking=r.chunking,
                    started_at=r.times[0],
                    finished_at=r.times[1],
                )
            )
            is_new.append(True)
        versions = [str(e["golden_version"]) for _, p in plans for e in p.ledger]
        seen = stored_entries(conn, versions)
        for i, (_, plan) in enumerate(plans):
            for entry in plan.ledger:  # validated: every column's key is there, as a string
                e = json_ready(dict(entry))
                key = entry_key(e)
                if key in seen:
                    ledger[i][1] += 1
                    continue
                seen.add(key)
                conn.execute(
                    m.ledger.insert().values(
                        time=e["time"],
                        golden_version=e["golden_version"],
                        metric=e["metric"],
                        baseline=e["baseline"],
                        candidate=e["candidate"],
                        entry=e,
                    )
                )
                ledger[i][0] += 1
    return Imported(
        tuple(
            _path_imported(path, i, runs, ids, is_new, ledger[i])
            for i, (path, _) in enumerate(plans)
        )
    )


def _path_imported(
    path: Path,
    index: int,
    runs: list[tuple[int, RunImport, Identity]],
    ids: list[int],
    is_new: list[bool],
    ledger: list[int],
) -> PathImported:
    """What the plan at ``index`` (of ``path``) gave, from the import's runs (each with the
    index of its plan), their ids and whether each was stored."""
    mine = [n for n, (i, _, _) in enumerate(runs) if i == index]
    skipped = [
        (f"{runs[n][1].spec['experiment']} / {runs[n][1].spec['name']}", ids[n])
        for n in mine
        if not is_new[n]
    ]
    return PathImported(
        path=path,
        ids=tuple(ids[n] for n in mine),
        new=tuple(ids[n] for n in mine if is_new[n]),
        skipped=tuple(skipped),
        ledger=ledger[0],
        ledger_skipped=ledger[1],
    )
