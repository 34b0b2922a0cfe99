"""Evidence written as text: a span given as the words it covers instead of character offsets.

In a golden file a span may read ``{"quote": "...", "doc": "d1", "occurrence": 2, "grade": 2,
"required": true}`` (``doc`` and ``occurrence`` optional) in place of ``{"doc", "start", "end"}``,
so a team can label in a spreadsheet. Reading the file turns each quote into offsets:

1. exact: every occurrence of the quote, character for character, in ``doc`` (or, without
   ``doc``, in every document of the corpus);
2. only when there is none, normalised: the quote and the documents read with every run of
   whitespace as one space and the case folded (:func:`normalise`); the match is mapped back to
   offsets of the original text, and is reported as normalised;
3. one match is needed: several matches in one document are an error listing them, unless
   ``occurrence`` (1-based, counting the matches of the kind used: exact ones when there are
   any) picks one; matches in several documents are an error asking for ``doc``; no match is
   an error naming the question, the document and the quote.

The resolved span is ``{"doc", "start", "end", "grade", "required", "text"}`` with ``text`` =
``doc.text[start:end]``, exactly what ``ragmeter golden resolve`` writes: a quote-labelled file
and its resolved copy have the same labels and the same golden-set version.

Case folding can change a text's length (``"ß"`` folds to ``"ss"``): the normal form keeps,
for each of its characters, the original character it came from, and a match must begin at
the first and end at the last character of an original character's folding, so that the span
mapped back always normalises to exactly the normalised quote.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from .._errors import InputError, Problem, RagmeterWarning
from ..io import iter_jsonl
from ._schema import INT64_MAX, Question
from ._validate import check_questions, quote, schema_problems
from .corpus import Corpus

__all__ = [
    "NormalText",
    "QuoteResolution",
    "QuoteResolver",
    "Resolution",
    "ResolvedQuote",
    "find_exact",
    "find_normalised",
    "normal_form",
    "normal_text",
    "normalise",
    "resolve_quotes",
    "warn_normalised",
]

Method = Literal["exact", "normalised"]

#: matches (or documents) listed in an ambiguity error before "and N more".
LISTED = 5
#: characters of context shown either side of a match in an ambiguity error.
CONTEXT = 20
#: normalised spans named in the load warning before "and N more".
WARNED = 3
#: a whitespace run (``\s`` matches exactly the characters ``str.isspace`` accepts)
_SPACE = re.compile(r"\s+")


# --- matching (pure functions over strings) ----------------------------------------------------
@dataclass(frozen=True)
class NormalText:
    """``text`` with whitespace runs read as one space and case folded, and where each of its
    characters came from: character ``k`` of :attr:`text` comes from ``original[starts[k]:
    ends[k]]``; ``opens[k]``/``closes[k]`` say whether it is the first/last character that
    original character (or whitespace run) became."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    opens: tuple[bool, ...]
    closes: tuple[bool, ...]


def normal_text(text: str) -> str:
    """:attr:`NormalText.text` of ``text``, without the map back (cheap: what a search over
    every document tests first). ``\\s`` is ``str.isspace`` and ``casefold`` folds character
    by character, so this equals ``normal_form(text).text`` (a test checks every character)."""
    return _SPACE.sub(" ", text).casefold()


def normal_form(text: str) -> NormalText:
    """``text`` normalised (see :class:`NormalText`), not stripped: a leading or trailing
    whitespace run stays one space."""
    if len(text.casefold()) == len(text):
        return _one_to_one(text)
    return _per_character(text)


