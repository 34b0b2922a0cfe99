"""How a golden question was made (``Question.origin``: logged, written, drafted): optional,
part of the version only when set (every set without origins keeps its version), counted by
``golden stats`` and kept apart per slice by ``compare-traffic``; a queue's frozen questions
carry their item's origin (a draft only once a labeller accepted it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.data import (
    Corpus,
    Document,
    Evidence,
    GoldenSet,
    Question,
    TrafficLog,
    compare_traffic,
    golden_stats,
    golden_version_of,
    load_golden,
    write_golden,
)
from ragmeter.data.traffic import LogLine
from ragmeter.store import NewItem, Store
from ragmeter.workflows import labelling

DOC = Document(id="d", text="The change fee is $75. Bags cost $30. Seats are free.")
ORIGINS = ["logged", "written", "drafted"]


def q(i: int, origin: str | None = None, slices: tuple[str, ...] = ("fees",)) -> Question:
    return Question(
        id=f"q{i}",
        question=f"question {i}?",
        evidence=[Evidence(doc="d", start=4, end=14, grade=2)],
        slices=list(slices),
        origin=origin,  # type: ignore[arg-type]
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([None, *ORIGINS]), min_size=1, max_size=8))
def test_origin_is_in_the_version_only_when_set(origins: list[str | None]) -> None:
    corpus = Corpus([DOC])
    with_origin = GoldenSet([q(i, o) for i, o in enumerate(origins)], corpus=corpus)
    without = GoldenSet([q(i) for i in range(len(origins))], corpus=corpus)
    same = golden_version_of(with_origin) == golden_version_of(without)
    assert same == all(o is None for o in origins)
    for x in without.questions:  # no key at all: files from before the field keep their digest
        assert "origin" not in x.model_dump(mode="json", exclude_none=True)


def test_origin_round_trips_and_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "golden.jsonl"
    write_golden([q(1, "drafted"), q(2)], path)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[0]["origin"] == "drafted" and "origin" not in lines[1]
    back = list(load_golden(path))
    assert [x.origin for x in back] == ["drafted", None]
    path.write_text(json.dumps({**lines[0], "origin": "guessed"}) + "\n")
    with pytest.raises(Exception, match="origin"):
        load_golden(path)


def test_stats_and_compare_traffic_keep_origins_apart(tmp_path: Path) -> None:
    gold = GoldenSet([q(1, "logged"), q(2, "drafted"), q(3, "drafted"), q(4, None, ("bags",))],
                     corpus=Corpus([DOC]))  # fmt: skip
    stats = golden_stats(gold)
    assert stats["origins"] == {"logged": 1, "drafted": 2, "unknown": 1}
    log = TrafficLog(tuple(LogLine(i, {"question": f"x{i}", "slice": s})
                           for i, s in enumerate(["fees", "fees", "bags"], 1)))  # fmt: skip
    result = compare_traffic(gold, log)
    by = {s.name: dict(s.by_origin) for s in result.slices}
    assert by == {"fees": {"logged": 1, "drafted": 2}, "bags": {"unknown": 1}}
    assert result.to_dict()["slices"][0]["golden_by_origin"]
    # the command line: a stats row, and a column once any question records an origin
    path = tmp_path / "golden.jsonl"
    write_golden(list(gold.questions), path)
    logs = tmp_path / "log.jsonl"
    logs.write_text("".join(json.dumps(ln.record) + "\n" for ln in log.lines))
    r = CliRunner().invoke(app, ["golden", "stats", str(path)], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "logged: 1, drafted: 2, not recorded: 1" in r.stdout
    r = CliRunner().invoke(app, ["golden", "compare-traffic", str(path), str(logs)],
                           env={"COLUMNS": "200"})  # fmt: skip
    assert r.exit_code == 0, r.output
    made = r.stdout[r.stdout.index("golden questions by how they were made") :]
    rows = {ln.split("│")[1].strip(): ln.split("│")[2:-1] for ln in made.splitlines() if "│" in ln}
    assert [c.strip() for c in rows["fees"]] == ["1", "2", "0"]  # logged, drafted, not recorded
    assert [c.strip() for c in rows["bags"]] == ["0", "0", "1"]


def test_a_frozen_queue_records_each_question_origin(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 's.db'}")
    span = {"spans": [{"doc": "d", "start": 4, "end": 14, "grade": 2}]}
    items = [
        NewItem(qid="l1", question="logged?", origin="logged"),
        NewItem(qid="w1", question="written?", origin="written"),
        NewItem(qid="d1", question="drafted?", origin="drafted", accepted=False, prefill=span),
        NewItem(qid="d2", question="never accepted?", origin="drafted", accepted=False),
    ]
    store.create_queue("q", kind="evidence", corpus=Corpus([DOC]), items=items, source="t")
    labelling.ensure_labeller(store, "ana")
    for it in store.items("q")[:3]:
        labelling.save(store, "q", it.id, "ana", span, 0)
    frozen = labelling.freeze_queue(store, "q", tmp_path / "v1")
    made = {x.id: x.origin for x in load_golden(frozen.golden)}
    assert made == {"l1": "logged", "w1": "written", "d1": "drafted"}  # d2: not accepted
    # a reviewed golden set keeps each question's own origin (none: none)
    store.create_queue(
        "r", kind="evidence", corpus=Corpus([DOC]), source="t",
        items=[NewItem(qid="d1", question="drafted?", origin="golden",
                       prefill={**span, "origin": "drafted"}),
               NewItem(qid="o1", question="old?", origin="golden", prefill=span)],
    )  # fmt: skip
    for it in store.items("r"):
        labelling.save(store, "r", it.id, "ana", span, 0)
    again = labelling.freeze_queue(store, "r", tmp_path / "v2")
    assert {x.id: x.origin for x in load_golden(again.golden)} == {"d1": "drafted", "o1": None}
