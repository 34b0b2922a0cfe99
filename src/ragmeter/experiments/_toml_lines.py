"""The line of every key in a TOML text, which :mod:`tomllib` does not report.

A small structural scan of a text tomllib has already accepted: table headers (``[baseline]``,
``[[variant]]`` counted per array, ``[variant.reranker]`` for the latest variant), dotted and
quoted keys, inline tables and arrays (one line each, or spread over lines), strings of all four
kinds (a multi-line string that holds ``[baseline]`` or ``k = 0`` is not read as a header or a
key) and comments. :func:`line_of` falls back to the nearest enclosing key or table header, so a
key the file lacks is reported at its table's header.
"""

from __future__ import annotations

import re
from bisect import bisect_right

Keys = tuple[str | int, ...]

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_SCALAR_END = re.compile(r"[,\]}\n#]")


def key_lines(text: str) -> dict[Keys, int]:
    """Every key path (tables, keys, array items) of a valid TOML ``text`` -> its 1-based line.

    Best effort: should the scan meet a form it does not know, the keys found so far are kept
    (a problem is then reported at an enclosing table's line, or without a line)."""
    scan = _Scan(text)
    try:
        scan.run()
    except (IndexError, _Unknown):
        pass
    return scan.out


def line_of(lines: dict[Keys, int], keys: Keys) -> int | None:
    """The line of ``keys``, else of its nearest ancestor; None for a top-level key not written."""
    for n in range(len(keys), 0, -1):
        if keys[:n] in lines:
            return lines[keys[:n]]
    return None


class _Unknown(Exception):
    """A form the scan does not read."""


class _Scan:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.out: dict[Keys, int] = {}
        self.arrays: dict[Keys, int] = {}  # [[array]] path -> index of its latest table

    def line(self) -> int:
        return bisect_right(self.newlines, self.i - 1) + 1

    def record(self, keys: Keys) -> None:
        self.out.setdefault(keys, self.line())

    def run(self) -> None:
        table: Keys = ()
        while self.skip(newlines=True) < len(self.s):
            if self.s[self.i] == "[":
                table = self.header()
            else:
                self.key_value(table)

    def skip(self, *, newlines: bool) -> int:
        """Past spaces and comments (and newlines); returns the new position."""
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r" or (newlines and c == "\n"):
                self.i += 1
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = len(s) if end < 0 else end
            else:
                break
        return self.i

    def header(self) -> Keys:
        is_array = self.s.startswith("[[", self.i)
        self.i += 2 if is_array else 1
        parts = self.dotted_key()
        self.i += 2 if is_array else 1
        path: Keys = ()
        for part in parts:  # a prefix that names an array of tables means its latest table
            path = (*path, part)
            if path in self.arrays and not (is_array and len(path) == len(parts)):
                path = (*path, self.arrays[path])
        if is_array:
            self.arrays[path] = self.arrays.get(path, -1) + 1
            path = (*path, self.arrays[path])
        self.record(path)
        return path

    def dotted_key(self) -> list[str]:
        parts: list[str] = []
        while True:
            self.skip(newlines=False)
            c = self.s[self.i]
            if c in "\"'":
                start = self.i
                self.string()
                parts.append(self.s[start + 1 : self.i - 1])  # escapes kept: keys are plain
            else:
                m = _BARE.match(self.s, self.i)
                if m is None:
                    raise _Unknown
                parts.append(m.group())
                self.i = m.end()
            self.skip(newlines=False)
            if self.s[self.i] != ".":
                return parts
            self.i += 1

    def key_value(self, table: Keys) -> None:
        path = table
        for part in self.dotted_key():
            path = (*path, part)
            self.record(path)
        self.i += 1  # '='
        self.value(path)

    def value(self, path: Keys) -> None:
        self.skip(newlines=False)
        c = self.s[self.i]
        if c == "{":
            self.i += 1
            while self.skip(newlines=True) < len(self.s) and self.s[self.i] != "}":
                if self.s[self.i] == ",":
                    self.i += 1
                else:
                    self.key_value(path)
            self.i += 1
        elif c == "[":
            self.i += 1
            index = 0
            while self.skip(newlines=True) < len(self.s) and self.s[self.i] != "]":
                if self.s[self.i] == ",":
                    self.i += 1
                    index += 1
                else:
                    self.record((*path, index))
                    self.value((*path, index))
            self.i += 1
        elif c in "\"'":
            self.string()
        else:
            m = _SCALAR_END.search(self.s, self.i)
            self.i = len(self.s) if m is None else m.start()

    def string(self) -> None:
        s, q = self.s, self.s[self.i]
        delim = q * 3 if s.startswith(q * 3, self.i) else q
        self.i += len(delim)
        while self.i < len(s) and not s.startswith(delim, self.i):
            self.i += 2 if (q == '"' and s[self.i] == "\\") else 1
        self.i += len(delim)
        while len(delim) == 3 and self.i < len(s) and s[self.i] == q:
            self.i += 1  # up to two quotes may close a multi-line string: """a"""""
