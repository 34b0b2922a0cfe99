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

from .._errors import NotFoundError, RagmeterError, UsageError
from . import _models as m
from ._blobs import Blobs
from ._engine import make_engine, read_only, reading, writing
from ._migrate import ensure_schema
from ._process import alive, host
from ._records import RunRecord, evaluation_from
from ._url import artifact_root, display_url, resolve_url
from ._values import now

if TYPE_CHECKING:  # pragma: no cover
    from sqlalchemy.engine import Engine

    from ..data import Corpus, GoldenSet
    from ..metrics import Evaluation
    from ..paired import Comparison
    from ._labelling import ItemRow, LabellerRow, LabelRow, NewItem, QueueRow
    from ._listings import (
        AnswerSetRow,
        ComparisonRow,
        GoldenVersionRow,
        JudgeValidationRow,
        RunPage,
        StoredAnswerSet,
        StoredJudgeValidation,
    )
    from ._results import StoreLedger
    from ._transfer import Imported
    from ._trends import TrendPoint


class Store:
    """The experiment store at one database URL (see :meth:`open`)."""

    def __init__(self, url: str, engine: Engine) -> None:
        self.url = url
        self.engine = engine
        self.blobs = Blobs(artifact_root(url))
        #: this process cannot write the store (a read-only file, folder or server session):
        #: reading works, reaping is skipped, a write fails naming the store (docs/store.md)
        self.read_only = read_only(engine)

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
    def put_golden(
        self, golden: GoldenSet, name: str | None = None, parent: str | None = None
    ) -> str:
        """Record a golden-set version (immutable: a version already stored is kept as is);
        ``parent``: the version it was made from (a labelling queue's, ``golden freeze
        --parent``)."""
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
                    parent=parent,
                )
            )
        return version

    def golden(self, version: str) -> GoldenSet:
        """The questions and span labels of a stored golden-set version."""
        import sqlalchemy as sa

        from ..data import GoldenSet, Question
        from ._damage import DamagedRowError, part_of

        where = f"{version!r}"
        with reading(self.engine) as conn:
            row = conn.execute(
                sa.select(m.golden_versions.c.questions_blob).where(
                    m.golden_versions.c.version == version
                )
            ).first()
            if row is None:
                raise NotFoundError(f"the store holds no golden-set version {version!r}")
            with part_of("golden_versions", where, "its questions"):
                table = self.blobs.get_table(conn, row.questions_blob)
        try:
            return GoldenSet(
                [Question.model_validate_json(r) for r in table.column("record").to_pylist()]
            )
        except (KeyError, ValueError, TypeError, RagmeterError) as exc:
            why = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise DamagedRowError(
                "golden_versions", where, f"its questions do not read back: {why}"
            ) from None

    def golden_versions(self) -> list[GoldenVersionRow]:
        """The stored golden-set versions, oldest first (a damaged one is left out with a
        warning naming it)."""
        from ._listings import golden_versions

        return golden_versions(self)

    def set_corpus(self, run_ids: Sequence[int], corpus: Corpus, source: str | None = None) -> str:
        """Record the corpus (its fingerprint) the runs retrieved from."""
        import sqlalchemy as sa

        from ._runs import corpus_row

        fingerprint = corpus.fingerprint
        ids = self._ids(run_ids)
        with writing(self.engine) as conn:
            corpus_row(conn, fingerprint, len(corpus), source)
            conn.execute(sa.update(m.runs).where(m.runs.c.id.in_(ids)).values(corpus=fingerprint))
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

        rid = self._id(run_id)
        finish_run(self, rid, evaluations=evaluations, ranked=ranked, golden=golden, **fields)

    def fail_run(self, run_id: int, *, status: str = "failed", message: str = "") -> None:
        from ._runs import end_unfinished

        end_unfinished(self, self._ids([run_id]), status=status, message=message)

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
        gone; returns how many (none on a read-only store, which stays as it is)."""
        import sqlalchemy as sa

        if self.read_only:
            return 0
        with reading(self.engine) as conn:
            rows = conn.execute(
                sa.select(m.runs.c.id, m.runs.c.pid, m.runs.c.process_start).where(
                    m.runs.c.status == "running", m.runs.c.host == host()
                )
            ).all()
        # a pid that is not a process id (a damaged row) is left alone: never a signal or a
        # /proc path made from it
        dead = [
            r.id
            for r in rows
            if isinstance(r.pid, int)
            and 0 < r.pid < 2**31
            and not alive(r.pid, r.process_start if isinstance(r.process_start, str) else None)
        ]
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
        """Stored runs, newest first (runs of dead processes are marked interrupted first). A
        damaged run is left out with a warning naming it (the others stay readable)."""
        from ._damage import skipped
        from ._runs import select_runs

        self.reap()
        found = select_runs(
            self, experiment=experiment, golden_version=golden_version, status=status, limit=limit
        )
        for d in found.damaged:
            skipped(d)
        return found.records

    def trend(self, experiment: str | None = None) -> list[TrendPoint]:
        """Every finished run of ``experiment`` (else of every experiment), oldest first, with
        its means, declared headline, k and budget: the lab's trend, in one query (a damaged
        run is left out with a warning naming it)."""
        from ._trends import trend_points

        return trend_points(self, experiment)

    def run(self, run_id: int) -> RunRecord:
        """One stored run (NotFoundError when absent; DamagedRowError naming what is wrong when
        its row cannot be read back)."""
        from ._runs import select_runs

        found = select_runs(self, ids=[self._id(run_id)])
        if found.damaged:
            raise found.damaged[0]
        if not found.records:
            raise self._missing(run_id)
        return found.records[0]

    def runs_page(
        self,
        *,
        experiment: str | None = None,
        golden_version: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> RunPage:
        """What :meth:`runs` returns (damaged runs warned about and left out), with the damaged
        runs themselves and how many runs match the filters in all (``runs list``: "... and N
        more")."""
        from ._damage import skipped
        from ._listings import RunPage, count_runs
        from ._runs import select_runs

        self.reap()
        found = select_runs(
            self, experiment=experiment, golden_version=golden_version, status=status, limit=limit
        )
        if limit is None:
            total = len(found.records) + len(found.damaged)
        else:
            total = count_runs(
                self, experiment=experiment, golden_version=golden_version, status=status
            )
        for d in found.damaged:
            skipped(d)
        return RunPage(tuple(found.records), tuple(found.damaged), total)

    def count_runs(
        self,
        *,
        experiment: str | None = None,
        golden_version: str | None = None,
        status: str | None = None,
    ) -> int:
        """How many stored runs match the filters (damaged ones included)."""
        from ._listings import count_runs

        return count_runs(self, experiment=experiment, golden_version=golden_version, status=status)

    # -- ids -----------------------------------------------------------------------------------
    def row_id(self, value: object) -> int | None:
        """``value`` (an int or its text) as a row id of this store; None when no row can have
        it (an id past what the database holds, 0, negative, text that is not a whole number).
        The lab reads the ids in its URLs with it."""
        from ._values import row_id

        return row_id(value, self.engine.dialect.name)

    def _id(self, value: Any, what: str = "run") -> int:
        """``value`` as a row id of this store; NotFoundError when no row can have it."""
        found = self.row_id(value)
        if found is None:
            raise self._missing(value, what)
        return found

    def _ids(self, values: Sequence[Any]) -> list[int]:
        """The values that can be row ids (the others name no row)."""
        from ._values import row_id

        found = (row_id(v, self.engine.dialect.name) for v in values)
        return [i for i in found if i is not None]

    def _missing(self, value: Any, what: str = "run") -> NotFoundError:
        shown = value if isinstance(value, int) and not isinstance(value, bool) else repr(value)
        return NotFoundError(f"the store {self.display_url} has no {what} {shown}")

    def evaluation(self, run_id: int, level: str | None = None) -> Evaluation:
        """A run's :class:`Evaluation` (``level``: span, chunk, document or eval; default the
        run's first)."""
        import sqlalchemy as sa

        from ._damage import DamagedRowError, fetch, part_of
        from ._values import LEVELS

        rid = self._id(run_id)
        t = m.evaluations
        # one connection and no RunRecord: loading a 100k-question run stays near the cost of
        # reading its Parquet file (benchmarks/bench_store.py)
        with reading(self.engine) as conn:
            rows, damaged = fetch(
                conn, sa.select(t).where(t.c.run_id == rid).order_by(t.c.id), t.c.id, "evaluations"
            )
            for r in [r for r in rows if r.level not in LEVELS]:
                rows.remove(r)
                damaged.append(
                    DamagedRowError("evaluations", r.id, f"level {r.level!r} is not a level")
                )
            if not rows and not damaged:
                status = conn.execute(
                    sa.select(m.runs.c.status).where(m.runs.c.id == rid)
                ).scalar_one_or_none()
                if status is None:
                    raise self._missing(run_id)
                raise UsageError(f"run {rid} has no evaluation (status: {status})")
            levels = [r.level for r in rows]
            lvl = level or (levels[0] if levels else None)
            if lvl not in levels:
                if damaged:  # the level asked for (or the first) may be the damaged row
                    raise DamagedRowError("runs", rid, f"its {damaged[0]}")
                raise NotFoundError(
                    f"run {rid} has no {lvl}-level evaluation (has: {', '.join(levels)})"
                )
            row = rows[levels.index(lvl)]
            with part_of("runs", rid, f"its {lvl}-level values"):
                values = self.blobs.get_table(conn, row.values_blob)
                extras = self.blobs.get_json(conn, row.extras_blob)
        with part_of("runs", rid, f"its {lvl}-level evaluation"):
            return evaluation_from(row, values, extras)

    def ranked(self, run_id: int) -> Any:
        """The ranked lists a run retrieved: qid, rank, item, doc, start, end, score."""
        import sqlalchemy as sa

        from ._damage import part_of

        rid = self._id(run_id)
        with reading(self.engine) as conn:
            row = conn.execute(sa.select(m.runs.c.ranked_blob).where(m.runs.c.id == rid)).first()
            if row is None:
                raise self._missing(run_id)
            if row.ranked_blob is None:
                raise NotFoundError(f"run {rid} has no stored ranked lists")
            with part_of("runs", rid, "its ranked lists"):
                return self.blobs.get_table(conn, row.ranked_blob)

    def delete_run(self, run_id: int) -> None:
        """Delete a run with its evaluations; comparisons that used it keep their numbers. A
        damaged run can be deleted too (it is found by its id alone); a blob file whose row
        names a path out of the artifact folder is reported, never removed."""
        import sqlalchemy as sa

        rid = self._id(run_id)
        with writing(self.engine) as conn:
            gone = conn.execute(sa.delete(m.runs).where(m.runs.c.id == rid)).rowcount
            if not gone:
                raise self._missing(run_id)
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
        import sqlalchemy as sa

        from ._results import record_comparison

        ids = [None if i is None else self._id(i) for i in (baseline_run, candidate_run)]
        wanted = [i for i in ids if i is not None]
        if wanted:
            with reading(self.engine) as conn:
                there = set(conn.execute(sa.select(m.runs.c.id).where(m.runs.c.id.in_(wanted))))
            for i in wanted:
                if (i,) not in there:
                    raise self._missing(i)
        return record_comparison(self, comparison, ids[0], ids[1])

    def comparison(self, comparison_id: int) -> Comparison:
        from ._results import load_comparison

        return load_comparison(self, comparison_id)

    def comparisons(self, *, golden_version: str | None = None) -> list[ComparisonRow]:
        """The stored comparisons' headline columns, newest first (a damaged one is left out
        with a warning naming it)."""
        from ._listings import comparisons

        return comparisons(self, golden_version)

    @property
    def ledger(self) -> StoreLedger:
        from ._results import StoreLedger

        return StoreLedger(self)

    def record_answers(
        self,
        *,
        name: str,
        answers: Sequence[Mapping[str, Any]],
        report: Mapping[str, Any],
        golden_version: str | None = None,
        source: str | None = None,
        run_id: int | None = None,
    ) -> int:
        """Record an answer set (each answer with its context) and the report ``answers
        check`` made of it; returns its id."""
        from ._results import record_answers

        return record_answers(
            self,
            name=name,
            answers=answers,
            report=report,
            golden_version=golden_version,
            source=source,
            run_id=run_id,
        )

    def record_judge_validation(
        self,
        *,
        judge: str,
        labels: Sequence[Mapping[str, Any]],
        report: Mapping[str, Any],
        prompt: str | None = None,
        source: str | None = None,
    ) -> int:
        """Record judge labels with the prompt and model that made them, and the validation
        report; returns its id."""
        from ._results import record_judge_validation

        return record_judge_validation(
            self, judge=judge, labels=labels, report=report, prompt=prompt, source=source
        )

    def answer_sets(self, *, golden_version: str | None = None) -> list[AnswerSetRow]:
        """The stored answer sets (``answers check``), newest first (a damaged one is left out
        with a warning naming it)."""
        from ._listings import answer_sets

        return answer_sets(self, golden_version)

    def answer_set(self, set_id: int | str) -> StoredAnswerSet:
        """One stored answer set with its answers and report (NotFoundError when absent or when
        ``set_id`` cannot be an id; DamagedRowError naming what is wrong)."""
        from ._listings import answer_set

        return answer_set(self, set_id)

    def judge_validations(self) -> list[JudgeValidationRow]:
        """The stored judge validations (``judge validate``), newest first, with kappa and
        agreement from their report (a damaged one is left out with a warning naming it)."""
        from ._listings import judge_validations

        return judge_validations(self)

    def judge_validation(self, validation_id: int | str) -> StoredJudgeValidation:
        """One stored judge validation with its labels and report (NotFoundError when absent;
        DamagedRowError naming what is wrong)."""
        from ._listings import judge_validation

        return judge_validation(self, validation_id)

    # -- files ---------------------------------------------------------------------------------
    def export_run(self, run_id: int, out: str | os.PathLike[str]) -> list[Path]:
        from ._protect import refuse_export
        from ._transfer import export_run

        refuse_export(self.url, out)  # never into the artifacts folder, over the database
        return export_run(self, self._id(run_id), Path(out))

    def import_path(self, path: str | os.PathLike[str]) -> list[int]:
        """Import what ``path`` holds; the store's id of each of its runs (a run already in
        the store is not stored again: its id is given)."""
        from ._transfer import import_path

        return import_path(self, Path(path))

    def import_paths(self, paths: Sequence[str | os.PathLike[str]]) -> Imported:
        """Import several paths in one transaction: all of them or nothing; what each stored
        and skipped (already in the store) is in the result (``ragmeter runs import``)."""
        from ._transfer import import_paths

        return import_paths(self, paths)

    # -- labelling: labellers, queues, items, labels (docs/labelling.md) -----------------------
    def add_labeller(self, name: str, *, token: bool = True) -> tuple[LabellerRow, str | None]:
        """A new labeller and their token, to be shown once (stored hashed); ``token=False``:
        the loopback labeller, who needs none (token None)."""
        from ._labelling import add_labeller

        return add_labeller(self, name, token=token)

    def labeller(self, name: str) -> LabellerRow:
        """The labeller of this name (NotFoundError listing the labellers)."""
        from ._labelling import labeller

        return labeller(self, name)

    def labeller_by_token(self, token: str) -> LabellerRow | None:
        """The labeller whose token this is; None when it is no one's."""
        from ._labelling import labeller_by_token

        return labeller_by_token(self, token)

    def labellers(self) -> list[LabellerRow]:
        from ._labelling import labellers

        return labellers(self)

    def issue_token(self, name: str) -> tuple[LabellerRow, str]:
        """A new token for a labeller who has none (shown once, stored hashed); UsageError
        when they have one."""
        from ._labelling import issue_token

        return issue_token(self, name)

    def revoke_token(self, name: str) -> LabellerRow:
        """Take a labeller's token away; the labeller and their labels stay."""
        from ._labelling import revoke_token

        return revoke_token(self, name)

    def create_queue(
        self,
        name: str,
        *,
        kind: str = "evidence",
        corpus: Corpus | None = None,
        items: Sequence[NewItem] = (),
        double_share: float = 0.2,
        seed: int = 0,
        parent_version: str | None = None,
        source: str | None = None,
    ) -> QueueRow:
        """A new labelling queue with its corpus (stored with it) and items, in one
        transaction."""
        from ._labelling import create_queue

        return create_queue(
            self,
            name,
            kind=kind,
            corpus=corpus,
            items=items,
            double_share=double_share,
            seed=seed,
            parent_version=parent_version,
            source=source,
        )

    def queue(self, id_or_name: int | str) -> QueueRow:
        """A queue by name (or id); NotFoundError listing the queues."""
        from ._labelling import queue

        return queue(self, id_or_name)

    def queues(self) -> list[QueueRow]:
        from ._labelling import queues

        return queues(self)

    def delete_queue(self, id_or_name: int | str) -> None:
        from ._labelling import delete_queue

        delete_queue(self, id_or_name)

    def add_items(self, queue_id: int | str, items: Sequence[NewItem]) -> list[ItemRow]:
        from ._labelling import add_items

        return add_items(self, queue_id, items)

    def items(self, queue_id: int | str) -> list[ItemRow]:
        """A queue's items, by position."""
        from ._labelling import items

        return items(self, queue_id)

    def item(self, item_id: int | str) -> ItemRow:
        from ._labelling import item

        return item(self, item_id)

    def queue_corpus(self, queue_id: int | str) -> Corpus:
        """The corpus the queue was made with (stored with it)."""
        from ._labelling import queue_corpus

        return queue_corpus(self, queue_id)

    def labels(
        self,
        *,
        queue_id: int | str | None = None,
        item_id: int | str | None = None,
        labeller: str | None = None,
    ) -> list[LabelRow]:
        """The labels of a queue or an item (optionally one labeller's), by item position and
        then by when each was first saved."""
        from ._labelling import labels

        return labels(self, queue_id=queue_id, item_id=item_id, labeller=labeller)

    def save_label(
        self,
        item_id: int | str,
        labeller: str,
        payload: Mapping[str, Any],
        expected_revision: int,
        *,
        role: str = "label",
        accept: bool = False,
    ) -> LabelRow:
        """Save a label (one transaction); a stored revision other than
        ``expected_revision`` (0: new) raises EditConflict carrying the stored label."""
        from ._labelling import save_label

        return save_label(
            self, item_id, labeller, payload, expected_revision, role=role, accept=accept
        )

    def delete_label(
        self, item_id: int | str, labeller: str, expected_revision: int, *, role: str = "label"
    ) -> None:
        """Delete a label, under the same revision check as :meth:`save_label`."""
        from ._labelling import delete_label

        delete_label(self, item_id, labeller, expected_revision, role=role)