def _per_character(text: str) -> NormalText:
    """:func:`normal_form`, one original character at a time (the definition)."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    opens: list[bool] = []
    closes: list[bool] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            j = i + 1
            while j < n and text[j].isspace():
                j += 1
            out.append(" ")
            starts.append(i)
            ends.append(j)
            opens.append(True)
            closes.append(True)
            i = j
            continue
        folded = c.casefold() or c  # no character folds to nothing; kept safe regardless
        last = len(folded) - 1
        for k, ch in enumerate(folded):
            out.append(ch)
            starts.append(i)
            ends.append(i + 1)
            opens.append(k == 0)
            closes.append(k == last)
        i += 1
    return NormalText("".join(out), tuple(starts), tuple(ends), tuple(opens), tuple(closes))


def _one_to_one(text: str) -> NormalText:
    """:func:`normal_form` of a text whose every character folds to one character (no fold
    ever shortens, so equal lengths say so): only whitespace runs change the length."""
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for run in _SPACE.finditer(text):
        starts.extend(range(at, run.start()))
        ends.extend(range(at + 1, run.start() + 1))
        starts.append(run.start())
        ends.append(run.end())
        at = run.end()
    starts.extend(range(at, len(text)))
    ends.extend(range(at + 1, len(text) + 1))
    every = (True,) * len(starts)
    return NormalText(normal_text(text), tuple(starts), tuple(ends), every, every)


def normalise(text: str) -> str:
    """Whitespace runs as one space, case folded character by character, no leading or
    trailing space: what normalised matching compares."""
    return normal_form(text).text.strip(" ")


def find_exact(text: str, needle: str) -> list[int]:
    """Start offsets of every occurrence of ``needle`` in ``text`` (overlapping ones too)."""
    if not needle:
        return []
    found: list[int] = []
    at = text.find(needle)
    while at >= 0:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


def find_normalised(form: NormalText, needle: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets into the *original* text of every match of ``needle`` (already
    normalised) in ``form``, keeping only matches that begin and end on whole original
    characters."""
    if not needle:
        return []
    size = len(needle)
    found: list[tuple[int, int]] = []
    at = form.text.find(needle)
    while at >= 0:
        last = at + size - 1
        if form.opens[at] and form.closes[last]:
            found.append((form.starts[at], form.ends[last]))
        at = form.text.find(needle, at + 1)
    return found


# --- one quote -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Resolution:
    """Where a quote was found: ``doc.text[start:end]``, by ``method``; ``matches``: how many
    matches of that kind the document has (``occurrence`` picked one when more than one)."""

    doc: str
    start: int
    end: int
    method: Method
    matches: int = 1


class QuoteResolver:
    """Finds quotes in a set of documents (id → text); caches the normal forms it builds."""

    def __init__(self, documents: Mapping[str, str]) -> None:
        self.documents = documents
        self._forms: dict[str, NormalText] = {}
        self._flat: dict[str, str] = {}

    def form(self, doc: str) -> NormalText:
        found = self._forms.get(doc)
        if found is None:
            found = self._forms[doc] = normal_form(self.documents[doc])
        return found

    def flat(self, doc: str) -> str:
        """:func:`normal_text` of a document (cached)."""
        found = self._flat.get(doc)
        if found is None:
            found = self._flat[doc] = normal_text(self.documents[doc])
        return found

    def resolve(
        self, text: str, *, doc: str | None = None, occurrence: int | None = None
    ) -> Resolution:
        """The one span quoted by ``text`` (see the module doc); raises :class:`InputError`
        saying why there is none (the message names the document and the quote)."""
        if not text.strip():
            raise InputError("the quote is empty: write the words of the span")
        if doc is not None and doc not in self.documents:
            raise InputError(f"unknown document {doc!r}: not in the corpus (quote {quote(text)})")
        where = [doc] if doc is not None else list(self.documents)
        method: Method = "exact"
        hits: dict[str, list[tuple[int, int]]] = {}
        for d in where:
            starts = find_exact(self.documents[d], text)
            if starts:
                hits[d] = [(s, s + len(text)) for s in starts]
        if not hits:
            method = "normalised"
            needle = normalise(text)
            for d in where:
                if needle in self.flat(d):  # the map back is built only where it may match
                    spans = find_normalised(self.form(d), needle)
                    if spans:
                        hits[d] = spans
        in_doc = f"document {doc!r}" if doc is not None else "any document of the corpus"
        if not hits:
            raise InputError(
                f"quote {quote(text)} is not in {in_doc}, neither exactly nor after "
                "normalising whitespace and case"
            )
        if len(hits) > 1:
            listed = ", ".join(f"{d!r} ({len(s)}x)" for d, s in list(hits.items())[:LISTED])
            more = f" and {len(hits) - LISTED} more" if len(hits) > LISTED else ""
            raise InputError(
                f"quote {quote(text)} is in {len(hits)} documents ({method} matches): "
                f'{listed}{more}; add "doc" to say which'
            )
        ((d, spans),) = hits.items()
        how = "" if method == "exact" else " after normalising whitespace and case"
        if occurrence is not None:
            if occurrence > len(spans):
                raise InputError(
                    f'"occurrence": {occurrence} asks for match {occurrence}, but quote '
                    f"{quote(text)} occurs {len(spans)} time(s) in document {d!r}{how}"
                )
            start, end = spans[occurrence - 1]
        elif len(spans) > 1:
            body = self.documents[d]
            listed = ", ".join(_context(body, s, e) for s, e in spans[:LISTED])
            more = f" and {len(spans) - LISTED} more" if len(spans) > LISTED else ""
            raise InputError(
                f"quote {quote(text)} occurs {len(spans)} times in document {d!r}{how}: "
                f'{listed}{more}; add "occurrence": N (1-based) to pick one'
            )
        else:
            start, end = spans[0]
        return Resolution(d, start, end, method, len(spans))


