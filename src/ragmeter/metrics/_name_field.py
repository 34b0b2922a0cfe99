"""Pydantic field types for metric names in the JSON files ragmeter writes (a variant's
``config.json``, ``summary.json``, an export's ``run.json``): a name parses as a metric, and a
mean per metric is finite or null. Beside :mod:`ragmeter.io._json_fields`, one layer up because
checking a name needs the metric grammar.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from .._errors import RagmeterError
from ..io._json_fields import Finite, must


def _metric_name(value: str) -> str:
    from ._spec import parse

    try:
        parse(value)
    except RagmeterError as exc:
        raise PydanticCustomError("metric", "{why}", {"why": str(exc)}) from None
    return value


#: a metric's name as ragmeter writes it (``R@4``, ``nDCG@10``, ``R@budget=1200``)
MetricName = Annotated[str, AfterValidator(_metric_name), must("a metric name such as R@4")]
#: a mean per metric (null: no question could be scored)
Means = Annotated[
    dict[MetricName, Finite | None], must("an object {metric name: finite mean or null}")
]
