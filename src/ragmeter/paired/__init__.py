"""Paired comparison of variants: intervals, sign and randomisation tests, slices, selection
accounting, k-sweeps and the CI gate.

``ragmeter.compare(baseline, candidate, metric)`` is :func:`compare` from this package (named
``paired`` so that the package never shadows the function).
"""

from ._bootstrap import BootstrapInterval, paired_bootstrap
from ._comparison import Comparison, Mover, SliceResult, compare
from ._configdiff import SettingDiff, config_diff
from ._gate import GateCheck, GateResult, GateRule, gate
from ._ledger import Ledger, LedgerSummary
from ._selection import SelectionEstimate, best_of_n, optimism_from_pair
from ._slices import PairedStats
from ._sweep import Sweep, sweep, sweep_spans, sweep_values
from ._tests import RandomisationTest, randomisation_test, sign_test

__all__ = [
    "BootstrapInterval", "Comparison", "GateCheck", "GateResult", "GateRule", "Ledger",
    "LedgerSummary", "Mover", "PairedStats", "RandomisationTest", "SelectionEstimate",
    "SettingDiff", "SliceResult", "Sweep", "best_of_n", "compare", "config_diff", "gate",
    "optimism_from_pair", "paired_bootstrap", "randomisation_test", "sign_test", "sweep",
    "sweep_spans", "sweep_values",
]
