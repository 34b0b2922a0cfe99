"""Does the golden set look like the traffic? Sample real questions to label; compare shares.

After launch the golden set is fed by the traffic it judges (the RAG evaluation lesson): sample
logged questions per slice so rare types show up, label them, and check that the set's slices
keep the traffic's proportions. A log is JSONL, one ``{"question": ..., <metadata>}`` object a
line, a CSV file with a ``question`` column, or an OpenInference span export (Arize Phoenix's
JSON Lines of spans: one question per trace, with what the application retrieved and answered
as a ``logged`` object beside it); :mod:`ragmeter.data._traffic_formats` reads the last two
(docs/golden.md).

- :func:`sample_log` drops repeated questions (same text after case folding and whitespace
  collapsing; the first line is kept), then draws a stratified sample with proportional
  allocation by largest remainder: stratum ``h`` of ``N_h`` distinct questions out of ``N`` gets
  ``floor(n N_h / N)`` and the ``n - sum floor`` remaining places go to the largest remainders
  (ties: larger stratum, then name), so each count is within 1 of its share ``n N_h / N``.
  Inside a stratum the questions are drawn without replacement by ``random.Random`` seeded with
  ``"{seed}:{stratum}"``: the same seed gives the same sample on every machine.
- :func:`compare_traffic` counts every log line, repeats included (a question asked 100 times
  is 100 times the traffic), and flags a slice whose golden share is more than ``factor`` times
  its log share (over-represented) or less than ``1 / factor`` times (under-represented).
"""

from __future__ import annotations

import json
import math
import os
import random
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._errors import InputError, Problem, UsageError, ValidationError
from .._numbers import seed as check_seed
from .._numbers import whole
from ..io import iter_jsonl
from ._traffic_formats import LOG_FORMATS, detect_format, read_csv_log, read_openinference_log
from ._validate import quote

if TYPE_CHECKING:  # pragma: no cover
    from .golden import GoldenSet

#: a slice is flagged when its golden share is over FACTOR times, or under 1/FACTOR times,
#: its share of the traffic.
DEFAULT_FACTOR = 2.0
#: the log field compare-traffic reads slices from by default.
DEFAULT_FIELD = "slice"


@dataclass(frozen=True)
class LogLine:
    """One logged question: its file line, the whole record and the question text."""

    line: int
    record: dict[str, Any]

    @property
    def question(self) -> str:
        return str(self.record["question"])


@dataclass(frozen=True)
class TrafficLog:
    """The lines of a question log, in file order (an OpenInference export: one a trace, in
    the order the traces started)."""

    lines: tuple[LogLine, ...]
    source: str | None = None
    format: str = "jsonl"  #: jsonl, csv or openinference
    #: what reading left out and why (an OpenInference trace with no question), for the summary
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.lines)


def normalise_question(text: str) -> str:
    """The form two questions are compared in to find repeats: case-folded, whitespace collapsed."""
    return " ".join(text.casefold().split())


def read_log(path: str | os.PathLike[str], fmt: str | None = None) -> TrafficLog:
    """Read a question log: ``fmt`` ``jsonl``, ``csv`` or ``openinference``, or None to tell by
    the name and the first line (:func:`~ragmeter.data._traffic_formats.detect_format`). Every
    bad line (not JSON, not an object, not a span, no ``question`` or one that is not a
    non-empty string) is reported at once with file, line and field."""
    if fmt is not None and fmt not in LOG_FORMATS:
        raise UsageError(f"unknown log format {fmt!r}: one of {', '.join(LOG_FORMATS)}")
    fmt = fmt or detect_format(path)
    problems: list[Problem] = []
    notes: list[str] = []
    if fmt == "csv":
        records: Iterable[tuple[int, dict[str, Any]]] = read_csv_log(path, problems)
    elif fmt == "openinference":
        spans = read_openinference_log(path, problems)
        records = spans.records
        if spans.skipped:
            first, trace = spans.skipped[0]
            notes.append(
                f"{len(spans.skipped)} of {len(spans.records) + len(spans.skipped)} traces have "
                "no question (no root, CHAIN, AGENT or RETRIEVER span with an input.value: "
                f"an indexing trace?) and were left out; the first at line {first} "
                f"(trace {trace})"
            )
    else:
        records = iter_jsonl(path, problems, what="questions")
    lines: list[LogLine] = []
    for number, obj in records:
        q = obj.get("question")
        if "question" not in obj:
            problems.append(
                Problem(
                    'missing required field (each log line is {"question": ..., ...metadata})',
                    str(path),
                    number,
                    "question",
                )
            )
        elif not isinstance(q, str) or not q.strip():
            got = quote(q) if isinstance(q, str) else json.dumps(q)[:70]
            problems.append(
                Problem(f"must be a non-empty string (got {got})", str(path), number, "question")
            )
        else:
            lines.append(LogLine(number, obj))
    if problems:
        problems.sort(key=lambda p: p.line or 0)  # spans are checked trace by trace
        raise ValidationError(problems, what=f"log {path}")
    if not lines:
        raise InputError("the log has no questions", path=path)
    return TrafficLog(tuple(lines), str(path), fmt, tuple(notes))


