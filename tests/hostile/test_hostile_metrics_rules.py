"""The engine's rules where the numbers were right but the rule was unwritten, or the API and
the command line disagreed (issue 22, item 9's ``evaluate({}, run)`` and item 10).

- nothing to score: empty labels or an empty run are refused in every container (a file, a
  dict, a table), as the command line refused an empty file; ``evaluate({}, run)`` gave a null
  mean and ``evaluate(qrels, {})`` 0 for every query, silently;
- a query the run answers with an empty ranking (``{"q": {}}``) is in the run: scored 0 under
  ``missing="skip"`` too, as pytrec_eval scores it (it was dropped, and docs/metrics.md calls
  skip pytrec_eval's rule);
- a query labelled with no judgement (``{"q": {}}`` in qrels) is a query with no relevant item,
  as a TREC query with only grade-0 lines (it vanished from every list);
- the ``--duplicates error`` message suggests the caller's spelling;
- the peers' tie orders, now written in docs/metrics.md, are what the installed peers do.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import ragmeter
from ragmeter import InputError, RagmeterWarning, evaluate
from ragmeter.cli import app

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
runner = CliRunner()

QRELS = {"q1": {"a": 1, "b": 0}, "q2": {"c": 2}}
RUN = {"q1": {"a": 1.0, "b": 2.0}, "q2": {"c": 1.0}}


def cli(*args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one command; a Python exception is a test failure."""
    r = runner.invoke(app, [*args, "--no-store"], env={"COLUMNS": "120"})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"traceback from {args}: {r.exception!r}") from r.exception
    return r.exit_code, r.stdout, r.stderr


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def quiet(qrels: Any, run: Any, metrics: Any, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagmeterWarning)
        return evaluate(qrels, run, metrics, **kw)


# -- nothing to score: refused in every container -----------------------------------------------
def test_empty_labels_are_refused_by_the_api_as_by_the_command_line(tmp_path: Path) -> None:
    """``evaluate({}, run)`` gave ``aggregate == {"RR": None}`` where the CLI said ``error:
    ...: the file is empty`` (exit 2) for an empty qrels file."""
    empty = write(tmp_path / "empty.qrels", "")
    run = write(tmp_path / "r.run", "q1 Q0 a 1 1.0 x\n")
    code, _, err = cli("eval", str(empty), str(run), "-m", "RR")
    assert code == 2 and "the file is empty" in err and "Traceback" not in err
    with pytest.raises(InputError, match="the qrels dict is empty: no query is labelled"):
        evaluate({}, RUN, "RR")
    with pytest.raises(InputError, match="the qrels dict is empty: no query is labelled"):
        evaluate({}, RUN, "RR", query_chunks=2)
    table = pa.table({"qid": pa.array([], pa.string()), "doc": pa.array([], pa.string()),
                      "rel": pa.array([], pa.int64())})  # fmt: skip
    with pytest.raises(InputError, match="the qrels table has no row: no query is labelled"):
        evaluate(table, RUN, "RR")


def test_an_empty_run_is_refused_by_the_api_as_an_empty_run_file(tmp_path: Path) -> None:
    """An empty TREC run file was refused while ``evaluate(qrels, {})`` scored every query 0."""
    qrels = write(tmp_path / "q.qrels", "q1 0 a 1\n")
    empty = write(tmp_path / "empty.run", "")
    code, _, err = cli("eval", str(qrels), str(empty), "-m", "RR")
    assert code == 2 and "the file is empty" in err
    code, _, err = cli("eval", str(qrels), str(empty), "-m", "RR", "--query-chunks", "2")
    assert code == 2 and "the file is empty" in err
    for kw in ({}, {"missing": "skip"}, {"query_chunks": 2}):
        with pytest.raises(
            InputError, match=r"the run dict is empty: no query is ranked .*\{qid: \{\}\}"
        ):
            evaluate(QRELS, {}, "RR", **kw)
    table = pa.table({"qid": pa.array([], pa.string()), "doc": pa.array([], pa.string()),
                      "score": pa.array([], pa.float64())})  # fmt: skip
    with pytest.raises(InputError, match="the run table has no row: no query is ranked"):
        evaluate(QRELS, table, "RR")
    # what the message suggests: a query that retrieved nothing, said explicitly, scores 0
    ev = evaluate(QRELS, {"q1": {}, "q2": {}}, "RR")
    assert ev.query_ids == ("q1", "q2") and ev.missing_ids == () and ev.mean("RR") == 0.0


def test_a_run_of_only_unlabelled_empty_queries_is_another_questions_run() -> None:
    """A run that names only queries the labels do not have is refused (as one with rows is),
    not scored 0 everywhere."""
    with pytest.raises(InputError, match="none of the run's 1 query id"):
        evaluate(QRELS, {"other": {}}, "RR")


