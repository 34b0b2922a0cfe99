"""Build the fare-rules example's golden set and demo answers from their readable sources.

The example is SYNTHETIC (an invented airline, written for ragmeter). Labels are written as
quotes, never as offsets: every evidence span and every citation in ``source/*.toml`` names a
document and quotes text that must occur exactly once in that document's ``text``. This script
finds each quote and writes its character offsets, so the committed files can always be
rebuilt after a corpus edit:

    corpus.jsonl + source/questions.toml  ->  golden.jsonl
    corpus.jsonl + source/answers.toml    ->  answers/baseline.jsonl, answers/rerank.jsonl

Usage::

    python examples/fare-rules/build_golden.py            # rewrite the files in place
    python examples/fare-rules/build_golden.py --out DIR  # write them under DIR instead

Offsets are Python ``str`` indices (Unicode code points) into ``text``; the corpus is ASCII, so
they are byte offsets too. The script fails loudly, listing every problem at once (a quote that
is absent or occurs more than once, an unknown document or question, a malformed entry), and
writes nothing when any problem is found. It needs only the standard library (Python 3.11+).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VARIANTS = ("baseline", "rerank")
SPLITS = ("tune", "heldout")
#: intended reading of each demo answer (kept in answers.toml only; see its header).
ANSWER_KINDS = (
    "correct",
    "unverifiable",
    "computed",
    "memory",
    "retrieval-miss",
    "generation-error",
    "stale",
    "misattributed",
    "abstain",
    "hallucination",
)
#: a quote in an answer: text in double quotes with at least this many words.
MIN_QUOTE_WORDS = 3
_QUOTE_RE = re.compile(r'"([^"\n]+)"')


class BuildError(Exception):
    """Every problem found in the sources, one per line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def load_corpus(path: Path) -> dict[str, dict[str, Any]]:
    """Documents by id, in file order."""
    docs: dict[str, dict[str, Any]] = {}
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            doc = json.loads(line)
            if doc["id"] in docs:
                raise BuildError([f"{path}:{line_no}: duplicate document id {doc['id']!r}"])
            docs[doc["id"]] = doc
    return docs


def locate(
    docs: dict[str, dict[str, Any]], doc_id: str, quote: str, where: str, problems: list[str]
) -> tuple[int, int] | None:
    """Offsets of the single occurrence of ``quote`` in document ``doc_id``, or None (and a
    problem recorded) when the document is unknown or the quote is absent or ambiguous."""
    doc = docs.get(doc_id)
    if doc is None:
        problems.append(f"{where}: unknown document {doc_id!r}")
        return None
    if not quote:
        problems.append(f"{where}: empty quote")
        return None
    text: str = doc["text"]
    start = text.find(quote)
    if start < 0:
        problems.append(f"{where}: quote not found in {doc_id!r}: {quote!r}")
        return None
    again = text.find(quote, start + 1)
    if again >= 0:
        problems.append(
            f"{where}: quote is ambiguous in {doc_id!r} (at {start} and {again}; "
            f"quote more text): {quote!r}"
        )
        return None
    return start, start + len(quote)


