"""The CI gate: a refutation rule written before the numbers, checked on a paired comparison.

A rule has up to three checks, each failing the candidate when:

- ``max_broken``: more than this many questions broken (went from 1 to 0). For a metric that is
  not binary the gate counts losses (questions whose value fell) instead, and says so;
- ``min_delta``: the mean paired difference (candidate - baseline) is below this;
- ``require_ci_above``: the lower end of the bootstrap interval is below this (equal passes).

With ``per_slice`` the same checks apply in every slice of at least ``min_slice`` questions
(default 10); smaller slices are skipped and listed (a slice that small gives a direction, not a
result). Testing many slices, some cross a limit by chance (one win and one loss in a 17-question
slice puts the interval's lower end near -0.18), so a slice fails a check only when it crosses
the limit *and* its change is beyond chance: its sign-test p-value, Holm-adjusted over the
comparison's slices, is below ``alpha`` (default 0.05). A slice over the limit by chance is
reported as such and does not fail the gate. The overall check is not adjusted: it fails on the
limit alone. The gate passes when no enforced check fails. Exit code: 0 pass, 1 fail.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from .._errors import UsageError
from .._interval import interval_text
from .._numbers import number_in, whole
from .._pvalue import format_p, p_is
from ..metrics import Metric
from ._comparison import Comparison
from ._slices import SMALL_NOTE, SMALL_SLICE, PairedStats
from ._stable import StableChanges


@dataclass(frozen=True)
class GateRule:
    """What makes the candidate fail; state it before looking at the numbers."""

    max_broken: int | None = None
    min_delta: float | None = None
    require_ci_above: float | None = None
    per_slice: bool = False
    min_slice: int = SMALL_SLICE
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if self.max_broken is None and self.min_delta is None and self.require_ci_above is None:
            raise UsageError(
                "the gate needs a rule: give at least one of --max-broken, "
                "--min-delta, --require-ci-above"
            )
        if self.max_broken is not None:
            whole("--max-broken", self.max_broken, low=0)
        # a difference of two means of [0, 1] metrics lies in [-1, 1]: a bar outside it (or NaN)
        # would fail or pass every candidate whatever the numbers
        for flag, value in (
            ("--min-delta", self.min_delta),
            ("--require-ci-above", self.require_ci_above),
        ):
            if value is not None:
                number_in(flag, value, -1.0, 1.0, what="a difference of two means")
        whole("--min-slice", self.min_slice, low=1)
        number_in(
            "the per-slice significance level", self.alpha, 0.0, 1.0, open_low=True, open_high=True
        )

    def statement(
        self, metric: Metric | str, *, binary: bool = True, confidence: float = 0.95
    ) -> str:
        """The refutation rule in words, e.g. for the output's first line."""
        parts = []
        if self.max_broken is not None:
            what = "questions broken" if binary else "questions whose value fell (losses)"
            parts.append(f"more than {self.max_broken} {what}")
        if self.min_delta is not None:
            parts.append(f"the mean paired difference is below {self.min_delta:+g}")
        if self.require_ci_above is not None:
            parts.append(
                f"the lower end of the {confidence:.0%} bootstrap interval is below "
                f"{self.require_ci_above:+g}"
            )
        where = (
            f"overall, or in any slice of {self.min_slice} or more questions where the "
            f"change is beyond chance: Holm-adjusted sign test p < {self.alpha:g}"
            if self.per_slice
            else "overall"
        )
        return f"The candidate fails on {metric} if {', or '.join(parts)} ({where})."


@dataclass(frozen=True)
class GateCheck:
    """One check of the rule on one scope (overall or a slice).

    ``passed`` says whether the observed value is within the limit. A slice check also carries
    the slice's sign-test p-value, raw and Holm-adjusted, and the level ``alpha``: over the
    limit with an adjusted p-value at or above ``alpha`` is ``chance`` and does not fail.
    """

    scope: str
    check: str
    observed: float
    threshold: float
    passed: bool
    enforced: bool = True
    p_value: float | None = None
    p_adjusted: float | None = None
    alpha: float | None = None

    @property
    def chance(self) -> bool:
        """Over the limit, but not beyond chance after the Holm adjustment."""
        return (
            not self.passed
            and self.p_adjusted is not None
            and self.alpha is not None
            and self.p_adjusted >= self.alpha
        )

    @property
    def failed(self) -> bool:
        return self.enforced and not self.passed and not self.chance

    @property
    def result(self) -> str:
        if self.passed:
            return "pass"
        if self.chance:
            return "within chance"
        return "FAIL" if self.enforced else "not enforced"

    def describe(self) -> str:
        text = (
            f"{self.scope}: {self.check} = {_fmt(self.check, self.observed)} "
            f"(limit {_fmt(self.check, self.threshold)})"
        )
        if self.p_adjusted is not None and not self.passed:
            p = format_p(self.p_value if self.p_value is not None else 1.0)
            text += f", sign test p = {p}, Holm-adjusted {format_p(self.p_adjusted)}" + (
                f" (>= {self.alpha:g})" if self.chance else f" (< {self.alpha:g})"
            )
        if self.chance:
            return text + ": over the limit, but within chance: pass"
        return f"{text}: {self.result}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "check": self.check,
            "observed": self.observed,
            "threshold": self.threshold,
            "passed": self.passed,
            "enforced": self.enforced,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "within_chance": self.chance,
            "failed": self.failed,
        }


