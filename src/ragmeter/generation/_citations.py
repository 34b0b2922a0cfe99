"""Citations in a generated answer: bracketed markers mapped back to the passages of its context.

A bracketed group is a citation when every item in it is one of (items separated by ``,``, ``;``
or ``and``; an optional word ``passage``/``source``/``doc`` before a number is allowed):

- a passage number: ``[1]``, ``[2, 3]``, ``[Passage 2]`` (the 1-based label of the passage in
  the prompt, :class:`~._assemble.ContextPassage.label`);
- a range of numbers: ``[2-4]`` (at most as many as the context holds);
- a passage id: ``[fares#120-480]``, or any id of a passage in the context;
- a document span ``[doc#s-e]`` that is not itself an id but lies inside a passage of that
  document in the context: that passage.

Any other bracketed text (``[see table 1]``, a markdown link's label) is not a citation. Markers
that look like citations but name no passage of the context (``[7]`` with five passages, a span
of a document the model never saw) are kept apart as ``unknown``: an answer citing what it was
not given is a fault worth counting, not a citation to check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._assemble import AssembledContext

_GROUP = re.compile(r"\[([^\[\]\n]{1,300})\]")
_SPLIT = re.compile(r"\s*(?:,|;|\band\b)\s*")
_NUMBER = re.compile(r"(?i)^(?:(?:passages?|sources?|docs?|documents?|ref)\s*)?#?\s*(\d{1,6})$")
_RANGE = re.compile(r"(?i)^(?:(?:passages?|sources?)\s*)?(\d{1,6})\s*[-\u2013]\s*(\d{1,6})$")
_SPAN = re.compile(r"^(?P<doc>\S.*?)#(?P<start>\d{1,12})-(?P<end>\d{1,12})$")


@dataclass(frozen=True)
class Citations:
    """Passage ids cited (in order of first mention, each once) and markers naming none."""

    ids: tuple[str, ...]
    unknown: tuple[str, ...] = ()


def resolve_marker(item: str, context: AssembledContext, ids: set[str]) -> list[str] | None:
    """Passage ids one item of a bracketed group names (``ids``: the context's passage ids);
    [] when it names none of the context, None when the item is not a citation at all."""
    if item in ids:
        return [item]
    m = _NUMBER.match(item)
    if m:
        labelled = context.by_label(int(m[1]))
        return [labelled.id] if labelled is not None else []
    m = _RANGE.match(item)
    if m:
        lo, hi = int(m[1]), int(m[2])
        if not 1 <= lo <= hi or hi - lo >= max(len(context.passages), 1):
            return []
        found = [context.by_label(i) for i in range(lo, hi + 1)]
        ids_found = [cp.id for cp in found if cp is not None]
        return ids_found if len(ids_found) == len(found) else []  # all of the range, or none
    m = _SPAN.match(item)
    if m:
        doc, start, end = m["doc"], int(m["start"]), int(m["end"])
        for cp in context.passages:
            p = cp.passage
            if p.doc == doc and p.start <= start and end <= p.end:
                return [p.id]
        return []
    return None


def find_citations(text: str, context: AssembledContext) -> Citations:
    """Every citation marker in ``text`` resolved against ``context`` (module docstring)."""
    ids = set(context.ids)
    cited: list[str] = []
    unknown: list[str] = []
    for group in _GROUP.finditer(text):
        items = [x.strip() for x in _SPLIT.split(group[1].strip()) if x.strip()]
        resolved = [resolve_marker(x, context, ids) for x in items]
        if not items or any(r is None for r in resolved):
            continue  # not a citation group
        for item, found in zip(items, resolved, strict=True):
            if not found:
                if item not in unknown:
                    unknown.append(item)
                continue
            for pid in found:
                if pid not in cited:
                    cited.append(pid)
    return Citations(tuple(cited), tuple(unknown))


def parse_citations(text: str, context: AssembledContext) -> tuple[str, ...]:
    """The passage ids ``text`` cites, in order of first mention (unknown markers dropped)."""
    return find_citations(text, context).ids
