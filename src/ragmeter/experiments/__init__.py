"""Experiments: a baseline and variants that each change one thing, run through the cached
retrievers and scored on span labels at the prompt k and token budget.

This layer sits above retrieval, labels and paired comparison; the store and the lab call it.
"""

from ._config import (
    Experiment,
    Settings,
    Variant,
    effective_changes,
    headline_of,
    load_experiment,
    prompt_metrics,
    settings_config,
)
from ._config import _build as build_experiment
from ._config import _warnings as change_warnings
from ._outputs import slug, write_json
from ._paths import check_store_writes
from ._provenance import provenance
from ._ranked import first_with_space, ranked_table
from ._repeats import read_repeat_verdicts
from ._runner import (
    ExperimentResult,
    VariantResult,
    config_record_of,
    load_user_code,
    run_experiment,
    variant_chunking,
)
from ._table import (
    HEADROOM_NOTE,
    NO_SHARED_CUTOFF,
    column_groups,
    comparison_rows,
    headroom_header,
    shared_metric,
    table_rows,
)

__all__ = [
    "HEADROOM_NOTE",
    "NO_SHARED_CUTOFF",
    "Experiment",
    "ExperimentResult",
    "Settings",
    "Variant",
    "VariantResult",
    "build_experiment",
    "change_warnings",
    "check_store_writes",
    "column_groups",
    "comparison_rows",
    "config_record_of",
    "effective_changes",
    "first_with_space",
    "headline_of",
    "headroom_header",
    "load_experiment",
    "load_user_code",
    "prompt_metrics",
    "provenance",
    "ranked_table",
    "read_repeat_verdicts",
    "run_experiment",
    "settings_config",
    "shared_metric",
    "slug",
    "table_rows",
    "variant_chunking",
    "write_json",
]
