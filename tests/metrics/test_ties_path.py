"""A query with ties, or with its rows out of ranked order, is ranked on its own inside the
compiled one-pass rank-and-join (issue 28): the other queries stay on the straight pass, and
every number is the reference paths' to the bit.

Before, one tie anywhere in a large run (scores rounded to a few decimals, BM25 scores) or one
query written in item-id order moved the whole run to ``rank_run`` and the separate join. Here
the compiled threshold is lowered to 0 and, over generated runs where ties are mixed into no
query, some queries or all of them (exact ties, ties only as 32-bit floats such as ``1.0`` and
``1.0 + 1e-9``, -0.0 against 0.0, NaN scores, rows shuffled or sorted by item id), every rank
metric of the registry equals (``==``) the numpy path's value and the compiled join's after
``rank_run``; the kernel's order of one stretch is ``rank_run``'s order itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter import evaluate
from ragmeter.io import Qrels, Run
from ragmeter.metrics import REGISTRY, Metric, _join, _score, parse_list, rank_run

# justified: numba comes with the test extra (through ranx); a user without it runs the numpy
# paths only, which every other engine and reader test covers
pytest.importorskip("numba", reason="the compiled paths need numba (pip install 'ragmeter[fast]')")

from ragmeter.metrics import _join_kernel  # imports numba: after the skip


def _rank_metrics() -> list[Metric]:
    """Every rank metric of the registry, without a cutoff and at 3, with a raised threshold
    and every gain rule where it takes one."""
    out: list[str] = []
    for info in REGISTRY.values():
        if info.rank_kernel is None:
            continue
        stems = [info.name]
        if "rel" in info.options:
            stems.append(f"{info.name}(rel=2)")
        if "gain" in info.options:
            stems += [f"{info.name}(gain=exp)", f"{info.name}(gains=1:3,2:0.5)"]
        for stem in stems:
            if info.cutoff != "required":
                out.append(stem)
            if info.cutoff != "none":
                out.append(f"{stem}@3")
    return parse_list(out)


METRICS = _rank_metrics()

#: how a query's rows are written: the straight pass reads "strict" as it stands, every other
#: layout is ranked inside the pass
LAYOUTS = ("strict", "exact-ties", "float32-ties", "zeros", "nan", "by-id", "shuffled")
#: scores that tie exactly, as float32 only (1.0 + 1e-9 rounds to 1.0), or -0.0 against 0.0
_TIED = {
    "exact-ties": [3.0, 2.5, 2.5, 2.5, 1.0, 1.0, 0.0],
    "float32-ties": [1.0, 1.0 + 1e-9, 1.0 - 1e-9, 0.5, 0.5 + 1e-12],
    "zeros": [0.0, -0.0, 0.0, -1.0, -0.0],
    "nan": [float("nan"), 2.0, 2.0, float("nan"), -float("nan")],
}


def _ids(n: int, style: str) -> list[str]:
    if style == "short":  # at most 8 bytes, no NUL: hashes one-to-one, ids never compared
        return [f"d{i}" for i in range(n)]
    if style == "prefix":  # prefixes of each other: byte order is not length order
        return ["x" * (1 + i % 5) + str(i // 5) for i in range(n)]
    return [f"document-{i:06d}\x00{'z' * (i % 3)}" for i in range(n)]  # long, NUL inside


@st.composite
def _case(draw: Any) -> tuple[Qrels, Run, list[str]]:
    """Qrels and a run whose queries are each one stretch, each written in one of ``LAYOUTS``:
    none, some or all of them tied or out of order."""
    mix = draw(st.sampled_from(["none", "some", "all"]))
    style = draw(st.sampled_from(["short", "prefix", "long"]))
    pool = _ids(40, style)
    n_q = draw(st.integers(1, 10))
    q_rows: list[tuple[str, str, int]] = []
    r_rows: list[tuple[str, str, float]] = []
    layouts: list[str] = []
    for i in range(n_q):
        qid = f"q{i}"
        judged = draw(st.lists(st.sampled_from(pool), unique=True, min_size=1, max_size=30))
        low = 1 if i == 0 else 0  # q0 has a relevant item: some query is scored
        q_rows += [
            (qid, d, draw(st.integers(low if k == 0 else 0, 3))) for k, d in enumerate(judged)
        ]
        layout = "strict" if mix == "none" else draw(st.sampled_from(LAYOUTS))
        if mix == "all" and layout == "strict":
            layout = "exact-ties"
        layouts.append(layout)
        # at least 3 rows: the queries are stretches the engine encodes as such
        docs = draw(st.lists(st.sampled_from(pool), unique=True, min_size=3, max_size=40))
        n = len(docs)
        if layout in _TIED:
            scores = [draw(st.sampled_from(_TIED[layout])) for _ in docs]
        else:
            scores = [10.0 - 0.25 * r for r in range(n)]  # strictly descending
        rows = list(zip(docs, scores, strict=True))
        if layout in ("by-id", "exact-ties"):
            rows.sort(key=lambda x: x[0])  # as a tool that writes runs sorted by item id
        elif layout == "shuffled":
            rows = draw(st.permutations(rows))
        r_rows += [(qid, d, s) for d, s in rows]
    if draw(st.booleans()):
        r_rows.append(("only-in-run", pool[0], 1.0))
    qrels = Qrels(
        pa.array([r[0] for r in q_rows]),
        pa.array([r[1] for r in q_rows]),
        np.array([r[2] for r in q_rows], dtype=np.int64),
    )
    run = Run(
        pa.array([r[0] for r in r_rows]),
        pa.array([r[1] for r in r_rows]),
        np.array([r[2] for r in r_rows], dtype=np.float64),
    )
    return qrels, run, layouts


def _values(qrels: Qrels, run: Run, ties: str) -> dict[str, np.ndarray]:
    ev = evaluate(qrels, run, METRICS, ties=ties)  # type: ignore[arg-type]
    return {str(m): ev.values[:, j].copy() for j, m in enumerate(ev.metrics)}


def _spy(mp: pytest.MonkeyPatch, module: Any, name: str, calls: list[str]) -> None:
    real = getattr(module, name)
    mp.setattr(module, name, lambda *a, **k: calls.append(name) or real(*a, **k))


# a generated run may retrieve no judged item: the id-space warning, not a failure
@pytest.mark.filterwarnings(
    "ignore:.*the run retrieves is judged in the qrels:ragmeter.RagmeterWarning"
)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_case(), ties=st.sampled_from(["trec", "trec", "given"]))
def test_one_pass_with_ties_equals_the_reference_paths(
    case: tuple[Qrels, Run, list[str]], ties: str
) -> None:
    """The one pass (ties ranked inside it) == the numpy path == ``rank_run`` + the compiled
    join, for every metric, to the bit; and the one pass was taken, ``rank_run`` never."""
    qrels, run, _ = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_join._compiled, "available", lambda: False)
        numpy_path = _values(qrels, run, ties)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_join, "COMPILED_MIN_ROWS", 0)
        mp.setattr(_score, "ranked_grades", lambda *a: None)  # rank_run, then the compiled join
        ranked_then_joined = _values(qrels, run, ties)
    calls: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_join, "COMPILED_MIN_ROWS", 0)
        _spy(mp, _join_kernel, "ranked_grades_kernel", calls)
        _spy(mp, _score, "rank_run", calls)
        one_pass = _values(qrels, run, ties)
    assert calls == ["ranked_grades_kernel"]
    for name, want in numpy_path.items():
        assert np.array_equal(one_pass[name], want), name
        assert np.array_equal(ranked_then_joined[name], want), name


@settings(max_examples=200, deadline=None)
@given(
    scores=st.lists(
        st.one_of(
            st.sampled_from([0.0, -0.0, 1.0, 1.0 + 1e-9, 2.5, float("nan"), -float("nan")]),
            st.floats(allow_nan=True, allow_infinity=True, width=64),
        ),
        min_size=1,
        max_size=70,
    ),
    style=st.sampled_from(["short", "prefix", "long"]),
    data=st.data(),
)
def test_a_stretch_is_ranked_as_rank_run_ranks_it(
    scores: list[float], style: str, data: Any
) -> None:
    """The kernel's order of one query's rows (float32 score descending, item id descending in
    byte order, NaN by its bits and otherwise in the given order) is ``rank_run``'s."""
    n = len(scores)
    docs = data.draw(st.permutations(_ids(n, style)))
    lead = data.draw(st.integers(0, 3))  # rows of another query before the stretch
    run = Run(
        pa.array(["a"] * lead + ["q"] * n),
        pa.array(_ids(lead, "short") + list(docs)),
        np.array([5.0] * lead + scores, dtype=np.float64),
    )
    with np.errstate(over="ignore"):  # scores past float32's range are +-inf there, as here
        want = rank_run(run, qids=["q"]).rows - lead
    doc = run.doc
    f32, tied, head = np.empty(n, np.float32), np.empty(n, np.bool_), np.empty(n, np.uint64)
    order, tmp = np.empty(n, np.int64), np.empty(n, np.int64)
    offsets = _join._offsets(doc)
    _join_kernel.rank_stretch_kernel(
        lead, n, run.score, offsets, _join._data(doc), f32, tied, head, order, tmp
    )
    assert order.tolist() == want.tolist()