def build_golden(docs: dict[str, dict[str, Any]], source: dict[str, Any]) -> list[dict[str, Any]]:
    """Golden records (ragmeter's golden-set format) from the parsed questions.toml."""
    problems: list[str] = []
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, q in enumerate(source.get("question", []), start=1):
        qid = q.get("id")
        where = f"questions.toml question #{i} ({qid})"
        unknown = set(q) - {"id", "question", "answer", "answerable", "slices", "split", "evidence"}
        if unknown:
            problems.append(f"{where}: unknown keys {sorted(unknown)}")
        if not qid or qid in seen:
            problems.append(f"{where}: missing or duplicate id")
        seen.add(qid)
        if not q.get("question"):
            problems.append(f"{where}: missing question text")
        answerable = q.get("answerable", True)
        split = q.get("split")
        if split not in SPLITS:
            problems.append(f"{where}: split must be one of {SPLITS}, got {split!r}")
        slices = q.get("slices", [])
        if not slices or len(set(slices)) != len(slices):
            problems.append(f"{where}: slices must be a non-empty list without repeats")
        if answerable == ("unanswerable" in slices):
            problems.append(f"{where}: the 'unanswerable' slice must match answerable = false")
        evidence = []
        for j, ev in enumerate(q.get("evidence", []), start=1):
            ev_where = f"{where} evidence #{j}"
            grade = ev.get("grade")
            if not isinstance(grade, int) or isinstance(grade, bool) or grade < 1:
                problems.append(f"{ev_where}: grade must be a positive integer")
            span = locate(docs, ev.get("doc", ""), ev.get("quote", ""), ev_where, problems)
            if span is None:
                continue
            rec = {
                "doc": ev["doc"],
                "start": span[0],
                "end": span[1],
                "grade": grade,
                "text": ev["quote"],
            }
            if "required" in ev:
                rec["required"] = bool(ev["required"])
            evidence.append(rec)
        if answerable:
            if not q.get("evidence") or not q.get("answer"):
                problems.append(f"{where}: an answerable question needs evidence and an answer")
            elif not any(e["grade"] == 2 for e in q["evidence"]):
                problems.append(f"{where}: no grade-2 (answering) span")
        elif q.get("evidence") or q.get("answer") is not None:
            problems.append(f"{where}: an unanswerable question has no evidence and no answer")
        spans = sorted((e["doc"], e["start"], e["end"]) for e in evidence)
        for a, b in itertools.pairwise(spans):
            if a[0] == b[0] and b[1] < a[2]:
                problems.append(f"{where}: overlapping spans in {a[0]!r}")
        records.append(
            {
                "id": qid,
                "question": q.get("question"),
                "evidence": evidence,
                "answer": q.get("answer") if answerable else None,
                "answerable": bool(answerable),
                "slices": slices,
                "split": split,
            }
        )
    if problems:
        raise BuildError(problems)
    return records


def quotes_in(answer: str) -> list[str]:
    """Double-quoted spans of at least MIN_QUOTE_WORDS words."""
    return [m for m in _QUOTE_RE.findall(answer) if len(m.split()) >= MIN_QUOTE_WORDS]


def _variant_entry(entry: dict[str, Any], variant: str) -> dict[str, Any]:
    override = entry.get(variant)
    base = {k: v for k, v in entry.items() if k not in VARIANTS}
    return {"id": entry.get("id"), **override} if override is not None else base


