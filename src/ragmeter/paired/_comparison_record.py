"""``Comparison.from_dict``: the fields of a comparison read back from its ``to_dict`` record.

The exact inverse of :meth:`~ragmeter.paired.Comparison.to_dict`: ``from_dict(c.to_dict())``
equals ``c`` field by field (also after ``json.dumps``/``json.loads``, except that a config value
held as a tuple comes back as a list, as JSON has no tuples). What the record holds twice or
derives is read from one place and the rest is recomputed, never trusted:

- the questions, in order, and both sides' values come from ``per_query`` (its ``delta`` is
  ``candidate - baseline``); ``verdict``, a slice's ``small``/``note`` and a selection's
  ``optimism`` are derived by the objects themselves;
- the headline statistics are the record's top-level ``n``, ``baseline_mean``, ... keys;
- ``metric`` is the compared metric's canonical string, or the outcome's name when ``outcome``
  is set (a plain outcome such as "answer correct"). A record written before ``outcome`` was
  recorded reads its ``metric`` as a registry metric when it parses as one, else as an outcome.

Keys ``to_dict`` has always written are required; the ones added later (slices, splits, movers,
the config differences, the ledger's count and estimate, ...) read as their empty value when
absent, so an older ``ragmeter compare --format json`` file reads too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .._errors import UsageError
from ..metrics import Metric, parse
from ._changes import Change
from ._configdiff import SettingDiff
from ._ppi import PPIInterval
from ._record import Record
from ._selection import SelectionEstimate
from ._slices import PairedStats
from ._tests import RandomisationTest
from ._weighted import WeightedDifference

#: a ``from_dict`` classmethod of a record the comparison holds (Mover, SliceResult); passed in
#: by ``Comparison.from_dict`` so that this module does not import ``_comparison``
Reader = Callable[..., Any]

#: what ``Comparison.label`` reads when there is neither a metric nor an outcome
NO_LABEL = "value"


def comparison_fields(
    d: Mapping[str, Any], *, source: str | None, mover: Reader, slice_result: Reader
) -> dict[str, Any]:
    """The fields of the ``Comparison`` that ``d`` records (see the module docstring)."""
    r = Record(d, what="comparison", source=source)
    metric, outcome = _metric(r)
    overall = PairedStats.from_dict(r.d, source=source)
    qids, a, b = _per_query(r)
    if overall.n != len(qids):
        r.fail("per_query", f"holds {len(qids)} questions but n is {overall.n}")
    movers = r.sub("movers", what="movers") if r.has("movers") else None
    adjustment = None
    if r.raw("slice_p_adjustment", None) is not None:
        adj = r.sub("slice_p_adjustment", what="slice p-value adjustment")
        adjustment = (adj.text("method"), adj.integer("n_slices"))
    rand = r.raw("randomisation", None)
    selection = r.raw("selection", None)
    return dict(
        baseline=r.text("baseline"),
        candidate=r.text("candidate"),
        metric=metric,
        outcome=outcome,
        binary=r.flag("binary"),
        query_ids=qids,
        baseline_values=a,
        candidate_values=b,
        overall=overall,
        confidence=r.number("confidence"),
        n_resamples=r.integer("n_resamples", low=1),
        seed=r.nullable_integer("seed"),
        bootstrap_method=r.text("bootstrap_method"),
        golden_version=r.optional_text("golden_version"),
        slices=_slice_table(r, "slices", slice_result),
        splits=_slice_table(r, "splits", slice_result),
        fixed_ids=r.optional_texts("fixed_ids"),
        broken_ids=r.optional_texts("broken_ids"),
        improved=() if movers is None else _movers(movers, "improved", mover),
        worsened=() if movers is None else _movers(movers, "worsened", mover),
        randomisation=None
        if rand is None
        else RandomisationTest.from_dict(rand, source=source, field="randomisation"),
        config_diff=tuple(
            SettingDiff.from_dict(x, source=source, field=f"config_diff[{i}]")
            for i, x in enumerate(r.items("config_diff", []))
        ),
        changes=tuple(
            Change.from_dict(x, source=source, field=f"changes[{i}]")
            for i, x in enumerate(r.items("changes", []))
        ),
        fairness=r.texts("fairness", []),
        warnings=r.texts("warnings", []),
        selection=None
        if selection is None
        else SelectionEstimate.from_dict(selection, source=source, field="selection"),
        n_variants_tried=r.optional_integer("n_variants_tried", low=1),
        slice_adjustment=adjustment,
        ppi=None
        if r.raw("ppi", None) is None
        else PPIInterval.from_dict(r.raw("ppi"), source=source, field="ppi"),
        traffic=None
        if r.raw("traffic", None) is None
        else WeightedDifference.from_dict(r.raw("traffic"), source=source, field="traffic"),
    )


def _metric(r: Record) -> tuple[Metric | None, str | None]:
    """(metric, outcome) from ``metric`` and ``outcome`` (see the module docstring)."""
    label = r.text("metric")
    if r.has("outcome"):
        outcome = r.optional_text("outcome")
        if outcome is not None:
            if label != outcome:
                r.fail("metric", f"must repeat the outcome {outcome!r}, got {label!r}")
            return None, outcome
        if label == NO_LABEL:
            return None, None
        try:
            return parse(label), None
        except UsageError as e:
            r.fail("metric", f"not a metric ({e}); a plain outcome is named in 'outcome'")
    try:
        return parse(label), None
    except UsageError:
        return None, label


def _per_query(r: Record) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Question ids in record order and both sides' values, from ``per_query``."""
    table = r.mapping("per_query")
    qids: list[str] = []
    a: list[float] = []
    b: list[float] = []
    for q, row in table.items():
        if not isinstance(q, str):
            r.fail("per_query", f"question ids must be text, got {q!r}")
        at = f"{r.name('per_query')}.{q}"
        rec = r.child(row, at, what="per-question")
        qids.append(q)
        a.append(rec.number("baseline", finite=True))
        b.append(rec.number("candidate", finite=True))
    return tuple(qids), np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)


def _slice_table(r: Record, key: str, slice_result: Reader) -> dict[str, Any]:
    """``slices``/``splits``: name -> SliceResult, in record order (empty when absent)."""
    out: dict[str, Any] = {}
    for name, rec in r.mapping(key, {}).items():
        if not isinstance(name, str):
            r.fail(key, f"names must be text, got {name!r}")
        out[name] = slice_result(rec, source=r.source, field=f"{key}.{name}")
    return out


def _movers(r: Record, key: str, mover: Reader) -> tuple[Any, ...]:
    at = r.name(key)
    return tuple(
        mover(x, source=r.source, field=f"{at}[{i}]") for i, x in enumerate(r.items(key, []))
    )
