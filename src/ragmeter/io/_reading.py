"""The one reader of the JSON files ragmeter takes in: JSON Lines (:func:`iter_jsonl`) and whole
JSON documents (:func:`read_json`), with one set of rules and one set of messages.

Every loader (golden sets, corpora, answers, judge labels, traffic logs, diagnosis tables,
JSONL runs and qrels, chunk files, bring-your-own runs, the selection ledger, comparison and
evaluation JSON) reads through here, so a broken file gets the same clean error whichever
command reads it, naming the file, the line and (where there is one) the field:

- bytes: a gzip file is recognised by its magic bytes and read transparently; the text must be
  UTF-8 (an invalid byte is reported with its byte offset in the file, its line and column);
- a UTF-8 byte order mark at the start of the file is skipped; one starting a later line (two
  files joined with ``cat``) is an error, and so is a NUL byte (a binary or UTF-16 file);
- lines end at ``\\n``, ``\\r\\n`` or ``\\r``; blank lines are skipped and counted;
- a JSON Lines file holds one JSON value per line, an object unless the reader says otherwise;
- a key repeated in one object is an error naming the key: a JSON parser keeps the last value
  and silently drops the other;
- a ``\\ud800``-style escape that is not half of a surrogate pair is an error: Python accepts it
  and then fails later, when the text is written or hashed;
- ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON (Python's reader accepts them): an error
  naming the line, column and field; ragmeter's own writers never produce them
  (``allow_nan=False``);
- an empty file, or one with only blank lines, is an error saying which.

Readers that validate records report every problem at once: pass a ``problems`` list and bad
lines are recorded there and skipped; without one the first problem raises
:class:`~ragmeter._errors.InputError`.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Collection, Iterator
from json import decoder as _decoder
from json import scanner as _scanner
from typing import Any

from .._errors import InputError, Problem
from ._source import BOM, Source, open_source

__all__ = ["JsonlReader", "iter_jsonl", "read_json"]

#: a ``\uD800``-``\uDFFF`` escape not preceded by another backslash (``\\ud800`` is text).
_SURROGATE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u([dD][89a-fA-F][0-9a-fA-F]{2})")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: the cheap test that lets almost every line skip the exact surrogate check.
_ANY_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


#: ``NaN``/``Infinity``/``-Infinity`` outside a string (strings are matched first and skipped).
_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


class _Constant:
    """Stands in for a ``NaN``/``Infinity`` literal during the parse, so that the field holding
    it can be named afterwards (the C parser does not report positions to its hooks)."""

    def __init__(self, literal: str) -> None:
        self.literal = literal


def _make_decoder(unique: Collection[str] | None) -> json.JSONDecoder:
    """A decoder whose objects refuse a repeated key (only keys in ``unique`` if given) and
    whose ``NaN``/``Infinity`` literals become :class:`_Constant` markers (refused by _parse)."""
    return json.JSONDecoder(object_pairs_hook=_pairs_hook(unique), parse_constant=_Constant)


def _pairs_hook(unique: Collection[str] | None) -> Any:
    """An ``object_pairs_hook`` that refuses a repeated key (only keys in ``unique`` if given)."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen and (unique is None or key in unique):
                    raise _DuplicateKey(key)
                seen.add(key)
        return obj

    return hook


def _lone_surrogate(text: str) -> int | None:
    """Offset in ``text`` of the first ``\\uD800``-``\\uDFFF`` escape that is not half of a
    surrogate pair, or None."""
    pending_high: int | None = None
    last_end = -1
    for m in _SURROGATE_ESCAPE.finditer(text):
        start = m.end() - 6
        high = m.group(1)[1].lower() in "89ab"
        if pending_high is not None:
            if not high and start == last_end:
                pending_high = None  # the pair is complete
                last_end = m.end()
                continue
            return pending_high
        if not high:
            return start
        pending_high, last_end = start, m.end()
    return pending_high


def _surrogate_field(value: Any, path: str = "") -> str | None:
    """The field path of the first string (key or value) holding a lone surrogate."""
    if isinstance(value, str):
        return path or None if _LONE_SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            sub = f"{path}.{key}" if path else str(key)
            if _LONE_SURROGATE.search(key):
                return sub
            found = _surrogate_field(item, sub)
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _surrogate_field(item, f"{path}[{i}]")
            if found:
                return found
    return None


def _constant_field(value: Any, path: str = "") -> tuple[str, str] | None:
    """(field path, literal) of the first :class:`_Constant` marker in ``value``, or None."""
    if isinstance(value, _Constant):
        return path, value.literal
    items: Any = ()
    if isinstance(value, dict):
        items = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    for sub, item in items:
        found = _constant_field(item, sub)
        if found:
            return found
    return None