def _fmt(check: str, x: float) -> str:
    return str(int(x)) if check in ("broken", "losses") else f"{x:+.4f}"


@dataclass(frozen=True)
class GateResult:
    """The checks made, and the slices skipped for size as ``(name, questions)``."""

    rule: GateRule
    comparison: Comparison
    checks: tuple[GateCheck, ...] = field(default_factory=tuple)
    skipped: tuple[tuple[str, int], ...] = ()
    #: ``--stable``: the questions fixed / broken in every repeat (the overall broken check
    #: counts these only); None without it
    stable: StableChanges | None = None

    @property
    def adjustment_line(self) -> str:
        """ "per-slice p-values Holm-adjusted over N slices" ("" when slices are not gated)."""
        adj = self.comparison.slice_adjustment
        if not self.rule.per_slice or adj is None:
            return ""
        return f"per-slice p-values {adj[0].capitalize()}-adjusted over {adj[1]} slices"

    def skip_lines(self) -> list[str]:
        return [
            f"slice {name}: skipped, {n} questions (under {self.rule.min_slice}: {SMALL_NOTE})"
            for name, n in self.skipped
        ]

    @property
    def passed(self) -> bool:
        return not any(c.failed for c in self.checks)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    @property
    def statement(self) -> str:
        c = self.comparison
        text = self.rule.statement(c.label, binary=c.binary, confidence=c.confidence)
        if self.stable is not None:
            text += (
                f" A question counts as fixed or broken only when it is so in every one of "
                f"{self.stable.n_repeats} repeats (--stable)."
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        r = self.rule
        return {
            "passed": self.passed,
            "rule": self.statement,
            "max_broken": r.max_broken,
            "min_delta": r.min_delta,
            "require_ci_above": r.require_ci_above,
            "per_slice": r.per_slice,
            "min_slice": r.min_slice,
            "alpha": r.alpha,
            "slice_p_adjustment": "holm" if self.adjustment_line else None,
            "checks": [ch.to_dict() for ch in self.checks],
            "skipped": [{"slice": name, "n": n} for name, n in self.skipped],
            "comparison": self.comparison.to_dict(),
            **({} if self.stable is None else {"stable": self.stable.to_dict()}),
        }

    def stable_line(self) -> str:
        """``--stable``: the fixed / broken in every repeat and the flaky questions ("" without
        it)."""
        st = self.stable
        if st is None:
            return ""
        return (
            f"Stable over {st.n_repeats} repeats: fixed {len(st.fixed)} / broken "
            f"{len(st.broken)} in every repeat; {len(st.flaky)} flaky question(s)"
            + (f": {', '.join(st.flaky[:20])}" if st.flaky else "")
            + (f" and {len(st.flaky) - 20} more" if len(st.flaky) > 20 else "")
            + "."
        )

    def to_markdown(self) -> str:
        c = self.comparison
        lo, hi = c.ci
        head = "PASSED" if self.passed else "FAILED"
        lines = [
            f"## ragmeter gate {head}: {c.candidate} vs {c.baseline} on {c.label}",
            "",
            f"**Rule, stated before the numbers:** {self.statement}",
            "",
            "| scope | check | observed | limit | result |",
            "|---|---|---|---|---|",
        ]
        for ch in self.checks:
            res = "**FAIL**" if ch.failed else ch.result
            if ch.chance:
                res += f" (Holm p {p_is(ch.p_adjusted or 0.0)})"
            lines.append(
                f"| {ch.scope} | {ch.check} | {_fmt(ch.check, ch.observed)} | "
                f"{_fmt(ch.check, ch.threshold)} | {res} |"
            )
        for name, n in self.skipped:
            lines.append(f"| slice {name} | - | {n} questions | - | skipped |")
        if self.adjustment_line:
            lines += [
                "",
                f"{self.adjustment_line}; a slice fails only when its change is beyond "
                f"chance (adjusted p < {self.rule.alpha:g}); slices under "
                f"{self.rule.min_slice} questions are skipped ({SMALL_NOTE}).",
            ]
        fb = f", fixed {c.fixed} / broken {c.broken}" if c.binary else ""
        headline = (
            f"n = {c.n} questions; mean {c.overall.baseline_mean:.4f} -> "
            f"{c.overall.candidate_mean:.4f}, difference {c.mean_delta:+.4f}, "
            f"{c.confidence:.0%} interval {interval_text(lo, hi, 4)} ({c.n_resamples} paired "
            f"bootstrap resamples, seed {c.seed}); wins {c.wins} / losses {c.losses} / ties "
            f"{c.ties}{fb}; sign test p {p_is(c.sign_test_p)}."
        )
        lines += [
            "",
            headline,
            "",
            f"Verdict: {c.verdict}.",
        ]
        if self.stable is not None:
            lines += ["", self.stable_line()]
        if c.broken_ids:
            lines += [
                "",
                "Broken: "
                + ", ".join(c.broken_ids[:20])
                + (f" and {len(c.broken_ids) - 20} more" if len(c.broken_ids) > 20 else ""),
            ]
        if c.warnings:
            lines += ["", *[f"> warning: {w}" for w in c.warnings]]
        return "\n".join(lines) + "\n"

    def to_junit_xml(self) -> str:
        c = self.comparison
        suite_name = f"ragmeter gate: {c.candidate} vs {c.baseline} on {c.label}"
        failures = sum(ch.failed for ch in self.checks)
        suites = ET.Element(
            "testsuites", name="ragmeter gate", tests=str(len(self.checks)), failures=str(failures)
        )
        n_tests = len(self.checks) + len(self.skipped)
        suites.set("tests", str(n_tests))
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=suite_name,
            tests=str(n_tests),
            failures=str(failures),
            errors="0",
            skipped=str(len(self.skipped)),
        )
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="rule", value=self.statement)
        ET.SubElement(props, "property", name="verdict", value=c.verdict)
        for ch in self.checks:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"ragmeter.gate.{ch.scope}",
                name=f"{ch.check} (limit {_fmt(ch.check, ch.threshold)})",
            )
            if ch.failed:
                ET.SubElement(
                    case, "failure", message=ch.describe(), type="GateFailure"
                ).text = self.statement
            elif not ch.passed:
                ET.SubElement(case, "system-out").text = ch.describe()
        for line, (name, _) in zip(self.skip_lines(), self.skipped, strict=True):
            case = ET.SubElement(
                suite, "testcase", classname=f"ragmeter.gate.slice {name}", name="slice size"
            )
            ET.SubElement(case, "skipped", message=line)
        ET.SubElement(suite, "system-out").text = self.to_markdown()
        ET.indent(suites)
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            + ET.tostring(suites, encoding="unicode")
            + "\n"
        )