def _context(text: str, start: int, end: int) -> str:
    """``at 10-17 '…before[match]after…'``: a match with a little of the text around it."""
    before = text[max(0, start - CONTEXT) : start]
    after = text[end : end + CONTEXT]
    lead = "…" if start > CONTEXT else ""
    tail = "…" if end + CONTEXT < len(text) else ""
    return f"at {start}-{end} {lead + before + '[' + text[start:end] + ']' + after + tail!r}"


# --- golden files --------------------------------------------------------------------------------
class _QuoteSpan(BaseModel):
    """A span written as text, before it is resolved into an Evidence."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    quote: str = Field(min_length=1)
    doc: str | None = Field(default=None, min_length=1)
    occurrence: int | None = Field(default=None, ge=1, le=INT64_MAX)
    grade: int = Field(default=1, ge=1, le=INT64_MAX)
    required: bool | None = None


@dataclass(frozen=True)
class ResolvedQuote:
    """One quote span of a golden file and the offsets it resolved to."""

    question: str
    index: int  # position in the question's evidence list
    line: int
    quote: str
    doc: str
    start: int
    end: int
    method: Method
    text: str  # doc.text[start:end]

    @property
    def where(self) -> str:
        return f"{self.question} evidence[{self.index}]"


@dataclass(frozen=True)
class QuoteResolution:
    """A golden file read with its quotes resolved: the good questions and their lines, every
    problem (schema, quotes, labels), and each quote span's resolution."""

    questions: list[Question]
    lines: list[int]
    problems: list[Problem]
    quotes: list[ResolvedQuote]
    #: quote spans that could not be resolved (each has its problem)
    unresolved: int = 0

    @property
    def exact(self) -> int:
        return sum(q.method == "exact" for q in self.quotes)

    @property
    def normalised(self) -> list[ResolvedQuote]:
        return [q for q in self.quotes if q.method == "normalised"]


def _is_quote(span: object) -> bool:
    return isinstance(span, dict) and "quote" in span


