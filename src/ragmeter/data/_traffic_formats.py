"""The question-log formats other than ragmeter's JSONL: CSV and OpenInference span exports.

:func:`ragmeter.data.read_log` picks a reader by ``fmt`` (``jsonl``, ``csv``, ``openinference``)
or, without one, by :func:`detect_format`. Every reader here returns ``(line, record)`` pairs,
``record`` shaped like a JSONL log line (``{"question": ..., <metadata>}``), and appends each bad
line to ``problems`` (file, line, field) instead of raising, so one run lists them all.

**CSV** (:func:`read_csv_log`): a header line, then one question a row; the ``question`` column is
the question and every other column is metadata (``--by`` and ``--field`` read it as a string).
An empty cell is a missing field, so a row with no ``slice`` falls in the "no slice" stratum as a
JSONL line without the field does. ``.tsv`` files are tab-separated. The line of a row is the
physical line it starts on (a quoted cell may span lines).

**OpenInference** (:func:`read_openinference_log`): JSON Lines of spans as Arize Phoenix exports
them. Three shapes occur and all are read, even mixed in one file:

- the REST API and ``Client().spans.get_spans`` (Phoenix's current export):
  ``{"context": {"trace_id", "span_id"}, "parent_id", "span_kind": "RETRIEVER",
  "attributes": {"input.value": ..., "retrieval.documents.0.document.content": ...}}``;
- the legacy span JSON (``phoenix.trace.span_json_encoder``) with nested attributes
  ``{"input": {"value": ...}, "retrieval": {"documents": [{"document": {...}}]}}``;
- a ``get_spans_dataframe()`` written with ``to_json(orient="records", lines=True)``: columns
  ``context.trace_id``, ``parent_id``, ``span_kind``, ``attributes.input.value``,
  ``attributes.retrieval.documents`` (a list of ``{"document.content": ...}``).

OpenTelemetry's own OTLP/JSON (``{"resourceSpans": [...]}`` a line, as the collector's file
exporter writes, or one OTLP span a line with ``traceId`` and key/value attribute lists) is read
too. Attributes are flattened to OpenInference's dotted names
(``retrieval.documents.0.document.id``) whatever the shape, then spans are grouped by trace, and
each trace gives one logged question (traces in the order they started; in file order when a
span has no start time):

- the question: the ``input.value`` of the trace's root span (no parent, or a parent not in the
  file) when it is a CHAIN, AGENT or untyped span, else of its outermost CHAIN or AGENT span,
  else of its first RETRIEVER span. A JSON ``input.value`` (``input.mime_type``
  ``application/json``: ``{"input": "..."}``, ``{"query": "..."}``) gives its question, query or
  input string;
- ``logged``: what the application retrieved and answered, carried beside the question, never as
  a label: ``{"retrieved": [{"id", "content", "score"}, ...], "answer": ...}``. The documents are
  every RETRIEVER span's, in start order; the answer is the last LLM span's last output message
  (``llm.output_messages.N.message.content``) or its ``output.value``, else the root's
  ``output.value``;
- metadata: ``trace_id``, ``session_id`` (``session.id``), ``user_id`` (``user.id``), ``tags``
  (``tag.tags``) and each key of the ``metadata`` attribute (a JSON object: ``{"slice": ...}``
  gives a ``slice`` field to sample by).

A trace with no question (an indexing trace of EMBEDDING spans, say) is not a logged question:
it is skipped and counted in a note the command prints, never silently.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .._errors import InputError, Problem
from ..io import iter_jsonl, open_source

#: the formats read_log reads.
LOG_FORMATS = ("jsonl", "csv", "openinference")
#: span kinds whose input is the user's question when the span is a trace's root.
QUESTION_KINDS = ("CHAIN", "AGENT", "UNKNOWN", "")
#: keys of a JSON input.value that hold the question, in the order tried.
QUESTION_KEYS = ("question", "query", "input", "query_str", "user_input", "text", "prompt")
#: record fields an OpenInference trace fills; metadata keys of these names are not copied.
RESERVED = ("question", "trace_id", "session_id", "user_id", "tags", "logged")
_DOC = re.compile(r"^retrieval\.documents\.([0-9]{1,9})\.document\.(content|id|score)$")
_MESSAGE = re.compile(r"^llm\.output_messages\.([0-9]{1,9})\.message\.(content|role)$")
_SPAN_KEYS = ("span_kind", "context", "context.trace_id", "parent_id", "resourceSpans", "traceId")


# -- choosing a format --------------------------------------------------------------------------
def detect_format(path: str | os.PathLike[str]) -> str:
    """``csv`` for ``.csv``/``.tsv`` names (``.gz`` allowed). Otherwise the first line that is
    a JSON object decides: one with span fields (``span_kind``, ``context``, ``parent_id``,
    ``resourceSpans``, ``attributes.*``) and no ``question`` is ``openinference``, any other is
    ``jsonl``. A file whose first non-blank line is not JSON is ``csv``, unless its name ends in
    ``.jsonl``, ``.ndjson`` or ``.json`` (then its bad lines are reported as JSON Lines)."""
    source = open_source(path)
    name = source.display.lower().removesuffix(".gz")
    if name.endswith((".csv", ".tsv")):
        return "csv"
    json_name = name.endswith((".jsonl", ".ndjson", ".json"))
    head = source.read_head(1 << 16).decode("utf-8", errors="replace")
    lines = [line.strip() for line in head.splitlines()]
    lines = [line for line in lines if line]
    for i, text in enumerate(lines):
        if not text.startswith("{"):
            if i == 0 and not json_name:
                return "csv"
            continue
        try:
            obj = json.loads(text)
        except ValueError:
            if i < len(lines) - 1:
                continue  # a broken line: the next one decides
            # the last line of the head, perhaps cut: look at its keys as text
            obj = dict.fromkeys(re.findall(r'"([^"\\]{1,40})"\s*:', text))
        if not isinstance(obj, dict):
            continue
        spanlike = any(k in obj for k in _SPAN_KEYS) or any(
            str(k).startswith("attributes.") for k in obj
        )
        return "openinference" if spanlike and "question" not in obj else "jsonl"
    return "jsonl"


# -- CSV ----------------------------------------------------------------------------------------
def read_csv_log(
    file: str | os.PathLike[str], problems: list[Problem]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, record)`` per data row of a CSV log with a header (module docstring)."""
    source = open_source(file)
    path = source.display
    raw = source.read_all()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        problems.append(Problem(f"not UTF-8 text (byte {exc.start})", path, line))
        return
    delimiter = "\t" if path.lower().removesuffix(".gz").endswith(".tsv") else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    header: list[str] | None = None
    end = 0  # the physical line the previous row ended on
    while True:
        start = end + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.append(Problem(f"not CSV: {exc}", path, start))
            return  # the reader cannot resynchronise after a broken quote
        end = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip() for cell in row]
            seen: set[str] = set()
            for name in header:
                if name in seen:
                    problems.append(Problem("repeated column name", path, start, name))
                seen.add(name)
            if "question" not in header:
                problems.append(
                    Problem(
                        "the header has no 'question' column (a CSV log is a header line, then "
                        "one question a row)",
                        path,
                        start,
                        "question",
                    )
                )
                return
            continue
        if len(row) > len(header):
            problems.append(
                Problem(
                    f"{len(row)} cells but the header has {len(header)} columns",
                    path,
                    start,
                )
            )
            continue
        record: dict[str, Any] = {}
        for name, cell in zip(header, row, strict=False):
            if name == "question":
                record[name] = cell
            elif cell.strip() and name:
                record[name] = cell
        yield start, record
    if header is None:
        raise InputError("the file has no header line: no questions", path=path)