# -- a query answered with an empty ranking is in the run (pytrec_eval's rule) ------------------
def test_skip_scores_a_query_answered_with_nothing_as_pytrec_eval_does() -> None:
    # justified: pytrec_eval and ir_measures are the [test] extra's peers, which CI installs
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pip install 'ragmeter[test]'")
    run = {"q1": {"a": 1.0, "b": 2.0}, "q2": {}}
    theirs = pytrec_eval.RelevanceEvaluator(QRELS, {"recip_rank", "ndcg_cut_10"}).evaluate(run)
    assert theirs["q2"] == {"recip_rank": 0.0, "ndcg_cut_10": 0.0}  # pytrec_eval scores it
    for kw in ({"missing": "skip"}, {"missing": "skip", "query_chunks": 2}, {"missing": "zero"}):
        ev = evaluate(QRELS, run, "RR,nDCG@10", **kw)
        assert ev.query_ids == ("q1", "q2") and ev.missing_ids == (), kw
        assert ev.column("RR") == {q: v["recip_rank"] for q, v in theirs.items()}
        assert ev.column("nDCG@10") == pytest.approx(
            {q: v["ndcg_cut_10"] for q, v in theirs.items()}, abs=1e-12
        )
    # a query the run does not name at all is still missing: dropped by skip, 0 by zero
    ev = evaluate(QRELS, {"q1": {"a": 1.0}}, "RR", missing="skip")
    assert ev.query_ids == ("q1",) and ev.missing_ids == ("q2",)


def test_span_labels_count_a_question_answered_with_nothing_as_present() -> None:
    from ragmeter.chunking import from_ranges
    from ragmeter.data import Document, Evidence, Question
    from ragmeter.labels import evaluate_spans

    doc = Document(id="d", text="x" * 100)
    chunking = from_ranges([doc], [("d", 0, 50), ("d", 50, 100)], name="c", tokenizer="regex-words")
    golden = [
        Question(id=q, question="?", evidence=[Evidence(doc="d", start=0, end=40, grade=2)])
        for q in ("q1", "q2")
    ]
    run = {"q1": {"d#0-50": 1.0}, "q2": {}}
    ev = evaluate_spans(golden, chunking, run, "R@1,RR", missing="skip")
    assert ev.query_ids == ("q1", "q2") and ev.missing_ids == ()
    assert ev.column("RR") == {"q1": 1.0, "q2": 0.0}


_GRADES = st.sampled_from([0, 0, 1, 2, 3])
_SCORE = st.sampled_from([0.25, 0.5, 1.0, 1.5, 2.0, 3.0])


@st.composite
def _dicts(draw: Any) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Qrels and a run as dicts: empty label sets, queries with no relevant item, queries the
    run does not name, names with an empty ranking, ties."""
    pool = [f"d{j}" for j in range(6)]
    n = draw(st.integers(1, 6))
    qrels = {
        f"q{i}": draw(st.dictionaries(st.sampled_from(pool), _GRADES, max_size=5)) for i in range(n)
    }
    run: dict[str, dict[str, float]] = {}
    for i in range(n):
        shape = draw(st.sampled_from(["ranked", "empty", "absent"]))
        if shape != "absent" or not i:  # q0 always named: the run shares a query
            run[f"q{i}"] = (
                {} if shape == "empty" else draw(st.dictionaries(st.sampled_from(pool), _SCORE))
            )
    return qrels, run


@settings(max_examples=80)
@given(case=_dicts())
def test_skip_agrees_with_pytrec_eval_query_by_query(
    case: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]],
) -> None:
    """ragmeter's skip scores exactly the queries pytrec_eval scores (less those with no
    relevant item, which ragmeter excludes and lists), with pytrec_eval's values."""
    # justified: pytrec_eval and ir_measures are the [test] extra's peers, which CI installs
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pip install 'ragmeter[test]'")
    qrels, run = case
    measures = {"recip_rank": "RR", "map": "AP", "ndcg_cut_3": "nDCG@3", "P_2": "P@2"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)
    ev = quiet(qrels, run, list(measures.values()), missing="skip")
    relevant = {q for q, labels in qrels.items() if any(g >= 1 for g in labels.values())}
    assert set(ev.query_ids) == set(theirs) & relevant
    for measure, metric in measures.items():
        ours = ev.column(metric)
        for q, v in ours.items():
            assert abs(v - theirs[q][measure]) <= 1e-12, (q, metric, v, theirs[q][measure])


# -- a query labelled with no judgement: a query with no relevant item --------------------------
def test_an_empty_label_set_is_a_query_with_no_relevant_item(tmp_path: Path) -> None:
    """``{"q3": {}}`` vanished from ``query_ids``, ``missing_ids`` and ``no_relevant_ids``; a
    TREC query with only grade-0 lines is listed in ``no_relevant_ids``."""
    qrels = {**QRELS, "q3": {}}
    trec = write(tmp_path / "q.qrels", "q1 0 a 1\nq1 0 b 0\nq2 0 c 2\nq3 0 z 0\n")
    by_file = quiet(trec, RUN, "RR")
    assert by_file.no_relevant_ids == ("q3",)
    for kw in ({}, {"missing": "skip"}, {"query_chunks": 3}, {"query_chunks": 1}):
        ev = quiet(qrels, RUN, "RR", **kw)
        assert ev.no_relevant_ids == ("q3",) and "q3" not in ev.query_ids + ev.missing_ids, kw
        assert (ev.query_ids, ev.column("RR")) == (by_file.query_ids, by_file.column("RR"))
    ev = quiet({"q3": {}}, {"q3": {"a": 1.0}}, "RR")
    assert ev.no_relevant_ids == ("q3",) and ev.aggregate == {"RR": None}


