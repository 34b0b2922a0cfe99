"""``ragmeter runs import`` trusts nothing it reads, and is all or nothing.

Every file ``runs import`` reads (an experiment's ``summary.json``, a variant's ``config.json``,
``evaluation.json``, ``chunk_evaluation.json``, ``run.trec``/``run.parquet``, an export's
``run.json``, an ``eval --format json`` file, a ``ledger.jsonl``) is validated with the schema
its writer writes by, and the files of one variant against each other; a failed import is one
RagmeterError naming file and field (one ``error:`` line and exit 2 on the command line) and
leaves the store exactly as it was, because every run, evaluation, ranked list and ledger
entry is inserted in one transaction, finished (no ``running`` row is ever written).

- one regression test per way the importer was fooled (a string ``"false"`` baseline flag,
  timings that crashed ``runs show``, junk ledger entries counted, a run file of other
  questions, non-finite numbers, two golden versions in one variant, levels that are not
  levels, a config that is a list, half-imported experiments, a ``running`` row left by a
  failure);
- a property over generated mutations of real exported folders (every field of every file:
  wrong types, missing, NaN, huge, negative, unknown keys, string booleans, other questions in
  the run file, corrupt Parquet, torn and junk ledger lines): the import is refused with a
  RagmeterError and every table (and the artifact folder) is byte for byte what it was, or it
  is imported whole and every run reads back (``runs show`` and ``runs list`` included);
- failures injected inside the transaction after some runs were inserted roll all back;
- ``runs export`` then ``runs import`` gives back every run kind (span and chunk levels,
  document level, an ``eval`` run, with ranked lists) with the same values, flags and lists.

Store tests run on SQLite and, with RAGMETER_TEST_DATABASE_URL set, on PostgreSQL
(``store_url``).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from _experiment_files import TEXTS, toy_questions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import compare
from ragmeter._errors import RagmeterError
from ragmeter.cli import app
from ragmeter.data import Document, Question, write_corpus, write_golden
from ragmeter.metrics import Evaluation
from ragmeter.paired import Ledger
from ragmeter.store import Store
from ragmeter.store import _models as m

# -- the sources: real outputs of ragmeter run, runs export, eval and compare ----------------------
SPAN_EXPERIMENT = """\
name = "toy spans"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "out"
k = 2
headroom_k = 3
metrics = ["R", "RR", "nDCG"]

[baseline]
chunker = "tokens:20:0"
retriever = "bm25"
depth = 6

[[variant]]
name = "small chunks"
chunker = "tokens:10:0"

[[variant]]
name = "shallow"
depth = 4
"""

DOCUMENT_EXPERIMENT = """\
name = "toy documents"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "out"
level = "document"
run_format = "parquet"
k = 2
headroom_k = 3
metrics = ["nDCG", "R"]

[baseline]
chunker = "tokens:20:0"
retriever = "bm25"
depth = 6

[[variant]]
name = "small chunks"
chunker = "tokens:10:0"
"""


def _write_data(folder: Path) -> None:
    """The toy corpus and golden set, plus a question without evidence (a no-relevant question
    at span level; no document label at all at document level)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_corpus([Document(id=k, text=v) for k, v in TEXTS.items()], folder / "corpus.jsonl")
    unlabelled = Question(id="q6", question="Can I bring a pet?", evidence=[], answerable=False)
    write_golden([*toy_questions(), unlabelled], folder / "golden.jsonl")


def _experiment(folder: Path, text: str) -> Path:
    _write_data(folder)
    (folder / "experiment.toml").write_text(text, encoding="utf-8")
    return folder / "experiment.toml"


def quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@dataclasses.dataclass(frozen=True)
class Sources:
    """Folders and files ragmeter itself wrote; tests copy them before changing anything."""

    experiment: Path  # ragmeter run's output: summary.json + 3 variant folders (span + chunk)
    documents: Path  # a document-level experiment's output, run files in Parquet
    exported: dict[str, Path]  # runs export of each kind: span, document, eval
    eval_file: Path  # ragmeter eval --format json of two runs
    ledger: Path  # a JSONL selection ledger of three comparisons
    records: dict[str, Any]  # kind -> the RunRecord the export was made from
    origin: str  # the store the exports came from


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Sources:
    from ragmeter.workflows.experiment import run_and_record

    root = tmp_path_factory.mktemp("import-sources")
    origin = f"sqlite:///{root / 'origin.db'}"
    exported: dict[str, Path] = {}
    records: dict[str, Any] = {}
    with Store.open(origin) as store:
        span, span_ids = quiet(
            run_and_record, store, _experiment(root / "span", SPAN_EXPERIMENT), progress=None
        )
        docs, doc_ids = quiet(
            run_and_record, store, _experiment(root / "doc", DOCUMENT_EXPERIMENT), progress=None
        )
        base = span.variants[0].evaluation
        other = span.variants[1].evaluation
        eval_id = store.record_evaluation(base, source="eval.json", ranked=None)
        chosen = {
            "span": span_ids["small chunks"],
            "document": doc_ids["small chunks"],
            "eval": eval_id,
        }
        for kind, run_id in chosen.items():
            exported[kind] = root / "exported" / kind
            store.export_run(run_id, exported[kind])
            records[kind] = store.run(run_id)
    eval_file = root / "eval.json"
    eval_file.write_text(json.dumps([base.to_dict(), other.to_dict()], indent=2))
    ledger = root / "ledger.jsonl"
    for v in span.variants[1:]:
        for metric in ("R@2", "RR@2"):
            quiet(
                compare, base, v.evaluation, metric, ledger=Ledger(ledger), n_resamples=99, seed=1
            )
    assert docs.variants[0].evaluation.config["level"] == "document"
    return Sources(
        experiment=root / "span" / "out",
        documents=root / "doc" / "out",
        exported=exported,
        eval_file=eval_file,
        ledger=ledger,
        records=records,
        origin=origin,
    )


# -- helpers ---------------------------------------------------------------------------------------
@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url, migrate=True) as s:
        yield s


def source(sources: Sources, kind: str) -> Path:
    """The clean source of one kind: ``experiment`` (ragmeter run's output, span + chunk),
    ``documents`` (document level, Parquet run files), ``span``/``document``/``eval`` (an
    export of that kind), ``eval_file``, ``ledger``."""
    if kind in sources.exported:
        return sources.exported[kind]
    return {
        "experiment": sources.experiment,
        "documents": sources.documents,
        "eval_file": sources.eval_file,
        "ledger": sources.ledger,
    }[kind]


