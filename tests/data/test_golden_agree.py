"""`ragmeter golden agree`: character overlap of two labellers' spans and kappa on their grades.

Expected values are computed by hand from tests/fixtures/labellers (offsets in the comments).
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter.answers import cohen_kappa
from ragmeter.cli import app
from ragmeter.data import (
    Evidence,
    GoldenSet,
    Question,
    label_agreement,
    load_golden,
    weighted_kappa,
)

FIX = Path(__file__).parents[1] / "fixtures" / "labellers"
A, B, CORPUS = FIX / "a.jsonl", FIX / "b.jsonl", FIX / "corpus.jsonl"
runner = CliRunner()

# Per question (A is the reference; |A|, |B|, |A∩B| in characters):
#   q1  A d1[0,30) g2            B d1[12,30) g2             30, 18, 18  F1 36/48
#   q2  A d1[31,67) g2 d2[0,8) g1 B d1[52,67) g1             44, 15, 15  F1 30/59
#   q3  both unanswerable                                    0, 0, 0     F1 1
#   q4  A d2[9,34) g1            B none                     25, 0, 0    F1 0
#   q5  A none                   B d2[41,67) g2             0, 26, 0    F1 0
#   q8  A d2[9,34) g2 d2[35,67) g1  B d2[24,49) g2          57, 25, 10+14 F1 48/82
#   q9  A d1[68,87) g1           B d1[68,87) g3             19, 19, 19  F1 1
#   q10 A d1[31,67) g3           B d1[52,67) g3             36, 15, 15  F1 30/51
#   q6 only in A, q7 only in B; q1's question text differs.
CHARS = {
    "q1": (30, 18, 18),
    "q2": (44, 15, 15),
    "q3": (0, 0, 0),
    "q4": (25, 0, 0),
    "q5": (0, 26, 0),
    "q8": (57, 25, 24),
    "q9": (19, 19, 19),
    "q10": (36, 15, 15),
}
F1 = {
    "q1": Fraction(36, 48),
    "q2": Fraction(30, 59),
    "q3": Fraction(1),
    "q4": Fraction(0),
    "q5": Fraction(0),
    "q8": Fraction(48, 82),
    "q9": Fraction(1),
    "q10": Fraction(30, 51),
}
# grade pairs (A, B): q1 (2,2); q2 (2,1); q8 (2,2) and (1,2); q9 (1,3); q10 (3,3).
# rows (A) 1:2 2:3 3:1; columns (B) 1:1 2:3 3:2; n = 6.
# unweighted: p_o = 3/6, p_e = (2*1 + 3*3 + 1*2)/36 = 13/36, kappa = (18-13)/(36-13) = 5/23.
# linear: observed sum|a-b|/6 = (1+2+1)/6 = 24/36; chance sum|a-b| r_a c_b / 36 = (14+9+5)/36
#   = 28/36; kappa = 1 - 24/28 = 1/7.
# quadratic: observed (1+4+1)/6 = 36/36; chance (22+9+7)/36 = 38/36; kappa = 1 - 36/38 = 1/19.
KAPPA = {"none": 5 / 23, "linear": 1 / 7, "quadratic": 1 / 19}


@pytest.fixture(scope="module")
def result():
    return label_agreement(load_golden(A, CORPUS), load_golden(B, CORPUS))


def _agree(*args: object) -> tuple[int, str, str]:
    r = runner.invoke(app, ["golden", "agree", *map(str, args)], env={"COLUMNS": "120"})
    return r.exit_code, r.stdout, r.stderr


def test_per_question_characters_hand_computed(result) -> None:
    assert [q.question for q in result.questions] == list(CHARS)
    for q in result.questions:
        a, b, both = CHARS[q.question]
        assert (q.chars_a, q.chars_b, q.chars_both) == (a, b, both), q.question
        assert q.f1 == pytest.approx(float(F1[q.question]), abs=1e-12), q.question
    q8 = result.by_id["q8"]
    assert q8.precision == pytest.approx(24 / 25) and q8.recall == pytest.approx(24 / 57)
    # one labeller found nothing: the ratio over the empty side is undefined, F1 is 0
    assert (result.by_id["q4"].precision, result.by_id["q4"].recall) == (None, 0.0)
    assert (result.by_id["q5"].precision, result.by_id["q5"].recall) == (0.0, None)
    # both marked it unanswerable: full agreement
    q3 = result.by_id["q3"]
    assert (q3.found, q3.precision, q3.recall, q3.f1) == ("neither", 1.0, 1.0, 1.0)


def test_micro_macro_and_presence_hand_computed(result) -> None:
    # sums: |A| = 30+44+25+57+19+36 = 211, |B| = 18+15+26+25+19+15 = 118, both = 18+15+24+19+15
    assert (result.chars_a, result.chars_b, result.chars_both) == (211, 118, 91)
    assert result.precision == pytest.approx(91 / 118)
    assert result.recall == pytest.approx(91 / 211)
    assert result.f1 == pytest.approx(182 / 329)
    assert result.macro_f1 == pytest.approx(float(sum(F1.values()) / 8))
    assert {k: result.count(k) for k in ("both", "neither", "only_a", "only_b")} == {
        "both": 5,
        "neither": 1,
        "only_a": 1,
        "only_b": 1,
    }
    assert [q.question for q in result.evidence_mismatch] == ["q4", "q5"]
    assert (result.only_in_a, result.only_in_b, result.text_differs) == (("q6",), ("q7",), ("q1",))


def test_grades_kappa_hand_computed(result) -> None:
    assert sorted(result.grade_pairs) == [(1, 2), (1, 3), (2, 1), (2, 2), (2, 2), (3, 3)]
    assert result.grade_confusion == {(1, 2): 1, (1, 3): 1, (2, 1): 1, (2, 2): 2, (3, 3): 1}
    assert result.grade_agreement == pytest.approx(0.5)
    for weights, expected in KAPPA.items():
        assert result.kappa(weights) == pytest.approx(expected, abs=1e-12), weights


def test_worst_disagreements_order(result) -> None:
    # F1 ascending; at equal F1 more grade mismatches first, then id; q3 (full agreement) is out,
    # q9 is in: the same characters but grades 1 vs 3
    assert [q.question for q in result.worst(None)] == ["q4", "q5", "q2", "q8", "q10", "q1", "q9"]
    assert [q.question for q in result.worst(2)] == ["q4", "q5"]


def test_weighted_kappa_hand_computed() -> None:
    # pairs (1,1) (1,2) (2,3) (3,3) (3,1): rows 1:2 2:1 3:2, columns 1:2 2:1 3:2, n = 5
    # unweighted: p_o = 2/5, p_e = (4+1+4)/25 = 9/25 -> (10-9)/(25-9) = 1/16
    # linear: observed (0+1+1+0+2)/5 = 20/25; chance (10+4+10)/25 = 24/25 -> 1 - 20/24 = 1/6
    # quadratic: observed (0+1+1+0+4)/5 = 30/25; chance (18+4+18)/25 = 40/25 -> 1 - 30/40 = 1/4
    pairs = [(1, 1), (1, 2), (2, 3), (3, 3), (3, 1)]
    assert weighted_kappa(pairs) == pytest.approx(1 / 16)
    assert weighted_kappa(pairs, "linear") == pytest.approx(1 / 6)
    assert weighted_kappa(pairs, "quadratic") == pytest.approx(1 / 4)
    assert weighted_kappa([]) is None
    assert weighted_kappa([(2, 2), (2, 2)], "quadratic") == 1.0  # no disagreement possible
    assert weighted_kappa([(1, 2), (2, 1)]) == pytest.approx(-1.0)


grade_pairs = st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(grade_pairs)
def test_unweighted_kappa_equals_judge_validation_kappa(pairs: list[tuple[int, int]]) -> None:
    ours = weighted_kappa(pairs)
    theirs = cohen_kappa([str(a) for a, _ in pairs], [str(b) for _, b in pairs])
    assert ours == pytest.approx(theirs, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(grade_pairs)
def test_weighted_kappa_matches_matrix_formula(pairs: list[tuple[int, int]]) -> None:
    """The textbook matrix form (weights by category index over 1..4, as sklearn computes it
    for labels=[1, 2, 3, 4]); with consecutive grades value and index weights agree."""
    k = 4
    observed = [[0.0] * k for _ in range(k)]
    for a, b in pairs:
        observed[a - 1][b - 1] += 1
    rows = [sum(r) for r in observed]
    cols = [sum(observed[i][j] for i in range(k)) for j in range(k)]
    n = len(pairs)
    for name, power in (("linear", 1), ("quadratic", 2)):
        w = [[abs(i - j) ** power for j in range(k)] for i in range(k)]
        num = sum(w[i][j] * observed[i][j] for i in range(k) for j in range(k))
        den = sum(w[i][j] * rows[i] * cols[j] / n for i in range(k) for j in range(k))
        expected = 1.0 if den == 0 else 1 - num / den
        assert weighted_kappa(pairs, name) == pytest.approx(expected, abs=1e-12)
    swapped = [(b, a) for a, b in pairs]
    for name in ("none", "linear", "quadratic"):
        assert weighted_kappa(swapped, name) == pytest.approx(weighted_kappa(pairs, name))


span = st.tuples(
    st.sampled_from(["d1", "d2"]), st.integers(0, 60), st.integers(1, 20), st.integers(1, 3)
)


def _question(spans: list[tuple[str, int, int, int]]) -> Question:
    ev = [Evidence(doc=d, start=s, end=s + n, grade=g) for d, s, n, g in spans]
    return Question(id="q", question="?", evidence=ev, answerable=bool(ev))


@settings(max_examples=200, deadline=None)
@given(st.lists(span, max_size=5), st.lists(span, max_size=5))
def test_characters_equal_brute_force_sets(xs, ys) -> None:
    """Intervals (even overlapping ones, which a built-in-memory set may hold) are counted as
    sets of (doc, offset); swapping labellers swaps precision and recall and keeps F1."""
    qa, qb = _question(xs), _question(ys)
    chars_a = {(d, i) for d, s, n, _ in xs for i in range(s, s + n)}
    chars_b = {(d, i) for d, s, n, _ in ys for i in range(s, s + n)}
    ab = label_agreement(GoldenSet([qa]), GoldenSet([qb]))
    ba = label_agreement(GoldenSet([qb]), GoldenSet([qa]))
    q = ab.questions[0]
    assert (q.chars_a, q.chars_b, q.chars_both) == (
        len(chars_a),
        len(chars_b),
        len(chars_a & chars_b),
    )
    assert (ba.precision, ba.recall) == (ab.recall, ab.precision)
    assert ba.questions[0].f1 == pytest.approx(q.f1)
    pairs = sorted(
        (ea.grade, eb.grade)
        for ea in qa.evidence
        for eb in qb.evidence
        if ea.doc == eb.doc and set(range(ea.start, ea.end)) & set(range(eb.start, eb.end))
    )
    assert sorted(q.grade_pairs) == pairs


# --- the command ---------------------------------------------------------------------------------


def test_cli_table(tmp_path: Path) -> None:
    code, out, err = _agree(A, B, "--corpus", CORPUS, "--worst", "3")
    assert code == 0, err
    assert "211 / 118 / 91" in out and "5 / 1 / 1 / 1" in out
    assert "0.771" in out and "0.431" in out and "0.553" in out and "0.554" in out
    assert "0.217 / 0.143 / 0.053" in out
    assert "worst disagreements (3; F1 ascending)" in out
    assert "q4  F1 0.000  precision -  recall 0.000  found: only A" in out
    assert "  A: d2 9-34 grade 1 'Flex fares are refundable'" in out
    assert "  B: no evidence (unanswerable)" in out
    assert "q2  F1 0.508" in out and "q8" not in out  # only the 3 worst are listed
    assert "only in " + str(A) + " (left out): q6" in " ".join(err.split())
    assert "question text differs for 1 id(s): q1" in " ".join(err.split())


def test_cli_json_and_csv() -> None:
    code, out, _ = _agree(A, B, "--format", "json", "--worst", "1")
    assert code == 0
    data = json.loads(out)
    assert data["chars"] == {"a": 211, "b": 118, "both": 91}
    assert data["found"] == {"both": 5, "neither": 1, "only_a": 1, "only_b": 1}
    assert data["grades"]["kappa_quadratic"] == pytest.approx(1 / 19)
    assert [w["question"] for w in data["worst"]] == ["q4"]
    assert data["worst"][0]["spans_a"] == [
        {"doc": "d2", "start": 9, "end": 34, "grade": 1, "text": "Flex fares are refundable"}
    ]
    assert data["worst"][0]["precision"] is None  # undefined, not NaN (JSON has no NaN)
    code, out, _ = _agree(A, B, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["question"] for r in rows] == list(CHARS)
    assert rows[5] == {
        "question": "q8",
        "found": "both",
        "chars_a": "57",
        "chars_b": "25",
        "chars_both": "24",
        "precision": "0.96",
        "recall": repr(24 / 57),
        "f1": repr(48 / 82),
        "grade_pairs": "2:2 1:2",
        "grade_mismatches": "1",
    }
    assert rows[3]["precision"] == ""


def test_snippets_come_from_the_corpus_when_labels_have_no_text(tmp_path: Path) -> None:
    lines = [json.loads(x) for x in A.read_text().splitlines()]
    for q in lines:
        for ev in q["evidence"]:
            del ev["text"]
    bare = tmp_path / "a.jsonl"
    bare.write_text("".join(json.dumps(q) + "\n" for q in lines))
    _, out, _ = _agree(bare, B, "--worst", "1")
    assert "A: d2 9-34 grade 1 (text not recorded; pass --corpus)" in out
    _, out, _ = _agree(bare, B, "--worst", "1", "--corpus", CORPUS)
    assert "A: d2 9-34 grade 1 'Flex fares are refundable'" in out


def test_bad_labeller_file_names_file_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "b.jsonl"
    lines = B.read_text().splitlines()
    q = json.loads(lines[1])
    q["evidence"][0]["end"] = 500  # past the end of d1 (87 characters)
    lines[1] = json.dumps(q)
    lines[2] = "{not json"
    bad.write_text("\n".join(lines) + "\n")
    code, out, err = _agree(A, bad, "--corpus", CORPUS)
    assert code == 2 and out == ""
    flat = " ".join(err.split())
    assert f"{bad}:2: field 'evidence[0].end': span 52-500 is out of bounds" in flat
    assert f"{bad}:3: invalid JSON" in flat
    assert "Traceback" not in err


def test_no_shared_question_and_markup_in_ids(tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text(
        json.dumps(
            {"id": "[bold]x[/bold]", "question": ":smile: tokens:100:0", "answerable": False}
        )
        + "\n"
    )
    code, out, err = _agree(A, other)
    assert code == 0
    assert "warning: the two files share no question id" in err
    assert "[bold]x[/bold]" in err  # printed literally, not as markup
    code, out, err = _agree(other, other, "--format", "json")
    assert json.loads(out)["f1"] is None and json.loads(out)["macro_f1"] == 1.0
    shutil.copy(A, tmp_path / "same.jsonl")
    code, out, _ = _agree(A, tmp_path / "same.jsonl")
    assert code == 0 and "no disagreement" in out
    assert "1.000 / 1.000 / 1.000" in out
    code, out, _ = _agree(A, B, "--worst", "0")
    assert code == 0 and "worst disagreements" not in out and "no disagreement" not in out
