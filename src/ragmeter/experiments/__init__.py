"""Experiments: a baseline and variants that each change one thing, run through the cached
retrievers and scored on span labels at the prompt k and token budget.

This layer sits above retrieval, labels and paired comparison; the store and the lab call it.
"""

from ._config import (
    Experiment,
    Settings,
    Variant,
    effective_changes,
    load_experiment,
    settings_config,
)
from ._runner import ExperimentResult, VariantResult, run_experiment

__all__ = [
    "Experiment",
    "ExperimentResult",
    "Settings",
    "Variant",
    "VariantResult",
    "effective_changes",
    "load_experiment",
    "run_experiment",
    "settings_config",
]
