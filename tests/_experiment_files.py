"""Experiment folders for tests, written once here instead of in every test module.

Two kinds of folder are made:

- the fare-rules example's data (``examples/fare-rules/``) copied into a folder beside the
  test's own ``experiment.toml``: ``fare_rules_experiment``;
- a toy data set of four short fare-rule documents and five questions with one exact evidence
  span each, small enough that a BM25 experiment over it runs in well under a second:
  ``TEXTS``/``QUESTIONS``, ``toy_corpus``/``toy_golden`` and ``toy_experiment``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

from ragmeter.data import (
    Corpus,
    Document,
    Evidence,
    GoldenSet,
    Question,
    write_corpus,
    write_golden,
)

FARE_RULES = Path(__file__).resolve().parents[1] / "examples" / "fare-rules"

#: the toy corpus: {document id: text}
TEXTS = {
    "fees": "The change fee for Standard fares is 75 dollars. Basic fares pay 150 dollars to "
    "change. Flex fares change for free. Fees are charged per passenger and per direction.",
    "refunds": "Refunds go back to the original form of payment. Card refunds take seven days. "
    "Cash refunds are paid at the airport desk. Vouchers are never refunded in cash.",
    "infants": "Infants under two years travel on a parent's lap. A lap infant pays ten percent of "
    "the adult fare. An infant with its own seat pays the child fare.",
    "seats": "Seat selection is free for Flex fares. Standard fares pay 15 dollars per seat. Exit "
    "row seats cost 40 dollars and need a passenger over fifteen.",
}
#: the toy questions: (id, question, document, the answer as it stands in the document)
QUESTIONS = [
    ("q1", "What is the change fee for a Standard fare?", "fees", "75 dollars"),
    ("q2", "How long do card refunds take?", "refunds", "seven days"),
    ("q3", "What does a lap infant pay?", "infants", "ten percent of the adult fare"),
    ("q4", "How much is an exit row seat?", "seats", "40 dollars"),
    ("q5", "Are vouchers refunded in cash?", "refunds", "Vouchers are never refunded in cash"),
]


def fare_rules_experiment(
    folder: Path,
    text: str,
    *,
    files: Iterable[str] = ("golden.jsonl", "corpus.jsonl"),
    trees: Iterable[str] = (),
    cache: Iterable[str] = (),
) -> Path:
    """``folder/experiment.toml`` holding ``text``, beside copies of the example's ``files`` and
    folders (``trees``); ``folder`` is made if missing. Copies, so a test that runs or edits the
    experiment never writes into the example.

    ``cache`` names kinds of the example's ``.ragmeter-cache`` (``chunkings``, ``bm25``, ...)
    to seed the folder's cache with, those the example has: the suite runs the example before
    any test, so a test re-using its chunkings and runs only computes what it is about."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in files:
        shutil.copy(FARE_RULES / name, folder / name)
    for name in trees:
        shutil.copytree(FARE_RULES / name, folder / name, dirs_exist_ok=True)
    for kind in cache:
        if (FARE_RULES / ".ragmeter-cache" / kind).is_dir():
            src, dst = FARE_RULES / ".ragmeter-cache" / kind, folder / ".ragmeter-cache" / kind
            shutil.copytree(src, dst, dirs_exist_ok=True)
    path = folder / "experiment.toml"
    path.write_text(text, encoding="utf-8")
    return path


def ablation_experiment(folder: Path) -> Path:
    """A copy of ``examples/fare-rules/ablation.toml`` (the four context sources, the extractive
    stand-in and the fake judge) in ``folder``, its cache seeded with the example's chunkings
    and BM25 runs: only the answers are made by the test."""
    text = (FARE_RULES / "ablation.toml").read_text(encoding="utf-8")
    return fare_rules_experiment(
        folder, text, trees=("generators",), cache=["chunkings", "runs", "bm25"]
    )


def k_against_budget_text(name: str | None = None) -> str:
    """The text of ``examples/fare-rules/k-against-budget.toml`` (the changing-k trap: k = 8
    under the baseline's budget of 1,200 tokens), its experiment renamed ``name`` if given."""
    text = (FARE_RULES / "k-against-budget.toml").read_text(encoding="utf-8")
    if name is None:
        return text
    old = 'name = "fare rules: k against budget"'
    assert old in text, "the example's name line changed"
    return text.replace(old, f'name = "{name}"', 1)


def toy_documents() -> list[Document]:
    return [Document(id=k, text=v) for k, v in TEXTS.items()]


def toy_corpus() -> Corpus:
    return Corpus(toy_documents())


def toy_questions(grade: int = 1) -> list[Question]:
    """Each question with its answer's exact span as its one piece of evidence."""
    questions = []
    for qid, text, doc, answer in QUESTIONS:
        start = TEXTS[doc].index(answer)
        evidence = Evidence(doc=doc, start=start, end=start + len(answer), grade=grade)
        questions.append(Question(id=qid, question=text, evidence=[evidence]))
    return questions


def toy_golden(corpus: Corpus, grade: int = 1) -> GoldenSet:
    return GoldenSet(toy_questions(grade), corpus=corpus)


def write_toy_data(folder: Path) -> Path:
    """``corpus.jsonl`` and ``golden.jsonl`` of the toy data set in ``folder`` (made if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_corpus(toy_documents(), folder / "corpus.jsonl")
    write_golden(toy_questions(), folder / "golden.jsonl")
    return folder


def toy_experiment(folder: Path, text: str) -> Path:
    """``folder/experiment.toml`` holding ``text``, beside the toy data set's two files."""
    write_toy_data(folder)
    path = folder / "experiment.toml"
    path.write_text(text, encoding="utf-8")
    return path
