"""Demo section 5: the diagnosis's named experiment, judged by the rule it wrote first.

Section 4 ends by naming one experiment and the rule that would refute it; section 3 has already
measured that change (and the alternative fix, each its own run). Ending on the named experiment
would leave the reader to do the arithmetic, so this section applies the rule, as written, to
the measured variants (:func:`ragmeter.diagnosis._refutation.apply_rule`: ``ragmeter.compare`` on
the experiment's evaluations, on the split the rule names) and says what to do next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from ..._literal import CAPTION, lit
from ..._pvalue import format_p

if TYPE_CHECKING:  # pragma: no cover
    from ...diagnosis import Diagnosis, Verdicts
    from ...experiments import ExperimentResult

#: diagnosis links whose experiment an experiment file of retrieval variants can measure
RETRIEVAL_LINKS = ("ranking", "candidates")


def same_cut_note(result: ExperimentResult, named: str, headline: object) -> str:
    """Why a rule written on the baseline's prompt k (``named``, what the diagnosis saw, e.g.
    "nDCG@4 and AllR@4": the one of the headline's name) is read at the headline: the baseline
    scores the same per question at both cuts ("" when the two are one metric, or when the
    baseline's values differ)."""
    import re

    from ..._errors import RagmeterError
    from ...metrics import parse

    head = parse(str(headline))
    try:
        found = [parse(w) for w in re.split(r",\s*|\s+and\s+", named) if w.strip()]
        rule = next((m for m in found if m.name == head.name), None)
        if rule is None or rule == head:
            return ""
        base = result.baseline.evaluation
        equal = base.column(rule) == base.column(head)
    except RagmeterError:  # a metric the baseline was not scored at: nothing to say
        return ""
    if not equal:
        return ""
    named = str(rule)
    return (
        f" (The rule names {named}, the baseline's prompt k; the baseline scores the same on "
        f"every question at {headline}, the cut every variant shares.)"
    )


def verdict_section(
    console: Console, result: ExperimentResult, diagnosis: Diagnosis, *, split: str = "tune"
) -> Verdicts | None:
    """Print section 5; returns the :class:`~ragmeter.diagnosis._refutation.Verdicts` (None when
    the named experiment is not a retrieval change the experiment file could have measured)."""
    from ...diagnosis import apply_rule
    from ...metrics import Metric

    e = diagnosis.experiment
    console.rule("[bold]5. The named experiment, measured: does it survive its rule?")
    if e.link not in RETRIEVAL_LINKS:
        console.print(
            lit(
                f"The diagnosis names a {e.link} change; the experiment file measures "
                "retrieval changes only, so its rule waits for that run: "
                f"{e.refutation}."
            )
        )
        return None
    # the experiment's headline: the metric section 3 compared on (a file always has one)
    metric = result.experiment.headline_metric or Metric("AllR", result.baseline.settings.k)
    v = apply_rule(result, metric, split=split)
    console.print(
        lit(
            f"The diagnosis wrote its rule before any comparison: {e.refutation}. "
            f"Here it is applied as written to the variants section 3 measured at "
            f"{metric}, the experiment's headline: {metric} paired per question against the "
            f"baseline on {v.where()}, by ragmeter.compare from the experiment's evaluations."
            + same_cut_note(result, e.metric, metric)
        )
    )
    t = Table()
    # n is in the line above; names fold rather than truncate, numbers never wrap (80 columns)
    for col in ("variant", "change", "fixed", "broken", "95% CI", "sign p", "rule"):
        named = col in ("variant", "change")
        t.add_column(
            col,
            justify="left" if named or col == "rule" else "right",
            no_wrap=not named,
            overflow="fold",
        )
    for c in v.checks:
        s = c.stats
        t.add_row(
            lit(c.variant),
            lit(", ".join(c.changes)),
            "-" if s.fixed is None else str(s.fixed),
            "-" if s.broken is None else str(s.broken),
            c.interval,
            format_p(s.sign_test_p),
            lit("refuted" if c.refuted else "survives", "red" if c.refuted else "green"),
        )
    notes = [f"{name}: {why} (outside this rule)" for name, why in v.skipped]
    notes += [
        f"the {k} split ({n} questions) is kept for confirming the survivor" for k, n in v.held_out
    ]
    if notes:
        t.caption = lit("; ".join(notes), CAPTION)
    console.print(t)
    for sentence in v.sentences():
        console.print(lit(sentence))
    return v