def _resolve_line(
    obj: Any,
    line: int,
    path: str,
    resolver: QuoteResolver | None,
    corpus: Corpus | None,
    problems: list[Problem],
    found: list[ResolvedQuote],
) -> int:
    """Replace each quote span of the question ``obj`` by offsets (in place); the number of
    quote spans that could not be resolved (the problems say why)."""
    evidence = obj.get("evidence")
    qid = obj.get("id") if isinstance(obj.get("id"), str) else f"on line {line}"
    failed = 0
    for i, span in enumerate(evidence):
        if not _is_quote(span):
            continue
        field = f"evidence[{i}]"
        if "start" in span or "end" in span:
            problems.append(
                Problem(
                    "a span gives either a quote or start/end offsets, not both", path, line, field
                )
            )
            failed += 1
            continue
        try:
            spec = _QuoteSpan.model_validate(span)
        except pydantic.ValidationError as exc:
            for p in schema_problems(exc, path, line):
                problems.append(dataclasses.replace(p, field=f"{field}.{p.field}"))
            failed += 1
            continue
        if resolver is None:
            problems.append(
                Problem(
                    f"question {qid!r}: a span written as a quote needs the corpus to find its "
                    "offsets; pass the corpus (--corpus, or load_golden(path, corpus=...)) or "
                    "write the offsets with `ragmeter golden resolve`",
                    path,
                    line,
                    f"{field}.quote",
                )
            )
            failed += 1
            continue
        if spec.doc is not None and spec.doc not in resolver.documents:
            hint = corpus.suggest(spec.doc) if corpus is not None else ""
            problems.append(
                Problem(
                    f"question {qid!r}: unknown document {spec.doc!r}: not in the corpus{hint} "
                    f"(quote {quote(spec.quote)})",
                    path,
                    line,
                    f"{field}.doc",
                )
            )
            failed += 1
            continue
        try:
            r = resolver.resolve(spec.quote, doc=spec.doc, occurrence=spec.occurrence)
        except InputError as exc:
            problems.append(
                Problem(f"question {qid!r}: {exc.message}", path, line, f"{field}.quote")
            )
            failed += 1
            continue
        text = resolver.documents[r.doc][r.start : r.end]
        resolved: dict[str, Any] = {"doc": r.doc, "start": r.start, "end": r.end}
        resolved["grade"] = spec.grade
        resolved["text"] = text
        if spec.required is not None:
            resolved["required"] = spec.required
        evidence[i] = resolved
        found.append(
            ResolvedQuote(str(qid), i, line, spec.quote, r.doc, r.start, r.end, r.method, text)
        )
    return failed


def resolve_quotes(
    path: str | os.PathLike[str], corpus: Corpus | None, *, quotes_from: Corpus | None = None
) -> QuoteResolution:
    """Read golden file ``path``, resolving its quote spans against ``corpus`` (without one, a
    quote span is a problem saying it needs the corpus), and check every label
    (:func:`~ragmeter.data._validate.check_questions`, against ``corpus``). ``quotes_from``:
    resolve the quotes against this corpus but check the labels without one (a check of what
    changed since freezing must read a set whose offsets no longer fit). Never raises for a
    problem of the file: every one is in the result, in line order."""
    source = quotes_from if quotes_from is not None else corpus
    path = Path(path)
    where = str(path)
    problems: list[Problem] = []
    questions: list[Question] = []
    lines: list[int] = []
    found: list[ResolvedQuote] = []
    resolver: QuoteResolver | None = None
    unresolved = 0
    for number, obj in iter_jsonl(path, problems, what="questions"):
        evidence = obj.get("evidence")
        if isinstance(evidence, list) and any(_is_quote(s) for s in evidence):
            if resolver is None and source is not None:
                resolver = QuoteResolver({d.id: d.text for d in source})
            obj = {**obj, "evidence": list(evidence)}
            failed = _resolve_line(obj, number, where, resolver, source, problems, found)
            if failed:
                unresolved += failed
                continue  # the question's other fields are checked once its quotes resolve
        try:
            questions.append(Question.model_validate(obj))
        except pydantic.ValidationError as exc:
            problems.extend(schema_problems(exc, where, number))
            continue
        lines.append(number)
    problems.extend(check_questions(questions, lines, corpus, where))
    problems.sort(key=lambda p: p.line or 0)
    return QuoteResolution(questions, lines, problems, found, unresolved)


def warn_normalised(quotes: list[ResolvedQuote], path: str | os.PathLike[str]) -> None:
    """One :class:`RagmeterWarning` when some quotes were found only after normalising
    whitespace and case (their offsets are right; the user should know they were not exact)."""
    loose = [q for q in quotes if q.method == "normalised"]
    if not loose:
        return
    named = "; ".join(
        f"{q.where} {quote(q.quote, 40)} read as {quote(q.text, 40)}" for q in loose[:WARNED]
    )
    more = f" and {len(loose) - WARNED} more" if len(loose) > WARNED else ""
    warnings.warn(
        f"{path}: {len(loose)} of {len(quotes)} quote span(s) matched only after normalising "
        f"whitespace and case: {named}{more}; `ragmeter golden resolve` lists them and writes "
        "the offsets",
        RagmeterWarning,
        stacklevel=3,
    )
