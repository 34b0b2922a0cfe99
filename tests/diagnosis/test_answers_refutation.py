"""The diagnosis's refutation rule applied, as written, to an experiment's measured variants
(`ragmeter.diagnosis._refutation`) and the demo section that prints it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from ragmeter import UsageError
from ragmeter.cli._demo._verdict_section import verdict_section
from ragmeter.diagnosis import NextExperiment, RuleCheck, Verdicts, apply_rule
from ragmeter.metrics import Evaluation, parse
from ragmeter.paired import PairedStats

TUNE = [f"t{i:02d}" for i in range(12)]
HELD = [f"h{i}" for i in range(4)]
SPLITS = {**{q: "tune" for q in TUNE}, **{q: "heldout" for q in HELD}}
#: the baseline misses the evidence of t00-t05 and of every held-out question
BASE = [0.0] * 6 + [1.0] * 6 + [0.0] * 4


def _variant(
    name: str,
    values: list[float],
    changes: tuple[str, ...],
    *,
    k: int = 4,
    metric: str = "AllR@4",
    baseline: bool = False,
) -> Any:
    ev = Evaluation(
        name,
        (parse(metric),),
        tuple(TUNE + HELD),
        np.array(values)[:, None],
        golden_version="g1",
        splits=SPLITS,
    )
    return SimpleNamespace(
        name=name,
        changes=changes,
        settings=SimpleNamespace(k=k),
        evaluation=ev,
        is_baseline=baseline,
    )


def _result() -> Any:
    base = _variant("baseline", BASE, (), baseline=True)
    # good: fixes t00-t05 on the tune split, breaks nothing
    good = _variant("good", [1.0] * 12 + [0.0] * 4, ("retriever",))
    # mixed: fixes t00 and t01, breaks t06 on the tune split (net +1), and fixes all four held-out
    # questions: on every question it would survive (6 fixed, 1 broken), on the tune split not
    mixed = _variant("mixed", [1.0, 1.0] + [0.0] * 4 + [0.0] + [1.0] * 5 + [1.0] * 4, ("reranker",))
    # worse: fixes t00, breaks t06 and t07 (net -1)
    worse = _variant("worse", [1.0] + [0.0] * 5 + [0.0, 0.0] + [1.0] * 4 + [0.0] * 4, ("reranker",))
    other = _variant("small chunks", [1.0] * 16, ("chunking",), k=12, metric="AllR@12")
    # the experiment declares no headline here: the demo falls back to AllR at the prompt k
    exp = SimpleNamespace(headline_metric=None)
    return SimpleNamespace(
        baseline=base, variants=[base, good, mixed, worse, other], experiment=exp
    )


def test_the_rule_is_read_on_the_split_it_names() -> None:
    v = apply_rule(_result(), "AllR@4")
    assert v.split == "tune" and v.held_out == (("heldout", 4),) and v.golden_version == "g1"
    by = {c.variant: c for c in v.checks}
    assert list(by) == ["good", "mixed", "worse"]
    assert all(c.stats.n == 12 and c.split == "tune" for c in v.checks)
    good, mixed, worse = by["good"], by["mixed"], by["worse"]
    assert (good.stats.fixed, good.stats.broken) == (6, 0)
    # two-sided sign test, 6 wins and no loss: 2 * 0.5**6
    assert good.stats.sign_test_p == pytest.approx(2 * 0.5**6)
    # a resample of 12 deltas (six 1, six 0) averages 0 only when all 12 draws are zeros
    # (0.5**12): the interval excludes 0
    assert good.stats.ci[0] > 0 and not good.refuted
    assert good.reason.startswith("fixed - broken = +6 > 0 and the interval [+")
    assert (mixed.stats.fixed, mixed.stats.broken) == (2, 1)
    assert mixed.net == 1 and mixed.stats.ci[0] <= 0 <= mixed.stats.ci[1] and mixed.refuted
    assert mixed.reason == f"the interval {mixed.interval} includes 0"
    assert mixed.stats.sign_test_p == pytest.approx(1.0)  # 2 * P(X <= 1), X ~ Bin(3, 0.5)
    assert (worse.stats.fixed, worse.stats.broken) == (1, 2)
    assert worse.refuted and worse.reason == "fixed - broken = -1 <= 0"
    assert v.skipped == (
        ("small chunks", "changes chunking and is measured at k = 12, not at AllR@4"),
    )
    assert [c.variant for c in v.survivors] == ["good"]
    assert v.where() == "the tune split (12 questions)"


def test_without_the_named_split_every_question_is_used() -> None:
    r = _result()
    v = apply_rule(r, "AllR@4", split="nosuchsplit")
    assert v.split is None and v.held_out == () and v.where() == "all 16 questions"
    mixed = {c.variant: c for c in v.checks}["mixed"]
    assert (mixed.stats.fixed, mixed.stats.broken) == (6, 1)  # the held-out fixes count here
    with pytest.raises(UsageError, match="AllR@3"):
        apply_rule(r, "AllR@3")


def test_sentences_say_the_verdict_and_the_next_step() -> None:
    v = apply_rule(_result(), "AllR@4")
    verdict, step = v.sentences()
    mixed = {c.variant: c for c in v.checks}["mixed"]
    good = {c.variant: c for c in v.checks}["good"]
    assert verdict == (
        f"The rule as written refutes mixed (fixed 2, broken 1; the interval "
        f"{mixed.interval} includes 0) and worse (fixed 1, broken 2; fixed - "
        f"broken = -1 <= 0); good survives it (fixed 6, broken 0, interval "
        f"{good.interval})."
    )
    assert step == (
        "Next: confirm good once on the heldout split (4 questions), which played no "
        "part in the choice; then regenerate the answers with good's prompt contexts "
        "and check and diagnose them again."
    )


def _stats(fixed: int, broken: int, lo: float, hi: float) -> PairedStats:
    n = 20
    return PairedStats(
        n,
        0.5,
        0.5 + (fixed - broken) / n,
        (fixed - broken) / n,
        (lo, hi),
        fixed,
        broken,
        n - fixed - broken,
        0.5,
        fixed,
        broken,
    )


def test_next_step_with_several_or_no_survivors() -> None:
    a = RuleCheck("a", ("reranker",), "AllR@4", "tune", _stats(5, 0, 0.05, 0.40))
    b = RuleCheck("b", ("retriever",), "AllR@4", "tune", _stats(6, 1, 0.10, 0.35))
    c = RuleCheck("c", ("reranker",), "AllR@4", "tune", _stats(3, 3, -0.2, 0.2))
    several = Verdicts("AllR@4", "tune", (a, b), (), (("heldout", 9),))
    assert several.sentences()[0].startswith(
        "Every measured variant survives the rule as written: a survives it"
    )
    # the best of several is flattered by selection: one is taken, by its lower bound
    assert "take b (the highest lower bound)" in several.sentences()[1]
    none = Verdicts("AllR@4", None, (c,), (), ())
    assert none.sentences() == [
        (
            "The rule as written refutes every measured variant: c (fixed 3, broken 3; fixed - "
            "broken = 0 <= 0)."
        ),
        (
            "Next: ship none of them; run the alternative fix the diagnosis names, as its own run "
            "under the same rule."
        ),
    ]
    assert Verdicts("AllR@4", None, (), (), ()).sentences()[0].startswith("No variant")


def _diagnosis(link: str) -> Any:
    return SimpleNamespace(
        experiment=NextExperiment(
            link,
            "add a reranker",
            "AllR@4",
            "AllR@4 paired per question on golden g1 tune split",
            "abandon if fixed - broken <= 0 on AllR@4 or the 95% paired bootstrap interval of the "
            "difference includes 0",
        )
    )


@pytest.mark.parametrize("width", [80, 120])
def test_demo_section_applies_the_rule_and_ends_on_the_next_step(width: int) -> None:
    console = Console(record=True, width=width, color_system=None)
    v = verdict_section(console, _result(), _diagnosis("ranking"))
    out = console.export_text()
    flat = " ".join(out.split())
    assert v is not None and "5. The named experiment, measured" in out
    assert (
        "abandon if fixed - broken <= 0 on AllR@4 or the 95% paired bootstrap interval of "
        "the difference includes 0"
    ) in flat
    assert "on the tune split (12 questions), by ragmeter.compare" in flat
    good = {c.variant: c for c in v.checks}["good"]
    assert f"│ good │ retriever │ 6 │ 0 │ {good.interval} │ 0.0312 │ survives │" in flat
    assert "│ worse │ reranker │ 1 │ 2 │" in flat and "refuted │" in flat
    assert "…" not in out  # nothing truncated
    assert "small chunks: changes chunking and is measured at k = 12" in flat
    assert flat.endswith(" ".join(v.sentences()[1].split()))


def test_demo_section_waits_when_the_link_is_not_retrieval() -> None:
    console = Console(record=True, width=100, color_system=None)
    assert verdict_section(console, _result(), _diagnosis("generation")) is None
    out = " ".join(console.export_text().split())
    assert "names a generation change; the experiment file measures retrieval changes only" in out


def test_demo_section_prints_names_literally() -> None:
    r = _result()
    r.variants[1].name = "[bold]x[/bold]:smile:"
    console = Console(record=True, width=160, color_system=None)
    verdict_section(console, r, _diagnosis("ranking"))
    assert "[bold]x[/bold]:smile:" in console.export_text()