def _refuse_constant(text: str, value: Any, document: bool) -> None:
    """Raise _Bad if ``value`` holds a ``NaN``/``Infinity`` literal (not JSON)."""
    if "NaN" not in text and "Infinity" not in text:
        return  # the cheap test that lets almost every line skip the walk
    try:
        found = _constant_field(value)
    except RecursionError:
        found = ("", "NaN or Infinity")
    if found is None:
        return
    field, literal = found
    pos = next((m.start(1) for m in _CONSTANT.finditer(text) if m.group(1)), None)
    at = "" if pos is None else f" at {_where(text, pos, document)}"
    raise _Bad(
        f"{literal}{at} is not JSON (JSON has no NaN or infinity): write a finite number",
        field or None,
    )


def _json_type(value: Any) -> str:
    """The Python name of a JSON value's type, as the loaders' messages have always said it
    (not ``_jsonl_read``'s JSON names nor the evaluation files' "a string": each keeps its
    messages' text)."""
    return type(value).__name__


class _Bad(Exception):
    """One problem of one line: message and optional field."""

    def __init__(self, message: str, field: str | None = None) -> None:
        self.message = message
        self.field = field


def _parse(text: str, decoder: json.JSONDecoder, document: bool = False) -> Any:
    """``json.loads`` under the shared rules; raises _Bad (column numbers are 1-based)."""
    try:
        value = decoder.decode(text)
    except _DuplicateKey as dup:
        col = _locate_duplicate(text, document)
        at = "" if col is None else f" (the object at {col})"
        raise _Bad(
            f"key '{dup.key}' appears twice in one object{at}; each key may appear "
            "once (a JSON reader silently keeps only the last value)",
            dup.key,
        ) from None
    except json.JSONDecodeError as exc:
        if exc.pos < len(text) and text[exc.pos] == "\ufeff":
            where = _where(text, exc.pos, document)
            raise _Bad(
                f"a byte order mark (U+FEFF) at {where}: two files joined together? remove it"
            ) from None
        raise _Bad(f"invalid JSON: {exc.msg} ({_where(text, exc.pos, document)})") from None
    except RecursionError:
        raise _Bad("invalid JSON: nested too deeply") from None
    _refuse_constant(text, value, document)
    if _ANY_SURROGATE_ESCAPE.search(text):
        pos = _lone_surrogate(text)
        if pos is not None:
            raise _Bad(
                f"a lone surrogate escape {text[pos : pos + 6]} at "
                f"{_where(text, pos, document)} is not a Unicode character (a pair "
                "such as \\ud83d\\ude00 is)",
                _surrogate_field(value),
            )
    return value


def _where(text: str, pos: int, document: bool = False) -> str:
    """``column C`` in a line of a JSON Lines file, ``line L, column C`` in a document."""
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line}, column {col}" if document else f"column {col}"


def _locate_duplicate(text: str, document: bool = False) -> str | None:
    """Where the first object with a repeated key starts (a slow pure-Python re-parse, run only
    on the error path, since the fast parser's hook does not know positions)."""
    found: list[int] = []

    def parse_object(
        s_and_end: tuple[str, int],
        strict: bool,
        scan_once: Any,
        object_hook: Any,
        object_pairs_hook: Any,
        memo: Any = None,
    ) -> tuple[Any, int]:
        pairs, end = _decoder.JSONObject(  # type: ignore[attr-defined]
            s_and_end, strict, scan_once, None, list, memo
        )
        if not found and len({k for k, _ in pairs}) != len(pairs):
            found.append(s_and_end[1] - 1)
        return dict(pairs), end

    dec = json.JSONDecoder()
    dec.parse_object = parse_object  # type: ignore[attr-defined]
    dec.scan_once = _scanner.py_make_scanner(dec)  # type: ignore[attr-defined]
    try:
        dec.decode(text)
    except (ValueError, RecursionError):
        pass
    return _where(text, found[0], document) if found else None


def _decode(raw: bytes, offset: int, document: bool = False) -> str:
    """UTF-8 text of one line (``offset``: where it starts in the file) or of a whole document
    (``document``: positions as line and column); raises _Bad."""

    def at(i: int) -> str:
        if not document:
            col = len(raw[:i].decode("utf-8", "replace")) + 1
            return f"byte offset {offset + i} (column {col})"
        start = raw.rfind(b"\n", 0, i) + 1
        col = len(raw[start:i].decode("utf-8", "replace")) + 1
        line = raw.count(b"\n", 0, i) + 1
        return f"byte offset {offset + i} (line {line}, column {col})"

    nul = raw.find(b"\x00")
    if nul >= 0:
        raise _Bad(f"a NUL byte at {at(nul)}: this is a binary or UTF-16 file, not UTF-8 JSON")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Bad(
            f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at {at(exc.start)}; save the "
            "file as UTF-8"
        ) from None


