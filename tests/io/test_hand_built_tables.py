"""Qrels and Run built by hand are checked like a file: a missing id, an id column that is not
text, or columns of different lengths are clear errors, never a score."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from ragmeter import InputError, Qrels, Run, UsageError, evaluate


def test_a_missing_query_id_names_its_row() -> None:
    with pytest.raises(InputError, match="row 2: qid is missing"):
        Run(pa.array(["q1", None]), pa.array(["d1", "d2"]), np.array([2.0, 1.0]))


def test_a_missing_item_id_in_qrels_names_its_row() -> None:
    with pytest.raises(InputError, match="row 1: doc is missing"):
        Qrels(pa.array(["q1"]), pa.array([None], pa.string()), np.array([1]))


@pytest.mark.parametrize("bad", [["q1"], pa.array([1]), np.array(["q1"])])
def test_ids_must_be_a_pyarrow_string_array(bad: object) -> None:
    with pytest.raises(UsageError, match="must be a pyarrow string array"):
        Run(bad, pa.array(["d1"]), np.array([1.0]))  # type: ignore[arg-type]


def test_columns_must_be_aligned() -> None:
    with pytest.raises(UsageError, match="as long as each other"):
        Qrels(pa.array(["q1", "q1"]), pa.array(["d1"]), np.array([1, 0]))


def test_a_well_built_pair_scores() -> None:
    q = Qrels(pa.chunked_array([["q1", "q1"]]), pa.array(["d1", "d2"]), np.array([1, 0]))
    r = Run(pa.array(["q1", "q1"], pa.large_string()), pa.array(["d2", "d1"]), np.array([2.0, 1.0]))
    assert evaluate(q, r, ["RR"]).aggregate == {"RR": 0.5}
