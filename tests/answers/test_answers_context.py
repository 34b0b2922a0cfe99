"""Answers against their prompt context: a citation outside the context is flagged and never
supported (item 4), unknown support is reported as unknown and never counted as supported
(item 5), and answers without a ``context`` take it from the retrieval run being diagnosed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _answers_fixture import (
    BAGGAGE,
    FEES_2024,
    FEES_2026,
    answers,
    corpus,
    doc_cite,
    golden,
    write_jsonl,
    write_world,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import UsageError
from ragmeter.answers import answers_from_records
from ragmeter.answers.contexts import prompt_contexts
from ragmeter.answers.report import check_answers
from ragmeter.chunking import Chunking
from ragmeter.cli import app
from ragmeter.diagnosis import build_table, diagnose, table_from_counts, table_from_report

# two chunks per document: the halves split at a sentence boundary (offsets by hand)
_CUT = {
    "fees-2026": FEES_2026.index("The change fee"),
    "fees-2024": FEES_2024.index("Refunds"),
    "baggage": BAGGAGE.index("Name changes"),
}
_TEXT = {"fees-2026": FEES_2026, "fees-2024": FEES_2024, "baggage": BAGGAGE}


def chunking() -> Chunking:
    ids, docs, starts, ends, texts = [], [], [], [], []
    for doc, text in _TEXT.items():
        for a, b in ((0, _CUT[doc]), (_CUT[doc], len(text))):
            ids.append(f"{doc}#{a}-{b}")
            docs.append(doc)
            starts.append(a)
            ends.append(b)
            texts.append(text[a:b])
    return Chunking(
        name="halves",
        tokenizer="whitespace",
        ids=ids,
        doc=docs,
        start=starts,
        end=ends,
        text=texts,
        n_tokens=[len(t.split()) for t in texts],
    )


FEES_2026_B = f"fees-2026#{_CUT['fees-2026']}-{len(FEES_2026)}"  # holds "$75" and "90 days"
FEES_2024_B = f"fees-2024#{_CUT['fees-2024']}-{len(FEES_2024)}"  # "Refunds ... 90 days" only
BAGGAGE_A = f"baggage#0-{_CUT['baggage']}"  # "The first checked bag costs $35."
BAGGAGE_B = f"baggage#{_CUT['baggage']}-{len(BAGGAGE)}"  # "Name changes are not permitted"


def _good_answer() -> dict[str, object]:
    """Correct, quotes its cited passage verbatim: supported when the passage was in context."""
    return {
        "id": "change-fee",
        "answer": 'It is $75: "The change fee on Standard fares is $75"',
        "citations": [doc_cite("fees-2026", FEES_2026, "The change fee on Standard fares is $75")],
    }


# ---------------------------------------------------------------- item 4: outside the context


def test_a_citation_outside_the_answer_context_is_never_supported() -> None:
    inside = {**_good_answer(), "context": [FEES_2026_B]}
    outside = {**_good_answer(), "context": [BAGGAGE_A, FEES_2024_B]}
    for rec, flagged in ((inside, ()), (outside, ("fees-2026:53-92",))):
        r = check_answers(
            answers_from_records([rec]), golden(), corpus=corpus(), chunks=chunking()
        ).by_id["change-fee"]
        assert r.correct is True
        assert r.faithfulness.outside_context == flagged
        if flagged:
            # the quote IS in the cited passage, but the prompt never held that passage
            assert not r.faithfulness.failed_quotes
            assert r.supported is False and r.ok is False and r.cites_outside_context
        else:
            assert r.supported is True and r.ok is True and not r.cites_outside_context


def test_chunk_citation_outside_the_context_and_overlap_rule() -> None:
    # a chunk citation is inside only when its chunk id is in the context
    rec = {
        "id": "first-bag",
        "answer": 'It costs $35 ("The first checked bag costs $35").',
        "citations": [{"chunk": BAGGAGE_A}],
        "context": [BAGGAGE_B],
    }
    r = check_answers(
        answers_from_records([rec]), golden(), corpus=corpus(), chunks=chunking()
    ).by_id["first-bag"]
    assert r.faithfulness.outside_context == (BAGGAGE_A,) and r.supported is False
    # a doc span that straddles the chunk boundary is inside when either chunk was in context
    cut = _CUT["baggage"]
    rec = {
        "id": "first-bag",
        "answer": "It costs $35.",
        "citations": [{"doc": "baggage", "start": cut - 6, "end": cut + 4}],
        "context": [BAGGAGE_B],
    }
    r = check_answers(
        answers_from_records([rec]), golden(), corpus=corpus(), chunks=chunking()
    ).by_id["first-bag"]
    assert r.faithfulness.outside_context == ()


def test_outside_context_is_its_own_table_category_not_from_memory() -> None:
    recs = [
        {**_good_answer(), "context": [BAGGAGE_A]},  # cites fees-2026, never in the prompt
        {
            "id": "refund-window",
            "answer": "90 days",
            "citations": [{"doc": "fees-2026"}],
            "context": [FEES_2026_B],
        },
    ]
    rep = check_answers(answers_from_records(recs), golden(), corpus=corpus(), chunks=chunking())
    evidence = {"change-fee": False, "refund-window": True}
    t = table_from_report(evidence, rep)
    assert t.count("cites_outside_context") == 1 and t.ids["cites_outside_context"] == (
        "change-fee",
    )
    assert t.count("from_memory") == 0 and t.count("working") == 1 and t.n == 2
    s = rep.summary()
    assert s["cites_outside_context"] == 1 and s["supported"] == 1
    assert t.to_dict()["other"][0] == {
        "cell": "cites_outside_context",
        "title": "cites a passage outside its context",
        "reading": t.cell("cites_outside_context").reading,
        "count": 1,
        "ids": ["change-fee"],
    }


# ---------------------------------------------------------------- item 5: unknown is unknown


def test_unknown_support_is_not_counted_as_supported() -> None:
    rep = check_answers(answers_from_records(answers()), golden(), corpus=corpus())
    nc = rep.by_id["name-change"]  # correct, cites the document, quotes and states nothing
    assert nc.correct is True and nc.supported is None
    assert nc.ok is None and nc.support_unknown
    s = rep.summary()
    # refund-window (supported) and the abstention on pet-fee: nothing unknown folded in
    assert s["ok"] == 2 and s["support_unknown"] == 1 and s["correct_support_unknown"] == 1
    assert s["ok_known"] == 4 and s["ok_rate"] == pytest.approx(2 / 4)
    assert rep.answer_ok()["name-change"] is None


def test_unknown_support_has_its_own_column_in_the_table() -> None:
    rep = check_answers(answers_from_records(answers()), golden(), corpus=corpus())
    t = table_from_report({q: True for q in rep.answer_ok()}, rep)
    assert t.count("support_unknown") == 1 and t.ids["support_unknown"] == ("name-change",)
    assert t.count("working") == 1 and t.count("generation_failure") == 2
    d = diagnose(table=t, report=rep)
    gen = {s.key: s for s in d.steps}["generation"]
    assert gen.value == pytest.approx(1 / 3)  # working / (working + generation failure)
    assert "1 correct with support unknown" in gen.detail


def test_from_memory_row_splits_on_correctness() -> None:
    # no evidence in context: right answers are "answered from memory" whatever they cite,
    # wrong ones are retrieval failures; unknown support does not hide them
    ev = {"a": False, "b": False, "c": False, "d": True}
    ok = {"a": None, "b": False, "c": True, "d": None}
    correct = {"a": True, "b": False, "c": True, "d": True}
    t = build_table(ev, ok, correct=correct)
    assert t.ids["from_memory"] == ("a", "c") and t.ids["retrieval_failure"] == ("b",)
    assert t.ids["support_unknown"] == ("d",) and t.n == 4


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.booleans(), st.sampled_from([True, False, None]), st.booleans(), st.booleans()
        ),
        max_size=40,
    )
)
def test_every_question_lands_in_exactly_one_category(rows: list[tuple]) -> None:
    ev = {f"q{i}": e for i, (e, _, _, _) in enumerate(rows)}
    ok = {f"q{i}": o for i, (_, o, _, _) in enumerate(rows)}
    # ok True implies correct; ok None means correct with unknown support
    correct = {f"q{i}": (o is not False) or c for i, (_, o, c, _) in enumerate(rows)}
    outside = {f"q{i}": x for i, (_, _, _, x) in enumerate(rows)}
    if not rows:
        with pytest.raises(UsageError):
            build_table(ev, ok, correct=correct, cites_outside=outside)
        return
    t = build_table(ev, ok, correct=correct, cites_outside=outside)
    placed = [q for ids in t.ids.values() for q in ids]
    assert sorted(placed) == sorted(ev) and t.n == len(rows) and not t.excluded
    for q in t.ids["cites_outside_context"]:
        assert outside[q]
    for q in t.ids["working"] + t.ids["from_memory"]:
        assert not outside[q] and correct[q]
    for q in t.ids["working"]:
        assert ok[q] is True and ev[q]
    assert all(ok[q] is None and ev[q] for q in t.ids["support_unknown"])


def test_counts_take_the_two_extra_categories() -> None:
    t = table_from_counts(41, 9, 6, 14, cites_outside_context=3, support_unknown=2)
    assert t.n == 75 and t.count("cites_outside_context") == 3 and t.count("support_unknown") == 2
    assert t.largest_bad is not None and t.largest_bad.key == "retrieval_failure"
    d = diagnose(table=t)
    step = {s.key: s for s in d.steps}["citations"]
    assert step.status == "fail" and "3 answer(s) cite a passage outside" in step.detail


def test_outside_context_larger_than_every_bad_cell_names_the_pipeline() -> None:
    d = diagnose(table=table_from_counts(40, 3, 1, 2, cites_outside_context=9))
    assert d.failing_link == "pipeline"
    assert "log the exact prompt context" in d.experiment.change


# ---------------------------------------------------------------- context from the run


def _run() -> dict[str, dict[str, float]]:
    # change-fee: fees-2024 first, then baggage; the current schedule is ranked 3rd
    return {
        "change-fee": {FEES_2024_B: 3.0, BAGGAGE_A: 2.0, FEES_2026_B: 1.0},
        "refund-window": {FEES_2026_B: 2.0, FEES_2024_B: 1.0},
    }


def test_prompt_contexts_cut_at_k_and_budget() -> None:
    ch = chunking()
    assert prompt_contexts(_run(), ch, k=2) == {
        "change-fee": (FEES_2024_B, BAGGAGE_A),
        "refund-window": (FEES_2026_B, FEES_2024_B),
    }
    tokens = {cid: int(n) for cid, n in zip(ch.ids, ch.n_tokens, strict=True)}
    budget = tokens[FEES_2024_B]  # only the first chunk of each list fits when it is the smallest
    got = prompt_contexts(_run(), ch, budget=budget)
    assert got["change-fee"] == (FEES_2024_B,)
    with pytest.raises(UsageError):
        prompt_contexts(_run(), ch, k=2, budget=10)
    with pytest.raises(UsageError):
        prompt_contexts({"change-fee": {"ghost#0-1": 1.0}}, ch, k=2)


def test_answers_without_context_take_it_from_the_run() -> None:
    aset = answers_from_records([_good_answer()])
    ctx = prompt_contexts(_run(), chunking(), k=2)  # fees-2026 is 3rd: not in the prompt
    r = check_answers(aset, golden(), corpus=corpus(), chunks=chunking(), contexts=ctx)
    c = r.by_id["change-fee"]
    assert c.context_from == "run" and c.cites_outside_context and c.ok is False
    # the answer's own context wins over the run's
    own = answers_from_records([{**_good_answer(), "context": [FEES_2026_B]}])
    c = check_answers(own, golden(), corpus=corpus(), chunks=chunking(), contexts=ctx).by_id[
        "change-fee"
    ]
    assert c.context_from == "answer" and c.ok is True
    with pytest.raises(UsageError):  # run contexts are chunk ids: the chunking is needed
        check_answers(aset, golden(), corpus=corpus(), contexts=ctx)


def test_judge_faithfulness_uses_the_run_context_instead_of_refusing() -> None:
    from ragmeter.answers.judges.fake import FakeJudge

    aset = answers_from_records([_good_answer()])
    with pytest.raises(UsageError, match="context"):  # no context anywhere: refused
        check_answers(
            aset,
            golden(),
            corpus=corpus(),
            chunks=chunking(),
            judge=FakeJudge(),
            judge_metrics=["faithfulness"],
        )
    ctx = prompt_contexts(_run(), chunking(), k=3)
    rep = check_answers(
        aset,
        golden(),
        corpus=corpus(),
        chunks=chunking(),
        judge=FakeJudge(),
        judge_metrics=["faithfulness"],
        contexts=ctx,
    )
    assert rep.by_id["change-fee"].judged["faithfulness"].ok


def test_cli_diagnose_takes_the_context_from_the_run(tmp_path: Path) -> None:
    paths = write_world(tmp_path)
    chunks = tmp_path / "chunks.jsonl"
    chunking().save(chunks)
    write_jsonl(paths["answers"], [_good_answer()])
    run = tmp_path / "run.trec"
    run.write_text(
        "".join(
            f"{q} Q0 {cid} {i + 1} {s} r\n"
            for q, docs in _run().items()
            for i, (cid, s) in enumerate(docs.items())
        ),
        encoding="utf-8",
    )
    args = [
        "diagnose",
        "--golden",
        str(paths["golden"]),
        "--corpus",
        str(paths["corpus"]),
        "--chunks",
        str(chunks),
        "--answers",
        str(paths["answers"]),
        "--run",
        str(run),
        "--format",
        "json",
    ]
    r = CliRunner().invoke(app, [*args, "--k", "2"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["answers"]["cites_outside_context"] == 1
    other = {c["cell"]: c["count"] for c in out["table"]["other"]}
    assert other["cites_outside_context"] == 1
    r = CliRunner().invoke(app, [*args, "--k", "3"])
    out = json.loads(r.stdout)
    assert out["answers"]["cites_outside_context"] == 0
    assert {c["cell"]: c["count"] for c in out["table"]["cells"]}["working"] == 1


def test_cli_answers_check_judges_with_the_run_context(tmp_path: Path) -> None:
    paths = write_world(tmp_path)
    chunks = tmp_path / "chunks.jsonl"
    chunking().save(chunks)
    write_jsonl(paths["answers"], [_good_answer()])
    run = tmp_path / "run.trec"
    run.write_text(
        "".join(
            f"{q} Q0 {cid} {i + 1} {s} r\n"
            for q, docs in _run().items()
            for i, (cid, s) in enumerate(docs.items())
        ),
        encoding="utf-8",
    )
    args = [
        "answers",
        "check",
        str(paths["answers"]),
        "--golden",
        str(paths["golden"]),
        "--corpus",
        str(paths["corpus"]),
        "--chunks",
        str(chunks),
        "--judge",
        "fake",
        "--judge-metrics",
        "faithfulness",
        "--format",
        "json",
    ]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2 and "context" in r.output  # no context anywhere: refused
    r = CliRunner().invoke(app, [*args, "--run", str(run), "--k", "3"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["answers"][0]["context_from"] == "run"
    assert out["answers"][0]["judged"]["faithfulness"]["ok"] is True
    r = CliRunner().invoke(app, [*args, "--k", "3"])
    assert r.exit_code == 2 and "--run" in r.output
