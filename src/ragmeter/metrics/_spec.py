"""Metrics as values with one canonical string form.

Grammar (whitespace is not allowed)::

    metric  := NAME [ "(" option ("," option)* ")" ] [ "@" cutoff ]
    cutoff  := INT | "budget=" INT
    option  := "rel=" INT | "gain=" ("linear" | "exp")
             | "gains=" GRADE ":" GAIN ("," GRADE ":" GAIN)*

``parse(str(m)) == m`` for every metric; ``str(parse(s))`` is the canonical spelling of ``s``
(aliases resolved, default options dropped, gain maps sorted by grade). A metric equals its
canonical string (``parse("MRR@10") == "RR@10"``) and hashes like it, so records keyed by metric
strings (JSON, ``Evaluation.aggregate``) and by metrics agree. Strings are for the edges (CLI
arguments, JSON); inside ragmeter a metric travels as a :class:`Metric`.
"""

from __future__ import annotations

import difflib
import math
import numbers
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import UsageError
from ._kernels import gain_values
from ._registry import ALIASES, DEFAULT_GAIN, DEFAULT_REL, GAINS, REGISTRY, MetricInfo

_METRIC_RE = re.compile(r"^(?P<name>[A-Za-z]+)(?:\((?P<opts>[^()]*)\))?(?:@(?P<cut>[^@]+))?$")


@dataclass(frozen=True, eq=False)
class Metric:
    """One metric at one cutoff with its options. Hashable; usable as a dict key."""

    name: str
    k: int | None = None
    budget: int | None = None
    rel: int = DEFAULT_REL
    gain: str = DEFAULT_GAIN
    gains: tuple[tuple[int, float], ...] | None = None

    def __post_init__(self) -> None:
        info = REGISTRY.get(self.name)
        if info is None:
            raise UsageError(_unknown(self.name))
        if self.k is not None and self.budget is not None:
            raise UsageError(f"{self.name}: give a rank cutoff k or a token budget, not both")
        if self.k is not None and self.k < 1:
            raise UsageError(f"{self.name}: the cutoff k must be a positive integer, got {self.k}")
        if self.budget is not None and self.budget < 1:
            raise UsageError(f"{self.name}: the token budget must be positive, got {self.budget}")
        if info.cutoff == "required" and self.k is None and self.budget is None:
            raise UsageError(f"{self.name} needs a cutoff, e.g. {self.name}@5")
        if info.cutoff == "none" and (self.k is not None or self.budget is not None):
            raise UsageError(f"{self.name} takes no cutoff")
        if self.rel != DEFAULT_REL and "rel" not in info.options:
            hint = (
                " nDCG keeps the gain of every grade, as trec_eval does with -l; to give lower"
                " grades no gain, use a gain map such as nDCG(gains=1:0,2:1)"
                if self.name == "nDCG"
                else ""
            )
            raise UsageError(f"{self.name} takes no rel= option.{hint}")
        if self.rel < 1:
            raise UsageError(f"{self.name}: rel must be an integer >= 1, got {self.rel}")
        if self.gain != DEFAULT_GAIN or self.gains is not None:
            if "gain" not in info.options:
                raise UsageError(f"{self.name} takes no gain option")
            if self.gain not in GAINS:
                raise UsageError(f"gain must be one of {', '.join(GAINS)}, got '{self.gain}'")
            if self.gains is not None and self.gain != DEFAULT_GAIN:
                raise UsageError("give gain= or gains=, not both")
            low = [g for g, _ in self.gains or () if g < 1]
            if low:
                raise UsageError(
                    f"{self.name}: a gain map names grades >= 1 (grades <= 0 "
                    f"always have gain 0), got grade {low[0]}"
                )
            # a negative gain takes nDCG below 0, a non-finite one makes it NaN: refused, so
            # nDCG stays in [0, 1] (a gain of 0 is how a grade is given no gain)
            bad = [(g, v) for g, v in self.gains or () if not _gain_ok(v)]
            if bad:
                raise UsageError(
                    f"{self.name}: a gain must be a finite number >= 0, got grade "
                    f"{bad[0][0]}:{bad[0][1]}"
                )

    # -- identity: the canonical string ------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Metric):
            return self._key() == other._key()
        if isinstance(other, str):
            return str(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))

    def _key(self) -> tuple[Any, ...]:
        return (self.name, self.k, self.budget, self.rel, self.gain, self.gains)

    # -- what the registry says about it -----------------------------------------------------
    @property
    def info(self) -> MetricInfo:
        return REGISTRY[self.name]

    @property
    def binary(self) -> bool:
        """True when each per-query value is 0 or 1."""
        return self.info.binary

    @property
    def params(self) -> dict[str, object]:
        """The options in effect, defaults included, e.g. ``{"rel": 1}`` for ``R@5``."""
        return {p.name: getattr(self, p.name) for p in self.info.params}

    @property
    def stem(self) -> str:
        """The canonical spelling without the cutoff: ``nDCG(gain=exp)`` for
        ``nDCG(gain=exp)@10`` (sweeps and tables add their own ``@k``)."""
        opts: list[str] = []
        if self.rel != DEFAULT_REL:
            opts.append(f"rel={self.rel}")
        if self.gain != DEFAULT_GAIN:
            opts.append(f"gain={self.gain}")
        if self.gains is not None:
            opts.append("gains=" + ",".join(f"{g}:{_num(v)}" for g, v in self.gains))
        return self.name + (f"({','.join(opts)})" if opts else "")

    def at(self, k: int | None = None, *, budget: int | None = None) -> Metric:
        """The same metric at another cutoff (rank ``k`` or token ``budget``; neither: the
        whole list)."""
        return Metric(self.name, k, budget, self.rel, self.gain, self.gains)

    def gain_of(self, grade: int) -> float:
        """The gain nDCG gives a judged grade under this metric's gain rule (the engine's
        rule, :func:`ragmeter.metrics._kernels.gain_values`)."""
        return float(gain_values(np.array([grade]), self.gain, self.gains)[0])

    @property
    def label(self) -> str:
        """How tables and pages head the metric: the canonical string, with nDCG's default gain
        said (``nDCG@10 (linear)``); a gain that is not the default is in the canonical string
        already (``nDCG(gain=exp)@10``). JSON keys and CSV headers keep ``str(metric)``."""
        if "gain" in self.info.options and self.gain == DEFAULT_GAIN and self.gains is None:
            return f"{self} ({DEFAULT_GAIN})"
        return str(self)

    def __str__(self) -> str:
        if self.k is not None:
            return f"{self.stem}@{self.k}"
        if self.budget is not None:
            return f"{self.stem}@budget={self.budget}"
        return self.stem

    def __repr__(self) -> str:
        return f"Metric({str(self)!r})"


