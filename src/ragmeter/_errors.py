"""The one exception tree of ragmeter.

RagmeterError
├── InputError          bad user input (a file, a line, a field); CLI exit code 2
│   └── ValidationError several input problems reported at once
├── UsageError          a call or option that cannot work as given; CLI exit code 2
│   └── NotFoundError   an id or name that is not there (also a KeyError, for mappings)
├── MissingExtraError   an optional dependency is not installed (names the extra)
└── VersionMismatchError runs scored on different golden-set versions
RagmeterWarning (UserWarning): accepted input the user should know about
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from os import PathLike


class RagmeterError(Exception):
    """Root of every error ragmeter raises on purpose."""


def _where(path: str | PathLike[str] | None, line: int | None, field: str | None) -> str:
    parts: list[str] = []
    if path is not None:
        loc = str(path)
        if line is not None:
            loc += f":{line}"
        parts.append(loc)
    elif line is not None:
        parts.append(f"line {line}")
    if field:
        parts.append(f"field '{field}'")
    return ": ".join(parts)


class InputError(RagmeterError):
    """Input that cannot be used as given; the message names file, line and field."""

    def __init__(
        self,
        message: str,
        *,
        path: str | PathLike[str] | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        where = _where(path, line, field)
        super().__init__(f"{where}: {message}" if where else message)


@dataclass(frozen=True)
class Problem:
    """One problem found while validating input."""

    message: str
    path: str | None = None
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = _where(self.path, self.line, self.field)
        return f"{where}: {self.message}" if where else self.message


#: problems of one kind listed before "... and N more like these" (all are kept in .problems)
SHOWN_PER_KIND = 5


def _kind(p: Problem) -> tuple[str, str, str]:
    """What makes two problems "the same kind": file, field (indices ignored) and the message's
    head (before a colon) with quoted names, parentheses and numbers ignored, so 7,000 lines of
    "invalid JSON: Extra data (column 12)" are one kind and a bad label is another."""
    head = p.message.split(":", 1)[0]
    head = re.sub(r"'[^']*'|\"[^\"]*\"|\([^)]*\)|\d+", "#", head)
    return (p.path or "", re.sub(r"\d+", "#", p.field or ""), head)


def _kind_label(p: Problem) -> str:
    """A short name of a problem's kind for the "... and N more" line."""
    head = re.split(r"[:(]", p.message, maxsplit=1)[0].strip()
    return f"field '{p.field}': {head}" if p.field else head


def _listing(problems: list[Problem]) -> list[str]:
    """Each problem on its line, at most :data:`SHOWN_PER_KIND` of a kind; the rest of a kind
    counted on one line where the kind's last shown problem is (a file of the wrong format gives
    one problem per line: thousands of lines that bury the one saying why)."""
    counts: dict[tuple[str, str, str], int] = {}
    for p in problems:
        counts[_kind(p)] = counts.get(_kind(p), 0) + 1
    seen: dict[tuple[str, str, str], int] = {}
    out: list[str] = []
    for p in problems:
        k = _kind(p)
        seen[k] = seen.get(k, 0) + 1
        if seen[k] <= SHOWN_PER_KIND:
            out.append(f"  - {p}")
        if seen[k] == SHOWN_PER_KIND and counts[k] > SHOWN_PER_KIND:
            out.append(
                f"  - ... and {counts[k] - SHOWN_PER_KIND:,} more like these ({_kind_label(p)})"
            )
    return out


class ValidationError(InputError):
    """Several input problems, all reported at once (every one in :attr:`problems`; the message
    lists a few of each kind and counts the rest)."""

    def __init__(self, problems: list[Problem], *, what: str = "input") -> None:
        self.problems = list(problems)
        head = f"{len(self.problems)} problem(s) in {what}:"
        body = "\n".join(_listing(self.problems))
        super().__init__(f"{head}\n{body}")


class UsageError(RagmeterError):
    """A call, option or combination of options that cannot work."""


class NotFoundError(UsageError, KeyError):
    """An id or name asked for is not there (``corpus["nope"]``, an unknown judge task).

    Also a :class:`KeyError`, so mapping-like objects keep Python's protocol
    (``except KeyError`` and ``dict``-style code still work); the message prints unquoted.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class MissingExtraError(RagmeterError, ImportError):
    """An optional dependency is missing; the message gives the install command."""

    def __init__(self, extra: str, package: str, purpose: str = "", *, first: str = "") -> None:
        self.extra = extra
        self.package = package
        why = f" for {purpose}" if purpose else ""
        # ``first``: a command to run before the extra (e.g. torch's CPU wheel)
        before = f"{first}, then " if first else ""
        super().__init__(
            f"'{package}' is needed{why} but is not installed. "
            f"Install it with: {before}pip install 'ragmeter[{extra}]'"
        )


class VersionMismatchError(RagmeterError):
    """Scores computed on different golden-set versions cannot be compared."""


class StoreSchemaError(RagmeterError):
    """The experiment store's schema is not the one this ragmeter uses (newer, or a server
    database that ``ragmeter db upgrade`` has not migrated yet)."""


class RagmeterWarning(UserWarning):
    """Something was accepted but the user should know (e.g. a duplicate item kept once)."""
