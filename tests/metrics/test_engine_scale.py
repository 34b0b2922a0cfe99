"""The metric engine's columnar paths at scale (issue 15): the grade join on hashed keys, query
codes through runs of equal ids, the qrels fast reader and the ideal gains without a sort. Each
is checked against a plain-Python reference on many seeds, including the fallbacks that only a
hash collision reaches (forced here)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import InputError, evaluate
from ragmeter.io import Qrels, Run, open_source
from ragmeter.io._trec_fast import parse_clean_run
from ragmeter.io._trec_format import QRELS
from ragmeter.io.trec import read_qrels, read_run
from ragmeter.metrics import _join
from ragmeter.metrics import _kernels as K
from ragmeter.metrics._join import group_codes, join_grades

# ids: short (the one-word exact hash), long (> 8 bytes: ids compared as strings), non-ASCII
_IDS = ["d1", "d2", "D10", "x", "é", "doc-000000001", "doc-000000002", "日本語の文書", "a" * 9]


def _reference(rows, run_code, run_doc, qrels_code, qrels_doc, rel):
    judged = {(c, d): g for c, d, g in zip(qrels_code, qrels_doc, rel, strict=True) if c >= 0}
    return [judged.get((run_code[r], run_doc[r]), 0) if run_code[r] >= 0 else 0 for r in rows]


def _case(seed: int):
    rng = random.Random(seed)
    ids = rng.sample(_IDS, rng.randint(1, len(_IDS)))
    n_q = rng.randint(1, 4)
    pairs = sorted({(rng.randrange(-1, n_q), rng.choice(ids)) for _ in range(rng.randint(1, 12))})
    qrels_code = [c for c, _ in pairs]
    qrels_doc = [d for _, d in pairs]
    rel = [rng.randint(-1, 3) for _ in pairs]
    n_run = rng.randint(1, 15)
    run_code = [rng.randrange(-1, n_q) for _ in range(n_run)]
    run_doc = [rng.choice(ids) for _ in range(n_run)]
    rows = list(range(n_run))
    rng.shuffle(rows)
    rows = rows[: rng.randint(0, n_run)]
    return rows, run_code, run_doc, qrels_code, qrels_doc, rel


def _run_join(case):
    rows, run_code, run_doc, qrels_code, qrels_doc, rel = case
    return join_grades(
        np.array(rows, dtype=np.int64),
        np.array(run_code, dtype=np.int32),
        pa.array(run_doc, pa.string()),
        np.array(qrels_code, dtype=np.int32),
        pa.array(qrels_doc, pa.string()),
        np.array(rel, dtype=np.int64),
        np.dtype(np.int64),
    )


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_join_matches_a_dict_join(seed: int) -> None:
    case = _case(seed)
    got, matched = _run_join(case)
    want = _reference(*case)
    assert got.tolist() == want
    rows, run_code, run_doc, qrels_code, qrels_doc, _ = case
    judged = {(c, d) for c, d in zip(qrels_code, qrels_doc, strict=True) if c >= 0}
    assert matched == sum((run_code[r], run_doc[r]) in judged for r in rows if run_code[r] >= 0)


@pytest.mark.parametrize("seed", range(40))
def test_join_is_exact_when_every_hash_collides(seed: int, monkeypatch) -> None:
    # every id hashes to 7: judged pairs of one query share a key -> Arrow's join takes over
    monkeypatch.setattr(_join, "string_hashes", lambda a: np.full(len(a), 7, np.uint64))
    monkeypatch.setattr(_join, "_hash_is_exact", lambda a: False)  # true of the real hash only
    case = _case(seed)
    assert _run_join(case)[0].tolist() == _reference(*case)


@pytest.mark.parametrize("seed", range(40))
def test_join_refuses_a_key_match_of_different_ids(seed: int, monkeypatch) -> None:
    # ids hash by length: unique among one query's judgements only by luck, and a run id of the
    # same length as a judged one matches its key; the exact check must reject it
    def by_length(a):
        return np.array([len(x.encode()) for x in a.to_pylist()], dtype=np.uint64) << 40

    monkeypatch.setattr(_join, "string_hashes", by_length)
    monkeypatch.setattr(_join, "_hash_is_exact", lambda a: False)  # true of the real hash only
    case = _case(seed)
    assert _run_join(case)[0].tolist() == _reference(*case)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(min_size=1, max_size=8).filter(lambda t: len(t.encode()) <= 8),
        min_size=2,
        max_size=40,
        unique=True,
    )
)
def test_the_one_word_hash_is_one_to_one_where_the_join_trusts_it(ids: list[str]) -> None:
    arr = pa.array(ids, pa.string())
    if not _join._hash_is_exact(arr):
        assert any("\x00" in x for x in ids)
        return
    hashes = _join.string_hashes(arr)
    assert len(set(hashes.tolist())) == len(ids)


def test_join_of_two_short_ids_that_differ_only_in_length() -> None:
    # "a" and "a\0" pad to the same word: not the exact one-word hash, compared as strings
    got, matched = join_grades(
        np.array([0, 1]),
        np.array([0, 0], np.int32),
        pa.array(["a", "a\x00"]),
        np.array([0], np.int32),
        pa.array(["a\x00"]),
        np.array([2]),
        np.dtype(np.int64),
    )
    assert got.tolist() == [0, 2] and matched == 1


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["q1", "q2", "q10", "é", "q" * 12]), min_size=0, max_size=30))
def test_group_codes_encode_like_a_dictionary(values: list[str]) -> None:
    codes, dictionary = group_codes(pa.array(values, pa.string()))
    words = dictionary.to_pylist()
    assert len(set(words)) == len(words)
    assert [words[c] for c in codes.tolist()] == values


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(-2, 6)), min_size=0, max_size=40),
    st.sampled_from(["linear", "exp"]),
)
def test_ideal_gains_without_a_sort_equal_the_sorted_ones(
    judged: list[tuple[int, int]], gain: str
) -> None:
    j_row = np.array([r for r, _ in judged], dtype=np.int64)
    j_rel = np.array([g for _, g in judged], dtype=np.int64)
    nq = 6
    inputs = K.RankInputs(np.zeros((nq, 1), np.int64), j_row, j_rel, nq)

    class M:
        k, rel, gains = None, 1, None

    M.gain = gain
    got = inputs.ideal(M)
    for q in range(nq):
        gains = sorted(
            (K.gain_values(np.array([g]), gain)[0] for r, g in judged if r == q and g > 0),
            reverse=True,
        )
        row = got[q].tolist()
        assert row[: len(gains)] == gains and not any(row[len(gains) :])


# -- the qrels fast path ------------------------------------------------------------------------
def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode())
    return path


@pytest.mark.parametrize("seed", range(25))
def test_qrels_fast_path_reads_what_the_line_parser_reads(seed: int, tmp_path: Path) -> None:
    from ragmeter.io._trec_lines import parse_lines

    rng = random.Random(seed)
    lines = []
    for q in rng.sample(range(50), rng.randint(1, 20)):
        for d in rng.sample(range(100), rng.randint(1, 6)):
            lines.append(f"q{q} 0 doc{d} {rng.choice(['0', '1', '2', '-1', '007', '3'])}")
    if rng.random() < 0.5:
        rng.shuffle(lines)  # queries interleaved: the global duplicate check
    p = _write(tmp_path / "q.qrels", "\n".join(lines) + ("\n" if seed % 2 else ""))
    fast = parse_clean_run(open_source(p), QRELS)
    slow = parse_lines(open_source(p), QRELS)
    assert fast.qid.to_pylist() == slow.qid.to_pylist()
    assert fast.doc.to_pylist() == slow.doc.to_pylist()
    assert fast.value.tolist() == np.asarray(slow.value).tolist()
    assert fast.maybe_duplicates is False


@pytest.mark.parametrize("grade", ["0x10", "0X1", "1.0", "1e3", "one", "99999999999999999999"])
def test_qrels_grade_that_is_no_integer_is_refused_with_its_line(
    grade: str, tmp_path: Path
) -> None:
    p = _write(tmp_path / "bad.qrels", f"q1 0 d1 1\nq1 0 d2 {grade}\n")
    with pytest.raises(InputError) as err:
        read_qrels(p)
    assert ":2" in str(err.value) and "rel" in str(err.value)


def test_qrels_signed_and_zero_padded_grades_read_as_integers(tmp_path: Path) -> None:
    p = _write(tmp_path / "ok.qrels", "q1 0 d1 +1\nq1 0 d2 -0\nq1 0 d3 0012\n")
    assert read_qrels(p).rel.tolist() == [1, 0, 12]


def test_qrels_duplicate_pair_still_found_on_the_fast_path(tmp_path: Path) -> None:
    p = _write(tmp_path / "dup.qrels", "q1 0 d1 1\nq1 0 d2 2\nq1 0 d1 3\n")
    with pytest.raises(InputError):
        read_qrels(p)


# -- end to end ---------------------------------------------------------------------------------
# a random case's run may retrieve no judged item: the id-space warning, not a failure
@pytest.mark.filterwarnings(
    "ignore:.*the run retrieves is judged in the qrels:ragmeter.RagmeterWarning"
)
@pytest.mark.parametrize("seed", range(30))
def test_files_and_dicts_score_identically(seed: int, tmp_path: Path) -> None:
    """The fast readers + columnar engine against the same data given as dicts (another reader,
    no runs of equal ids when shuffled), per query and to the last bit."""
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    docs = [f"d{i}" for i in range(30)] + [f"long-document-id-{i:04d}" for i in range(10)]
    for q in range(rng.randint(1, 25)):
        qid = f"q{q}" if q % 3 else f"query-{q:012d}"
        qrels[qid] = {d: rng.randint(0, 3) for d in rng.sample(docs, rng.randint(1, 6))}
        if rng.random() < 0.85:
            run[qid] = {d: round(rng.random(), 2) for d in rng.sample(docs, rng.randint(1, 20))}
    run.setdefault(next(iter(qrels)), {docs[0]: 1.0})
    q_lines = [f"{q} 0 {d} {g}" for q, ds in qrels.items() for d, g in ds.items()]
    r_lines = [f"{q} Q0 {d} 1 {s} t" for q, ds in run.items() for d, s in ds.items()]
    if seed % 2:
        rng.shuffle(r_lines)
        rng.shuffle(q_lines)
    qp = _write(tmp_path / "q.qrels", "\n".join(q_lines) + "\n")
    rp = _write(tmp_path / "r.run", "\n".join(r_lines) + "\n")
    metrics = ["nDCG@10", "nDCG", "RR@10", "R@100", "P@5", "AP", "nDCG(gain=exp)@3", "Rprec"]
    for missing in ("zero", "skip"):
        a = evaluate(read_qrels(qp), read_run(rp), metrics, missing=missing)
        b = evaluate(qrels, run, metrics, missing=missing)
        assert a.query_ids == b.query_ids == tuple(sorted(a.query_ids))
        assert a.values.tolist() == b.values.tolist()
        assert a.missing_ids == b.missing_ids and a.no_relevant_ids == b.no_relevant_ids


def test_columnar_engine_keeps_unsorted_query_ids_in_code_point_order() -> None:
    q = Qrels(pa.array(["é", "b", "B", "a"]), pa.array(["d"] * 4), np.array([1, 1, 0, 1]))
    r = Run(pa.array(["a", "é", "b"]), pa.array(["d", "d", "x"]), np.array([1.0, 1.0, 1.0]))
    e = evaluate(q, r, ["RR"])
    assert e.query_ids == ("a", "b", "é") and e.no_relevant_ids == ("B",)
    assert e.values[:, 0].tolist() == [1.0, 0.0, 1.0]


# -- what the reader hands the engine (ReadHints) -------------------------------------------
def _hintless(t):
    """The same table without the reader's hints (the engine then computes everything)."""
    from dataclasses import replace

    return replace(t, hints=None)


