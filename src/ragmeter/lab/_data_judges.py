"""The judge-validation view's model: what ``ragmeter judge validate`` computed and recorded
(confusion matrix, per-class agreement, kappa, order flips, disagreements), read back as it
was printed, with the labels the judge gave."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._commands import shown_path

if TYPE_CHECKING:
    from ..store import JudgeValidationRow, Store


@dataclass(frozen=True)
class JudgesList:
    """``/judges``: the stored validations, newest first."""

    validations: list[JudgeValidationRow]


def judges_list_context(store: Store) -> JudgesList:
    from ._data_stored import judge_validations

    return JudgesList(judge_validations(store))


@dataclass(frozen=True)
class MatrixCell:
    count: Any  # as the stored report holds it
    diagonal: bool


@dataclass(frozen=True)
class MatrixRow:
    """One human label's row of the confusion matrix (columns: the judge's labels)."""

    human: Any
    cells: list[MatrixCell]
    total: Any


@dataclass(frozen=True)
class OrderFlips:
    pairs: Any
    flips: Any
    ids: list[Any]


@dataclass(frozen=True)
class Repeats:
    runs: Any
    unstable: Any
    ids: list[Any]
    variance: Any


@dataclass(frozen=True)
class JudgeView:
    """One judge validation laid out for ``_judge_body.html``; the report's numbers are the
    stored JSON values (a store is a trust boundary: checked when laid out)."""

    id: int
    judge: str
    prompt: str | None
    prompt_hash: str | None
    source: str | None
    n_labels: int
    n: Any
    labels: list[Any]
    rows: list[MatrixRow]
    col_totals: list[Any]
    agreement: Any
    agreement_all: Any
    kappa: Any
    per_class: list[dict[str, Any]]
    disagreements: list[Any]
    failed: list[Any]
    unlabelled: list[Any]
    order: OrderFlips
    repeats: Repeats
    judge_labels: tuple[Mapping[str, Any], ...]


def judge_context(store: Store, vid: int) -> JudgeView:
    """One validation laid out for the page; a report of another shape than ``judge validate``
    writes (a store is a trust boundary) is a :class:`DamagedRowError` naming the row."""
    from ..store import DamagedRowError
    from ._data_stored import judge_validation

    v = judge_validation(store, vid)
    try:
        return _laid_out(v.report, v.id, v.judge, v.prompt, v.prompt_hash, v.source,
                         v.n_labels, v.labels)  # fmt: skip
    except (TypeError, AttributeError, ValueError, KeyError, IndexError) as exc:
        raise DamagedRowError(
            "judge_labels", vid, f"its report is not one judge validate writes: {str(exc)[:200]}"
        ) from None


def _laid_out(
    report: Mapping[str, Any] | None,
    vid: int,
    judge: str,
    prompt: str | None,
    prompt_hash: str | None,
    source: str | None,
    n_labels: int,
    judge_labels: tuple[Mapping[str, Any], ...],
) -> JudgeView:
    rep = report or {}
    labels = list(rep.get("labels") or [])
    matrix = (rep.get("confusion") or {}).get("rows_human_cols_judge") or []
    rows = [
        MatrixRow(
            human=lab,
            cells=[MatrixCell(n, i == j) for j, n in enumerate(matrix[i])]
            if i < len(matrix)
            else [],
            total=sum(matrix[i]) if i < len(matrix) else 0,
        )
        for i, lab in enumerate(labels)
    ]
    col_totals = [sum(r[j] for r in matrix) for j in range(len(labels))] if matrix else []
    per_class = [{"label": k, **c} for k, c in (rep.get("per_class") or {}).items()]
    order = rep.get("order") or {}
    repeats = rep.get("repeats") or {}
    return JudgeView(
        id=vid,
        judge=judge,
        prompt=prompt,
        prompt_hash=prompt_hash,
        source=None if source is None else shown_path(source),  # the report: no local path
        n_labels=n_labels,
        n=rep.get("n"),
        labels=labels,
        rows=rows,
        col_totals=col_totals,
        agreement=rep.get("agreement"),
        agreement_all=rep.get("agreement_all"),
        kappa=rep.get("kappa"),
        per_class=per_class,
        disagreements=list(rep.get("disagreements") or []),
        failed=list(rep.get("failed") or []),
        unlabelled=list(rep.get("unlabelled") or []),
        order=OrderFlips(
            pairs=order.get("pairs_both_orders", 0),
            flips=order.get("flips", 0),
            ids=list(order.get("flipped_ids") or []),
        ),
        repeats=Repeats(
            runs=repeats.get("runs"),
            unstable=repeats.get("unstable", 0),
            ids=list(repeats.get("unstable_ids") or []),
            variance=repeats.get("score_variance"),
        ),
        judge_labels=judge_labels,
    )