def dedupe(log: TrafficLog) -> tuple[list[LogLine], int]:
    """The first line of each distinct question (normalised) and how many repeats were dropped."""
    seen: set[str] = set()
    kept: list[LogLine] = []
    for line in log.lines:
        key = normalise_question(line.question)
        if key not in seen:
            seen.add(key)
            kept.append(line)
    return kept, len(log.lines) - len(kept)


def _scalar(log: TrafficLog, line: LogLine, name: str, problems: list[Problem]) -> str | None:
    """A stratum name from a field: strings as they are, numbers and booleans as JSON."""
    value = line.record.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return json.dumps(value)
    kind = "a list" if isinstance(value, list) else "an object"
    problems.append(
        Problem(
            f"{kind} cannot name one stratum; sample by a field with one string value per line",
            log.source,
            line.line,
            name,
        )
    )
    return None


def _names(log: TrafficLog, line: LogLine, name: str, problems: list[Problem]) -> list[str]:
    """Slice names from a field: one string, a list of strings (like golden ``slices``) or none."""
    value = line.record.get(name)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(dict.fromkeys(value))
    problems.append(
        Problem(
            f"expected a string or a list of strings (got {json.dumps(value)[:70]})",
            log.source,
            line.line,
            name,
        )
    )
    return []


def allocate(sizes: dict[str | None, int], n: int) -> dict[str | None, int]:
    """Proportional allocation of ``n`` places by largest remainder (module docstring)."""
    total = sum(sizes.values())
    if total == 0:
        return {k: 0 for k in sizes}
    n = min(n, total)
    out = {k: (n * s) // total for k, s in sizes.items()}
    left = n - sum(out.values())
    order = sorted(sizes, key=lambda k: (-((n * sizes[k]) % total), -sizes[k], k is None, k or ""))
    for k in order[:left]:
        out[k] += 1
    return out


@dataclass(frozen=True)
class Stratum:
    name: str | None  #: None: lines without the field
    lines: int  #: distinct questions in the stratum
    expected: float  #: proportional share n * lines / N
    sampled: int


@dataclass(frozen=True)
class TrafficSample:
    """A stratified sample of a log: the chosen lines (log order) and how they were drawn."""

    lines: tuple[LogLine, ...]
    strata: tuple[Stratum, ...]
    by: str | None
    seed: int
    requested: int
    read: int  #: log lines read
    duplicates: int  #: repeated questions dropped before sampling
    notes: tuple[str, ...] = ()  #: the log's notes (TrafficLog.notes)
    log_format: str = "jsonl"  #: the log's format (TrafficLog.format)

    def to_jsonl(self) -> list[str]:
        return [json.dumps(line.record, ensure_ascii=False) for line in self.lines]

    def summary(self) -> dict[str, Any]:
        return {
            "read": self.read,
            "duplicates_dropped": self.duplicates,
            "distinct": self.read - self.duplicates,
            "requested": self.requested,
            "sampled": len(self.lines),
            "by": self.by,
            "seed": self.seed,
            "notes": list(self.notes),
            "strata": [
                {
                    "stratum": s.name,
                    "distinct": s.lines,
                    "expected": s.expected,
                    "sampled": s.sampled,
                }
                for s in self.strata
            ],
        }


def sample_log(log: TrafficLog, n: int, by: str | None = None, seed: int = 0) -> TrafficSample:
    """Draw ``n`` distinct questions, stratified by field ``by`` (module docstring).

    Lines without the field form their own stratum. Asking for more questions than the log
    has distinct ones returns all of them.
    """
    whole("the sample size", n, low=1)
    check_seed(seed)
    kept, dropped = dedupe(log)
    problems: list[Problem] = []
    groups: dict[str | None, list[LogLine]] = {}
    for line in kept:
        key = _scalar(log, line, by, problems) if by is not None else "all"
        groups.setdefault(key, []).append(line)
    if problems:
        raise ValidationError(problems, what=f"log {log.source}")
    quotas = allocate({k: len(v) for k, v in groups.items()}, n)
    chosen: list[LogLine] = []
    strata: list[Stratum] = []
    total = len(kept)
    for key in sorted(groups, key=lambda k: (-len(groups[k]), k is None, k or "")):
        members = groups[key]
        rng = random.Random(f"{seed}:{key}")
        chosen.extend(rng.sample(members, quotas[key]))
        strata.append(Stratum(key, len(members), min(n, total) * len(members) / total, quotas[key]))
    position = {id(line): i for i, line in enumerate(log.lines)}
    chosen.sort(key=lambda line: position[id(line)])
    return TrafficSample(
        tuple(chosen), tuple(strata), by, seed, n, len(log), dropped, log.notes, log.format
    )


@dataclass(frozen=True)
class SliceShare:
    """One slice's share of the golden set and of the log, and whether it is flagged."""

    name: str
    golden: int  #: golden questions in the slice
    log: int  #: log lines in the slice
    golden_total: int
    log_total: int
    #: the slice's golden questions by how they were made (``Question.origin``; "unknown"
    #: when a question records none): drafted questions are counted apart from logged ones
    by_origin: Mapping[str, int] = field(default_factory=dict)

    @property
    def golden_share(self) -> float:
        return self.golden / self.golden_total

    @property
    def log_share(self) -> float:
        return self.log / self.log_total

    @property
    def ratio(self) -> float | None:
        """golden share ÷ log share; ``None`` when the slice is not in the log."""
        return self.golden_share / self.log_share if self.log else None

    def status(self, factor: float) -> str:
        """``over`` / ``under`` / ``ok``, or ``not in golden`` / ``not in log``."""
        if self.golden == 0:
            return "not in golden"
        if self.log == 0:
            return "not in log"
        # ratio > factor, cross-multiplied so that a ratio exactly at the factor is never flagged
        # by a rounding error
        g, t = self.golden * self.log_total, self.log * self.golden_total
        if g > factor * t:
            return "over"
        return "under" if g * factor < t else "ok"


@dataclass(frozen=True)
class TrafficComparison:
    """Per slice: share of golden questions vs share of log lines, flags at ``factor``."""

    slices: tuple[SliceShare, ...]
    field: str
    factor: float
    golden_questions: int
    log_lines: int
    golden_unsliced: int  #: golden questions with no slice
    log_unsliced: int  #: log lines without the field
    notes: tuple[str, ...] = ()  #: the log's notes (TrafficLog.notes)

    @property
    def has_origins(self) -> bool:
        """Whether any golden question records its origin (``Question.origin``)."""
        return any(set(s.by_origin) - {"unknown"} for s in self.slices)

    def with_status(self, *statuses: str) -> list[SliceShare]:
        return [s for s in self.slices if s.status(self.factor) in statuses]

    def to_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "factor": self.factor,
            "golden_questions": self.golden_questions,
            "log_lines": self.log_lines,
            "golden_without_slice": self.golden_unsliced,
            "log_without_field": self.log_unsliced,
            "notes": list(self.notes),
            "slices": [
                {
                    "slice": s.name,
                    "golden": s.golden,
                    "golden_share": s.golden_share,
                    "log": s.log,
                    "log_share": s.log_share,
                    "ratio": s.ratio,
                    "status": s.status(self.factor),
                    # once any golden question records how it was made
                    **({"golden_by_origin": dict(s.by_origin)} if self.has_origins else {}),
                }
                for s in self.slices
            ],
            "over": [s.name for s in self.with_status("over")],
            "under": [s.name for s in self.with_status("under")],
            "not_in_golden": [s.name for s in self.with_status("not in golden")],
            "not_in_log": [s.name for s in self.with_status("not in log")],
        }


