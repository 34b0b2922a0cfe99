"""Hostile label and golden data: judge-validation labels, the diagnose table, slices, SQuAD.

Every case is either a clean error naming the file, line and field (or the argument), or the
right number: never the last of two duplicates, never a string read as a boolean, never a
question without answers turned into "unanswerable", never one slice per character.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import InputError, UsageError, ValidationError
from ragmeter.answers import answers_from_records
from ragmeter.answers.judge_validation import (
    JudgeLabel,
    load_human_labels,
    load_judge_labels,
    validate_judge,
)
from ragmeter.cli import app
from ragmeter.data.squad import load_squad
from ragmeter.diagnosis import table_from_file
from ragmeter.metrics import evaluate

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"


def _jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _validate(tmp_path: Path, human: list[Any], judge: list[Any]) -> Any:
    h = _jsonl(tmp_path / "human.jsonl", human)
    j = _jsonl(tmp_path / "judge.jsonl", judge)
    labels, info = load_judge_labels(j)
    return validate_judge(load_human_labels(h), labels, judge=info)


def _cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


# -- judge validate: duplicates ----------------------------------------------------------------
def test_duplicate_judge_label_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    # kept-last would read a=pass and report agreement 1.0; counting all three lines would give
    # 2/3: a duplicate has no right answer, so it is refused
    human = [{"id": "a", "label": "pass"}, {"id": "b", "label": "pass"}]
    judge = [
        {"id": "a", "label": "fail"},
        {"id": "b", "label": "pass"},
        {"id": "a", "label": "pass"},
    ]
    with pytest.raises(ValidationError) as exc:
        _validate(tmp_path, human, judge)
    text = str(exc.value)
    assert "judge.jsonl:3: field 'id'" in text and "line 1" in text and "'a'" in text


def test_duplicate_human_label_names_the_first_line(tmp_path: Path) -> None:
    human = [
        {"id": "a", "label": "pass"},
        {"id": "b", "label": "fail"},
        {"id": "a", "label": "fail"},
    ]
    with pytest.raises(ValidationError) as exc:
        load_human_labels(_jsonl(tmp_path / "human.jsonl", human))
    assert "human.jsonl:3: field 'id'" in str(exc.value) and "line 1" in str(exc.value)


def test_same_id_in_other_runs_and_orders_is_not_a_duplicate(tmp_path: Path) -> None:
    human = [{"id": "a", "label": "a"}]
    judge = [
        {"id": "a", "label": "a"},
        {"id": "a", "label": "b", "order": "ba"},
        {"id": "a", "label": "a", "run": 1},
    ]
    v = _validate(tmp_path, human, judge)
    assert v.n == 1 and v.agreement == 1.0 and v.order_flips == ("a",) and v.n_runs == 2


def test_duplicate_in_memory_labels_refused() -> None:
    with pytest.raises(UsageError, match="two judge labels for 'a'"):
        validate_judge({"a": "pass"}, [JudgeLabel("a", "pass"), JudgeLabel("a", "fail")])


# -- judge validate: what a label is -----------------------------------------------------------
@pytest.mark.parametrize(
    ("human", "judge", "agree"),
    [
        (True, "True", 1.0),  # a boolean and its word in another case
        (True, " PASS ", 1.0),
        (False, "false", 1.0),
        ("False", True, 0.0),  # the string "False" is fail, never a pass
        ("fail", "pass", 0.0),
        ("Supported", "supported", 1.0),
        ("A", "a", 1.0),
    ],
)
def test_labels_map_explicitly(tmp_path: Path, human: Any, judge: Any, agree: float) -> None:
    v = _validate(tmp_path, [{"id": "x", "label": human}], [{"id": "x", "label": judge}])
    assert v.n == 1 and v.agreement == agree


@pytest.mark.parametrize("label", ["maybe", 1, 0, 0.5, "1", "", "yes!", "passed"])
def test_a_label_outside_the_vocabulary_is_an_error(tmp_path: Path, label: Any) -> None:
    for name, loader in (("human", load_human_labels), ("judge", load_judge_labels)):
        path = _jsonl(
            tmp_path / f"{name}.jsonl", [{"id": "ok", "label": "pass"}, {"id": "x", "label": label}]
        )
        with pytest.raises(ValidationError) as exc:
            loader(path)
        assert f"{name}.jsonl:2: field 'label'" in str(exc.value) and "not a label" in str(
            exc.value
        )


@pytest.mark.parametrize("ok", ["false", "False", 0, 1, "true", None])
def test_ok_must_be_a_boolean(tmp_path: Path, ok: Any) -> None:
    # "ok": "false" was read as a successful judgement (a string is not False)
    path = _jsonl(tmp_path / "judge.jsonl", [{"id": "x", "label": "pass", "ok": ok}])
    with pytest.raises(ValidationError, match=r"judge\.jsonl:1: field 'ok'"):
        load_judge_labels(path)


def test_ok_false_is_a_failed_judgement(tmp_path: Path) -> None:
    v = _validate(
        tmp_path,
        [{"id": "x", "label": "pass"}, {"id": "y", "label": "fail"}],
        [{"id": "x", "label": "pass", "ok": False}, {"id": "y", "label": "fail"}],
    )
    assert v.failed == ("x",) and v.n == 1 and v.agreement_all == 0.5


@pytest.mark.parametrize("score", [True, "0.5", float("nan"), float("inf")])
def test_score_must_be_a_finite_number(tmp_path: Path, score: Any) -> None:
    text = json.dumps({"id": "x", "label": "pass", "score": score})  # NaN/Infinity as JSON words
    (tmp_path / "judge.jsonl").write_text(text + "\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="field 'score'"):
        load_judge_labels(tmp_path / "judge.jsonl")


def test_two_scales_cannot_agree(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="different scales"):
        _validate(tmp_path, [{"id": "x", "label": "pass"}], [{"id": "x", "label": "supported"}])


def test_nothing_to_compare_is_an_error_not_nan(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no human-labelled id was judged"):
        _validate(tmp_path, [{"id": "x", "label": "pass"}], [{"id": "y", "label": "pass"}])
    with pytest.raises(UsageError, match="judgements of labelled items failed"):
        _validate(tmp_path, [{"id": "x", "label": "pass"}], [{"id": "x", "label": None}])


def test_cli_reports_label_problems_with_exit_2(tmp_path: Path) -> None:
    h = _jsonl(tmp_path / "human.jsonl", [{"id": "[/x]", "label": "pass"}])
    j = _jsonl(
        tmp_path / "judge.jsonl",
        [
            {"id": "[/x]", "label": "fail"},
            {"id": "[/x]", "label": "[bold]maybe"},
            {"id": "[/x]", "label": "pass"},
        ],
    )
    r = _cli("judge", "validate", "--human", str(h), "--judge", str(j))
    assert r.exit_code == 2 and "Traceback" not in r.output
    out = " ".join(r.output.split())  # the console wraps long lines
    assert "judge.jsonl:2: field 'label'" in out and '"[bold]maybe" is not a label' in out
    assert "judge.jsonl:3: field 'id'" in out and "'[/x]'" in out and "line 1" in out


_WORDS = {
    "pass": [True, "true", "pass"],
    "fail": [False, "false", "fail"],
}


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    pairs=st.lists(
        st.tuples(st.sampled_from(["pass", "fail"]), st.sampled_from(["pass", "fail"]), st.data()),
        min_size=1,
        max_size=12,
    )
)
def test_agreement_is_the_share_of_equal_canonical_labels(pairs: list[Any]) -> None:
    # each canonical label written in a random one of its forms, in random case and padding
    def spell(label: str, data: Any) -> Any:
        form = data.draw(st.sampled_from(_WORDS[label]))
        if isinstance(form, bool):
            return form
        cased = "".join(
            c.upper() if up else c
            for c, up in zip(
                form,
                data.draw(st.lists(st.booleans(), min_size=len(form), max_size=len(form))),
                strict=True,
            )
        )
        return (
            data.draw(st.sampled_from(["", " ", "\t"]))
            + cased
            + data.draw(st.sampled_from(["", " "]))
        )

    human = {f"q{i}": spell(h, d) for i, (h, _, d) in enumerate(pairs)}
    judged = [JudgeLabel(f"q{i}", spell(j, d)) for i, (_, j, d) in enumerate(pairs)]
    v = validate_judge(human, judged)
    expected = sum(h == j for h, j, _ in pairs) / len(pairs)
    assert v.n == len(pairs) and v.agreement == pytest.approx(expected)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(word=st.text(min_size=0, max_size=8))
def test_any_other_word_is_refused(word: str) -> None:
    known = {"true", "false", "pass", "fail", "yes", "partly", "no", "supported", "unsupported"}
    known |= {"correct", "incorrect", "a", "b", "tie"}
    if word.strip().lower() in known:
        return
    with pytest.raises(UsageError, match="not a label"):
        validate_judge({"x": word}, [JudgeLabel("x", "pass")])


# -- diagnose --table --------------------------------------------------------------------------
def test_table_duplicate_id_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    rows = [
        {"id": "q1", "evidence_in_context": True, "answer_ok": True},
        {"id": "q2", "evidence_in_context": False, "answer_ok": False},
        {"id": "q1", "evidence_in_context": False, "answer_ok": False},
    ]
    path = _jsonl(tmp_path / "table.jsonl", rows)
    with pytest.raises(ValidationError) as exc:
        table_from_file(path)
    assert "table.jsonl:3: field 'id'" in str(exc.value) and "line 1" in str(exc.value)
    r = _cli("diagnose", "--table", str(path))
    assert r.exit_code == 2 and "Traceback" not in r.output and "line 1" in r.output


# -- slices ------------------------------------------------------------------------------------
def test_slices_as_a_string_are_refused_in_evaluate() -> None:
    with pytest.raises(UsageError, match=r"\['fees'\]"):
        evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0}}, "R@1", slices={"q1": "fees"})
    e = evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 1.0}}, "R@1", slices={"q1": ["fees"]})
    assert e.slices == {"q1": ("fees",)}


def test_slices_as_a_string_are_refused_in_a_golden_file(tmp_path: Path) -> None:
    rec = {"id": "q1", "question": "fee?", "slices": "fees"}
    path = _jsonl(tmp_path / "golden.jsonl", [rec])
    r = _cli("golden", "validate", str(path))
    assert r.exit_code == 2 and "golden.jsonl:1: field 'slices'" in r.output


# -- SQuAD -------------------------------------------------------------------------------------
def _squad(tmp_path: Path, qas: list[dict[str, Any]]) -> Path:
    data = {
        "version": "x",
        "data": [{"title": "T", "paragraphs": [{"context": "abc def", "qas": qas}]}],
    }
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


GOOD_QA = {"id": "ok", "question": "what?", "answers": [{"text": "abc", "answer_start": 0}]}


@pytest.mark.parametrize(
    ("qa", "field", "words"),
    [
        ({"id": "n", "question": "q?", "answers": []}, "answers", "no answers"),
        ({"id": "n", "question": "q?"}, "answers", "no answers"),
        (
            {"id": "n", "question": "q?", "answers": [], "is_impossible": "false"},
            "is_impossible",
            "true or false",
        ),
        (
            {"id": "n", "question": "q?", "answers": [], "is_impossible": 0},
            "is_impossible",
            "true or false",
        ),
        (
            {
                "id": "n",
                "question": "q?",
                "answers": [{"text": "abc", "answer_start": 0}],
                "is_impossible": True,
            },
            "answers",
            "is_impossible is true",
        ),
        ({"id": "n", "question": "q?", "answers": "abc"}, "answers", "list"),
        ({"id": 7, "question": "q?", "answers": []}, "id", "string"),
        ({"id": "n", "question": None, "answers": []}, "question", "string"),
    ],
)
def test_squad_question_without_answers_is_an_error(
    tmp_path: Path, qa: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(ValidationError) as exc:
        load_squad(_squad(tmp_path, [GOOD_QA, qa]))
    text = str(exc.value)
    assert f"data[0].paragraphs[0].qas[1].{field}" in text and words in text, text


def test_squad_v2_unanswerable_is_read_from_the_flag(tmp_path: Path) -> None:
    impossible = {
        "id": "u",
        "question": "q?",
        "answers": [],
        "plausible_answers": [{"text": "def", "answer_start": 4}],
        "is_impossible": True,
    }
    _, golden = load_squad(
        _squad(tmp_path, [GOOD_QA, impossible, {**GOOD_QA, "id": "f", "is_impossible": False}])
    )
    by = {q.id: q for q in golden.questions}
    assert not by["u"].answerable and by["u"].evidence == []
    assert by["ok"].answerable and by["f"].answerable and by["f"].evidence[0].text == "abc"


@pytest.mark.parametrize(
    "article",
    [
        {"title": "T", "paragraphs": [{"context": "abc", "qas": 5}]},
        {"title": "T", "paragraphs": [{"context": 12, "qas": []}]},
        {"title": ["T"], "paragraphs": [{"context": "abc", "qas": []}]},
    ],
    ids=["qas-not-a-list", "context-not-text", "title-not-text"],
)
def test_squad_shapes_are_errors_not_tracebacks(tmp_path: Path, article: dict[str, Any]) -> None:
    path = tmp_path / "squad.json"
    path.write_text(
        json.dumps(
            {
                "data": [
                    article,
                    {"title": "U", "paragraphs": [{"context": "abc def", "qas": [GOOD_QA]}]},
                ]
            }
        )
    )
    with pytest.raises(ValidationError, match=r"data\[0\]"):
        load_squad(path)


# -- lone surrogates on every golden route -----------------------------------------------------
def _with_escape(rec: dict[str, Any], field: str) -> str:
    line = json.dumps({**rec, field: "MARK"})
    return line.replace('"MARK"', '"x\\ud800y"')


@pytest.mark.parametrize("route", ["validate", "stats", "freeze", "answers", "agree"])
def test_lone_surrogate_in_golden_is_a_clean_error_on_every_route(
    tmp_path: Path, route: str
) -> None:
    lines = (EXAMPLE / "golden.jsonl").read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[1])
    bad = tmp_path / "golden.jsonl"
    bad.write_text(
        "\n".join([lines[0], _with_escape(rec, "question"), *lines[2:]]) + "\n", encoding="utf-8"
    )
    corpus = str(EXAMPLE / "corpus.jsonl")
    args = {
        "validate": ["golden", "validate", str(bad), "--corpus", corpus],
        "stats": ["golden", "stats", str(bad), "--corpus", corpus],
        "freeze": ["golden", "freeze", str(bad), "--corpus", corpus],
        "answers": [
            "answers",
            "check",
            str(EXAMPLE / "answers" / "baseline.jsonl"),
            "--golden",
            str(bad),
            "--corpus",
            corpus,
        ],
        "agree": ["golden", "agree", str(EXAMPLE / "golden.jsonl"), str(bad), "--corpus", corpus],
    }[route]
    r = _cli(*args)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "golden.jsonl:2: field 'question'" in r.output and "surrogate" in r.output


def test_lone_surrogate_in_squad_and_traffic_files(tmp_path: Path) -> None:
    sq = tmp_path / "squad.json"
    sq.write_text('{"data": [{"title": "T\\ud800", "paragraphs": []}]}', encoding="utf-8")
    with pytest.raises(InputError, match="surrogate"):
        load_squad(sq)
    log = tmp_path / "log.jsonl"
    log.write_text('{"question": "fee?", "slice": "a\\udc00"}\n', encoding="utf-8")
    r = _cli("golden", "sample", str(log), "-n", "1")
    assert r.exit_code == 2 and "log.jsonl:1: field 'slice'" in r.output


@pytest.mark.parametrize("field", ["id", "question", "answer"])
def test_lone_surrogate_in_records_built_in_python(field: str) -> None:
    from ragmeter.data import Question

    rec: dict[str, Any] = {"id": "q1", "question": "fee?", "answer": "$75"}
    rec[field] = "x\ud800"
    # pydantic itself refuses some (a constrained string: "unable to parse ... unicode")
    with pytest.raises(ValueError, match=r"surrogate|unicode"):
        Question(**rec)
    if field != "question":
        with pytest.raises(ValidationError, match=r"surrogate|unicode"):
            answers_from_records([{"id": rec["id"], "answer": rec["answer"]}])


# -- BEIR qrels: no byte replaced, no id split at an odd line end ------------------------------
@pytest.mark.parametrize(
    ("line", "words"),
    [
        (b"q1\td\xff1\t1\n", "not UTF-8"),
        (b"q1\td1\x0b\t1\n", None),  # \x0b inside a line is not a line end (ragmeter's rule)
        (b"q1\td\r1\t1\n", "carriage return"),
        (b"q1\td\x001\t1\n", "NUL"),
    ],
    ids=["invalid-utf8", "vertical-tab", "lone-cr", "nul"],
)
def test_beir_qrels_bytes(tmp_path: Path, line: bytes, words: str | None) -> None:
    from ragmeter.data.beir import load_beir

    (tmp_path / "qrels").mkdir()
    _jsonl(
        tmp_path / "corpus.jsonl", [{"_id": "d1", "text": "abc"}, {"_id": "d\ufffd1", "text": "x"}]
    )
    _jsonl(tmp_path / "queries.jsonl", [{"_id": "q1", "text": "what?"}])
    (tmp_path / "qrels" / "test.tsv").write_bytes(b"query-id\tcorpus-id\tscore\n" + line)
    if words is None:  # the id is "d1" plus \x0b, stripped as space around the column: d1
        _, golden = load_beir(tmp_path)
        assert [e.doc for e in golden.questions[0].evidence] == ["d1"]
        return
    with pytest.raises(ValidationError) as exc:
        load_beir(tmp_path)
    assert "test.tsv:2" in str(exc.value) and words in str(exc.value), str(exc.value)


# -- spans mapped onto a chunking without a corpus: the chunking is the record of the documents --
_CHUNKS: list[
    dict[str, Any]
] = [  # doc "a" is 10 characters as far as the chunking knows, doc "b" 6
    {"id": "a#0", "doc": "a", "start": 0, "end": 6, "text": "abcdef", "n_tokens": 1},
    {"id": "a#1", "doc": "a", "start": 4, "end": 10, "text": "efghij", "n_tokens": 1},
    {"id": "b#0", "doc": "b", "start": 0, "end": 6, "text": "uvwxyz", "n_tokens": 1},
]


def _span_files(tmp_path: Path, evidence: list[dict[str, Any]]) -> tuple[Path, Path, Path]:
    good = {"id": "q0", "question": "?", "evidence": [{"doc": "a", "start": 0, "end": 3}]}
    bad = {"id": "q1", "question": "?", "evidence": [{"doc": "b", "start": 0, "end": 2}, *evidence]}
    golden = _jsonl(tmp_path / "golden.jsonl", [good, bad])
    chunks = _jsonl(tmp_path / "chunks.jsonl", _CHUNKS)
    run = tmp_path / "run.trec"
    run.write_text("q0 Q0 a#0 1 2.0 x\nq1 Q0 b#0 1 1.0 x\n", encoding="utf-8")
    return golden, chunks, run


_OUTSIDE = [
    ({"doc": "a", "start": 8, "end": 11}, "evidence[1].end", "runs past the end"),
    ({"doc": "zz", "start": 0, "end": 2}, "evidence[1].doc", "document 'zz' has no chunk"),
]


@pytest.mark.parametrize(("span", "field", "words"), _OUTSIDE)
@pytest.mark.parametrize("route", ["labels-export", "eval"])
def test_span_outside_the_chunking_is_refused_without_a_corpus(
    tmp_path: Path, span: dict[str, Any], field: str, words: str, route: str
) -> None:
    golden, chunks, run = _span_files(tmp_path, [span])
    if route == "eval":
        args = ["eval", "--golden", str(golden), "--chunks", str(chunks), str(run)]
    else:
        out = tmp_path / "qrels.txt"
        args = [
            "labels",
            "export",
            "--golden",
            str(golden),
            "--chunks",
            str(chunks),
            "-o",
            str(out),
        ]
    r = _cli(*args)
    assert r.exit_code == 2, r.output
    text = " ".join(r.output.split())
    assert f"golden.jsonl:2: field '{field}': question 'q1':" in text
    assert words in text
    if route != "eval":
        assert not out.exists()


def test_span_offset_beyond_int64_is_a_load_error(tmp_path: Path) -> None:
    golden, chunks, _ = _span_files(tmp_path, [{"doc": "a", "start": 0, "end": 10**30}])
    out = tmp_path / "qrels.txt"
    r = _cli("labels", "export", "--golden", str(golden), "--chunks", str(chunks), "-o", str(out))
    assert r.exit_code == 2, r.output
    assert "golden.jsonl:2: field 'evidence[1].end'" in " ".join(r.output.split())


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 12), st.integers(1, 4)),
        min_size=1,
        max_size=5,
    )
)
def test_chunk_qrels_refuses_exactly_the_spans_outside_the_chunking(
    spans: list[tuple[str, int, int]],
) -> None:
    """Over random spans: refused iff a span's document has no chunk or it ends past the
    document's last chunk end (a: 10, b: 6, c: none); the problems name evidence[j]."""
    from ragmeter.chunking import Chunking
    from ragmeter.data import Evidence, Question
    from ragmeter.labels import chunk_qrels

    chunking = Chunking(
        name="toy",
        tokenizer="t",
        ids=[str(c["id"]) for c in _CHUNKS],
        doc=[str(c["doc"]) for c in _CHUNKS],
        start=[int(c["start"]) for c in _CHUNKS],
        end=[int(c["end"]) for c in _CHUNKS],
        text=[str(c["text"]) for c in _CHUNKS],
        n_tokens=[int(c["n_tokens"]) for c in _CHUNKS],
    )
    evidence = [Evidence(doc=d, start=s, end=s + n) for d, s, n in spans]
    q = Question(id="q", question="?", evidence=evidence)
    extent = {"a": 10, "b": 6}
    bad = [j for j, (d, s, n) in enumerate(spans) if d not in extent or s + n > extent[d]]
    if not bad:
        chunk_qrels([q], chunking)
        return
    with pytest.raises(ValidationError) as e:
        chunk_qrels([q], chunking)
    assert [str(p.field).split(".")[0] for p in e.value.problems] == [f"evidence[{j}]" for j in bad]
