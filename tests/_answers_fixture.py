"""A tiny synthetic fare-rules world for the answers tests: a current and a stale fee schedule,
a baggage policy, five questions (one unanswerable) and helpers to write them to disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragmeter.data import Document, Evidence, Question
from ragmeter.data.corpus import Corpus
from ragmeter.data.golden import GoldenSet

FEES_2026 = (
    "Northwind fee schedule 2026. Effective 1 March 2026. The change fee on Standard "
    "fares is $75 per passenger. Refunds are accepted within 90 days of purchase."
)
FEES_2024 = (
    "Northwind fee schedule 2024. The change fee on Standard fares is $50 per "
    "passenger. Refunds are accepted within 90 days of purchase."
)
BAGGAGE = (
    "Baggage policy. The first checked bag costs $35. Name changes are not permitted "
    "on Basic fares."
)


def span(doc: str, text: str, phrase: str, grade: int = 2) -> Evidence:
    start = text.index(phrase)
    return Evidence(doc=doc, start=start, end=start + len(phrase), grade=grade)


def corpus() -> Corpus:
    return Corpus(
        [
            Document(
                id="fees-2026",
                text=FEES_2026,
                metadata={"effective_date": "2026-03-01", "version": "2026.1"},
            ),
            Document(
                id="fees-2024",
                text=FEES_2024,
                metadata={
                    "effective_date": "2024-01-01",
                    "version": "2024.2",
                    "superseded_by": "fees-2026",
                },
            ),
            Document(id="baggage", text=BAGGAGE, metadata={"effective_date": "2025-06-01"}),
        ]
    )


def golden() -> GoldenSet:
    qs = [
        Question(
            id="change-fee",
            question="What is the change fee on a Standard fare?",
            answer="$75",
            slices=["fees"],
            evidence=[span("fees-2026", FEES_2026, "The change fee on Standard fares is $75")],
        ),
        Question(
            id="refund-window",
            question="How long do I have to ask for a refund?",
            answer="90 days",
            slices=["fees"],
            evidence=[span("fees-2026", FEES_2026, "Refunds are accepted within 90 days")],
        ),
        Question(
            id="first-bag",
            question="How much is the first checked bag?",
            answer="USD 35.00",
            evidence=[span("baggage", BAGGAGE, "The first checked bag costs $35")],
        ),
        Question(
            id="name-change",
            question="Can I change the name on a Basic fare?",
            answer="Name changes are not permitted on Basic fares",
            evidence=[span("baggage", BAGGAGE, "Name changes are not permitted")],
        ),
        Question(id="pet-fee", question="What does a pet in the cabin cost?", answerable=False),
    ]
    return GoldenSet(qs, corpus=corpus())


def doc_cite(doc: str, text: str, phrase: str) -> dict[str, Any]:
    start = text.index(phrase)
    return {"doc": doc, "start": start, "end": start + len(phrase)}


def answers() -> list[dict[str, Any]]:
    """One variant: a stale answer (faithful to fees-2024 but wrong), a good one, a quote cited
    to the wrong passage, a paraphrase, and an abstention on the unanswerable question."""
    return [
        {
            "id": "change-fee",
            "answer": 'The change fee is $50 per passenger: "The change fee on '
            'Standard fares is $50".',
            "citations": [
                doc_cite("fees-2024", FEES_2024, "The change fee on Standard fares is $50")
            ],
        },
        {
            "id": "refund-window",
            "answer": 'Within ninety days: "Refunds are accepted within 90 days of purchase."',
            "citations": [{"doc": "fees-2026"}],
        },
        {
            "id": "first-bag",
            "answer": 'It costs 35 USD ("The first checked bag costs $35").',
            "citations": [doc_cite("fees-2026", FEES_2026, "Effective 1 March 2026")],
        },
        {
            "id": "name-change",
            "answer": "No, name changes are not permitted on Basic fares.",
            "citations": [{"doc": "baggage"}],
        },
        {"id": "pet-fee", "answer": "I don't know; the documents do not say.", "citations": []},
    ]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_world(folder: Path) -> dict[str, Path]:
    """corpus.jsonl, golden.jsonl and answers.jsonl under ``folder``."""
    c = write_jsonl(folder / "corpus.jsonl", [d.model_dump() for d in corpus()])
    g = write_jsonl(
        folder / "golden.jsonl", [q.model_dump(exclude_none=True) for q in golden().questions]
    )
    a = write_jsonl(folder / "answers.jsonl", answers())
    return {"corpus": c, "golden": g, "answers": a}
