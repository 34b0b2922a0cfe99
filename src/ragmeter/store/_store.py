"""``Store``: the experiment store's one entry point (``ragmeter.Store``).

Every run, evaluation, comparison, answer set and judge validation a command makes is recorded
here; records come back as the same objects the library returns (:class:`Evaluation`,
:class:`Comparison`). See docs/store.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import NotFoundError, UsageError
from . import _models as m
from ._blobs import Blobs
from ._engine import make_engine, reading, writing
from ._migrate import ensure_schema
from ._process import alive, host
from ._records import RunRecord, evaluation_from, utc
from ._url import artifact_root, display_url, resolve_url
from ._values import now

if TYPE_CHECKING:  # pragma: no cover
    from ..data._golden_set import GoldenSet
    from ..metrics._evaluation import Evaluation
    from ..paired._comparison import Comparison
    from ._results import StoreLedger


class Store:
    """The experiment store at one database URL (see :meth:`open`)."""

    def __init__(self, url: str, engine: Any) -> None:
        self.url = url
        self.engine = engine
        self.blobs = Blobs(artifact_root(url))

    # -- opening -------------------------------------------------------------------------------
    @classmethod
    def open(cls, url: str | None = None, *, migrate: bool | None = None) -> Store:
        """Open the store at ``url`` (default: ``RAGMETER_DATABASE_URL``, else
        ``sqlite:///.ragmeter/ragmeter.db`` under the current folder).

        A SQLite store is created and migrated on open; a server database must have been
        migrated with ``ragmeter db upgrade`` (``migrate=True`` does it here). A database whose
        schema is newer than this ragmeter's is refused (:class:`StoreSchemaError`).
        """
        resolved = resolve_url(url)
        engine = make_engine(resolved)
        try:
            ensure_schema(engine, resolved, migrate)
        except BaseException:
            engine.dispose()
            raise
        return cls(resolved, engine)

    @property
    def display_url(self) -> str:
        return display_url(self.url)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.display_url!r})"

    # -- golden sets, corpora, chunkings -------------------------------------------------------
    def put_golden(self, golden: GoldenSet, name: str | None = None) -> str:
        """Record a golden-set version (immutable: a version already stored is kept as is)."""
        import pyarrow as pa
        import sqlalchemy as sa

        version = golden.version
        with reading(self.engine) as conn:
            if conn.execute(
                sa.select(m.golden_versions.c.version).where(m.golden_versions.c.version == version)
            ).first():
                return version
        qs = list(golden)
        table = pa.table(
            {
                "id": pa.array([q.id for q in qs], pa.string()),
                "split": pa.array([q.split for q in qs], pa.string()),
                "slices": pa.array([list(q.slices) for q in qs], pa.list_(pa.string())),
                "record": pa.array([q.model_dump_json(exclude_none=True) for q in qs]),
            }
        )
        with writing(self.engine) as conn:
            blob = self.blobs.put_table(conn, table)
            from ._blobs import _insert_ignore

            conn.execute(
                _insert_ignore(conn, m.golden_versions).values(
                    version=version,
                    name=name,
                    n_questions=len(qs),
                    n_spans=sum(len(q.evidence) for q in qs),
                    labels_digest=golden.labels_digest,
                    slices=golden.slice_sizes(),
                    splits={
                        s: sum(1 for q in qs if q.split == s) for s in sorted({q.split for q in qs})
                    },
                    questions_blob=blob,
                    created_at=now(),
                )
            )
        return version

    def golden(self, version: str) -> GoldenSet:
        """The questions and span labels of a stored golden-set version."""
        import sqlalchemy as sa

        from ..data._golden_set import GoldenSet
        from ..data._schema import Question

        with reading(self.engine) as conn:
            row = conn.execute(
                sa.select(m.golden_versions).where(m.golden_versions.c.version == version)
            ).first()
            if row is None:
                raise NotFoundError(f"the store holds no golden-set version {version!r}")
            table = self.blobs.get_table(conn, row.questions_blob)
        return GoldenSet(
            [Question.model_validate_json(r) for r in table.column("record").to_pylist()]
        )

    def golden_versions(self) -> list[dict[str, Any]]:
        import sqlalchemy as sa

        with reading(self.engine) as conn:
            rows = conn.execute(
                sa.select(m.golden_versions).order_by(m.golden_versions.c.created_at)
            ).all()
        return [
            {
                "version": r.version,
                "name": r.name,
                "n_questions": r.n_questions,
                "n_spans": r.n_spans,
                "slices": r.slices,
                "splits": r.splits,
                "created_at": utc(r.created_at),
            }
            for r in rows
        ]

    def set_corpus(self, run_ids: Sequence[int], corpus: Any, source: str | None = None) -> str:
        """Record the corpus (its fingerprint) the runs retrieved from."""
        import sqlalchemy as sa

        from ._runs import corpus_row

        fingerprint = corpus.fingerprint
        with writing(self.engine) as conn:
            corpus_row(conn, fingerprint, len(corpus), source)
            conn.execute(
                sa.update(m.runs)
                .where(m.runs.c.id.in_([int(i) for i in run_ids]))
                .values(corpus=fingerprint)
            )
        return fingerprint

    # -- runs ----------------------------------------------------------------------------------
    def start_run(
        self,
        *,
        experiment: str,
        name: str,
        config: Mapping[str, Any] | None = None,
        golden_version: str | None = None,
        kind: str = "experiment",
        label: str | None = None,
        is_baseline: bool = False,
        invocation: str | None = None,
        file: str | os.PathLike[str] | None = None,
        changes: Sequence[str] = (),
        provenance: Mapping[str, Any] | None = None,
    ) -> int:
        """Record a run as ``running`` (by this process); returns its id."""
        from ._runs import start_runs

        return start_runs(
            self,
            [
                dict(
                    experiment=experiment,
                    name=name,
                    config=config or {},
                    golden_version=golden_version,
                    kind=kind,
                    label=label,
                    is_baseline=is_baseline,
                    file=file,
                    changes=changes,
                )
            ],
            invocation=invocation,
            provenance=provenance,
        )[0]

    def finish_run(
        self,
        run_id: int,
        *,
        evaluations: Mapping[str, Evaluation | None],
        ranked: Any = None,
        golden: GoldenSet | None = None,
        **fields: Any,
    ) -> None:
        """Store a run's evaluations (and ranked list) and mark it ``finished``, in one
        transaction: a run is finished with all its rows, or not at all."""
        from ._runs import finish_run

        finish_run(self, run_id, evaluations=evaluations, ranked=ranked, golden=golden, **fields)

    def fail_run(self, run_id: int, *, status: str = "failed", message: str = "") -> None:
        from ._runs import end_unfinished

        end_unfinished(self, [run_id], status=status, message=message)

    def record_evaluation(
        self,
        evaluation: Evaluation,
        *,
        experiment: str = "eval",
        name: str | None = None,
        source: str | os.PathLike[str] | None = None,
        kind: str = "eval",
        ranked: Any = None,
    ) -> int:
        """Record one scored run (``ragmeter eval``) as a finished run; returns its id."""
        run_id = self.start_run(
            experiment=experiment,
            name=name or evaluation.run,
            config=evaluation.config,
            golden_version=evaluation.golden_version,
            kind=kind,
            file=source,
        )
        self.finish_run(
            run_id,
            evaluations={"eval": evaluation},
            ranked=ranked,
            metrics=evaluation.aggregate,
            source=None if source is None else str(source),
        )
        return run_id

    def reap(self) -> int:
        """Mark ``interrupted`` every run left ``running`` by a process of this host that is
        gone; returns how many."""
        import sqlalchemy as sa

        with reading(self.engine) as conn:
            rows = conn.execute(
                sa.select(m.runs.c.id, m.runs.c.pid, m.runs.c.process_start).where(
                    m.runs.c.status == "running", m.runs.c.host == host()
                )
            ).all()
        dead = [r.id for r in rows if not alive(r.pid, r.process_start)]
        if dead:
            from ._runs import end_unfinished

            end_unfinished(
                self,
                dead,
                status="interrupted",
                message="the process that ran it ended before it finished",
            )
        return len(dead)

    def runs(
        self,
        *,
        experiment: str | None = None,
        golden_version: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[RunRecord]:
        """Stored runs, newest first (runs of dead processes are marked interrupted first)."""
        from ._runs import select_runs

        self.reap()
        return select_runs(
            self, experiment=experiment, golden_version=golden_version, status=status, limit=limit
        )

    def run(self, run_id: int) -> RunRecord:
        from ._runs import select_runs

        found = select_runs(self, ids=[int(run_id)])
        if not found:
            raise NotFoundError(f"the store {self.display_url} has no run {run_id}")
        return found[0]

    def evaluation(self, run_id: int, level: str | None = None) -> Evaluation:
        """A run's :class:`Evaluation` (``level``: span, chunk, document or eval; default the
        run's first)."""
        import sqlalchemy as sa

        # one connection and no RunRecord: loading a 100k-question run stays near the cost of
        # reading its Parquet file (benchmarks/bench_store.py)
        with reading(self.engine) as conn:
            rows = conn.execute(
                sa.select(m.evaluations)
                .where(m.evaluations.c.run_id == int(run_id))
                .order_by(m.evaluations.c.id)
            ).all()
            if not rows:
                status = conn.execute(
                    sa.select(m.runs.c.status).where(m.runs.c.id == int(run_id))
                ).scalar_one_or_none()
                if status is None:
                    raise NotFoundError(f"the store {self.display_url} has no run {run_id}")
                raise UsageError(f"run {run_id} has no evaluation (status: {status})")
            levels = [r.level for r in rows]
            lvl = level or levels[0]
            if lvl not in levels:
                raise NotFoundError(
                    f"run {run_id} has no {lvl}-level evaluation (has: {', '.join(levels)})"
                )
            row = rows[levels.index(lvl)]
            values = self.blobs.get_table(conn, row.values_blob)
            extras = self.blobs.get_json(conn, row.extras_blob)
        return evaluation_from(row, values, extras)

    def ranked(self, run_id: int) -> Any:
        """The ranked lists a run retrieved: qid, rank, item, doc, start, end, score."""
        import sqlalchemy as sa

        with reading(self.engine) as conn:
            row = conn.execute(
                sa.select(m.runs.c.ranked_blob).where(m.runs.c.id == int(run_id))
            ).first()
            if row is None:
                raise NotFoundError(f"the store {self.display_url} has no run {run_id}")
            if row.ranked_blob is None:
                raise NotFoundError(f"run {run_id} has no stored ranked lists")
            return self.blobs.get_table(conn, row.ranked_blob)

    def delete_run(self, run_id: int) -> None:
        """Delete a run with its evaluations; comparisons that used it keep their numbers."""
        import sqlalchemy as sa

        self.run(run_id)
        with writing(self.engine) as conn:
            conn.execute(sa.delete(m.runs).where(m.runs.c.id == int(run_id)))
            files = self.blobs.collect(conn)
        for f in files:
            f.unlink(missing_ok=True)

    # -- comparisons, ledger, answers, judges ----------------------------------------------
    def record_comparison(
        self,
        comparison: Comparison,
        *,
        baseline_run: int | None = None,
        candidate_run: int | None = None,
    ) -> int:
        from ._results import record_comparison

        return record_comparison(self, comparison, baseline_run, candidate_run)

    def comparison(self, comparison_id: int) -> Comparison:
        from ._results import load_comparison

        return load_comparison(self, comparison_id)

    def comparisons(self, *, golden_version: str | None = None) -> list[dict[str, Any]]:
        from ._results import list_comparisons

        return list_comparisons(self, golden_version)

    @property
    def ledger(self) -> StoreLedger:
        from ._results import StoreLedger

        return StoreLedger(self)

    def record_answers(self, **kwargs: Any) -> int:
        from ._results import record_answers

        return record_answers(self, **kwargs)

    def record_judge_validation(self, **kwargs: Any) -> int:
        from ._results import record_judge_validation

        return record_judge_validation(self, **kwargs)

    # -- files ---------------------------------------------------------------------------------
    def export_run(self, run_id: int, out: str | os.PathLike[str]) -> list[Path]:
        from ._transfer import export_run

        return export_run(self, int(run_id), Path(out))

    def import_path(self, path: str | os.PathLike[str]) -> list[int]:
        from ._transfer import import_path

        return import_path(self, Path(path))