# -- OpenInference spans ------------------------------------------------------------------------
@dataclass
class _Span:
    line: int
    trace: str
    span_id: str | None
    parent: str | None
    kind: str
    start: float | None
    attrs: dict[str, Any] = field(default_factory=dict)


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    """Nested objects and lists of objects to OpenInference's dotted names (Phoenix's
    ``flatten(recurse_on_sequence=True)``); iterative, so no depth can overflow the stack."""
    stack: list[tuple[str, Any]] = [(prefix, value)]
    while stack:
        key, v = stack.pop()
        if isinstance(v, dict):
            for k, item in reversed(list(v.items())):
                stack.append((f"{key}.{k}" if key else str(k), item))
        elif isinstance(v, list) and any(isinstance(x, dict) for x in v):
            for i in range(len(v) - 1, -1, -1):
                if isinstance(v[i], dict):
                    stack.append((f"{key}.{i}" if key else str(i), v[i]))
        elif v is not None and key:
            out[key] = v


def _otlp_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` (camelCase or snake_case) as a plain value."""
    if not isinstance(v, dict):
        return v
    for name in ("stringValue", "string_value", "boolValue", "bool_value"):
        if name in v:
            return v[name]
    for name in ("intValue", "int_value"):
        if name in v:
            try:
                return int(v[name])
            except (TypeError, ValueError):
                return v[name]
    for name in ("doubleValue", "double_value"):
        if name in v:
            try:
                return float(v[name])
            except (TypeError, ValueError):
                return v[name]
    for name in ("arrayValue", "array_value"):
        if name in v:
            values = v[name].get("values") if isinstance(v[name], dict) else None
            return [_otlp_value(x) for x in values] if isinstance(values, list) else []
    return None


def _finite(value: int | float) -> float | None:
    """A JSON number as a finite float, or None (inf, nan, an integer too large for a float)."""
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _start(value: Any) -> float | None:
    """A span's start as seconds: ISO 8601 text or Unix nanoseconds (OTLP)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = _finite(value)
        return None if seconds is None else seconds / 1e9
    if isinstance(value, str):
        try:
            if value.isascii() and value.isdigit():
                return int(value) / 1e9
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError, OSError):
            return None
    return None


def _id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int)):
        text = str(value).strip()
        return text or None
    return None


def _get(obj: dict[str, Any], *names: str) -> Any:
    """The first of ``names`` present: a top-level key, or ``a.b`` inside ``obj["a"]``."""
    for name in names:
        if name in obj:
            return obj[name]
        head, _, tail = name.partition(".")
        inner = obj.get(head)
        if tail and isinstance(inner, dict) and tail in inner:
            return inner[tail]
    return None


def _span(obj: dict[str, Any], line: int, path: str, problems: list[Problem]) -> _Span | None:
    """One span record in any of the shapes of the module docstring; None (and a problem) when
    it is not a span."""
    trace = _get(obj, "context.trace_id", "trace_id", "traceId")
    if _id(trace) is None:
        what = "missing" if trace is None else f"not a string (got {json.dumps(trace)[:40]})"
        problems.append(
            Problem(
                f"trace id {what}: a span export line has context.trace_id",
                path,
                line,
                "context.trace_id",
            )
        )
        return None
    attrs: dict[str, Any] = {}
    raw = obj.get("attributes")
    if isinstance(raw, dict):
        _flatten(raw, "", attrs)
    elif isinstance(raw, list):  # OTLP: [{"key": ..., "value": {"stringValue": ...}}]
        for kv in raw:
            if isinstance(kv, dict) and isinstance(kv.get("key"), str):
                value = _otlp_value(kv.get("value"))
                if value is not None:
                    attrs[kv["key"]] = value
    elif raw is not None:
        problems.append(
            Problem(
                f"expected an object of attributes (got {json.dumps(raw)[:40]})",
                path,
                line,
                "attributes",
            )
        )
        return None
    for key, value in obj.items():
        if key.startswith("attributes.") and value is not None:
            _flatten(value, key[len("attributes.") :], attrs)
    kind = obj.get("span_kind")
    if not isinstance(kind, str) or kind.upper() in ("", "UNKNOWN"):
        kind = attrs.get("openinference.span.kind", kind)
    kind = kind.upper() if isinstance(kind, str) else ""
    parent = _get(obj, "parent_id", "parent_span_id", "parentSpanId")
    return _Span(
        line=line,
        trace=str(trace).strip(),
        span_id=_id(_get(obj, "context.span_id", "span_id", "spanId")),
        parent=_id(parent),
        kind=kind,
        start=_start(_get(obj, "start_time", "startTimeUnixNano", "start_time_unix_nano")),
        attrs=attrs,
    )


def _spans(file: str | os.PathLike[str], problems: list[Problem]) -> list[_Span]:
    source = open_source(file)
    path = source.display
    spans: list[_Span] = []
    for number, obj in iter_jsonl(source, problems, what="spans", unique_keys=()):
        batches = obj.get("resourceSpans", obj.get("resource_spans"))
        if batches is None:
            span = _span(obj, number, path, problems)
            if span is not None:
                spans.append(span)
            continue
        # an OTLP/JSON export line: resourceSpans -> scopeSpans -> spans
        if not isinstance(batches, list):
            problems.append(Problem("expected a list", path, number, "resourceSpans"))
            continue
        for rs in batches:
            scopes = rs.get("scopeSpans", rs.get("scope_spans")) if isinstance(rs, dict) else None
            for ss in scopes if isinstance(scopes, list) else []:
                members = ss.get("spans") if isinstance(ss, dict) else None
                for member in members if isinstance(members, list) else []:
                    if isinstance(member, dict):
                        span = _span(member, number, path, problems)
                        if span is not None:
                            spans.append(span)
    return spans


def _text(span: _Span, key: str, path: str, problems: list[Problem]) -> str | None:
    """A string attribute, or None; a value of another type is a problem."""
    value = span.attrs.get(key)
    if value is None or isinstance(value, str):
        return value
    problems.append(
        Problem(
            f"expected a string (got {json.dumps(value)[:40]})",
            path,
            span.line,
            f"attributes.{key}",
        )
    )
    return None


def question_text(value: str, mime: Any = None) -> str | None:
    """The question in an ``input.value``: the text, or from a JSON value its question / query /
    input string (module docstring); None when there is none."""
    text = value.strip()
    if not text:
        return None
    if mime != "application/json" and not text.startswith(("{", '"')):
        return text
    try:
        obj = json.loads(text)
    except ValueError:
        return text
    if isinstance(obj, str):
        return obj.strip() or None
    if not isinstance(obj, dict):
        return None
    for key in QUESTION_KEYS:
        v = obj.get(key)
        if isinstance(v, str) and v.strip():
            return v.strip()
    messages = obj.get("messages")
    if isinstance(messages, list):
        users = [
            str(m["content"])
            for m in messages
            if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str)
        ]
        if users and users[-1].strip():
            return users[-1].strip()
    strings = [v.strip() for v in obj.values() if isinstance(v, str) and v.strip()]
    return strings[0] if len(strings) == 1 else None


def _documents(span: _Span, path: str, problems: list[Problem]) -> list[dict[str, Any]]:
    docs: dict[int, dict[str, Any]] = {}
    for key, value in span.attrs.items():
        m = _DOC.match(key)
        if m is None:
            continue
        i, part = int(m.group(1)), m.group(2)
        doc = docs.setdefault(i, {"id": None, "content": None, "score": None})
        where = f"attributes.{key}"
        if part == "content":
            if isinstance(value, str):
                doc["content"] = value
            else:
                problems.append(
                    Problem(
                        f"expected a string (got {json.dumps(value)[:40]})", path, span.line, where
                    )
                )
        elif part == "id":
            if _id(value) is not None:
                doc["id"] = str(value)
            else:
                problems.append(
                    Problem(
                        f"expected a string or an integer (got {json.dumps(value)[:40]})",
                        path,
                        span.line,
                        where,
                    )
                )
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            doc["score"] = _finite(value)
        else:
            problems.append(
                Problem(f"expected a number (got {json.dumps(value)[:40]})", path, span.line, where)
            )
    return [docs[i] for i in sorted(docs)]


def _answer(span: _Span, path: str, problems: list[Problem]) -> str | None:
    """An LLM span's answer: its last output message's content, else its ``output.value``."""
    messages: dict[int, Any] = {}
    for key, value in span.attrs.items():
        m = _MESSAGE.match(key)
        if m is not None and m.group(2) == "content":
            messages[int(m.group(1))] = value
    for i in sorted(messages, reverse=True):
        content = _text(span, f"llm.output_messages.{i}.message.content", path, problems)
        if content is not None and content.strip():
            return content
    return _text(span, "output.value", path, problems)


def _metadata(spans: list[_Span], path: str, problems: list[Problem]) -> dict[str, Any]:
    """``session_id``, ``user_id``, ``tags`` and the ``metadata`` keys; the first span (root
    first) that has one gives it."""
    out: dict[str, Any] = {}
    for span in spans:
        for attr, name in (("session.id", "session_id"), ("user.id", "user_id")):
            value = span.attrs.get(attr)
            if name not in out and isinstance(value, (str, int)) and not isinstance(value, bool):
                out[name] = value
        tags = span.attrs.get("tag.tags")
        if "tags" not in out and isinstance(tags, list) and all(isinstance(t, str) for t in tags):
            out["tags"] = tags
        meta: dict[str, Any] = {}
        raw = span.attrs.get("metadata")
        if isinstance(raw, str):
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                _flatten(parsed, "", meta)
            else:
                problems.append(
                    Problem("expected a JSON object", path, span.line, "attributes.metadata")
                )
        for key, value in span.attrs.items():
            if key.startswith("metadata."):
                meta[key[len("metadata.") :]] = value
        for key, value in meta.items():
            if key not in RESERVED and key not in out:
                out[key] = value
    return out


@dataclass(frozen=True)
class SpanLog:
    """What an OpenInference export gave: one ``(line, record)`` per trace with a question, and
    the traces skipped for having none (their first line and trace id)."""

    records: list[tuple[int, dict[str, Any]]]
    skipped: list[tuple[int, str]]
    spans: int


def read_openinference_log(file: str | os.PathLike[str], problems: list[Problem]) -> SpanLog:
    """One logged question per trace of an OpenInference span export (module docstring)."""
    spans = _spans(file, problems)
    path = os.fspath(file)
    traces: dict[str, list[_Span]] = {}
    for span in spans:
        traces.setdefault(span.trace, []).append(span)
    keyed: list[tuple[float | None, int, dict[str, Any]]] = []
    skipped: list[tuple[int, str]] = []
    for trace, members in traces.items():
        if all(s.start is not None for s in members):
            members.sort(key=lambda s: (s.start or 0.0, s.line))
        else:
            members.sort(key=lambda s: s.line)
        ids = {s.span_id for s in members if s.span_id is not None}
        roots = [s for s in members if s.parent is None or s.parent not in ids]
        candidates = [s for s in roots if s.kind in QUESTION_KINDS]
        candidates += [s for s in members if s.kind in ("CHAIN", "AGENT") and s not in candidates]
        candidates += [s for s in members if s.kind == "RETRIEVER"]
        question: str | None = None
        source_span: _Span | None = None
        for span in candidates:
            value = _text(span, "input.value", path, problems)
            text = question_text(value, span.attrs.get("input.mime_type")) if value else None
            if text:
                question, source_span = text, span
                break
        if question is None or source_span is None:
            skipped.append((min(s.line for s in members), trace))
            continue
        retrieved = [
            doc for s in members if s.kind == "RETRIEVER" for doc in _documents(s, path, problems)
        ]
        llms = [s for s in members if s.kind == "LLM"]
        answer = _answer(llms[-1], path, problems) if llms else None
        if answer is None and roots:
            answer = _text(roots[0], "output.value", path, problems)
        ordered = sorted(members, key=lambda s: s not in roots)  # roots first, stable
        record: dict[str, Any] = {"question": question, "trace_id": trace}
        record.update(_metadata(ordered, path, problems))
        record["logged"] = {"retrieved": retrieved, "answer": answer}
        keyed.append((members[0].start, source_span.line, record))
    # traces in the order they started (the REST API lists the newest first); by line when a
    # span has no start time
    if all(start is not None for start, _, _ in keyed):
        keyed.sort(key=lambda r: (r[0] or 0.0, r[1]))
    else:
        keyed.sort(key=lambda r: r[1])
    skipped.sort()
    return SpanLog([(line, record) for _, line, record in keyed], skipped, len(spans))
