"""Deterministic faithfulness: what an answer quotes or states must be in the passage it cites.

Two checks, no judge needed (the rule: "keep deterministic checks wherever one exists, such as
'every quoted span appears in the cited passage'"):

- **Quotes.** Every span in double quotes (``"..."`` or typographic ``“...”``) of at least
  :data:`MIN_QUOTE_WORDS` words must appear, after :func:`normalize_quote` (case folded,
  punctuation to spaces, whitespace collapsed), inside the text of a passage the answer cites:
  the cited document span or chunk, not merely somewhere in the context. A quote followed by a
  marker ``[n]`` is checked against citation ``n`` (1-based) only; otherwise against any of the
  answer's citations. A quote with no citation to check fails.
- **Values.** Every money amount, duration, percentage and date the answer states (see
  :mod:`ragmeter.answers._values`) must appear in a cited passage. Plain numbers are not checked
  (too many are incidental).

A failed item also lists where it *does* appear: other chunks of the prompt context
(``context:<chunk>``) and documents of the corpus (``doc:<id>``), so a wrong citation is told
apart from an invented quote.

**Citations inside the prompt.** When the prompt context is known (the answer's ``context``, or
the one taken from the retrieval run, see :mod:`ragmeter.answers.contexts`), every citation must
point into it (:meth:`PassageIndex.outside`). An answer that cites a passage its prompt never
held is either a pipeline bug (answers and run do not belong together) or a leak from the
model's memory: it is listed in ``outside_context`` and never counted as supported, even when
its quote is verbatim in the cited passage.

``supported`` is False when any item failed or a citation lies outside the context; True when at
least one item was checked and all passed; None (unknown, reported as such and never counted as
supported) when the answer quotes and states nothing checkable (or abstained).
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._passages import CitedText, PassageIndex
from ._schema import Answer, is_abstention
from ._values import Value, describe, extract_values

MIN_QUOTE_WORDS = 3
_QUOTE_RE = re.compile(r'"([^"\n]+)"|“([^”\n]+)”')
_MARKER_RE = re.compile(r"\s*\[(\d+)\]")
_PUNCT_TABLE = str.maketrans({ch: " " for ch in string.punctuation + "‘’“”«»–—…"})
_CHECKED_KINDS = ("money", "duration", "percent", "date")


def normalize_quote(text: str) -> str:
    """Case folded, punctuation replaced by spaces, whitespace collapsed."""
    return " ".join(text.casefold().translate(_PUNCT_TABLE).split())


def _inside(needle: str, haystack: str) -> bool:
    return f" {needle} " in f" {haystack} "


@dataclass(frozen=True)
class Quote:
    """One quoted span of an answer and the citation marker after it (1-based), if any."""

    text: str
    marker: int | None


def extract_quotes(answer: str, min_words: int = MIN_QUOTE_WORDS) -> list[Quote]:
    """Quoted spans with at least ``min_words`` words (counted after normalisation)."""
    out = []
    for m in _QUOTE_RE.finditer(answer):
        text = m.group(1) if m.group(1) is not None else m.group(2)
        if len(normalize_quote(text).split()) < min_words:
            continue
        mk = _MARKER_RE.match(answer, m.end())
        out.append(Quote(text, int(mk.group(1)) if mk else None))
    return out


@dataclass(frozen=True)
class QuoteCheck:
    """The verdict on one quote."""

    quote: str
    ok: bool
    checked: tuple[str, ...]  # citation labels the quote was checked against
    reason: str
    found_elsewhere: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "quote": self.quote,
            "ok": self.ok,
            "checked": list(self.checked),
            "reason": self.reason,
            "found_elsewhere": list(self.found_elsewhere),
        }


@dataclass(frozen=True)
class ValueCheck:
    """The verdict on one stated value (money, duration, percentage, date)."""

    value: str
    ok: bool
    checked: tuple[str, ...]
    found_elsewhere: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "ok": self.ok,
            "checked": list(self.checked),
            "found_elsewhere": list(self.found_elsewhere),
        }


@dataclass(frozen=True)
class Faithfulness:
    """Deterministic faithfulness of one answer."""

    quotes: tuple[QuoteCheck, ...]
    values: tuple[ValueCheck, ...]
    #: labels of citations outside the prompt context (empty when inside or context unknown)
    outside_context: tuple[str, ...] = ()
    #: whether the prompt context was known, so citations could be checked against it
    context_known: bool = False

    @property
    def failed_quotes(self) -> tuple[QuoteCheck, ...]:
        return tuple(q for q in self.quotes if not q.ok)

    @property
    def failed_values(self) -> tuple[ValueCheck, ...]:
        return tuple(v for v in self.values if not v.ok)

    @property
    def supported(self) -> bool | None:
        if self.outside_context:
            return False
        if not self.quotes and not self.values:
            return None
        return not self.failed_quotes and not self.failed_values

    def to_dict(self) -> dict[str, Any]:
        return {
            "supported": self.supported,
            "quotes": [q.to_dict() for q in self.quotes],
            "values": [v.to_dict() for v in self.values],
            "outside_context": list(self.outside_context),
            "context_known": self.context_known,
        }


class _Finder:
    """Where else a normalised string appears: other context chunks, then corpus documents."""

    def __init__(self, index: PassageIndex) -> None:
        self.index = index
        self._docs: dict[str, str] | None = None
        self._doc_values: dict[str, set[Value]] | None = None

    def doc_values(self) -> dict[str, set[Value]]:
        """Each corpus document's stated values, extracted once (not once per value asked)."""
        if self._doc_values is None:
            self._doc_values = {d: extract_values(doc.text) for d, doc in self.index.docs.items()}
        return self._doc_values

    def docs(self) -> dict[str, str]:
        if self._docs is None:
            self._docs = {d: normalize_quote(doc.text) for d, doc in self.index.docs.items()}
        return self._docs

    def elsewhere(self, needle: str, context: list[CitedText], skip: set[str]) -> tuple[str, ...]:
        hits = [
            f"context:{p.label}"
            for p in context
            if p.label not in skip and _inside(needle, normalize_quote(p.text))
        ]
        hits += [f"doc:{d}" for d, text in self.docs().items() if _inside(needle, text)]
        return tuple(hits)

    def value_elsewhere(
        self, value: Value, context: list[CitedText], skip: set[str]
    ) -> tuple[str, ...]:
        hits = [
            f"context:{p.label}"
            for p in context
            if p.label not in skip and value in extract_values(p.text)
        ]
        hits += [f"doc:{d}" for d, values in self.doc_values().items() if value in values]
        return tuple(hits)


