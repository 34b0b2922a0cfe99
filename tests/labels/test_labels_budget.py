"""Budgets: context assembly and the seed's fairness table."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter import UsageError
from ragmeter.labels import (
    ContextSetting,
    assemble,
    budget_table,
    effective_k,
    format_budget_table,
    is_fair,
)


def test_seed_budget_table():
    rows = budget_table(["300x4", "900x4", "300x12"])
    assert [r.context_tokens for r in rows] == [1200, 3600, 3600]
    base, big, many = rows
    assert base.verdict == "baseline"
    assert not big.fair_with_baseline and big.ratio_to_baseline == 3.0  # three times the text
    assert many.fair_with == ("900 x 4",) and big.fair_with == ("300 x 12",)
    assert is_fair(ContextSetting(300, 12), ContextSetting(900, 4))
    assert not is_fair(ContextSetting(300, 4), ContextSetting(900, 4))
    table = format_budget_table(rows)
    assert "| 300 tokens | 12 | 3,600 | 3.00x | yes, against 900 x 4; not against 300 x 4" in table
    assert "| 300 tokens | 4 | 1,200 | 1.00x | baseline |" in table
    # the design source's row: "900 tokens | 4 | about 3,600 | No: three times the text"
    assert big.verdict == "no: 3.0x the context tokens of 300 x 4"
    assert many.fair_with_earlier == ("900 x 4",) and big.fair_with_earlier == ()


def test_verdict_names_only_rows_above() -> None:
    """Listed the other way round, 300 x 12 is the "no" and 900 x 4 the "yes"."""
    rows = budget_table(["300x4", "300x12", "900x4"])
    assert rows[1].verdict.startswith("no: 3.0x")
    assert rows[2].verdict.startswith("yes, against 300 x 12")


def test_tolerance_is_ten_percent_of_the_larger():
    assert is_fair(3600, 3240) and not is_fair(3600, 3239)
    assert is_fair(1000, 1100) and not is_fair(1000, 1112)
    assert is_fair(1000, 1200, tolerance=0.2)
    with pytest.raises(UsageError):
        is_fair(1, 1, tolerance=1.5)


def test_variant_parsing_and_from_chunking():
    assert ContextSetting.parse("300 x 12") == ContextSetting(300.0, 12)
    for bad in ("300", "x4", "300x0", "0x4"):
        with pytest.raises(UsageError):
            ContextSetting.parse(bad)
    with pytest.raises(UsageError, match="variants must differ"):
        budget_table(["300x4", "300x4"])


def test_assembly_takes_a_prefix_and_stops_at_the_first_misfit():
    assert assemble([100, 200, 300, 50], 600) == 3
    assert assemble([100, 200, 300, 50], 599) == 2  # the 50 would fit but comes after a misfit
    assert assemble([700, 10], 600) == 0
    assert assemble([], 600) == 0
    tokens = np.array([100, 200, 300, 50, 700, 10, 5, 5])
    starts = np.array([0, 4, 6, 6, 8])
    assert effective_k(tokens, starts, 600).tolist() == [3, 0, 0, 2]
    rng = np.random.default_rng(7)
    lists = [rng.integers(0, 400, rng.integers(0, 9)) for _ in range(50)]
    flat = np.concatenate(lists)
    st = np.r_[0, np.cumsum([len(x) for x in lists])]
    assert effective_k(flat, st, 800).tolist() == [assemble(x, 800) for x in lists]
