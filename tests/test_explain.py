"""The slider: one labelled passage moves from rank 1 to 10; R@k, RR@k and nDCG@k come from the
real engine and equal the hand values of the lesson's discount table."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import UsageError
from ragmeter.cli import app
from ragmeter.explain import rank_curve

runner = CliRunner()


def test_one_passage_k5_hand_values() -> None:
    c = rank_curve(k=5)
    assert c.metrics == ("R@5", "RR@5", "nDCG(gain=exp)@5")
    assert [r.rank for r in c.rows] == list(range(1, 11))
    ndcg = c.column("nDCG(gain=exp)@5")
    # the lesson's discount table: 1, 0.631, 0.5, 0.431 at ranks 1-4
    assert ndcg[1] == pytest.approx(1.0)
    assert round(ndcg[2], 3) == 0.631
    assert ndcg[3] == pytest.approx(0.5)
    assert round(ndcg[4], 3) == 0.431
    assert round(ndcg[5], 3) == 0.387
    assert all(ndcg[r] == 0.0 for r in range(6, 11))  # past the cutoff
    rr = c.column("RR@5")
    assert [rr[r] for r in range(1, 11)] == pytest.approx(
        [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 0, 0, 0, 0, 0]
    )
    recall = c.column("R@5")
    assert [recall[r] for r in range(1, 11)] == [1.0] * 5 + [0.0] * 5
    # the discount column keeps going past k (0.333 at rank 7, 0.289 at rank 10)
    assert round(c.rows[6].discount, 3) == 0.333 and round(c.rows[9].discount, 3) == 0.289


def test_cutoff_10_ndcg_equals_the_discount_at_every_rank() -> None:
    c = rank_curve(k=10)
    for r in c.rows:
        assert r.values[2] == pytest.approx(r.discount, abs=1e-12)


def test_lesson_worked_example_with_a_second_labelled_passage() -> None:
    # labels 2 and 1; run grades 0, 2, 0, 1, 0: the grade-1 passage sits at rank 3 of the
    # other passages, so rank 4 while the grade-2 passage is at rank 2.
    c3 = rank_curve(k=3, grades=(2, 1), others_at=(3,), depth=5)
    row = {m: v for m, v in zip(c3.metrics, c3.rows[1].values, strict=True)}
    assert row["R@3"] == pytest.approx(0.5)
    assert row["RR@3"] == pytest.approx(0.5)
    assert round(row["nDCG(gain=exp)@3"], 3) == 0.521  # 1.893 / 3.631
    c5 = rank_curve(k=5, grades=(2, 1), others_at=(3,), depth=5)
    row5 = {m: v for m, v in zip(c5.metrics, c5.rows[1].values, strict=True)}
    assert row5["R@5"] == pytest.approx(1.0)
    assert round(row5["nDCG(gain=exp)@5"], 2) == 0.64


def test_unretrieved_labelled_passage_caps_recall_and_ndcg() -> None:
    c = rank_curve(k=5, grades=(2, 1))
    first = dict(zip(c.metrics, c.rows[0].values, strict=True))
    assert first["R@5"] == pytest.approx(0.5)
    # ideal: 3 + 1/log2(3); DCG: 3
    assert first["nDCG(gain=exp)@5"] == pytest.approx(3 / (3 + 1 / math.log2(3)))
    lin = dict(
        zip(
            *[
                rank_curve(k=5, grades=(2, 1), gain="linear").metrics,
                rank_curve(k=5, grades=(2, 1), gain="linear").rows[0].values,
            ],
            strict=True,
        )
    )
    assert lin["nDCG@5"] == pytest.approx(2 / (2 + 1 / math.log2(3)))


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(1, 12),
    depth=st.integers(1, 15),
    grade=st.integers(1, 3),
    gain=st.sampled_from(["exp", "linear"]),
)
def test_property_single_passage_matches_the_formulas(
    k: int, depth: int, grade: int, gain: str
) -> None:
    c = rank_curve(k=k, grades=(grade,), depth=depth, gain=gain)
    assert len(c.rows) == depth
    for r in c.rows:
        inside = r.rank <= k
        recall, rr, ndcg = r.values
        assert recall == (1.0 if inside else 0.0)
        assert rr == pytest.approx(1 / r.rank if inside else 0.0)
        assert ndcg == pytest.approx(1 / math.log2(r.rank + 1) if inside else 0.0)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), k=st.integers(1, 10), depth=st.integers(2, 12))
def test_property_sliding_the_top_graded_passage_down_never_helps(data, k: int, depth: int) -> None:
    n_other = data.draw(st.integers(0, min(3, depth - 1)))
    top = data.draw(st.integers(1, 3))
    others = tuple(data.draw(st.lists(st.integers(1, top), min_size=n_other, max_size=n_other)))
    placed = data.draw(st.booleans())
    at = (
        tuple(
            data.draw(
                st.lists(st.integers(1, depth - 1), min_size=n_other, max_size=n_other, unique=True)
            )
        )
        if placed
        else None
    )
    c = rank_curve(k=k, grades=(top, *others), depth=depth, others_at=at)
    for a, b in itertools.pairwise(c.rows):
        for j in range(3):
            assert b.values[j] <= a.values[j] + 1e-12
    for r in c.rows:
        assert all(0.0 <= v <= 1.0 + 1e-12 for v in r.values)


def test_to_dict_and_frame() -> None:
    c = rank_curve(k=3, depth=4)
    d = c.to_dict()
    assert d["gain_formula"] == "2^g - 1" and d["metrics"] == ["R@3", "RR@3", "nDCG(gain=exp)@3"]
    assert d["rows"][1]["RR@3"] == pytest.approx(0.5) and d["rows"][3]["R@3"] == 0.0
    json.dumps(d, allow_nan=False)
    f = c.to_frame()
    assert list(f.index) == [1, 2, 3, 4]
    assert f.loc[3, "nDCG(gain=exp)@3"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"k": 0}, "k must be a positive integer"),
        ({"depth": 0}, "depth must be"),
        ({"grades": ()}, "grades must be integers >= 1"),
        ({"grades": (2, 0)}, "grades must be integers >= 1"),
        ({"gain": "log"}, "gain must be"),
        ({"grades": (2, 1), "others_at": (1, 2)}, "one rank for each grade"),
        ({"grades": (2, 1), "others_at": (10,)}, "distinct ranks from 1 to 9"),
        ({"grades": (2, 1, 1), "others_at": (2, 2)}, "distinct ranks"),
    ],
)
def test_bad_arguments_are_usage_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        rank_curve(**kwargs)
    with pytest.raises(UsageError):
        rank_curve(k=5).column("nDCG@3")


def test_cli_table_json_csv() -> None:
    r = runner.invoke(app, ["explain", "rank-curve", "--k", "5"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    assert "nDCG(gain=exp)@5" in r.stdout and "0.631" in r.stdout and "0.431" in r.stdout
    assert "Past the cutoff all three are 0" in r.stdout
    r = runner.invoke(
        app,
        [
            "explain",
            "rank-curve",
            "--k",
            "3",
            "--grades",
            "2,1",
            "--others-at",
            "3",
            "--depth",
            "5",
            "--format",
            "json",
        ],
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["grades"] == [2, 1] and d["others_at"] == [3]
    assert round(d["rows"][1]["nDCG(gain=exp)@3"], 3) == 0.521
    r = runner.invoke(app, ["explain", "rank-curve", "--depth", "3", "-f", "csv"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [
        "rank,R@5,RR@5,nDCG(gain=exp)@5,discount",
        "1,1.000000,1.000000,1.000000,1.000000",
        "2,1.000000,0.500000,0.630930,0.630930",
        "3,1.000000,0.333333,0.500000,0.500000",
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["--grades", "2,x"],
        ["--k", "0"],
        ["--gain", "log"],
        ["--grades", "2,1", "--others-at", "12"],
    ],
)
def test_cli_bad_arguments_exit_2_without_traceback(args: list[str]) -> None:
    r = runner.invoke(app, ["explain", "rank-curve", *args])
    assert r.exit_code == 2
    assert "error:" in r.stderr and "Traceback" not in r.stderr
