"""A team's own retriever as a plain function: paragraphs ranked by the words they share with
the question. ragmeter calls retrieve(question) for every golden question."""

import json
import re
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "corpus.jsonl"
WORD = re.compile(r"\w+")
PARAGRAPH = re.compile(r"[^\n]+(?:\n[^\n]+)*")  # lines up to a blank line


def _paragraphs() -> list[tuple[str, int, int, set[str]]]:
    out = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        for m in PARAGRAPH.finditer(doc["text"]):
            out.append((doc["id"], m.start(), m.end(), set(WORD.findall(m.group().lower()))))
    return out


PARAGRAPHS = _paragraphs()


def retrieve(question: str) -> list[tuple[str, int, int]]:
    """The 20 best paragraphs as (document id, start, end): character offsets, end exclusive."""
    words = set(WORD.findall(question.lower()))
    scored = [(len(words & w) / len(w) ** 0.5, doc, s, e) for doc, s, e, w in PARAGRAPHS]
    scored.sort(key=lambda x: (-x[0], x[1], x[2]))
    return [(doc, s, e) for score, doc, s, e in scored[:20] if score > 0]
