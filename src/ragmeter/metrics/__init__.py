"""Metric values (what a metric is), the vectorised kernels that compute them, and the
:class:`Evaluation` record they produce."""

from ._doc import metric_rows, option_text
from ._engine import Missing, evaluate
from ._evaluation import NO_MEAN, ColumnDetails, Evaluation
from ._guide import GUIDES, PRECISION_CEILING, Guide, guide_markdown
from ._ranking import Ties, rank_run
from ._registry import REGISTRY, MetricInfo
from ._spec import Metric, parse, parse_list, trec_eval_aliases
from ._spec import label as metric_label

__all__ = [
    "GUIDES",
    "NO_MEAN",
    "PRECISION_CEILING",
    "REGISTRY",
    "ColumnDetails",
    "Evaluation",
    "Guide",
    "Metric",
    "MetricInfo",
    "Missing",
    "Ties",
    "evaluate",
    "guide_markdown",
    "metric_label",
    "metric_rows",
    "option_text",
    "parse",
    "parse_list",
    "rank_run",
    "trec_eval_aliases",
]