@settings(max_examples=40)
@given(case=_dicts(), chunks=st.integers(1, 3))
def test_an_empty_label_set_scores_as_a_grade_0_line(
    case: tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]], chunks: int
) -> None:
    """Any qrels dict: each empty label set replaced by one grade-0 judgement gives the same
    evaluation (ids, lists and values), in one pass and in query chunks."""
    qrels, run = case
    zeroed = {q: labels or {"never-retrieved": 0} for q, labels in qrels.items()}
    for kw in ({}, {"missing": "skip"}, {"query_chunks": chunks}):
        ev, want = quiet(qrels, run, "RR,nDCG@3", **kw), quiet(zeroed, run, "RR,nDCG@3", **kw)
        assert (ev.query_ids, ev.missing_ids, ev.no_relevant_ids) == (
            want.query_ids,
            want.missing_ids,
            want.no_relevant_ids,
        )
        assert np.array_equal(ev.values, want.values)
        assert set(ev.query_ids) | set(ev.missing_ids) | set(ev.no_relevant_ids) == set(qrels)


# -- --duplicates: each caller's spelling -------------------------------------------------------
def test_the_duplicates_error_speaks_the_callers_language(tmp_path: Path) -> None:
    """The command line suggested the Python spelling ``duplicates='best'``."""
    qrels = write(tmp_path / "q.qrels", "q1 0 a 1\n")
    dup = write(tmp_path / "dup.run", "q1 Q0 a 1 2.0 x\nq1 Q0 a 2 1.0 x\n")
    for extra in ((), ("--query-chunks", "2")):
        code, _, err = cli("eval", str(qrels), str(dup), "--duplicates", "error", *extra)
        assert code == 2 and "dup.run:2" in err, err
        assert "--duplicates best" in err and "duplicates='best'" not in err, err
    with pytest.raises(InputError, match="pass duplicates='best' to keep") as exc:
        ragmeter.read_run(dup, duplicates="error")
    assert "--duplicates" not in str(exc.value) and exc.value.line == 2


# -- the peers' tie orders, as docs/metrics.md states them --------------------------------------
def _rank_of(score_rr: float) -> int:
    return round(1 / score_rr)


def test_the_peers_tie_orders_are_as_documented() -> None:
    """Three items tied at one score: the rank each peer gives the relevant one, per the table
    in docs/metrics.md; and 0.3 + 1e-9 against 0.3 (a tie only in float32). ranx's row (64-bit
    comparison) is held by test_differential_peers.py, which pays ranx's numba start-up once."""
    # justified: pytrec_eval and ir_measures are the [test] extra's peers, which CI installs
    pytrec_eval = pytest.importorskip("pytrec_eval", reason="pip install 'ragmeter[test]'")
    # justified: ir_measures is a peer of the [test] extra
    ir_measures = pytest.importorskip("ir_measures", reason="pip install 'ragmeter[test]'")
    text = DOCS.read_text(encoding="utf-8")
    for row in (
        '| ragmeter (`ties="trec"`), trec_eval, pytrec_eval | 32-bit floats | item id descending |',
        "| ranx | 64-bit floats (`0.3 + 1e-9` ranks above `0.3`) | its sort's order",
        "| ir_measures, `RR@k` (its MS MARCO provider) | 64-bit floats | item id ascending |",
        "| ir_measures, every other measure (its pytrec_eval provider, `RR` without a cutoff "
        "included) | as trec_eval | as trec_eval |",
    ):
        assert row in text, row
    rr, rr10, p1 = ir_measures.RR, ir_measures.RR @ 10, ir_measures.P @ 1
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0, "z": 0.5}}
    for doc, descending in (("a", 3), ("b", 2), ("c", 1)):
        qrels = {"q": {doc: 1}}
        ours = _rank_of(evaluate(qrels, run, "RR").mean("RR"))
        trec = _rank_of(
            pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"]
        )
        irm = _rank_of(ir_measures.calc_aggregate([rr10], qrels, run)[rr10])
        irm_plain = _rank_of(ir_measures.calc_aggregate([rr], qrels, run)[rr])
        assert ours == trec == irm_plain == descending  # item id descending
        assert irm == 4 - descending  # item id ascending
        assert ir_measures.calc_aggregate([p1], qrels, run)[p1] == (descending == 1)
    # scores equal only as float32: a tie for trec_eval's rule, not for a 64-bit comparison
    qrels, close = {"q": {"a": 1, "b": 0}}, {"q": {"a": 0.3 + 1e-9, "b": 0.3}}
    assert evaluate(qrels, close, "RR").mean("RR") == 0.5
    assert pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(close)["q"] == {
        "recip_rank": 0.5
    }
    assert ir_measures.calc_aggregate([rr10], qrels, close)[rr10] == 1.0
    assert ir_measures.calc_aggregate([rr], qrels, close)[rr] == 0.5