def copy(src: Path, into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        return Path(shutil.copytree(src, into / src.name))
    return Path(shutil.copy(src, into / src.name))


def dump(store: Store) -> dict[str, Any]:
    """Every row of every table, in key order, and every artifact file's bytes."""
    out: dict[str, Any] = {}
    with store.engine.connect() as conn:
        for t in m.metadata.sorted_tables:
            order = list(t.primary_key.columns) or list(t.c)
            out[t.name] = [tuple(r) for r in conn.execute(sa.select(t).order_by(*order))]
    root = store.blobs.root
    out["artifacts"] = (
        {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
        if root.is_dir()
        else {}
    )
    return out


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def write(path: Path, data: Any) -> None:
    """``data`` as JSON; the string ``"__INF__"`` becomes the number ``1e999`` (infinity to a
    JSON reader: JSON has no NaN, but a huge number parses as one)."""
    path.write_text(json.dumps(data, indent=1).replace('"__INF__"', "1e999"), encoding="utf-8")


def edit(path: Path, fn: Callable[[Any], Any]) -> None:
    data = read(path)
    out = fn(data)
    write(path, data if out is None else out)


def refused(store: Store, path: Path, *what: str) -> RagmeterError:
    """Import ``path``: refused with a RagmeterError whose message holds each of ``what``,
    and the store exactly as it was."""
    before = dump(store)
    with pytest.raises(RagmeterError) as info:
        store.import_path(path)
    assert dump(store) == before
    for text in what:
        assert text in str(info.value), (text, str(info.value))
    return info.value


def same_evaluation(a: Evaluation, b: Evaluation) -> None:
    assert (a.run, a.metrics, a.query_ids) == (b.run, b.metrics, b.query_ids)
    assert a.values.tobytes() == b.values.tobytes()
    assert (a.missing_ids, a.no_relevant_ids) == (b.missing_ids, b.no_relevant_ids)
    assert a.golden_version == b.golden_version
    assert dict(a.config) == dict(b.config)
    assert (dict(a.slices), dict(a.splits)) == (dict(b.slices), dict(b.splits))
    assert {q: dict(v) for q, v in a.details.items()} == {q: dict(v) for q, v in b.details.items()}


def set_key(*keys: str | int, value: Any) -> Callable[[Any], None]:
    def fn(data: Any) -> None:
        node = data
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return fn


def first_metric(data: Any) -> str:
    return next(iter(data["aggregate"]))


# -- regressions: each way the importer was fooled -------------------------------------------------
def _other_questions_parquet(path: Path) -> None:
    t = pq.read_table(path)
    qid = pa.array([f"other-{q}" for q in t.column("qid").to_pylist()])
    pq.write_table(t.set_column(0, "qid", qid), path)


def _parquet_int_ids(path: Path) -> None:
    t = pq.read_table(path)
    pq.write_table(t.set_column(0, "qid", pa.array(range(t.num_rows), pa.int64())), path)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _append(line: str) -> Callable[[Path], None]:
    def fn(path: Path) -> None:
        with path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")

    return fn


def _json_edit(fn: Callable[[Any], Any]) -> Callable[[Path], None]:
    return lambda path: edit(path, fn)


def _ledger_line(i: int, fn: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        lines = path.read_text(encoding="utf-8").splitlines()
        entry = json.loads(lines[i])
        fn(entry)
        lines[i] = json.dumps(entry)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    return change


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda d: d.pop(key)


#: (source kind, file in it, change, what the error names)
REGRESSIONS: dict[str, tuple[str, str, Callable[[Path], None], tuple[str, ...]]] = {
    "string baseline flag in config.json": (
        "experiment", "shallow/config.json", _json_edit(set_key("baseline", value="false")),
        ("config.json", "'baseline' must be true or false"),
    ),
    "string baseline flag in summary.json": (
        "experiment", "summary.json", _json_edit(set_key("variants", 2, "baseline", value="true")),
        ("summary.json", "true or false"),
    ),
    "string baseline flag in run.json": (
        "span", "run.json", _json_edit(set_key("is_baseline", value="false")),
        ("run.json", "is_baseline"),
    ),
    "timings that are not seconds (config.json)": (
        "experiment", "shallow/config.json", _json_edit(set_key("timings", "total", value="slow")),
        ("config.json", "timings"),
    ),
    "timings that are not seconds (run.json)": (
        "span", "run.json", _json_edit(set_key("timings", value={"total": None})),
        ("run.json", "timings"),
    ),
    "negative seconds": (
        "span", "run.json", _json_edit(set_key("seconds", value=-3.0)), ("run.json", "seconds"),
    ),
    "infinite context tokens": (
        "experiment", "shallow/config.json", _json_edit(set_key("context_tokens", value="__INF__")),
        ("config.json", "context_tokens"),
    ),
    "infinite mean in run.json": (
        "span", "run.json", _json_edit(set_key("metrics", "R@2", value="__INF__")),
        ("run.json", "metrics"),
    ),
    "a stated mean the values do not give": (
        "eval", "evaluation.json",
        _json_edit(lambda d: set_key("aggregate", first_metric(d), value=0.123)(d)),
        ("evaluation.json", "aggregate", "0.123"),
    ),
    "a stated count the values do not give": (
        "experiment", "baseline/evaluation.json", _json_edit(set_key("n_queries", value=99)),
        ("evaluation.json", "n_queries"),
    ),
    "headline means of another run in config.json": (
        "experiment", "baseline/config.json", _json_edit(set_key("metrics", "R@2", value=0.5)),
        ("config.json", "metrics", "R@2"),
    ),
    "two golden versions in one variant": (
        "experiment", "shallow/chunk_evaluation.json",
        _json_edit(set_key("golden_version", value="g-other")),
        ("disagree on the golden_version", "g-other"),
    ),
    "a level that is not a level (config.json)": (
        "experiment", "shallow/config.json", _json_edit(set_key("level", value="banana")),
        ("config.json", "banana"),
    ),
    "a level that is not a level (run.json)": (
        "span", "run.json", _json_edit(set_key("levels", value=["banana"])), ("run.json", "levels"),
    ),
    "a config that is a list": (
        "experiment", "shallow/config.json", _json_edit(lambda d: [d]), ("config.json", "a list"),
    ),
    "resolved that is not a table": (
        "experiment", "shallow/config.json", _json_edit(set_key("resolved", value="x")),
        ("config.json", "resolved"),
    ),
    "a name too long for the store": (
        "experiment", "shallow/config.json", _json_edit(set_key("variant", value="v" * 5000)),
        ("config.json", "at most 500 characters"),
    ),
    "a NUL in a name": (
        "eval_file", "eval.json", _json_edit(set_key(1, "run", value="a\u0000b")),
        ("eval.json", "run"),
    ),
    "an unknown key in run.json": (
        "span", "run.json", _json_edit(set_key("owner", value="mallory")), ("run.json", "owner"),
    ),
    "run.json of a run that did not finish": (
        "document", "run.json", _json_edit(set_key("status", value="running")),
        ("run.json", "finished"),
    ),
    "run.json's config is not config.json": (
        "span", "config.json", _json_edit(set_key("settings", "depth", value=1)),
        ("run.json", "differs from config.json"),
    ),
    "run.json says ranked lists, none are here": (
        "document", "run.trec", lambda p: p.unlink(), ("run.trec", "ranked lists"),
    ),
    "run.trec of other questions": (
        "experiment", "shallow/run.trec", _append("zz9 Q0 d-other 1 9.5 intruder"),
        ("shallow", "'zz9'"),
    ),
    "run.trec of an exported run, of other questions": (
        "span", "run.trec", _append("zz9 Q0 d-other 1 9.5 intruder"), ("'zz9'",),
    ),
    "a Parquet run file of other questions": (
        "documents", "small-chunks/document_run.parquet", _other_questions_parquet,
        ("small-chunks", "lacks the ranked lists"),
    ),
    "a Parquet run file with numbers for ids": (
        "documents", "small-chunks/document_run.parquet", _parquet_int_ids,
        ("document_run.parquet", "qid"),
    ),
    "a corrupt Parquet run file": (
        "documents", "baseline/document_run.parquet", _truncate, ("document_run.parquet",),
    ),
    "a ledger entry without a candidate": (
        "ledger", "ledger.jsonl", _ledger_line(1, _drop("candidate")),
        ("ledger.jsonl:2", "candidate"),
    ),
    "a ledger entry whose count is a string": (
        "ledger", "ledger.jsonl", _ledger_line(2, set_key("n", value="5")),
        ("ledger.jsonl:3", "'n'"),
    ),
    "a ledger entry with keys the writer never writes": (
        "ledger", "ledger.jsonl", _ledger_line(0, set_key("votes", value=3)),
        ("ledger.jsonl:1", "votes"),
    ),
    "junk appended to a ledger": (
        "ledger", "ledger.jsonl", _append('{"golden_version": "g-1"}'), ("ledger.jsonl:5",),
    ),
}  # fmt: skip


def test_files_the_writer_did_not_write_are_refused_and_change_nothing(
    store: Store, sources: Sources, tmp_path: Path
) -> None:
    """Every case of :data:`REGRESSIONS` (one store for all: a server schema is made once)."""
    failed = {}
    for i, (case, (kind, name, change, what)) in enumerate(REGRESSIONS.items()):
        target = copy(source(sources, kind), tmp_path / str(i))
        change(target / name if target.is_dir() else target)
        try:
            refused(store, target, *what)
        except (Exception, pytest.fail.Exception) as exc:  # a traceback fails the case too
            failed[case] = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
    assert not failed, f"{len(failed)} of {len(REGRESSIONS)} cases:\n" + "\n".join(
        f"{k}: {v}" for k, v in failed.items()
    )
    assert store.runs() == [] and store.ledger.entries() == []


def test_a_failed_import_leaves_no_run_of_a_bigger_experiment_behind(
    store: Store, sources: Sources, tmp_path: Path
) -> None:
    """The third variant's files are broken: none of the three is imported (before, the
    first two stayed finished, and the third was left ``running``, then ``interrupted``)."""
    for i, change in enumerate(
        [
            set_key("per_query", "q1", "R@2", value="high"),  # evaluation.json
            set_key("resolved", value=["not", "a", "table"]),  # config.json
        ]
    ):
        target = copy(sources.experiment, tmp_path / str(i))
        name = "evaluation.json" if i == 0 else "config.json"
        edit(target / "shallow" / name, change)
        refused(store, target, f"shallow/{name}")
        assert store.runs() == []


class Boom(Exception):
    """A failure injected inside the import's transaction (not a RagmeterError)."""

    def __init__(self) -> None:
        super().__init__("injected")


def test_a_failure_inside_the_transaction_rolls_every_run_back(
    store: Store, sources: Sources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database failure after some rows were inserted (the third run's evaluations, the
    third blob: the second run's values, the third ledger entry): nothing stays, no run is
    left ``running`` or ``interrupted``, no blob, no ledger entry."""
    from ragmeter.store import _blobs, _runs

    assert len(store.import_path(copy(sources.eval_file, tmp_path / "first"))) == 2
    before = dump(store)  # the store holds something that must survive
    real_execute = sa.Connection.execute

    def third(fn: Callable[..., Any], calls: list[int]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            if len(calls) == 3:
                raise Boom()
            return fn(*args, **kwargs)

        return wrapped

    def ledger_execute(calls: list[int]) -> Callable[..., Any]:
        def execute(conn: Any, statement: Any, *args: Any, **kwargs: Any) -> Any:
            if getattr(statement, "table", None) is m.ledger:
                third(lambda: None, calls)()
            return real_execute(conn, statement, *args, **kwargs)

        return execute

    for where, target, obj, name, patch in [
        ("evaluations", sources.experiment, _runs, "insert_evaluations", third),
        ("blobs", sources.experiment, _blobs.Blobs, "put", third),
        ("ledger", sources.ledger, sa.Connection, "execute", None),
    ]:
        calls: list[int] = []
        with monkeypatch.context() as mp:
            new = ledger_execute(calls) if patch is None else patch(getattr(obj, name), calls)
            mp.setattr(obj, name, new)
            with pytest.raises(Boom):
                store.import_path(copy(target, tmp_path / where))
        assert len(calls) == 3, where
        assert dump(store) == before, where
    assert {r.status for r in store.runs()} == {"finished"}


def test_no_running_row_is_ever_written_and_none_is_visible_meanwhile(
    store: Store, sources: Sources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragmeter.store import _runs

    seen: list[tuple[str, int]] = []
    real = _runs.insert_run

    def insert_run(conn: Any, row: Any) -> int:
        run_id = real(conn, row)
        with Store.open(store.url) as other:  # another connection sees nothing until commit
            seen.append((row["status"], len(other.runs())))
        return run_id

    monkeypatch.setattr(_runs, "insert_run", insert_run)
    ids = store.import_path(copy(sources.experiment, tmp_path))
    assert seen == [("finished", 0)] * 3
    assert [store.run(i).status for i in ids] == ["finished"] * 3


# -- the command line ------------------------------------------------------------------------------
def cli(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    assert not (r.exc_info and not isinstance(r.exc_info[1], SystemExit)), r.exc_info
    return r.exit_code, r.stdout, r.stderr


def test_the_command_line_refuses_a_bad_folder_in_one_error_line(
    store_url: str, sources: Sources, tmp_path: Path
) -> None:
    Store.open(store_url, migrate=True).close()  # a server database is migrated once
    for problems in (1, 3):
        target = copy(sources.experiment, tmp_path / str(problems))
        edit(target / "shallow" / "config.json", set_key("resolved", value="x"))
        if problems > 1:
            edit(target / "baseline" / "config.json", set_key("baseline", value="yes"))
            edit(target / "small-chunks" / "evaluation.json", set_key("n_missing", value=-1))
        code, out, err = cli("runs", "import", str(target), "--db", store_url)
        assert code == 2, (out, err)
        assert "Traceback" not in out + err
        assert [x for x in err.splitlines() if x.startswith("error:")] == [err.splitlines()[0]]
        assert "resolved" in err
        if problems > 1:
            assert "3 problem(s)" in err and "nothing was imported" in err
            assert err.count("\n  - ") == 3
        code, out, err = cli("runs", "list", "--db", store_url, "--format", "json")
        assert code == 0 and json.loads(out) == [], err
    code, out, err = cli("runs", "import", str(sources.experiment), "--db", store_url)
    assert code == 0 and ": runs 1-3" in out, err


# -- round trips -----------------------------------------------------------------------------------
#: RunRecord fields an import sets anew: its id, that it was imported, from where, by whom
NEW_ON_IMPORT = {"id", "kind", "source", "invocation", "host", "pid", "started_at", "finished_at"}


def same_run(store: Store, run_id: int, origin: Store, origin_id: int, *, times: bool) -> None:
    """Run ``run_id`` is ``origin_id`` of ``origin``: every field of the record (but those an
    import sets anew), every level's values bit for bit, the ranked lists."""
    a, b = origin.run(origin_id), store.run(run_id)
    for f in dataclasses.fields(a):
        if f.name not in NEW_ON_IMPORT:
            assert getattr(a, f.name) == getattr(b, f.name), f.name
    assert b.kind == "import" and b.status == "finished"
    if times:  # run.json keeps them to the second
        assert a.started_at.replace(microsecond=0) == b.started_at
        assert a.finished_at is not None and b.finished_at is not None
        assert a.finished_at.replace(microsecond=0) == b.finished_at
    for level in a.levels:
        same_evaluation(origin.evaluation(origin_id, level), store.evaluation(run_id, level))
    if a.has_ranked:
        x, y = origin.ranked(origin_id), store.ranked(run_id)
        # a TREC file holds query, item, rank and score: a chunk's document and span are not in
        # it, while a document run's item is its document
        cols = x.column_names if "document" in a.levels else ["qid", "rank", "item", "score"]
        assert x.select(cols).equals(y.select(cols))


def test_an_import_gives_back_the_run_that_was_recorded(
    store: Store, sources: Sources, tmp_path: Path
) -> None:
    """``runs export`` then ``runs import`` of each run kind (span + chunk levels with ranked
    lists, document level with ranked lists, an eval run) gives back the same record, values
    and lists, and again after a second export and import; ``ragmeter run``'s output folder
    (no run.json) comes back as ``ragmeter run`` recorded the same runs: its config record,
    flags, means, timings, notes, values and ranked lists (the sources are outside any git
    repository, so the commit is unknown on both sides)."""
    with Store.open(sources.origin) as origin:
        for kind, folder in sources.exported.items():
            (run_id,) = store.import_path(copy(folder, tmp_path / kind))
            same_run(store, run_id, origin, sources.records[kind].id, times=True)
            again = tmp_path / f"{kind}-again"
            store.export_run(run_id, again)
            (second,) = store.import_path(again)
            same_run(store, second, origin, sources.records[kind].id, times=True)
        for folder, name in (
            (sources.experiment, "toy spans"),
            (sources.documents, "toy documents"),
        ):
            ids = store.import_path(copy(folder, tmp_path / folder.parent.name))
            recorded = sorted(r.id for r in origin.runs(experiment=name))
            assert len(ids) == len(recorded)
            for run_id, origin_id in zip(ids, recorded, strict=True):
                same_run(store, run_id, origin, origin_id, times=False)


def test_a_run_whose_ids_a_trec_file_cannot_hold_is_not_exported(
    store: Store, tmp_path: Path
) -> None:
    """A chunk id with a space would be split into two columns of run.trec and read back as
    another run: the export is refused before any file is written."""
    from ragmeter.experiments._ranked import RANKED_SCHEMA

    e = Evaluation.from_dict(_tiny_record())
    run_id = store.record_evaluation(e)
    ranked = pa.Table.from_pylist(
        [{"qid": "q1", "rank": 1, "item": "chunk 1", "doc": None, "start": None, "end": None,
          "score": 1.0}],
        schema=RANKED_SCHEMA,
    )  # fmt: skip
    with_space = store.start_run(experiment="e", name="spaced")
    store.finish_run(with_space, evaluations={"eval": e}, ranked=ranked)
    with pytest.raises(RagmeterError, match="whitespace"):
        store.export_run(with_space, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert store.export_run(run_id, tmp_path / "fine")


def _tiny_record() -> dict[str, Any]:
    return {
        "run": "tiny",
        "n_queries": 1,
        "n_missing": 0,
        "n_no_relevant": 0,
        "aggregate": {"R@2": 1.0},
        "per_query": {"q1": {"R@2": 1.0}},
        "missing_ids": [],
        "no_relevant_ids": [],
        "golden_version": "g-1",
        "config": {},
    }


# -- the writers and the importer share one schema per file ----------------------------------------
def test_every_file_the_writers_write_validates_against_its_schema(sources: Sources) -> None:
    from ragmeter.experiments._output_schema import ExperimentSummary, VariantConfig
    from ragmeter.paired._ledger_schema import LedgerEntry
    from ragmeter.store import RunRecord
    from ragmeter.store._run_file import RunFile

    for out in (sources.experiment, sources.documents):
        summary = ExperimentSummary.model_validate(read(out / "summary.json"))
        for path in out.glob("*/config.json"):
            assert VariantConfig.model_validate(read(path)).variant in {
                v.name for v in summary.variants
            }
    for folder in sources.exported.values():
        RunFile.model_validate(read(folder / "run.json"))
    assert set(RunFile.model_fields) == {f.name for f in dataclasses.fields(RunRecord)}
    lines = sources.ledger.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    for line in lines:
        LedgerEntry.model_validate(json.loads(line))


# -- the property: any import is whole, or the store is as it was ----------------------------------
class Inf:
    """Stands for ``1e999`` in a generated JSON value (see :func:`write`)."""


HOSTILE: list[Any] = [
    "false", "true", "", "  ", "v" * 5000, "a\u0000b", "NaN", "R@banana", "g-other", "q1",
    0, -1, 1.5, -1e300, 2**70, True, False, None, [], {}, [1, "a"], {"unknown": 1}, Inf,
]  # fmt: skip
SOURCE_KINDS = ["experiment", "documents", "span", "document", "eval", "eval_file", "ledger"]


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into a JSON value (the root included)."""
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*at, i))
    return out


def _mutate_value(data: Any, draw: Any) -> Any:
    """One field of ``data`` (drawn among every key path) replaced, deleted, or given an
    unknown sibling key; returns the new value."""
    paths = _paths(data)
    at = draw(st.sampled_from(paths))
    op = draw(st.sampled_from(["replace", "replace", "delete", "add key"]))
    value = draw(st.sampled_from(HOSTILE))
    value = "__INF__" if value is Inf else value
    if not at:
        return value if op == "replace" else data
    node = data
    for k in at[:-1]:
        node = node[k]
    key = at[-1]
    if op == "replace":
        node[key] = value
    elif op == "delete":
        del node[key]
    elif isinstance(node, dict):
        node[f"extra_{len(node)}"] = value
    else:
        node.append(value)
    return data


def _mutate_trec(path: Path, draw: Any) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    i = draw(st.integers(0, max(len(lines) - 1, 0)))
    parts = lines[i].split() if lines else ["q1", "Q0", "d", "1", "1.0", "r"]
    op = draw(st.sampled_from(["other question", "score", "duplicate", "drop column", "rank"]))
    if op == "other question":
        lines.append(" ".join(["zz-other", *parts[1:]]))
    elif op == "score":
        parts[4] = draw(st.sampled_from(["nan", "inf", "-inf", "x", "1e999", "-1"]))
        lines[i] = " ".join(parts)
    elif op == "duplicate":
        lines.append(lines[i] if lines else " ".join(parts))
    elif op == "drop column":
        lines[i] = " ".join(parts[:-1])
    else:
        parts[3] = draw(st.sampled_from(["0", "-3", "x", "99999999999999999999"]))
        lines[i] = " ".join(parts)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _mutate_parquet(path: Path, draw: Any) -> None:
    t = pq.read_table(path)
    op = draw(
        st.sampled_from(["int ids", "nan score", "other questions", "duplicate", "null", "drop"])
    )
    if op == "int ids":
        t = t.set_column(0, "qid", pa.array(range(t.num_rows), pa.int64()))
    elif op == "nan score":
        score = t.column("score").to_numpy().copy()
        score[draw(st.integers(0, len(score) - 1))] = np.nan
        t = t.set_column(t.column_names.index("score"), "score", pa.array(score))
    elif op == "other questions":
        t = t.set_column(0, "qid", pa.array([f"zz-{q}" for q in t.column("qid").to_pylist()]))
    elif op == "duplicate":
        t = pa.concat_tables([t, t.slice(0, 1)])
    elif op == "null":
        t = t.set_column(0, "qid", pa.array([None, *t.column("qid").to_pylist()[1:]], pa.string()))
    else:
        t = t.drop_columns([draw(st.sampled_from(t.column_names))])
    pq.write_table(t, path)


def _mutate_jsonl(path: Path, draw: Any) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    i = draw(st.integers(0, len(lines) - 1))
    op = draw(st.sampled_from(["field", "field", "torn middle", "torn tail", "junk", "blank"]))
    if op == "field":
        lines[i] = json.dumps(_mutate_value(json.loads(lines[i]), draw)).replace(
            '"__INF__"', "1e999"
        )
    elif op == "torn middle":
        lines[i] = lines[i][: len(lines[i]) // 2]
    elif op == "junk":
        lines.insert(i, draw(st.sampled_from(['{"golden_version": "g-1"}', "[1, 2]", "{}", "7"])))
    elif op == "blank":
        lines.insert(i, "")
    text = "\n".join(lines) + "\n"
    if op == "torn tail":  # a writer killed mid-line: the last line cut, no line end
        text = text[: -1 - len(lines[-1]) // 2]
    path.write_text(text, encoding="utf-8")


def mutate(path: Path, draw: Any) -> str:
    """Change ``path`` as a hostile or careless hand would; returns what was done."""
    whole = draw(st.sampled_from(["content"] * 6 + ["truncate", "garbage", "empty", "delete"]))
    if whole == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: draw(st.integers(0, max(len(data) - 1, 0)))])
    elif whole == "garbage":
        path.write_bytes(draw(st.binary(min_size=1, max_size=64)))
    elif whole == "empty":
        path.write_bytes(b"")
    elif whole == "delete":
        path.unlink()
    elif path.suffix == ".trec":
        _mutate_trec(path, draw)
    elif path.suffix == ".parquet":
        _mutate_parquet(path, draw)
    elif path.suffix == ".jsonl":
        _mutate_jsonl(path, draw)
    else:
        write(path, _mutate_value(read(path), draw))
    return whole


@dataclasses.dataclass(frozen=True)
class Imported:
    """What importing a clean source gives: per run, its record, evaluations, ranked lists."""

    runs: list[tuple[Any, dict[str, Evaluation], Any]]
    ledger: list[dict[str, Any]]


@pytest.fixture(scope="module")
def reference(sources: Sources, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Imported]:
    root = tmp_path_factory.mktemp("reference")
    out = {}
    with Store.open(f"sqlite:///{root / 'ref.db'}") as ref:
        for kind in SOURCE_KINDS:
            ids = ref.import_path(source(sources, kind))
            runs = []
            for i in ids:
                r = ref.run(i)
                evals = {lvl: ref.evaluation(i, lvl) for lvl in r.levels}
                runs.append((r, evals, ref.ranked(i) if r.has_ranked else None))
            out[kind] = Imported(runs, ref.ledger.entries() if kind == "ledger" else [])
    return out


def expected_runs(kind: str, target: Path) -> int:
    """How many runs the (changed) source holds: a changed summary or eval file may list
    fewer and still be one ragmeter writes."""
    if kind == "eval_file":
        return len(Evaluation.load_all(target))
    if kind in ("experiment", "documents"):
        return len(read(target / "summary.json")["variants"])
    return 1


def check_whole(
    store: Store, ids: list[int], before: dict[str, Any], ref: Imported, changed: str, n: int
) -> None:
    """An import that succeeded is whole (``n`` runs), reads back (what ``runs show`` and
    ``runs list`` print), and equals the clean source's import wherever the changed file does
    not reach."""
    after = dump(store)
    fresh = set(ids) - {row[0] for row in before["runs"]}  # the same run is not stored twice
    assert len(ids) == n and len(after["runs"]) == len(before["runs"]) + len(fresh)
    same_source = n == len(ref.runs)
    for i, run_id in enumerate(ids):
        new = store.run(run_id)
        assert new.status == "finished" and isinstance(new.is_baseline, bool)
        evaluations = {level: store.evaluation(run_id, level) for level in new.levels}
        got = store.ranked(run_id) if new.has_ranked else None
        shown(store, run_id)
        if not same_source:
            continue
        r, evals, ranked = ref.runs[i]
        for level, e in evaluations.items():
            if level in evals and not changed.endswith("evaluation.json"):
                same_evaluation(evals[level], e)
        if got is not None and ranked is not None and not changed.endswith((".trec", ".parquet")):
            assert got.equals(ranked)
        if not changed.endswith(("config.json", "run.json", "summary.json", "evaluation.json")):
            for f in ("name", "experiment", "is_baseline", "label", "timings", "metrics"):
                assert getattr(new, f) == getattr(r, f), f
    listed(store)


def shown(store: Store, run_id: int) -> None:
    """Build what ``runs show`` prints of a run (its record table, where timings, tokens and
    means are formatted, each level's means, the settings), without the terminal."""
    from ragmeter.cli._render_runs import record_table
    from ragmeter.paired import flatten

    r = store.run(run_id)
    record_table(r)
    for level in r.levels:
        for v in store.evaluation(run_id, level).aggregate.values():
            assert v is None or f"{v:.4f}"
    for v in flatten(dict(r.config)).values():
        json.dumps(v, ensure_ascii=False, default=str)


def listed(store: Store) -> None:
    """Build what ``runs list`` prints, at both widths."""
    from ragmeter.cli._render_runs import runs_tables

    records = store.runs()
    for width in (200, 60):
        runs_tables(records, width)


@settings(
    max_examples=60,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_import_is_whole_or_leaves_the_store_as_it_was(
    store: Store, sources: Sources, reference: dict[str, Imported], tmp_path: Path, data: Any
) -> None:
    kind = data.draw(st.sampled_from(SOURCE_KINDS), label="source")
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    target = copy(source(sources, kind), work)
    files = sorted(p for p in target.rglob("*") if p.is_file()) if target.is_dir() else [target]
    chosen = data.draw(st.sampled_from(files), label="file")
    how = mutate(chosen, data.draw)
    # an eval file is the evaluation: a change to it may reach every field
    changed = "evaluation.json" if kind == "eval_file" else str(chosen.relative_to(work))
    before = dump(store)
    try:
        ids = store.import_path(target)
    except RagmeterError:
        assert dump(store) == before, (changed, how)
        return
    if kind == "ledger":
        entries = Ledger(target).entries()  # the JSONL ledger's own reading of the file
        # an entry already in the store, or earlier in the file, is not counted twice
        had = [row[-1] for row in before["ledger"]]
        fresh = [e for i, e in enumerate(entries) if e not in had and e not in entries[:i]]
        assert store.ledger.entries()[len(before["ledger"]) :] == fresh
        return
    check_whole(store, ids, before, reference[kind], changed, expected_runs(kind, target))