def _big_group_case() -> tuple[Qrels, Run]:
    """One query whose 300 rows all tie (several merge levels), next to straight queries."""
    docs = [f"d{i:03d}" for i in range(300)]
    r_q = ["a"] * 5 + ["b"] * 300 + ["c"] * 5
    r_d = [f"d{i}" for i in range(5)] + docs + [f"d{i}" for i in range(5)]
    r_s = [5.0, 4.0, 3.0, 2.0, 1.0] + [1.5] * 300 + [9.0, 8.0, 7.0, 6.0, 5.0]
    q_q = ["a", "b", "b", "b", "c"]
    q_d = ["d4", "d000", "d299", "d150", "d0"]
    run = Run(pa.array(r_q), pa.array(r_d), np.array(r_s))
    return Qrels(pa.array(q_q), pa.array(q_d), np.array([1, 0, 2, 1, 1])), run


def test_a_tied_query_leaves_the_others_on_the_straight_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tied query is ranked inside the one pass (its item ids descending: d299 first, d000
    last), the others are read as they stand, and nothing calls ``rank_run``."""
    qrels, run = _big_group_case()
    monkeypatch.setattr(_join, "COMPILED_MIN_ROWS", 0)
    calls: list[str] = []
    _spy(monkeypatch, _score, "rank_run", calls)
    _spy(monkeypatch, _join_kernel, "ranked_grades_kernel", calls)
    ev = evaluate(qrels, run, ["RR", "P@1", "AP"])
    assert calls == ["ranked_grades_kernel"]
    by_q = dict(zip(ev.query_ids, ev.values.tolist(), strict=True))
    # d299 and d150 rank 1 and 150 of the 300 tied items (in the given order d000, judged
    # non-relevant, would rank first)
    assert by_q["b"][:2] == [1.0, 1.0] and by_q["b"][2] == pytest.approx((1 + 2 / 150) / 2)
    assert by_q["a"] == [0.2, 0.0, 0.2]  # d4 at rank 5
    assert by_q["c"] == [1.0, 1.0, 1.0]


def test_float32_ties_are_broken_by_item_id() -> None:
    """Scores that differ only below float32 resolution tie (as in trec_eval): the greater item
    id ranks first, whichever path runs; scores apart as float32 rank by score."""
    qrels = Qrels(pa.array(["q", "r"]), pa.array(["a", "a"]), np.array([1, 1]))
    run = Run(
        pa.array(["q", "q", "r", "r"]),
        pa.array(["a", "b", "a", "b"]),
        np.array([1.0 + 1e-9, 1.0, 1.0 + 1e-6, 1.0]),  # q: a float32 tie; r: apart
    )
    for threshold in (0, 10**9):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_join, "COMPILED_MIN_ROWS", threshold)
            ev = evaluate(qrels, run, ["RR"])
        assert ev.values[:, 0].tolist() == [0.5, 1.0]