def label(metric: Metric | str) -> str:
    """The header a table or page prints for ``metric`` (:attr:`Metric.label`): ``nDCG@10
    (linear)`` for ``nDCG@10``; text that is no metric string (``nDCG@k``, ``answer correct``)
    is returned as given, with nDCG's default gain said when its stem is a bare ``nDCG``."""
    if isinstance(metric, Metric):
        return metric.label
    # the text as written (a page's words stay its own), the gain added where it is unsaid; a
    # template such as "nDCG@k" or "nDCG@budget" is read by the stem before its '@'
    stem, _, cut = metric.partition("@")
    for text in (metric, stem) if cut in ("k", "budget") else (metric,):
        try:
            m = parse(text)
        except UsageError:
            continue
        return metric if m.label == str(m) else f"{metric} ({DEFAULT_GAIN})"
    return metric


def _gain_ok(v: object) -> bool:
    return (
        isinstance(v, numbers.Real)
        and not isinstance(v, bool)
        and math.isfinite(float(v))
        and float(v) >= 0
    )


def _num(v: float) -> str:
    # whole gains print as integers (gains=1:3), but not 1e308 as its 309 digits
    f = float(v)
    return str(int(f)) if f.is_integer() and abs(f) < 1e16 else repr(f)


def _unknown(name: str) -> str:
    valid = sorted(REGISTRY) + sorted(ALIASES)
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.5) or [
        v for v in valid if v.lower() == name.lower()
    ]
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return f"unknown metric '{name}'.{hint} Valid metrics: {', '.join(valid)}"


def _trec_eval_names() -> dict[str, str]:
    """trec_eval's measure names -> ragmeter's: ``map`` -> ``AP``, ``P_5`` -> ``P@5`` (from the
    registry's ``trec_eval`` column: ``name_k`` takes a cutoff, a bare name takes none)."""
    return {
        t: info.name for info in REGISTRY.values() for t in info.trec_eval if not t.endswith("_k")
    }


_TREC_CUT = {
    t[: -len("_k")]: info.name
    for info in REGISTRY.values()
    for t in info.trec_eval
    if t.endswith("_k")
}
_TREC_CUT_RE = re.compile(r"^(?P<stem>[A-Za-z_]+?)_(?P<k>[0-9]+)$")


def trec_eval_alias(text: str) -> str | None:
    """ragmeter's canonical string for one of trec_eval's measure names (``map`` -> ``AP``,
    ``P_5`` -> ``P@5``, ``ndcg_cut_10`` -> ``nDCG@10``, ``recip_rank`` -> ``RR``), else None."""
    s = text.strip()
    whole = _trec_eval_names().get(s)
    if whole is not None and whole != s:
        return whole
    m = _TREC_CUT_RE.match(s)
    if m and m["stem"] in _TREC_CUT:
        return f"{_TREC_CUT[m['stem']]}@{int(m['k'])}"
    return None


def trec_eval_aliases(text: str | Iterable[str | Metric]) -> dict[str, str]:
    """The trec_eval names in a metric list and the canonical form each is read as (for the
    CLI's note: ``read trec_eval's 'map' as AP``)."""
    items = _split(text) if isinstance(text, str) else [t for t in text if isinstance(t, str)]
    out: dict[str, str] = {}
    for t in items:
        alias = trec_eval_alias(t)
        if alias is not None:
            out[t.strip()] = str(parse(alias))
    return out


