"""The judge-validation view's model: what ``ragmeter judge validate`` computed and recorded
(confusion matrix, per-class agreement, kappa, order flips, disagreements), read back as it
was printed, with the labels the judge gave."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import Store


def judges_list_context(store: Store) -> dict[str, Any]:
    from ._data_stored import judge_validations

    return {"validations": judge_validations(store)}


def judge_context(store: Store, vid: int) -> dict[str, Any]:
    """One validation laid out for the page; a report of another shape than ``judge validate``
    writes (a store is a trust boundary) is a :class:`DamagedRowError` naming the row."""
    from ..store import DamagedRowError
    from ._data_stored import judge_validation

    v = judge_validation(store, vid)
    try:
        return _laid_out(v)
    except (TypeError, AttributeError, ValueError, KeyError, IndexError) as exc:
        raise DamagedRowError(
            "judge_labels", vid, f"its report is not one judge validate writes: {str(exc)[:200]}"
        ) from None


def _laid_out(v: Mapping[str, Any]) -> dict[str, Any]:
    rep = v["report"] or {}
    labels = list(rep.get("labels") or [])
    matrix = (rep.get("confusion") or {}).get("rows_human_cols_judge") or []
    rows = [
        {
            "human": lab,
            "cells": [{"count": n, "diagonal": i == j} for j, n in enumerate(matrix[i])]
            if i < len(matrix)
            else [],
            "total": sum(matrix[i]) if i < len(matrix) else 0,
        }
        for i, lab in enumerate(labels)
    ]
    col_totals = [sum(r[j] for r in matrix) for j in range(len(labels))] if matrix else []
    per_class = [{"label": k, **c} for k, c in (rep.get("per_class") or {}).items()]
    order = rep.get("order") or {}
    repeats = rep.get("repeats") or {}
    return {
        "id": v["id"],
        "judge": v["judge"],
        "prompt": v.get("prompt"),
        "prompt_hash": v.get("prompt_hash"),
        "source": v.get("source"),
        "n_labels": v["n_labels"],
        "n": rep.get("n"),
        "labels": labels,
        "rows": rows,
        "col_totals": col_totals,
        "agreement": rep.get("agreement"),
        "agreement_all": rep.get("agreement_all"),
        "kappa": rep.get("kappa"),
        "per_class": per_class,
        "disagreements": list(rep.get("disagreements") or []),
        "failed": list(rep.get("failed") or []),
        "unlabelled": list(rep.get("unlabelled") or []),
        "order": {
            "pairs": order.get("pairs_both_orders", 0),
            "flips": order.get("flips", 0),
            "ids": list(order.get("flipped_ids") or []),
        },
        "repeats": {
            "runs": repeats.get("runs"),
            "unstable": repeats.get("unstable", 0),
            "ids": list(repeats.get("unstable_ids") or []),
            "variance": repeats.get("score_variance"),
        },
        "judge_labels": v["labels"],
    }
