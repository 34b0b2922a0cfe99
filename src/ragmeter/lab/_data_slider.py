"""The slider's model: the RAG evaluation lesson's figure, one labelled passage moved from rank
1 to 10, with R@k, RR@k and nDCG@k from :func:`ragmeter.explain.rank_curve` (the metric
engine's own numbers, embedded as JSON; the page only looks them up)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ._views import SliderPage


def slider_context(k: int = 5, depth: int = 10, gain: str = "exp") -> SliderPage:
    from ..explain import rank_curve
    from ._charts import rank_curve_spec
    from ._views import SliderPage

    if not 1 <= depth <= 50:
        raise UsageError("the slider's depth must be 1 to 50")
    curve = rank_curve(k=k, depth=depth, gain=gain)
    d = curve.to_dict()
    names = list(curve.metrics)
    return SliderPage(
        k=k,
        depth=depth,
        setup=curve.setup,
        metrics=names,
        curve=d,
        spec=rank_curve_spec(d["rows"], names, k=k, depth=depth),
        first=d["rows"][0],
    )