class JsonlReader:
    """Iterates ``(line_number, value)`` over the records of a JSON Lines file (see the module
    doc for the rules); after the loop, ``records``, ``blank_lines`` and ``bad_lines`` say what
    was read. Line numbers start at 1 and count every physical line."""

    def __init__(
        self,
        path: str | os.PathLike[str] | Source,
        *,
        problems: list[Problem] | None = None,
        objects: bool = True,
        unique_keys: Collection[str] | None = None,
        what: str = "records",
        allow_empty: bool = False,
        torn_tail: bool = False,
    ) -> None:
        self.source = path if isinstance(path, Source) else open_source(path, allow_empty=True)
        self.path = self.source.display
        self.problems = problems
        self.objects = objects
        self.what = what
        self.allow_empty = allow_empty
        self.torn_tail = torn_tail
        self.records = 0
        self.blank_lines = 0
        self.bad_lines = 0
        self._decoder = _make_decoder(unique_keys)
        self._it = self._iterate()

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        return self

    def __next__(self) -> tuple[int, Any]:
        return next(self._it)

    def _lines(self) -> Iterator[tuple[int, int, bytes, bool]]:
        """(line number, byte offset, line without its ending, had an ending) per line."""
        number, offset = 0, 0
        try:
            with self.source.open_binary() as f:
                for chunk in f:  # chunks end at "\n"
                    if number == 0 and chunk.startswith(BOM):
                        chunk, offset = chunk[len(BOM) :], len(BOM)
                    pieces = chunk.splitlines(keepends=True) if b"\r" in chunk else (chunk,)
                    for piece in pieces:
                        number += 1
                        body = piece.rstrip(b"\r\n")
                        yield number, offset, body, len(body) != len(piece)
                        offset += len(piece)
        except (OSError, EOFError, zlib.error) as exc:  # zlib: a damaged gzip file
            raise self.source.error(f"cannot read the file: {exc}") from None

    def _iterate(self) -> Iterator[tuple[int, Any]]:
        last: tuple[int, _Bad] | None = None  # a bad last line without an ending may be torn
        for number, offset, raw, ended in self._lines():
            if last is not None:
                self._report(*last)
                last = None
            if not raw.strip():
                self.blank_lines += 1
                continue
            try:
                if number > 1 and raw.startswith(BOM):
                    raise _Bad(
                        "a byte order mark (U+FEFF) starts this line: two files joined "
                        "together? remove it"
                    )
                value = _parse(_decode(raw, offset), self._decoder)
                if self.objects and not isinstance(value, dict):
                    raise _Bad(f"expected a JSON object, got {_json_type(value)}")
            except _Bad as bad:
                if self.torn_tail and not ended:
                    last = (number, bad)
                    continue
                self._report(number, bad)
                continue
            self.records += 1
            yield number, value
        if self.records == 0 and self.bad_lines == 0 and last is None and not self.allow_empty:
            if self.blank_lines == 0:
                raise InputError(f"the file is empty: no {self.what}", path=self.path)
            raise InputError(f"the file has only blank lines: no {self.what}", path=self.path)

    def _report(self, number: int, bad: _Bad) -> None:
        self.bad_lines += 1
        if self.problems is None:
            raise InputError(bad.message, path=self.path, line=number, field=bad.field)
        self.problems.append(Problem(bad.message, self.path, number, bad.field))


def iter_jsonl(
    path: str | os.PathLike[str] | Source,
    problems: list[Problem] | None = None,
    *,
    objects: bool = True,
    unique_keys: Collection[str] | None = None,
    what: str = "records",
    allow_empty: bool = False,
    torn_tail: bool = False,
) -> JsonlReader:
    """``(line_number, value)`` for each record of a JSON Lines file, under the module's rules.

    ``problems``: bad lines are recorded there and skipped (else the first one raises).
    ``objects``: every record must be a JSON object. ``unique_keys``: check only these keys
    for repeats (a reader that ignores the other keys), else every key. ``what`` names the
    records in the empty-file message (``the file is empty: no questions``); ``allow_empty``
    accepts an empty file. ``torn_tail``: a bad last line without a line ending (a writer
    killed mid-line) is skipped silently.
    """
    return JsonlReader(
        path,
        problems=problems,
        objects=objects,
        unique_keys=unique_keys,
        what=what,
        allow_empty=allow_empty,
        torn_tail=torn_tail,
    )


def read_json(path: str | os.PathLike[str] | Source, *, hint: str = "") -> Any:
    """The JSON document in ``path``, under the module's rules (one InputError naming the line,
    column and, where there is one, the field). ``hint`` ends the message, e.g. what file was
    expected."""
    src = path if isinstance(path, Source) else open_source(path, allow_empty=True)
    try:
        with src.open_binary() as f:
            data = f.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise src.error(f"cannot read the file: {exc}") from None
    skip = len(BOM) if data.startswith(BOM) else 0
    suffix = f"; {hint}" if hint else ""
    if not data[skip:].strip():
        raise InputError(
            f"the file is {'blank' if data[skip:] else 'empty'}: no JSON{suffix}", path=src.display
        )
    try:
        return _parse(_decode(data[skip:], skip, document=True), _make_decoder(None), document=True)
    except _Bad as bad:
        m = re.search(r"\(line (\d+), column|\bline (\d+), column", bad.message)
        line = int(next(g for g in m.groups() if g)) if m else None
        raise InputError(
            bad.message + suffix, path=src.display, line=line, field=bad.field
        ) from None