def _runs_of(values: list[str]) -> list[int]:
    return [i for i, v in enumerate(values) if i == 0 or v != values[i - 1]]


@pytest.mark.parametrize("seed", range(30))
def test_reader_hints_are_the_hashes_and_query_runs_of_its_columns(
    seed: int, tmp_path: Path, monkeypatch
) -> None:
    from ragmeter.io import _trec_fast
    from ragmeter.io._duplicates import string_hashes
    from ragmeter.io._tables import doc_hashes_of, qid_starts_of

    rng = random.Random(seed)
    monkeypatch.setattr(_trec_fast, "BLOCK_SIZE", rng.choice([64, 128, 1 << 20]))  # many blocks
    qids = [f"q{i}" for i in range(rng.randint(1, 12))]
    rows = [
        (q, rng.choice(_IDS), rng.randint(0, 2)) for q in qids for _ in range(rng.randint(1, 5))
    ]
    if seed % 3 == 0:
        rng.shuffle(rows)  # queries interleave: no run starts to hand over
    rows = list({(q, d): (q, d, g) for q, d, g in rows}.values())  # unique pairs
    qp = _write(tmp_path / "q.qrels", "".join(f"{q} 0 {d} {g}\n" for q, d, g in rows))
    rp = _write(
        tmp_path / "r.run",
        "".join(f"{q} Q0 {d} {i} {rng.randint(0, 3)} t\n" for i, (q, d, _) in enumerate(rows)),
    )
    for t in (read_qrels(qp), read_run(rp)):
        h = doc_hashes_of(t)
        assert h is not None and h.tolist() == string_hashes(t.doc).tolist()
        q = t.qid.to_pylist()
        starts = qid_starts_of(t)
        contiguous = len({q[i] for i in _runs_of(q)}) == len(_runs_of(q))
        if contiguous:
            assert starts is not None and starts.tolist() == _runs_of(q)
        else:
            assert starts is None
    Q, R = read_qrels(qp), read_run(rp)
    ms = ["nDCG@3", "RR", "R@2", "P@1", "AP"]
    with_hints = evaluate(Q, R, ms)
    without = evaluate(_hintless(Q), _hintless(R), ms)
    assert with_hints.query_ids == without.query_ids
    assert with_hints.values.tolist() == without.values.tolist()


