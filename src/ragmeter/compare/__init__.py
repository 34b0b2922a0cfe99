"""Paired comparison of variants: intervals, sign and randomisation tests, slices, selection
accounting, k-sweeps and the CI gate.

``ragmeter.compare(...)`` is the function :func:`compare`. Because the package has the same name,
``ragmeter.compare`` can also be this module (when it was imported first), so the module is made
callable and forwards to :func:`compare`: either way ``ragmeter.compare(a, b, metric)`` works.
Import classes from ``ragmeter`` or ``ragmeter.compare`` with ``from ... import ...``.
"""

import sys as _sys
import types as _types
from typing import Any

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


class _CallableModule(_types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Comparison:
        return compare(*args, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
