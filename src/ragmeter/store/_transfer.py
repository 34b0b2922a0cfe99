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

An import trusts nothing it reads: :mod:`._import_plan` validates every file and the files of
each variant against each other before anything is written, reporting every problem at once;
then :func:`insert_plan` inserts every run ``finished`` (never ``running``), with its
evaluations, ranked lists and ledger entries, in one transaction, so a failure at any point
leaves the store as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ._import_plan import ImportPlan
    from ._store import Store

#: evaluation file name per stored level
FILES = {
    "span": "evaluation.json",
    "document": "evaluation.json",
    "eval": "evaluation.json",
    "chunk": "chunk_evaluation.json",
}


def export_run(store: Store, run_id: int, out: Path) -> list[Path]:
    from ..experiments._outputs import write_json
    from ..io._atomic import write_text_lines

    rec = store.run(run_id)
    if rec.status != "finished":
        raise UsageError(f"run {run_id} is {rec.status}: only a finished run can be exported")
    ranked = store.ranked(run_id) if rec.has_ranked else None
    if ranked is not None:  # checked before any file is written
        from ..experiments._ranked import first_with_space

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


def import_path(store: Store, path: Path) -> list[int]:
    """Import what ``path`` holds (see the module docstring); returns the new run ids."""
    from ._import_plan import plan_import

    return insert_plan(store, plan_import(path))


def import_ledger(store: Store, path: Path) -> int:
    """Append a JSONL selection ledger's entries to the store's ledger; returns how many."""
    from ._import_plan import ImportPlan, Problems, ledger_entries

    problems = Problems()
    entries = ledger_entries(path, problems)
    problems.raise_if_any(path)
    insert_plan(store, ImportPlan(ledger=tuple(entries)))
    return len(entries)


def insert_plan(store: Store, plan: ImportPlan) -> list[int]:
    """Insert every run of ``plan`` finished, with its evaluations and ranked lists, and every
    ledger entry, in one transaction: all of it is stored or none (never a ``running`` or
    ``interrupted`` run left behind). The Parquet bytes are made first, outside it."""
    from . import _models as m
    from ._engine import writing
    from ._runs import insert_finished_run, prepare_results
    from ._values import json_ready, new_invocation

    ready = [(r, prepare_results(store, r.evaluations, r.ranked, r.fields)) for r in plan.runs]
    invocation = new_invocation()
    with writing(store.engine) as conn:
        ids = [
            insert_finished_run(
                conn,
                store,
                r.spec,
                results,
                invocation=invocation,
                provenance=r.provenance,
                chunking=r.chunking,
                started_at=r.times[0],
                finished_at=r.times[1],
            )
            for r, results in ready
        ]
        for entry in plan.ledger:  # validated: every column's key is there, as a string
            e = json_ready(dict(entry))
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
    return ids
