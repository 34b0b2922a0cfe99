"""BEIR test collections (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).

Mapping to ragmeter's data model:

- each corpus line ``{"_id", "title", "text", "metadata"}`` becomes a :class:`Document` with
  ``text`` = the BEIR text and ``title`` = the BEIR title (retrievers may index both; spans
  index ``text`` only);
- each query that has at least one judgement with score > 0 in ``qrels/<split>.tsv`` becomes
  a question; every document judged > 0 becomes one span over the whole document text
  (``start = 0``, ``end = len(text)``, ``text`` recorded) with grade = the qrels score.
  Judgements of 0 carry no span; a query judged only 0 is left out (and counted);
- questions keep the query ids, follow the order of ``queries.jsonl``, have no slices, and get
  the deterministic tune/held-out split of :func:`ragmeter.data.golden.assign_split`.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from .._errors import InputError, Problem, RagmeterWarning, ValidationError
from ..io import iter_jsonl
from ._schema import Document, Evidence, Question
from .corpus import Corpus
from .golden import HELDOUT_SHARE, GoldenSet, assign_split


def load_beir(
    folder: str | os.PathLike[str], split: str = "test", *, heldout: float = HELDOUT_SHARE
) -> tuple[Corpus, GoldenSet]:
    """Load a BEIR folder as a corpus and a golden set of whole-document spans.

    Raises :class:`ValidationError` listing every malformed line, unknown query or document
    id and empty judged document.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(
            "expected a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)", path=folder
        )
    qrels_file = folder / "qrels" / f"{split}.tsv"
    if not qrels_file.is_file():
        found = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
        raise InputError(
            f"no qrels for split {split!r}; splits found: {', '.join(found) or 'none'}",
            path=qrels_file,
        )
    problems: list[Problem] = []
    corpus = _read_corpus(folder / "corpus.jsonl", problems)
    queries = _read_queries(folder / "queries.jsonl", problems)
    judged = _read_qrels(qrels_file, problems)

    where = str(qrels_file)
    evidence: dict[str, list[Evidence]] = {}
    for qid, doc_id, score, line in judged:
        if qid not in queries:
            problems.append(
                Problem(f"query {qid!r} is not in queries.jsonl", where, line, "query-id")
            )
            continue
        doc = corpus.get(doc_id)
        if doc is None:
            problems.append(
                Problem(f"document {doc_id!r} is not in corpus.jsonl", where, line, "corpus-id")
            )
            continue
        spans = evidence.setdefault(qid, [])
        if score <= 0:
            continue
        if not doc.text:
            problems.append(
                Problem(
                    f"document {doc_id!r} is judged relevant but has no text",
                    where,
                    line,
                    "corpus-id",
                )
            )
            continue
        spans.append(Evidence(doc=doc_id, start=0, end=len(doc.text), grade=score, text=doc.text))
    if problems:
        raise ValidationError(problems, what=f"BEIR folder {folder}")
    questions = [
        Question(id=qid, question=text, evidence=evidence[qid], split=assign_split(qid, heldout))
        for qid, text in queries.items()
        if evidence.get(qid)
    ]
    if not questions:
        raise InputError(f"no query has a judgement above 0 in split {split!r}", path=qrels_file)
    skipped = sum(1 for spans in evidence.values() if not spans)
    if skipped:
        warnings.warn(
            f"{qrels_file}: {skipped} query(ies) judged only 0 were left out",
            RagmeterWarning,
            stacklevel=2,
        )
    return corpus, GoldenSet(questions, corpus=corpus, source=str(folder))


def _read_corpus(path: Path, problems: list[Problem]) -> Corpus:
    docs: dict[str, Document] = {}
    where = str(path)
    for number, obj in iter_jsonl(path, problems, what="documents"):
        doc_id, text, title = obj.get("_id"), obj.get("text"), obj.get("title")
        metadata = obj.get("metadata") or {}
        if not isinstance(doc_id, str) or not doc_id:
            problems.append(Problem("missing or empty '_id' (a string)", where, number, "_id"))
            continue
        if not isinstance(text, str):
            problems.append(Problem("missing 'text' (a string)", where, number, "text"))
            continue
        if doc_id in docs:
            problems.append(Problem(f"duplicate document id {doc_id!r}", where, number, "_id"))
            continue
        if not isinstance(metadata, dict):
            problems.append(Problem("'metadata' must be an object", where, number, "metadata"))
            continue
        docs[doc_id] = Document(id=doc_id, text=text, title=title or None, metadata=metadata)
    return Corpus(docs.values(), source=where)


def _read_queries(path: Path, problems: list[Problem]) -> dict[str, str]:
    queries: dict[str, str] = {}
    where = str(path)
    for number, obj in iter_jsonl(path, problems, what="queries"):
        qid, text = obj.get("_id"), obj.get("text")
        if not isinstance(qid, str) or not qid:
            problems.append(Problem("missing or empty '_id' (a string)", where, number, "_id"))
        elif not isinstance(text, str):
            problems.append(Problem("missing 'text' (a string)", where, number, "text"))
        elif qid in queries:
            problems.append(Problem(f"duplicate query id {qid!r}", where, number, "_id"))
        else:
            queries[qid] = text
    return queries


def _read_qrels(path: Path, problems: list[Problem]) -> list[tuple[str, str, int, int]]:
    """Rows ``(query_id, doc_id, score, line)`` of a BEIR qrels TSV (header line optional)."""
    rows: list[tuple[str, str, int, int]] = []
    seen: dict[tuple[str, str], int] = {}
    where = str(path)
    data = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:  # never replace a byte silently: it would change an id
        line_no = data.count(b"\n", 0, exc.start) + 1
        problems.append(Problem(f"not UTF-8: invalid byte at offset {exc.start}", where, line_no))
        return rows
    # lines end at \n (a \r before it is dropped); splitlines() would also split at \x0b,
    # \x1c, \u2028 and others inside an id
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if "\x00" in line or "\ufeff" in line or "\r" in line:
            problems.append(
                Problem(
                    "a NUL byte, byte order mark or carriage return inside the line",
                    where,
                    number,
                )
            )
            continue
        if not line.strip():
            continue
        cols = line.split("\t")
        if number == 1 and cols[0].strip().lower() in ("query-id", "query_id", "qid"):
            continue
        if len(cols) != 3:
            problems.append(
                Problem(
                    f"expected 3 tab-separated columns (query-id, corpus-id, "
                    f"score), got {len(cols)}",
                    where,
                    number,
                )
            )
            continue
        qid, doc_id, raw = (c.strip() for c in cols)
        try:
            score = int(raw)
        except ValueError:
            problems.append(
                Problem(f"score must be an integer, got {raw!r}", where, number, "score")
            )
            continue
        if (qid, doc_id) in seen:
            problems.append(
                Problem(
                    f"duplicate judgement of {doc_id!r} for query {qid!r} "
                    f"(first on line {seen[qid, doc_id]})",
                    where,
                    number,
                )
            )
            continue
        seen[qid, doc_id] = number
        rows.append((qid, doc_id, score, number))
    return rows
