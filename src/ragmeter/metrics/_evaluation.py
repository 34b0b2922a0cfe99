"""The result of scoring one run: per-query values kept, means derived, plain serialisable
records."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import InputError, UsageError
from ._evaluation_file import check_record, pick_record, read_records
from ._spec import Metric, parse


class ColumnDetails(Mapping[str, Mapping[str, Any]]):
    """Per-query details stored as columns: ``details[qid] -> {name: value}`` built on access.

    Keeps a 100k-query evaluation from building 100k small dicts it may never read; the
    qid -> row index and the Python lists are built on the first lookup, so an evaluation whose
    details are never read (a benchmark, a mean) pays nothing for them. ``query_ids`` are unique.
    """

    def __init__(
        self,
        query_ids: Sequence[str],
        columns: Mapping[str, np.ndarray],
        none_when_zero: Sequence[str] = (),
    ) -> None:
        self._ids = query_ids
        self._arrays = {k: np.asarray(v) for k, v in columns.items()}
        self._built: tuple[dict[str, int], dict[str, list[Any]]] | None = None
        self._none = frozenset(none_when_zero)

    def _build(self) -> tuple[dict[str, int], dict[str, list[Any]]]:
        if self._built is None:
            index = {q: i for i, q in enumerate(self._ids)}
            self._built = index, {k: v.tolist() for k, v in self._arrays.items()}
        return self._built

    @property
    def _index(self) -> dict[str, int]:
        return self._build()[0]

    @property
    def _columns(self) -> dict[str, list[Any]]:
        return self._build()[1]

    def __getitem__(self, qid: str) -> Mapping[str, Any]:
        index, columns = self._build()
        i = index[qid]
        return {
            k: (None if k in self._none and not col[i] else col[i]) for k, col in columns.items()
        }

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


#: how tables print the mean of an evaluation with no scorable query
NO_MEAN = "n/a (no scorable query)"


def no_mean_message(e: Evaluation) -> str:
    """Why ``e`` has no mean, for errors."""
    why = (
        f"all {e.n_no_relevant} labelled queries have no relevant item (grade >= 1)"
        if e.n_no_relevant
        else "the labels hold no query"
    )
    return f"run '{e.run}' has no scorable query ({why}): there is no mean to report"


@dataclass(frozen=True)
class Evaluation:
    """Per-query metric values of one run, with everything needed to re-run or compare it.

    ``values[i, j]`` is metric ``metrics[j]`` on query ``query_ids[i]``. Queries that were in the
    labels but absent from the run are included with value 0 when ``missing="zero"`` (trec_eval
    ``-c``) and listed in ``missing_ids``; queries with no relevant item are excluded from the
    values and listed in ``no_relevant_ids``.
    """

    run: str
    metrics: tuple[Metric, ...]
    query_ids: tuple[str, ...]
    values: np.ndarray
    missing_ids: tuple[str, ...] = ()
    no_relevant_ids: tuple[str, ...] = ()
    golden_version: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    #: qid -> slice names (from a golden set); empty when labels carry none.
    slices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: qid -> "tune" | "heldout" (from a golden set); empty when labels carry none.
    splits: Mapping[str, str] = field(default_factory=dict)
    #: qid -> free-form per-query details (e.g. {"first_rank": 3}); plain JSON values only.
    details: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: what makes the numbers suspect, said while scoring (e.g. no retrieved id is in the qrels:
    #: chunk ids against document qrels, every score 0); kept so every output can repeat it.
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        vals = np.asarray(self.values, dtype=np.float64).reshape(
            len(self.query_ids), len(self.metrics)
        )
        vals.setflags(write=False)
        object.__setattr__(self, "values", vals)

    # -- views -------------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        """Queries averaged over (missing ones included when counted as zero)."""
        return len(self.query_ids)

    @property
    def n_missing(self) -> int:
        return len(self.missing_ids)

    @property
    def n_no_relevant(self) -> int:
        return len(self.no_relevant_ids)

    def _col(self, metric: Metric | str) -> int:
        m = parse(metric)
        try:
            return self.metrics.index(m)
        except ValueError:
            have = ", ".join(map(str, self.metrics))
            raise InputError(
                f"metric {m} was not computed for run '{self.run}' (have: {have})"
            ) from None

    @property
    def aggregate(self) -> dict[str, float | None]:
        """Mean over queries of each metric, keyed by canonical metric string; ``None`` for every
        metric when no query could be scored (no mean exists: never 0)."""
        if not self.query_ids:
            return {str(m): None for m in self.metrics}
        means = self.values.mean(axis=0)
        return {str(m): float(v) for m, v in zip(self.metrics, means, strict=True)}

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        names = [str(m) for m in self.metrics]
        return {
            q: {n: float(v) for n, v in zip(names, row, strict=True)}
            for q, row in zip(self.query_ids, self.values.tolist(), strict=True)
        }

    def column(self, metric: Metric | str) -> dict[str, float]:
        """``{qid: value}`` for one metric."""
        j = self._col(metric)
        return dict(zip(self.query_ids, self.values[:, j].tolist(), strict=True))

    def mean(self, metric: Metric | str) -> float:
        """Mean of one metric over the scored queries; a :class:`UsageError` when no query could
        be scored (every labelled query has no relevant item, or there are no labels)."""
        value = self.aggregate[str(self.metrics[self._col(metric)])]
        if value is None:
            raise UsageError(no_mean_message(self))
        return value

    # -- serialisation -------------------------------------------------------------------------
    def to_dict(self, per_query: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {
            "run": self.run,
            "n_queries": self.n_queries,
            "n_missing": self.n_missing,
            "n_no_relevant": self.n_no_relevant,
            "aggregate": self.aggregate,
        }
        if per_query:
            d["per_query"] = self.per_query
        d["missing_ids"] = list(self.missing_ids)
        d["no_relevant_ids"] = list(self.no_relevant_ids)
        d["golden_version"] = self.golden_version
        d["config"] = dict(self.config)
        if self.slices:
            d["slices"] = {q: list(s) for q, s in self.slices.items()}
        if self.splits:
            d["splits"] = dict(self.splits)
        if self.details:
            d["details"] = {q: dict(v) for q, v in self.details.items()}
        if self.warnings:
            d["warnings"] = list(self.warnings)
        return d

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, run: str | None = None) -> Evaluation:
        """Read one evaluation from a JSON file of :meth:`to_dict` records.

        Every writer of those records is read the same way: ``ragmeter eval --per-query --format
        json`` (one object; a list of them when several runs were scored, and then ``run`` names
        the one to read), ``ragmeter run`` (``runs/<variant>/evaluation.json`` and
        ``chunk_evaluation.json``) and ``json.dump(e.to_dict(), f)``. Anything else raises an
        :class:`InputError` naming the file and the field at fault.
        """
        display = os.fspath(path)
        return cls.from_dict(pick_record(read_records(path), run, display), source=display)

    @classmethod
    def load_all(cls, path: str | os.PathLike[str]) -> list[Evaluation]:
        """Every evaluation in a file :meth:`load` reads, in file order."""
        display = os.fspath(path)
        return [cls.from_dict(r, source=display) for r in read_records(path)]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, source: str | None = None) -> Evaluation:
        """Rebuild from ``to_dict(per_query=True)`` output (e.g. ``ragmeter eval --per-query``);
        a record that is not one raises an :class:`InputError` naming ``source`` and the field."""
        if not isinstance(d, Mapping):
            raise InputError(
                f"an evaluation record is a JSON object, got {type(d).__name__}", path=source
            )
        where = source or str(d.get("run", "<dict>"))
        check_record(d, where)
        pq = d["per_query"]
        names: list[str] = list(d.get("aggregate", {}).keys())
        if not names and pq:
            names = list(next(iter(pq.values())).keys())
        metrics = tuple(parse(n) for n in names)
        qids = tuple(str(q) for q in pq)
        # check_record has checked every value: a finite number under each metric's name
        rows = [[float(pq[q][n]) for n in names] for q in qids]
        values = np.array(rows, dtype=np.float64).reshape(len(qids), len(metrics))
        return cls(
            run=str(d.get("run", where)),
            metrics=metrics,
            query_ids=qids,
            values=values,
            missing_ids=tuple(d.get("missing_ids", ())),
            no_relevant_ids=tuple(d.get("no_relevant_ids", ())),
            golden_version=d.get("golden_version"),
            config=dict(d.get("config") or {}),
            slices={q: tuple(s) for q, s in (d.get("slices") or {}).items()},
            splits=dict(d.get("splits") or {}),
            details={q: dict(v) for q, v in (d.get("details") or {}).items()},
            warnings=tuple(d.get("warnings") or ()),
        )

    def csv_rows(self, *, per_query: bool = False) -> tuple[list[str], list[list[object]]]:
        """The header and rows of ``eval --format csv``: with ``per_query`` one row per query,
        then the ``all`` row of means (six decimals; an empty cell where no query was scorable,
        never 0)."""

        def num(v: float | None) -> str:
            return "" if v is None else f"{v:.6f}"

        names = [str(m) for m in self.metrics]
        rows: list[list[object]] = []
        if per_query:
            rows = [
                [self.run, q, *(num(row[n]) for n in names)] for q, row in self.per_query.items()
            ]
        rows.append([self.run, "all", *(num(self.aggregate[n]) for n in names)])
        return ["run", "query", *names], rows

    def to_frame(self):  # -> pandas.DataFrame
        """Per-query values as a pandas DataFrame (index: query id, columns: metric strings)."""
        from .._extras import require

        pd = require("pandas", "DataFrame output")
        return pd.DataFrame(
            self.values,
            index=pd.Index(self.query_ids, name="query"),
            columns=[str(m) for m in self.metrics],
        )

    def __repr__(self) -> str:
        agg = ", ".join(
            f"{k}={v:.4f}" for k, v in self.aggregate.items() if v is not None and not math.isnan(v)
        )
        return f"Evaluation(run={self.run!r}, n_queries={self.n_queries}, {agg})"
