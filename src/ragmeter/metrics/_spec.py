"""Metrics as values with one canonical string form.

Grammar (whitespace is not allowed)::

    metric  := NAME [ "(" option ("," option)* ")" ] [ "@" cutoff ]
    cutoff  := INT | "budget=" INT
    option  := "rel=" INT | "gain=" ("linear" | "exp") | "gains=" GRADE ":" GAIN ("," GRADE ":" GAIN)*

``parse(str(m)) == m`` for every metric; ``str(parse(s))`` is the canonical spelling of ``s``
(aliases resolved, default options dropped, gain maps sorted by grade).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable

from .._errors import UsageError
from ._registry import ALIASES, GAINS, REGISTRY

_METRIC_RE = re.compile(r"^(?P<name>[A-Za-z]+)(?:\((?P<opts>[^()]*)\))?(?:@(?P<cut>[^@]+))?$")


@dataclass(frozen=True)
class Metric:
    """One metric at one cutoff with its options. Hashable; usable as a dict key."""

    name: str
    k: int | None = None
    budget: int | None = None
    rel: int = 1
    gain: str = "linear"
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
        if self.rel != 1 and "rel" not in info.options:
            hint = (
                " nDCG keeps the gain of every grade, as trec_eval does with -l; to give lower"
                " grades no gain, use a gain map such as nDCG(gains=1:0,2:1)"
                if self.name == "nDCG"
                else ""
            )
            raise UsageError(f"{self.name} takes no rel= option.{hint}")
        if self.rel < 1:
            raise UsageError(f"{self.name}: rel must be an integer >= 1, got {self.rel}")
        if self.gain != "linear" or self.gains is not None:
            if "gain" not in info.options:
                raise UsageError(f"{self.name} takes no gain option")
            if self.gain not in GAINS:
                raise UsageError(f"gain must be one of {', '.join(GAINS)}, got '{self.gain}'")
            if self.gains is not None and self.gain != "linear":
                raise UsageError("give gain= or gains=, not both")

    @property
    def info(self):  # -> MetricInfo
        return REGISTRY[self.name]

    @property
    def binary(self) -> bool:
        """True when each per-query value is 0 or 1."""
        return self.info.binary

    def at(self, k: int | None = None, *, budget: int | None = None) -> "Metric":
        """The same metric at another cutoff."""
        return Metric(self.name, k, budget, self.rel, self.gain, self.gains)

    def gain_of(self, grade: int) -> float:
        """The gain nDCG gives a judged grade (0 for grades <= 0, as trec_eval)."""
        if grade <= 0:
            return 0.0
        if self.gains is not None:
            return dict(self.gains).get(grade, float(grade))
        return float(2**grade - 1) if self.gain == "exp" else float(grade)

    def __str__(self) -> str:
        opts: list[str] = []
        if self.rel != 1:
            opts.append(f"rel={self.rel}")
        if self.gain != "linear":
            opts.append(f"gain={self.gain}")
        if self.gains is not None:
            opts.append("gains=" + ",".join(f"{g}:{_num(v)}" for g, v in self.gains))
        s = self.name + (f"({','.join(opts)})" if opts else "")
        if self.k is not None:
            s += f"@{self.k}"
        elif self.budget is not None:
            s += f"@budget={self.budget}"
        return s

    def __repr__(self) -> str:
        return f"Metric({str(self)!r})"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def _unknown(name: str) -> str:
    valid = sorted(REGISTRY) + sorted(ALIASES)
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.5) or [
        v for v in valid if v.lower() == name.lower()
    ]
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return f"unknown metric '{name}'.{hint} Valid metrics: {', '.join(valid)}"


def parse(text: str | Metric) -> Metric:
    """Parse one metric string, e.g. ``nDCG(gain=exp)@10`` or ``R@budget=1200``."""
    if isinstance(text, Metric):
        return text
    s = text.strip()
    m = _METRIC_RE.match(s)
    if not m:
        raise UsageError(
            f"cannot parse metric '{text}': expected NAME[(options)][@k], e.g. nDCG@10, "
            "RR, R(rel=2)@100, nDCG(gain=exp)@3, R@budget=1200"
        )
    name = ALIASES.get(m["name"], m["name"])
    if name not in REGISTRY:
        raise UsageError(_unknown(m["name"]))
    k: int | None = None
    budget: int | None = None
    cut = m["cut"]
    if cut is not None:
        if cut.startswith("budget="):
            budget = _int(cut[len("budget="):], text, "budget")
        else:
            k = _int(cut, text, "cutoff")
    kwargs: dict[str, object] = {}
    if m["opts"]:
        for key, value in _options(m["opts"], text):
            if key == "rel":
                kwargs["rel"] = _int(value, text, "rel")
            elif key == "gain":
                kwargs["gain"] = value
            elif key == "gains":
                kwargs["gains"] = _gain_map(value, text)
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


def parse_list(text: str | Iterable[str | Metric]) -> list[Metric]:
    """Parse ``"nDCG@10,RR@10,nDCG(gains=1:3,2:9)@5"`` (commas inside parentheses are kept)."""
    if isinstance(text, str):
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
        raw: Iterable[str | Metric] = [i for i in (s.strip() for s in items) if i]
    else:
        raw = text
    out: list[Metric] = []
    for item in raw:
        m = parse(item)
        if m not in out:
            out.append(m)
    if not out:
        raise UsageError("no metric given")
    return out