def _checks(
    scope: str,
    s: PairedStats,
    rule: GateRule,
    binary: bool,
    p_adjusted: float | None = None,
    stable: StableChanges | None = None,
) -> list[GateCheck]:
    """The rule's checks on one scope; a slice passes its adjusted p-value along."""
    sig: dict[str, Any] = (
        {}
        if p_adjusted is None
        else {"p_value": s.sign_test_p, "p_adjusted": p_adjusted, "alpha": rule.alpha}
    )
    out = []
    if rule.max_broken is not None:
        broken = s.broken if binary and s.broken is not None else s.losses
        if stable is not None:  # broken in every repeat
            broken = len(stable.broken)
        out.append(
            GateCheck(
                scope,
                "broken" if binary else "losses",
                float(broken),
                float(rule.max_broken),
                broken <= rule.max_broken,
                **sig,
            )
        )
    if rule.min_delta is not None:
        out.append(
            GateCheck(
                scope,
                "mean delta",
                s.mean_delta,
                rule.min_delta,
                s.mean_delta >= rule.min_delta,
                **sig,
            )
        )
    if rule.require_ci_above is not None:
        out.append(
            GateCheck(
                scope,
                "interval lower end",
                s.ci[0],
                rule.require_ci_above,
                s.ci[0] >= rule.require_ci_above,
                **sig,
            )
        )
    return out


def gate(comparison: Comparison, rule: GateRule, stable: StableChanges | None = None) -> GateResult:
    """Check ``rule`` on ``comparison`` overall (and per slice when the rule says so). With
    ``stable`` (the repeats' :func:`~._stable.stable_changes`) the overall broken check counts
    the questions broken in every repeat only."""
    c = comparison
    checks = _checks("overall", c.overall, rule, c.binary, stable=stable)
    skipped: list[tuple[str, int]] = []
    if rule.per_slice:
        for name, sl in c.slices.items():
            if sl.stats.n < rule.min_slice:
                skipped.append((name, sl.stats.n))
                continue
            p = sl.p_adjusted if sl.p_adjusted is not None else sl.stats.sign_test_p
            checks += _checks(f"slice {name}", sl.stats, rule, c.binary, p)
    return GateResult(rule, c, tuple(checks), tuple(skipped), stable)