def test_hints_of_replaced_columns_are_not_used(tmp_path: Path) -> None:
    from dataclasses import replace

    from ragmeter.io._tables import doc_hashes_of, qid_starts_of

    qp = _write(tmp_path / "q.qrels", "q1 0 a 1\nq1 0 b 2\nq2 0 c 1\n")
    rp = _write(tmp_path / "r.run", "q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq2 Q0 c 1 1 t\n")
    Q, R = read_qrels(qp), read_run(rp)
    assert doc_hashes_of(R) is not None and qid_starts_of(R) is not None
    # same qids, docs renamed: the reader's hashes describe the old docs and must not be used
    R2 = replace(R, doc=pa.array(["b", "a", "x"]))
    assert doc_hashes_of(R2) is None and qid_starts_of(R2) is not None
    R3 = replace(R, qid=pa.array(["q2", "q2", "q1"]))
    assert qid_starts_of(R3) is None
    e = evaluate(Q, R2, ["P@1", "nDCG@2"])
    # q1 ranks b (grade 2) then a (1); q2 ranks x (unjudged)
    assert e.query_ids == ("q1", "q2")
    assert e.values.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    e3 = evaluate(Q, R3, ["P@1"])  # q2: a, b (unjudged for q2); q1: c (unjudged for q1)
    assert e3.values.tolist() == [[0.0], [0.0]]


def test_details_are_built_on_first_lookup_only() -> None:
    from ragmeter.metrics import ColumnDetails

    d = ColumnDetails(
        ["b", "a"],
        {"first_rank": np.array([0, 3]), "n": np.array([5, 6])},
        none_when_zero=("first_rank",),
    )
    assert d._built is None and len(d) == 2 and list(d) == ["b", "a"]
    assert d._built is None
    assert d["b"] == {"first_rank": None, "n": 5} and d["a"] == {"first_rank": 3, "n": 6}
    assert "c" not in d and dict(d.items())["a"]["n"] == 6
