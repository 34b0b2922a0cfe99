"""``ragmeter.workflows.plan``: the golden-set size plan behind ``ragmeter plan``, from rates, a
saved comparison or two evaluations (the command's output is tested in test_plan.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ragmeter import UsageError
from ragmeter.workflows.plan import PlanInputs, parse_sizes, plan_sizes

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules" / "runs"
Z95 = 1.959963984540054


def test_parse_sizes() -> None:
    assert parse_sizes("50, 100,,200") == [50, 100, 200]
    for bad, says in (("0", "at least 1"), ("a", "cannot read 'a'"), (",", "at least one")):
        with pytest.raises(UsageError, match=says):
            parse_sizes(bad)


def test_rates_with_a_target_add_the_size_it_needs_and_note_rough_rows() -> None:
    inputs = PlanInputs(baseline_rate=0.75, discordance=0.04)
    planned = plan_sizes(inputs, [50, 400], target=0.05)
    need = math.ceil(Z95**2 * 0.04 / 0.05**2)
    assert list(planned.plan.sizes) == [50, need, 400]
    assert planned.notes == {need: "target; rough", 50: "rough"}  # under 5 expected changes
    plain = plan_sizes(inputs, [50, 400])
    assert plain.notes == {50: "rough"}


@pytest.mark.parametrize(
    ("inputs", "says"),
    [
        (PlanInputs(base="a", source=Path("c.json")), "give one input"),
        (PlanInputs(source=Path("c.json"), baseline_rate=0.5), "got --from and rates"),
        (PlanInputs(metric="RR@4", baseline_rate=0.5), "--metric picks"),
        (PlanInputs(base="a"), "BASE and CAND"),
        (PlanInputs(), "give --baseline-rate"),
    ],
)
def test_one_input_mode(inputs: PlanInputs, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        plan_sizes(inputs, [50])


def test_two_evaluations_are_compared_with_the_status_shown() -> None:
    shown: list[str] = []

    class Status:
        def __init__(self, text: str) -> None:
            shown.append(text)

        def __enter__(self) -> None:
            return None

        def __exit__(self, *exc: object) -> None:
            return None

    base, cand = (str(EXAMPLE / v / "evaluation.json") for v in ("baseline", "reranker"))
    inputs = PlanInputs(base=base, cand=cand, metric="RR@4")
    planned = plan_sizes(inputs, [50], confidence=0.9, status=Status)
    assert shown == ["resampling questions..."]
    assert not planned.plan.spread.binary and planned.plan.observed is not None
    assert planned.plan.confidence == pytest.approx(0.9)