def parse(text: str | Metric, *, default_k: int | None = None) -> Metric:
    """Parse one metric string, e.g. ``nDCG(gain=exp)@10`` or ``R@budget=1200``; trec_eval's
    measure names (``map``, ``P_5``, ``ndcg_cut_10``, ``recip_rank``, ``recall_100``,
    ``success_1``, ``Rprec``) are read as the same metrics.

    ``default_k`` is the cutoff given to a metric that needs one when the text has none (a
    sweep names ``P`` and replaces the cutoff anyway).
    """
    if isinstance(text, Metric):
        return text
    if not isinstance(text, str):
        raise UsageError(
            f"a metric is a string such as 'nDCG@10' or a Metric, got {type(text).__name__} "
            f"{text!r}"
        )
    s = text.strip()
    s = trec_eval_alias(s) or s
    m = _METRIC_RE.match(s)
    if not m:
        raise UsageError(
            f"cannot parse metric '{text}': expected NAME[(options)][@k], e.g. nDCG@10, "
            "RR, R(rel=2)@100, nDCG(gain=exp)@3, R@budget=1200, or a trec_eval name such as "
            "map, P_5, ndcg_cut_10"
        )
    name = ALIASES.get(m["name"], m["name"])
    if name not in REGISTRY:
        raise UsageError(_unknown(m["name"]))
    k: int | None = None
    budget: int | None = None
    cut = m["cut"]
    if cut is not None:
        if cut.startswith("budget="):
            budget = _int(cut[len("budget=") :], text, "budget")
        else:
            k = _int(cut, text, "cutoff")
    elif default_k is not None and REGISTRY[name].cutoff == "required":
        k = default_k
    kwargs: dict[str, object] = {}
    if m["opts"]:
        for key, value in _options(m["opts"], text):
            # the grammar reads every option's value; Metric checks this metric accepts it
            read = _OPTION_VALUES.get(key)
            if read is not None:
                kwargs[key] = read(value, text)
            else:
                allowed = sorted(REGISTRY[name].options) or ["none"]
                raise UsageError(
                    f"metric '{text}': unknown option '{key}'; {name} accepts: {', '.join(allowed)}"
                )
    return Metric(name, k, budget, **kwargs)  # type: ignore[arg-type]


def _options(opts: str, text: str) -> list[tuple[str, str]]:
    # "gains=1:3,2:9,rel=2": a comma-separated piece without '=' continues the previous value.
    out: list[tuple[str, str]] = []
    for piece in opts.split(","):
        if "=" in piece:
            key, _, value = piece.partition("=")
            out.append((key.strip(), value.strip()))
        elif out:
            out[-1] = (out[-1][0], out[-1][1] + "," + piece.strip())
        else:
            raise UsageError(f"metric '{text}': option '{piece}' is not KEY=VALUE")
    keys = [k for k, _ in out]
    if len(set(keys)) != len(keys):
        raise UsageError(f"metric '{text}': an option is given twice")
    return out


def _int(value: str, text: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise UsageError(f"metric '{text}': {what} must be an integer, got '{value}'") from None


def _gain_map(value: str, text: str) -> tuple[tuple[int, float], ...]:
    pairs: dict[int, float] = {}
    for item in value.split(","):
        grade, sep, gain = item.partition(":")
        if not sep:
            raise UsageError(f"metric '{text}': gain map entries are GRADE:GAIN, got '{item}'")
        g = _int(grade, text, "grade")
        try:
            pairs[g] = float(gain)
        except ValueError:
            raise UsageError(f"metric '{text}': gain must be a number, got '{gain}'") from None
    return tuple(sorted(pairs.items()))


_OPTION_VALUES: dict[str, Callable[[str, str], object]] = {
    "rel": lambda value, text: _int(value, text, "rel"),
    "gain": lambda value, text: value,
    "gains": _gain_map,
}


def _split(text: str) -> list[str]:
    """Split a metric list at the commas outside parentheses."""
    items: list[str] = []
    depth, cur = 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    return [i for i in (s.strip() for s in items) if i]


def parse_list(text: str | Iterable[str | Metric]) -> list[Metric]:
    """Parse ``"nDCG@10,RR@10,nDCG(gains=1:3,2:9)@5"`` (commas inside parentheses are kept)."""
    if isinstance(text, str):
        raw: Iterable[str | Metric] = _split(text)
    elif isinstance(text, Iterable):
        raw = text
    else:
        raise UsageError(
            "metrics are a string such as 'nDCG@10,RR' or a list of metric strings or Metric "
            f"values, got {type(text).__name__} {text!r}"
        )
    out: list[Metric] = []
    seen: set[Metric] = set()  # not `m in out`: quadratic in the number of metrics
    for item in raw:
        m = parse(item)
        if m not in seen:
            seen.add(m)
            out.append(m)
    if not out:
        raise UsageError("no metric given")
    return out
