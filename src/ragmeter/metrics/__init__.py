"""Metric values (what a metric is), the vectorised kernels that compute them, and the
:class:`Evaluation` record they produce."""

from ._engine import evaluate
from ._evaluation import Evaluation
from ._registry import REGISTRY, MetricInfo
from ._spec import Metric, parse, parse_list

__all__ = ["REGISTRY", "Evaluation", "Metric", "MetricInfo", "evaluate", "parse", "parse_list"]
