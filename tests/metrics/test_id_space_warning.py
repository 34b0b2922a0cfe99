"""A run whose item ids match nothing in the qrels (chunk ids scored against document qrels)
scores 0 everywhere; that must be said loudly, not left to a 0.0000 table.

``ragmeter eval sf-test.qrels runs/bm25/run.trec`` printed nDCG@10 0.0000 with only a Python
warning above the table (with typer's source line) and a caption saying all was well; the
Evaluation and its JSON kept no trace of it. Now the Evaluation carries the warning
(``Evaluation.warnings``, ``to_dict()["warnings"]``), and the CLI prints it after the results,
once, with how to fix it (span labels, chunk qrels, or a document roll-up).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter import RagmeterWarning, evaluate
from ragmeter.cli import app
from ragmeter.metrics import Evaluation

QRELS = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
CHUNK_RUN = {"q1": {"d1#0-10": 3.0, "d2#0-5": 2.0}, "q2": {"d3#0-9": 1.0, "d9#4-8": 0.5}}
DOC_RUN = {"q1": {"d1": 3.0, "d2": 2.0}, "q2": {"d3": 1.0}}


def _quiet(qrels, run, metrics="nDCG@10,RR@10"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagmeterWarning)
        return evaluate(qrels, run, metrics)


# --- the library -------------------------------------------------------------------------------
def test_the_evaluation_carries_the_id_space_warning() -> None:
    with pytest.warns(RagmeterWarning, match="none of the 4 item id"):
        e = evaluate(QRELS, CHUNK_RUN, "nDCG@10,RR@10")
    assert e.aggregate == {"nDCG@10": 0.0, "RR@10": 0.0}
    [w] = e.warnings
    assert "none of the 4 item id(s) the run retrieves is judged" in w
    # the run's ids are chunks of judged documents: said, with the ways out
    assert "chunk ids of judged documents (e.g. 'd1#0-10' of 'd1')" in w
    assert "ragmeter eval --golden G --chunks C" in w
    assert "ragmeter labels export" in w
    assert 'level = "document"' in w and "ragmeter.labels.rollup_run" in w
    d = e.to_dict()
    assert d["warnings"] == [w]
    back = Evaluation.from_dict(json.loads(json.dumps(d)))
    assert back.warnings == (w,)


def test_ids_from_another_collection_are_not_called_chunks() -> None:
    e = _quiet(QRELS, {"q1": {"x": 1.0}, "q2": {"y#0-3": 1.0}})
    [w] = e.warnings
    assert "none of the 2 item id(s)" in w and "chunk ids of judged documents" not in w


def test_a_run_in_the_qrels_id_space_has_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RagmeterWarning)
        e = evaluate(QRELS, DOC_RUN, "nDCG@10")
    assert e.warnings == () and "warnings" not in e.to_dict()
    assert e.aggregate["nDCG@10"] == 1.0
    # one matching id anywhere is enough: a bad run is not an id-space mismatch
    e = _quiet(QRELS, {"q1": {"d9": 2.0, "d2": 1.0}, "q2": {"zz": 1.0}})
    assert e.warnings == ()


@pytest.mark.parametrize("bad", [["ok", 3], "text", [None]])
def test_a_record_with_bad_warnings_is_refused(bad) -> None:
    from ragmeter import InputError

    d = _quiet(QRELS, CHUNK_RUN).to_dict()
    d["warnings"] = bad
    with pytest.raises(InputError, match="warnings"):
        Evaluation.from_dict(d, source="e.json")


# --- ragmeter eval -----------------------------------------------------------------------------
@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    qrels = tmp_path / "sf-test.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, ds in QRELS.items() for d, g in ds.items()))

    def trec(run: dict, name: str) -> Path:
        path = tmp_path / f"{name}.trec"
        rows = [
            f"{q} Q0 {d} {i} {s} {name}\n"
            for q, ds in run.items()
            for i, (d, s) in enumerate(ds.items(), 1)
        ]
        path.write_text("".join(rows))
        return path

    return qrels, trec(CHUNK_RUN, "chunks"), trec(DOC_RUN, "docs")


def test_ragmeter_eval_says_it_loudly_once(files) -> None:
    qrels, chunks, _ = files
    res = CliRunner().invoke(app, ["eval", str(qrels), str(chunks), "--no-store"])
    assert res.exit_code == 0, res.output
    err = " ".join(res.stderr.split())
    assert err.count("none of the 4 item id(s)") == 1  # once: no second copy as a Python warning
    assert err.startswith("warning:") and "every score is 0" in err
    assert "ragmeter labels export" in err and "rollup_run" in err
    assert "typer" not in res.stderr and "callback" not in res.stderr  # no Python source lines
    out = " ".join(res.stdout.split())
    # the table's caption no longer reads as all clear
    assert "no item id of the run is in the qrels: every score is 0 (see the warning)" in out


def test_ragmeter_eval_json_carries_the_warning(files) -> None:
    qrels, chunks, docs = files
    res = CliRunner().invoke(
        app, ["eval", str(qrels), str(chunks), str(docs), "--no-store", "-f", "json"]
    )
    assert res.exit_code == 0, res.output
    chunk_eval, doc_eval = json.loads(res.stdout)
    assert len(chunk_eval["warnings"]) == 1 and "warnings" not in doc_eval
    assert " ".join(res.stderr.split()).count("none of the 4 item id(s)") == 1


def test_ragmeter_eval_of_a_matching_run_prints_no_warning(files) -> None:
    qrels, _, docs = files
    res = CliRunner().invoke(app, ["eval", str(qrels), str(docs), "--no-store"])
    assert res.exit_code == 0, res.output
    assert "warning" not in res.stderr
    assert "no missing queries; no query without relevant items" in " ".join(res.stdout.split())
