"""SQuAD JSON (v1.1; v2.0's unanswerable questions too) as a corpus and a span golden set.

Mapping to ragmeter's data model:

- each article becomes one document: id = the article ``title``, ``title`` = it with ``_``
  read as spaces, ``text`` = the paragraph contexts joined with ``"\\n\\n"``; paragraph ``p``
  starts at ``sum(len(context) + 2 for the paragraphs before it)``, and answer offsets are
  shifted by that amount;
- each question keeps its SQuAD id and becomes a question with ``answer`` = the first answer,
  ``slices`` = [article title] and the deterministic split of
  :func:`ragmeter.data.golden.assign_split` (about 20% held out);
- answers become grade-2 spans. SQuAD lists one answer per annotator, so answers repeat and
  overlap ("Denver Broncos" / "the Denver Broncos"): identical spans are kept once and
  overlapping ones are merged into their union, so a question's spans never overlap.
  The spans left are *alternatives*: any one of them answers the question. When there are
  several, the one holding the first annotator's answer is marked ``required: true`` and the
  others ``required: false``, so AllR@k means "the first annotator's answer was retrieved",
  Hit@k means "some accepted answer was retrieved" (the natural "answered" test for SQuAD),
  and R@k is the share of distinct accepted answers retrieved.
- v2.0 questions with ``is_impossible: true`` become unanswerable questions without evidence
  (their ``plausible_answers`` are not answers and are ignored). ``is_impossible`` must be a
  JSON boolean, and ``true`` with a non-empty ``answers`` list is refused as contradictory.
- a question that is not marked ``is_impossible: true`` and has no answer is an error, never an
  unanswerable question: SQuAD v1.1 has no unanswerable questions, so an empty ``answers`` list
  there is damage, and reading it as "unanswerable" would silently change what is measured.
- titles, contexts, ids and questions must be strings, ``paragraphs``, ``qas`` and ``answers``
  lists: every problem is reported at once with its path in the file
  (``data[0].paragraphs[1].qas[2].answers``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._errors import InputError, Problem, ValidationError
from ..io import read_json
from ._schema import Document, Evidence, Question
from .corpus import Corpus
from .golden import HELDOUT_SHARE, GoldenSet, assign_split

#: separator between paragraphs of one article.
PARAGRAPH_SEPARATOR = "\n\n"
#: grade of an answer span ("answers it").
ANSWER_GRADE = 2


def load_squad(
    path: str | os.PathLike[str], *, heldout: float = HELDOUT_SHARE
) -> tuple[Corpus, GoldenSet]:
    """Load a SQuAD JSON file; raises :class:`ValidationError` listing every bad record."""
    path = Path(path)
    data = read_json(path, hint="not valid SQuAD JSON (one object with a 'data' list)")
    articles = data.get("data") if isinstance(data, dict) else None
    if not isinstance(articles, list):
        raise InputError(
            "expected an object with a 'data' list of articles", path=path, field="data"
        )
    problems: list[Problem] = []
    docs: list[Document] = []
    questions: list[Question] = []
    seen_docs: set[str] = set()
    seen_questions: set[str] = set()
    where = str(path)
    for a, article in enumerate(articles):
        try:
            title = article["title"]
            paragraphs = article["paragraphs"]
            contexts = [p["context"] for p in paragraphs]
        except (KeyError, TypeError) as exc:
            problems.append(Problem(f"article without {exc}", where, field=f"data[{a}]"))
            continue
        bad = _not_text(title, f"data[{a}].title")
        for p, c in enumerate(contexts):
            if bad is None and not isinstance(c, str):
                bad = (
                    f"must be a string, got {type(c).__name__}",
                    f"data[{a}].paragraphs[{p}].context",
                )
        if bad is not None:
            problems.append(Problem(bad[0], where, field=bad[1]))
            continue
        if title in seen_docs:
            problems.append(
                Problem(f"duplicate article title {title!r}", where, field=f"data[{a}].title")
            )
            continue
        seen_docs.add(title)
        text = PARAGRAPH_SEPARATOR.join(contexts)
        docs.append(Document(id=title, text=text, title=title.replace("_", " ")))
        offset = 0
        for p, paragraph in enumerate(paragraphs):
            qas = paragraph.get("qas", [])
            if not isinstance(qas, list):
                problems.append(
                    Problem("must be a list", where, field=f"data[{a}].paragraphs[{p}].qas")
                )
                qas = []
            for k, qa in enumerate(qas):
                field = f"data[{a}].paragraphs[{p}].qas[{k}]"
                q = _question(qa, title, text, offset, field, where, heldout, problems)
                if q is None:
                    continue
                if q.id in seen_questions:
                    problems.append(
                        Problem(f"duplicate question id {q.id!r}", where, field=f"{field}.id")
                    )
                    continue
                seen_questions.add(q.id)
                questions.append(q)
            offset += len(contexts[p]) + len(PARAGRAPH_SEPARATOR)
    if problems:
        raise ValidationError(problems, what=f"SQuAD file {path}")
    if not questions:
        raise InputError("no questions found", path=path)
    corpus = Corpus(docs, source=where)
    return corpus, GoldenSet(questions, corpus=corpus, source=where)


def _question(
    qa: Any,
    title: str,
    text: str,
    offset: int,
    field: str,
    where: str,
    heldout: float,
    problems: list[Problem],
) -> Question | None:
    try:
        qid, question = qa["id"], qa["question"]
        answers = qa.get("answers", [])
        impossible = qa.get("is_impossible", False)
    except (KeyError, TypeError, AttributeError) as exc:
        problems.append(Problem(f"question without {exc}", where, field=field))
        return None
    bad = (
        _not_text(qid, f"{field}.id")
        or _not_text(question, f"{field}.question")
        or (None if isinstance(answers, list) else ("must be a list", f"{field}.answers"))
        or (
            None
            if isinstance(impossible, bool)
            else (f"must be true or false, got {impossible!r}", f"{field}.is_impossible")
        )
    )
    if bad is not None:
        problems.append(Problem(bad[0], where, field=bad[1]))
        return None
    split = assign_split(qid, heldout)
    if impossible:
        if answers:
            problems.append(
                Problem(
                    f"is_impossible is true but the question lists {len(answers)} answer(s)",
                    where,
                    field=f"{field}.answers",
                )
            )
            return None
        return Question(id=qid, question=question, answerable=False, slices=[title], split=split)
    if not answers:
        problems.append(
            Problem(
                "no answers, and not marked is_impossible: true (SQuAD v2.0's unanswerable "
                "questions are); a question without answers is not read as unanswerable",
                where,
                field=f"{field}.answers",
            )
        )
        return None
    spans: list[tuple[int, int]] = []
    for j, ans in enumerate(answers):
        try:
            start = offset + int(ans["answer_start"])
            answer = str(ans["text"])
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(
                Problem(f"answer without a valid {exc}", where, field=f"{field}.answers[{j}]")
            )
            return None
        end = start + len(answer)
        if not answer or text[start:end] != answer:
            problems.append(
                Problem(
                    f"answer {answer!r} is not at answer_start {start - offset} of its paragraph",
                    where,
                    field=f"{field}.answers[{j}].answer_start",
                )
            )
            return None
        spans.append((start, end))
    merged = _merge(spans)
    first = spans[0]
    several = len(merged) > 1
    evidence = [
        Evidence(
            doc=title,
            start=s,
            end=e,
            grade=ANSWER_GRADE,
            text=text[s:e],
            required=(s <= first[0] and first[1] <= e) if several else None,
        )
        for s, e in merged
    ]
    return Question(
        id=qid,
        question=question,
        evidence=evidence,
        answer=str(answers[0]["text"]),
        slices=[title],
        split=split,
    )


def _not_text(value: Any, field: str) -> tuple[str, str] | None:
    """(message, field) when ``value`` is not a non-empty string."""
    if isinstance(value, str):
        return None if value else ("must be a non-empty string", field)
    return f"must be a string, got {type(value).__name__}", field


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Distinct spans with overlapping ones replaced by their union, in start order."""
    out: list[list[int]] = []
    for s, e in sorted(set(spans)):
        if out and s < out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]