def check_faithfulness(
    answer: Answer,
    index: PassageIndex,
    finder: _Finder | None = None,
    context_ids: Sequence[str] | None = None,
) -> Faithfulness:
    """Run the quote and value checks of one answer (citations must resolve: see
    :meth:`PassageIndex.check`). ``context``: the prompt's chunk ids when the answer carries
    none (e.g. from the retrieval run); the answer's own ``context`` wins."""
    if is_abstention(answer):
        return Faithfulness((), ())
    finder = finder or _Finder(index)
    cited = [index.cited(c) for c in answer.citations]
    ctx_ids = answer.context if answer.context is not None else context_ids
    known = ctx_ids is not None and bool(index.chunks)
    outside = index.outside(answer.citations, ctx_ids or []) if known else ()
    context = index.context(ctx_ids or [])
    cited_labels = {c.chunk for c in answer.citations if c.chunk is not None}
    norm_cited = [normalize_quote(p.text) for p in cited]

    quotes = []
    for q in extract_quotes(answer.answer):
        needle = normalize_quote(q.text)
        if q.marker is not None:
            if not 1 <= q.marker <= len(cited):
                quotes.append(
                    QuoteCheck(
                        q.text,
                        False,
                        (),
                        f"marker [{q.marker}] but the answer has {len(cited)} citation(s)",
                        finder.elsewhere(needle, context, set()),
                    )
                )
                continue
            targets = [q.marker - 1]
        else:
            targets = list(range(len(cited)))
        labels = tuple(cited[i].label for i in targets)
        if not targets:
            quotes.append(
                QuoteCheck(
                    q.text,
                    False,
                    (),
                    "quote without a citation",
                    finder.elsewhere(needle, context, set()),
                )
            )
        elif any(_inside(needle, norm_cited[i]) for i in targets):
            hit = next(cited[i].label for i in targets if _inside(needle, norm_cited[i]))
            quotes.append(QuoteCheck(q.text, True, labels, f"in cited passage {hit}"))
        else:
            quotes.append(
                QuoteCheck(
                    q.text,
                    False,
                    labels,
                    "not in the cited passage",
                    finder.elsewhere(needle, context, cited_labels),
                )
            )

    stated = sorted(v for v in extract_values(answer.answer) if v[0] in _CHECKED_KINDS)
    values = []
    if stated:
        cited_values = set().union(*(extract_values(p.text) for p in cited)) if cited else set()
        labels = tuple(p.label for p in cited)
        for v in stated:
            ok = v in cited_values
            values.append(
                ValueCheck(
                    describe(v),
                    ok,
                    labels,
                    () if ok else finder.value_elsewhere(v, context, cited_labels),
                )
            )
    return Faithfulness(tuple(quotes), tuple(values), outside, known)
