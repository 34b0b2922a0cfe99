"""Metric values (what a metric is) and the vectorised kernels that compute them."""

from ._registry import REGISTRY, MetricInfo
from ._spec import Metric, parse, parse_list

__all__ = ["Metric", "MetricInfo", "REGISTRY", "parse", "parse_list"]
