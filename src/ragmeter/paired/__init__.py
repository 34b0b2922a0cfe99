"""Paired comparison of variants: intervals, sign and randomisation tests, slices, selection
accounting, k-sweeps and the CI gate.

``ragmeter.compare(baseline, candidate, metric)`` is :func:`compare` from this package (named
``paired`` so that the package never shadows the function).
"""

from ._bootstrap import BootstrapInterval, bootstrap_means, paired_bootstrap, percentile_interval
from ._changes import (
    Budget,
    Change,
    changes,
    chunk_size,
    context_budget,
    context_trap,
    measured_context,
    same_budget,
)
from ._comparison import Comparison, Mover, SliceResult, compare
from ._configdiff import SettingDiff, config_diff, config_settings, flatten, is_setting
from ._gate import GateCheck, GateResult, GateRule, gate
from ._ledger import DEFAULT_LEDGER, UNVERSIONED, Ledger, LedgerSummary
from ._plan import PlanRow, SizePlan, plan_size
from ._plan_io import read_comparison
from ._ppi import PPIInterval, ppi_compare
from ._selection import SelectionEstimate, best_of_n, optimism_from_pair
from ._slices import SMALL_NOTE, SMALL_SLICE, TIE_TOLERANCE, PairedStats
from ._stable import StableChanges, flaky_questions, stable_changes
from ._sweep import Kind as SweepKind
from ._sweep import Sweep, sweep, sweep_spans, sweep_values
from ._tests import RandomisationTest, holm, randomisation_test, sign_test
from ._weighted import Traffic, TrafficShares, WeightedDifference, WeightedSlice, weighted_compare

__all__ = [
    "DEFAULT_LEDGER",
    "SMALL_NOTE",
    "SMALL_SLICE",
    "TIE_TOLERANCE",
    "UNVERSIONED",
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
    "PPIInterval",
    "PairedStats",
    "PlanRow",
    "RandomisationTest",
    "SelectionEstimate",
    "SettingDiff",
    "SizePlan",
    "SliceResult",
    "StableChanges",
    "Sweep",
    "SweepKind",
    "Traffic",
    "TrafficShares",
    "WeightedDifference",
    "WeightedSlice",
    "best_of_n",
    "bootstrap_means",
    "changes",
    "chunk_size",
    "compare",
    "config_diff",
    "config_settings",
    "context_budget",
    "context_trap",
    "flaky_questions",
    "flatten",
    "gate",
    "holm",
    "is_setting",
    "measured_context",
    "optimism_from_pair",
    "paired_bootstrap",
    "percentile_interval",
    "plan_size",
    "ppi_compare",
    "randomisation_test",
    "read_comparison",
    "same_budget",
    "sign_test",
    "stable_changes",
    "sweep",
    "sweep_spans",
    "sweep_values",
    "weighted_compare",
]
