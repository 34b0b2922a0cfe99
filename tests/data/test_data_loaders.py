"""BEIR and SQuAD loaders: tiny hand-checked fixtures, then the real datasets ($RAGMETER_DATA)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ragmeter import InputError, RagmeterWarning, ValidationError
from ragmeter.data import assign_split, load_beir, load_squad, validate_golden

FIX = Path(__file__).parents[1] / "fixtures" / "data"


# --- BEIR ------------------------------------------------------------------------------------


def test_beir_judged_documents_become_whole_document_spans() -> None:
    with pytest.warns(RagmeterWarning, match="1 query"):  # query 5 is judged only 0
        corpus, golden = load_beir(FIX / "beir")
    assert corpus.ids == ["d1", "d2", "d3", "d4"]
    assert corpus["d1"].title == "Aspirin and headache" and corpus["d2"].title is None
    assert corpus["d1"].text == "Aspirin reduces headache pain in adults."
    assert golden.ids == ["1", "2", "3"]  # only test-split queries with a positive judgement
    spans = [(e.doc, e.start, e.end, e.grade) for e in golden["1"].evidence]
    assert spans == [("d1", 0, 40, 2), ("d3", 0, 33, 1)]
    assert golden["1"].evidence[0].text == corpus["d1"].text
    assert golden["2"].question == "Is caffeine a stimulant?"
    assert all(q.split == assign_split(q.id) and q.slices == [] for q in golden)
    assert validate_golden(golden, corpus) == []


def test_beir_other_split_and_missing_split() -> None:
    _, golden = load_beir(FIX / "beir", split="train")
    assert golden.ids == ["4"]
    with pytest.raises(InputError, match="no qrels for split 'dev'; splits found: test, train"):
        load_beir(FIX / "beir", split="dev")


def test_beir_problems_are_listed_with_file_line_and_field(tmp_path: Path) -> None:
    folder = tmp_path / "beir"
    shutil.copytree(FIX / "beir", folder)
    with (folder / "qrels" / "test.tsv").open("a") as fh:
        fh.write("1\td9\t1\n9\td1\t1\n1\td2\tyes\n1\td1\t1\n")
    with (folder / "corpus.jsonl").open("a") as fh:
        fh.write('{"_id": "d5"}\n')
    with pytest.raises(ValidationError) as info:
        load_beir(folder)
    got = {(Path(p.path or "").name, p.line, p.field) for p in info.value.problems}
    assert got == {
        ("corpus.jsonl", 5, "text"),
        ("test.tsv", 7, "corpus-id"),
        ("test.tsv", 8, "query-id"),
        ("test.tsv", 9, "score"),
        ("test.tsv", 10, None),
    }


# --- SQuAD -----------------------------------------------------------------------------------


def test_squad_articles_become_documents_with_shifted_offsets() -> None:
    corpus, golden = load_squad(FIX / "squad.json")
    raw = json.loads((FIX / "squad.json").read_text())
    contexts = [p["context"] for p in raw["data"][0]["paragraphs"]]
    assert corpus.ids == ["Super_Bowl_50", "Nikola_Tesla"]
    doc = corpus["Super_Bowl_50"]
    assert doc.text == contexts[0] + "\n\n" + contexts[1] and doc.title == "Super Bowl 50"
    start = len(contexts[0]) + len("\n\n") + contexts[1].index("CBS")
    assert [(e.start, e.end, e.text) for e in golden["sb3"].evidence] == [(start, start + 3, "CBS")]
    assert golden["sb3"].slices == ["Super_Bowl_50"] and golden["sb3"].answer == "CBS"
    assert validate_golden(golden, corpus) == []


def test_squad_answers_dedupe_merge_and_mark_alternatives() -> None:
    _, golden = load_squad(FIX / "squad.json")
    # three annotations, two identical, one inside them: one span, no required flag needed
    [broncos] = golden["sb1"].evidence
    assert (broncos.text, broncos.grade, broncos.required) == ("Denver Broncos", 2, None)
    # "1856" inside "in 1856": merged into the union
    assert [e.text for e in golden["nt1"].evidence] == ["in 1856"]
    assert golden["nt1"].answer == "1856"
    # two disjoint alternatives: the first annotator's one is required, the other is not
    alt = golden["sb2"].evidence
    assert [(e.text, e.required) for e in alt] == [
        ("Levi's Stadium", False),
        ("Santa Clara, California", True),
    ]
    assert golden["sb2"].required_spans() == [1]


def test_squad_bad_answer_offset_is_reported(tmp_path: Path) -> None:
    raw = json.loads((FIX / "squad.json").read_text())
    raw["data"][1]["paragraphs"][0]["qas"][0]["answers"][1]["answer_start"] = 3
    raw["data"][0]["paragraphs"][0]["qas"][1]["id"] = "sb1"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ValidationError) as info:
        load_squad(path)
    assert [p.field for p in info.value.problems] == [
        "data[0].paragraphs[0].qas[1].id",
        "data[1].paragraphs[0].qas[0].answers[1].answer_start",
    ]


def test_squad_v2_impossible_questions_are_unanswerable(tmp_path: Path) -> None:
    raw = json.loads((FIX / "squad.json").read_text())
    raw["data"][1]["paragraphs"][0]["qas"].append(
        {
            "id": "nt2",
            "question": "When did Tesla land on Mars?",
            "answers": [],
            "is_impossible": True,
        }
    )
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(raw))
    _, golden = load_squad(path)
    assert golden["nt2"].answerable is False and golden["nt2"].evidence == []


def test_squad_not_json(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{")
    with pytest.raises(InputError, match="not valid SQuAD JSON"):
        load_squad(tmp_path / "x.json")


# --- real data -------------------------------------------------------------------------------


@pytest.mark.data
def test_scifact_matches_published_counts_and_validates(data_root: Path) -> None:
    corpus, golden = load_beir(data_root / "beir-scifact", split="test")
    assert len(corpus) == 5183
    assert len(golden) == 300
    assert sum(len(q.evidence) for q in golden) == 339
    assert validate_golden(golden, corpus) == []
    assert golden.version.startswith("g-")


@pytest.mark.data
def test_squad_dev_matches_published_counts_and_validates(data_root: Path) -> None:
    # load time is measured by benchmarks/bench_loaders.py, never asserted here
    path = data_root / "squad-v1.1-dev" / "dev-v1.1.json"
    corpus, golden = load_squad(path)
    assert len(golden) == 10_570 and len(corpus) == 48
    assert validate_golden(golden, corpus) == []
    # every original answer lies inside one of its question's spans
    raw = json.loads(path.read_text(encoding="utf-8"))
    for article in raw["data"]:
        doc = corpus[article["title"]].text
        for p in article["paragraphs"]:
            for qa in p["qas"]:
                texts = [e.text or "" for e in golden[qa["id"]].evidence]
                assert all(any(a["text"] in t for t in texts) for a in qa["answers"])
                assert all(e.text == doc[e.start : e.end] for e in golden[qa["id"]].evidence)
    heldout = sum(q.split == "heldout" for q in golden) / len(golden)
    assert 0.18 < heldout < 0.22
