"""Paired comparison of variants: intervals, sign and randomisation tests, slices, selection
accounting, k-sweeps and the CI gate.

``ragmeter.compare(baseline, candidate, metric)`` is :func:`compare` from this package (named
``paired`` so that the package never shadows the function).
"""

from ._bootstrap import BootstrapInterval, paired_bootstrap
from ._changes import Budget, Change, changes, context_budget, same_budget
from ._comparison import Comparison, Mover, SliceResult, compare
from ._configdiff import SettingDiff, config_diff
from ._gate import GateCheck, GateResult, GateRule, gate
from ._ledger import Ledger, LedgerSummary
from ._plan import PlanRow, SizePlan, plan_size
from ._selection import SelectionEstimate, best_of_n, optimism_from_pair
from ._slices import PairedStats
from ._sweep import Sweep, sweep, sweep_spans, sweep_values
from ._tests import RandomisationTest, holm, randomisation_test, sign_test

__all__ = [
    "BootstrapInterval",
    "Budget",
    "Change",
    "Comparison",
    "GateCheck",
    "GateResult",
    "GateRule",
    "Ledger",
    "LedgerSummary",
    "Mover",
    "PairedStats",
    "PlanRow",
    "RandomisationTest",
    "SelectionEstimate",
    "SettingDiff",
    "SizePlan",
    "SliceResult",
    "Sweep",
    "best_of_n",
    "changes",
    "compare",
    "config_diff",
    "context_budget",
    "gate",
    "holm",
    "optimism_from_pair",
    "paired_bootstrap",
    "plan_size",
    "randomisation_test",
    "same_budget",
    "sign_test",
    "sweep",
    "sweep_spans",
    "sweep_values",
]