def _in_order(counts: Counter[str]) -> dict[str, int]:
    from ._golden_set import ORIGINS

    return {k: counts[k] for k in ORIGINS if counts[k]}


def compare_traffic(
    golden: GoldenSet, log: TrafficLog, field: str = DEFAULT_FIELD, factor: float = DEFAULT_FACTOR
) -> TrafficComparison:
    """Share of each slice in the golden set (its questions' ``slices``) and in the log (field
    ``field``: a string or a list of strings per line); shares are over all questions / lines,
    so a question in two slices counts in both.
    """
    if not (math.isfinite(factor) and factor > 1):
        raise UsageError(f"the factor must be a number above 1, got {factor:g}")
    per_question = [list(dict.fromkeys(q.slices)) for q in golden.questions]
    if not per_question:
        raise UsageError("the golden set has no questions")
    problems: list[Problem] = []
    per_line = [_names(log, line, field, problems) for line in log.lines]
    if problems:
        raise ValidationError(problems, what=f"log {log.source}")
    g = Counter(name for names in per_question for name in names)
    t = Counter(name for names in per_line for name in names)
    made: dict[str, Counter[str]] = {}
    for q, names in zip(golden.questions, per_question, strict=True):
        for name in names:
            made.setdefault(name, Counter())[q.origin or "unknown"] += 1
    ng, nt = len(per_question), len(per_line)
    rows = [
        SliceShare(name, g[name], t[name], ng, nt, _in_order(made.get(name, Counter())))
        for name in g.keys() | t.keys()
    ]
    rows.sort(key=lambda s: (-s.log, -s.golden, s.name))
    return TrafficComparison(
        tuple(rows),
        field,
        factor,
        ng,
        nt,
        sum(not names for names in per_question),
        sum(not names for names in per_line),
        log.notes,
    )
