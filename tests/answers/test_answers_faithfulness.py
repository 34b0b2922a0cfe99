"""Deterministic faithfulness: quotes and stated values must be in the passage cited."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from _answers_fixture import BAGGAGE, FEES_2024, FEES_2026, corpus, doc_cite

from ragmeter.answers import Answer
from ragmeter.answers._passages import PassageIndex
from ragmeter.answers.faithfulness import check_faithfulness, extract_quotes, normalize_quote


@dataclass(frozen=True)
class _Chunk:
    id: str
    doc: str
    start: int
    end: int
    text: str


def _chunks() -> list[_Chunk]:
    half = FEES_2026.index("Refunds")
    return [
        _Chunk("fees-2026#a", "fees-2026", 0, half, FEES_2026[:half]),
        _Chunk("fees-2026#b", "fees-2026", half, len(FEES_2026), FEES_2026[half:]),
        _Chunk("baggage#a", "baggage", 0, len(BAGGAGE), BAGGAGE),
    ]


def test_quote_extraction() -> None:
    text = (
        'He said "two words" and “the change fee is $75” then "Refunds are accepted" [2] and "a b"'
    )
    qs = extract_quotes(text)
    assert [(q.text, q.marker) for q in qs] == [
        ("the change fee is $75", None),
        ("Refunds are accepted", 2),
    ]
    assert normalize_quote("  The CHANGE-fee,\n is $75! ") == "the change fee is 75"


def test_quote_in_another_passage_but_not_the_cited_one_fails() -> None:
    index = PassageIndex(corpus(), _chunks())
    # the quote is in chunk fees-2026#b (and in both fee documents) but the answer cites chunk a
    ans = Answer(
        id="q",
        answer='"Refunds are accepted within 90 days" of purchase.',
        citations=[{"chunk": "fees-2026#a"}],
        context=["fees-2026#a", "fees-2026#b"],
    )
    f = check_faithfulness(ans, index)
    (q,) = f.quotes
    assert not q.ok and q.reason == "not in the cited passage" and q.checked == ("fees-2026#a",)
    assert q.found_elsewhere == ("context:fees-2026#b", "doc:fees-2026", "doc:fees-2024")
    assert f.supported is False
    # citing the right chunk passes; normalisation ignores case, punctuation and spacing
    ok = Answer(
        id="q",
        answer="“refunds ARE accepted,  within 90 days”",
        citations=[{"chunk": "fees-2026#b"}],
    )
    assert check_faithfulness(ok, index).supported is True


def test_doc_span_citation_and_markers() -> None:
    index = PassageIndex(corpus())
    cite_a = doc_cite("fees-2026", FEES_2026, "The change fee on Standard fares is $75")
    cite_b = doc_cite("baggage", BAGGAGE, "The first checked bag costs $35")
    ans = Answer(
        id="q",
        answer='"The change fee on Standard fares is $75" [2] and "the first '
        'checked bag costs" [2]',
        citations=[cite_a, cite_b],
    )
    q1, q2 = check_faithfulness(ans, index).quotes
    # marker [2] points the first quote at the baggage span, where it is not
    assert not q1.ok and q1.checked == (f"baggage:{cite_b['start']}-{cite_b['end']}",)
    assert "doc:fees-2026" in q1.found_elsewhere
    assert q2.ok
    bad = Answer(id="q", answer='"The change fee on Standard" [3]', citations=[cite_a])
    (q,) = check_faithfulness(bad, index).quotes
    assert not q.ok and "marker [3]" in q.reason
    nocite = Answer(id="q", answer='"The change fee on Standard fares"')
    (q,) = check_faithfulness(nocite, index).quotes
    assert not q.ok and q.reason == "quote without a citation"
    assert q.found_elsewhere == ("doc:fees-2026", "doc:fees-2024")


def test_stated_values_must_be_in_the_cited_passage() -> None:
    index = PassageIndex(corpus())
    ans = Answer(
        id="q",
        answer="The fee is 75 USD and refunds take 90 days.",
        citations=[{"doc": "fees-2024"}],
    )
    f = check_faithfulness(ans, index)
    by = {v.value: v for v in f.values}
    assert by["90 days"].ok and not by["75 USD"].ok
    assert by["75 USD"].found_elsewhere == ("doc:fees-2026",)
    assert f.supported is False
    # nothing checkable: support unknown, never assumed
    plain = Answer(id="q", answer="Yes, it is allowed.", citations=[{"doc": "baggage"}])
    assert check_faithfulness(plain, index).supported is None
    # an abstention is not checked
    abst = Answer(id="q", answer='"The change fee on Standard" $99', abstained=True)
    assert check_faithfulness(abst, index).supported is None


def test_unresolvable_citations_are_reported() -> None:
    from ragmeter.answers import answers_from_records

    index = PassageIndex(corpus())
    aset = answers_from_records(
        [
            {"id": "a", "answer": "x", "citations": [{"doc": "nope"}]},
            {"id": "b", "answer": "x", "citations": [{"doc": "baggage", "start": 0, "end": 9999}]},
            {"id": "c", "answer": "x", "citations": [{"chunk": "c1"}]},
        ],
        path="answers.jsonl",
    )
    problems = [str(p) for p in index.check(aset)]
    assert problems == [
        "answers.jsonl:1: field 'citations.0': cites unknown document 'nope'",
        (
            f"answers.jsonl:2: field 'citations.0': citation end 9999 is past the end of 'baggage' "
            f"({len(BAGGAGE)} chars)"
        ),
        (
            "answers.jsonl:3: field 'citations.0': cites a chunk but no chunks were given "
            "(pass the chunking used for the prompt)"
        ),
    ]
    assert FEES_2024  # fixture sanity


@pytest.mark.parametrize(
    "rec,field",
    [
        ({"id": "a", "answer": "x", "citations": [{"doc": "d", "chunk": "c"}]}, "citations.0"),
        ({"id": "a", "answer": "x", "citations": [{"doc": "d", "start": 5}]}, "citations.0"),
        (
            {"id": "a", "answer": "x", "citations": [{"doc": "d", "start": 5, "end": 5}]},
            "citations.0",
        ),
        ({"id": "a"}, "answer"),
        ({"id": "a", "answer": "x", "confidence": 1}, "confidence"),
    ],
)
def test_schema_problems_name_the_field(rec: dict, field: str) -> None:
    from ragmeter import ValidationError
    from ragmeter.answers import answers_from_records

    with pytest.raises(ValidationError) as exc:
        answers_from_records([rec], path="a.jsonl")
    assert f"a.jsonl:1: field '{field}'" in str(exc.value)