def build_answers(
    docs: dict[str, dict[str, Any]], source: dict[str, Any], golden: list[dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """Answers records per variant (ragmeter's answers format), in golden-set order."""
    problems: list[str] = []
    questions = {q["id"]: q for q in golden}
    superseded = {d for d, doc in docs.items() if doc.get("metadata", {}).get("superseded_by")}
    by_variant: dict[str, dict[str, dict[str, Any]]] = {v: {} for v in VARIANTS}
    for i, entry in enumerate(source.get("answer", []), start=1):
        qid = entry.get("id")
        if qid not in questions:
            problems.append(f"answers.toml answer #{i}: {qid!r} is not a golden question")
            continue
        for variant in VARIANTS:
            where = f"answers.toml answer #{i} ({qid}, {variant})"
            a = _variant_entry(entry, variant)
            unknown = set(a) - {"id", "kind", "text", "cite", "abstained"}
            if unknown:
                problems.append(f"{where}: unknown keys {sorted(unknown)}")
            kind, text = a.get("kind"), a.get("text", "")
            if kind not in ANSWER_KINDS:
                problems.append(f"{where}: kind must be one of {ANSWER_KINDS}, got {kind!r}")
            if qid in by_variant[variant]:
                problems.append(f"{where}: duplicate answer")
            abstained = bool(a.get("abstained", kind == "abstain"))
            citations, cited = [], []
            for j, c in enumerate(a.get("cite", []), start=1):
                span = locate(
                    docs, c.get("doc", ""), c.get("quote", ""), f"{where} citation #{j}", problems
                )
                if span is not None:
                    citations.append({"doc": c["doc"], "start": span[0], "end": span[1]})
                    cited.append((c["doc"], c["quote"]))
            _check_kind(
                where, kind, abstained, text, cited, questions[qid], docs, superseded, problems
            )
            rec: dict[str, Any] = {"id": qid, "answer": text, "abstained": abstained}
            if citations:
                rec["citations"] = citations
            rec["variant"] = variant
            by_variant[variant][qid] = rec
    for variant, answers in by_variant.items():
        missing = [q for q in questions if q not in answers]
        if missing:
            problems.append(f"answers.toml: no {variant} answer for {missing}")
    if problems:
        raise BuildError(problems)
    return {v: [answers[q] for q in questions] for v, answers in by_variant.items()}


def _check_kind(
    where: str,
    kind: str | None,
    abstained: bool,
    text: str,
    cited: list[tuple[str, str]],
    question: dict[str, Any],
    docs: dict[str, dict[str, Any]],
    superseded: set[str],
    problems: list[str],
) -> None:
    """The answer is what its kind says: quotes verbatim where they should be, citations present
    or absent, abstention on the right questions."""
    answerable = question["answerable"]
    quotes = quotes_in(text)
    anywhere = [q for q in quotes if not any(q in d["text"] for d in docs.values())]
    if anywhere:
        problems.append(f"{where}: quoted text is in no document: {anywhere}")
    in_cited = [q for q in quotes if any(q in quote for _, quote in cited)]
    if kind == "misattributed":
        if not quotes or len(in_cited) == len(quotes) or anywhere:
            problems.append(f"{where}: a misattributed answer quotes a document it does not cite")
    elif len(in_cited) != len(quotes):
        problems.append(f"{where}: every quote must lie inside a cited passage")
    if kind == "stale" and not (
        quotes
        and any(d in superseded for d, _ in cited)
        and all(any(q in quote for d, quote in cited if d in superseded) for q in quotes)
    ):
        problems.append(f"{where}: a stale answer quotes a superseded document it cites")
    if (
        kind
        in ("correct", "unverifiable", "computed", "generation-error", "stale", "misattributed")
        and not cited
    ):
        problems.append(f"{where}: kind {kind!r} needs a citation")
    if kind == "computed" and len(cited) < 2:
        problems.append(f"{where}: a computed total cites the parts it adds up (two or more)")
    if kind == "unverifiable" and quotes:
        problems.append(f"{where}: an unverifiable answer quotes nothing")
    if kind == "memory" and cited:
        problems.append(f"{where}: an answer from memory cites nothing")
    if kind in ("abstain", "hallucination") and answerable:
        problems.append(f"{where}: kind {kind!r} is for unanswerable questions")
    if kind == "abstain" and not abstained:
        problems.append(f"{where}: an abstention sets abstained = true")
    if kind != "abstain" and abstained and (kind != "retrieval-miss" or not answerable):
        problems.append(f"{where}: only abstentions and retrieval misses may abstain")
    if not text:
        problems.append(f"{where}: empty answer text")


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def build(src: Path = HERE, out: Path = HERE) -> dict[str, int]:
    """Read the sources under ``src`` and write golden.jsonl and answers/*.jsonl under ``out``.
    Returns the number of records written per file."""
    docs = load_corpus(src / "corpus.jsonl")
    with (src / "source" / "questions.toml").open("rb") as fh:
        golden = build_golden(docs, tomllib.load(fh))
    with (src / "source" / "answers.toml").open("rb") as fh:
        answers = build_answers(docs, tomllib.load(fh), golden)
    write_jsonl(out / "golden.jsonl", golden)
    counts = {"golden.jsonl": len(golden)}
    for variant, records in answers.items():
        write_jsonl(out / "answers" / f"{variant}.jsonl", records)
        counts[f"answers/{variant}.jsonl"] = len(records)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=HERE,
        help="folder to write golden.jsonl and answers/ into (default: in place)",
    )
    args = parser.parse_args(argv)
    try:
        counts = build(HERE, args.out)
    except BuildError as exc:
        print(f"build_golden: {len(exc.problems)} problem(s), nothing written:", file=sys.stderr)
        for p in exc.problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    for name, n in counts.items():
        print(f"wrote {args.out / name} ({n} records)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
