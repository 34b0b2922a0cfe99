"""`ragmeter confirm`'s workflow: the chosen variant once on the held-out split, in the ledger."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import Evaluation, InputError, RagmeterWarning, UsageError
from ragmeter.metrics import parse
from ragmeter.paired import Ledger, compare
from ragmeter.workflows.confirm import (
    HELDOUT,
    ConfirmResult,
    check_heldout,
    confirm_in_result,
    find_variant,
)


def test_the_fare_rules_survivor_on_the_heldout_split(fare_rules_result: Any) -> None:
    c = confirm_in_result(fare_rules_result, "hybrid")
    # the experiment's headline (AllR at the 1,200-token budget: at k = 4 the same numbers)
    assert (c.metric, c.split, c.golden_version) == (
        "AllR@budget=1200",
        "heldout",
        "g-4d325c76fa8b",
    )
    r = c.result
    assert (r.n, r.fixed, r.broken) == (23, 4, 0)
    assert r.ci == pytest.approx((1 / 23, 8 / 23))
    assert r.interval == "[+0.043, +0.348]" and r.held
    assert c.n_split == 26  # 3 held-out questions are unanswerable: no evidence, not scored
    # the numbers are the `split heldout` row `ragmeter compare` prints for the same pair
    base = fare_rules_result.baseline.evaluation
    cand = fare_rules_result.variant("hybrid").evaluation
    with pytest.warns(RagmeterWarning, match="slices under 10 questions"):
        row = compare(base, cand, "AllR@budget=1200").splits["heldout"].stats
    assert (row.n, row.fixed, row.broken, row.ci, row.sign_test_p) == (
        r.n,
        r.fixed,
        r.broken,
        r.ci,
        r.sign_test_p,
    )
    assert set(c.fixed_ids) <= {q for q, s in base.splits.items() if s == HELDOUT}
    assert len(c.fixed_ids) == 4 and c.broken_ids == ()
    # without a ledger nothing is recorded (the demo's section 6)
    assert (c.recorded, c.already, c.confirmed_on_split, c.status) == (
        False,
        False,
        (),
        "confirmed",
    )


def test_the_ledger_counts_confirmations_per_version_and_variant(
    fare_rules_result: Any, tmp_path: Path
) -> None:
    book = Ledger(tmp_path / "ledger.jsonl")
    # a confirmation on another golden-set version is another held-out split: not counted
    book.record_confirmation(
        golden_version="g-other", split="heldout", metric="AllR@4", baseline="b", candidate="x"
    )
    first = confirm_in_result(fare_rules_result, "hybrid", ledger=book)
    assert first.recorded and not first.already and first.exit_code == 0
    assert first.confirmed_on_split == (first.variant_id,) and first.warning is None
    # the same variant from another folder (the file's path differs): already confirmed
    lines = (tmp_path / "ledger.jsonl").read_text(encoding="utf-8").splitlines()
    moved = json.loads(lines[-1])
    moved["config"]["experiment"] = "/elsewhere/experiment.toml"
    moved["candidate"] = "hybrid#00000000"
    (tmp_path / "ledger.jsonl").write_text(
        "\n".join([*lines[:-1], json.dumps(moved)]) + "\n", encoding="utf-8"
    )
    again = confirm_in_result(fare_rules_result, "hybrid", ledger=book)
    assert again.already and again.entry == moved and again.warning is None
    second = confirm_in_result(fare_rules_result, "reranker", ledger=book)
    assert second.after_another and second.status == "held-out split spent"
    assert second.exit_code == 1 and second.warning is not None
    assert "no longer held out: 2 variants confirmed on it" in second.warning
    assert len(book.confirmations("g-4d325c76fa8b", "heldout")) == 2
    assert book.summary("g-4d325c76fa8b").n_comparisons == 0


def test_the_baseline_and_unknown_names_are_refused(fare_rules_result: Any) -> None:
    exp = fare_rules_result.experiment
    with pytest.raises(UsageError, match=r"'baseline' is the baseline of .*experiment\.toml:20"):
        find_variant(exp, "baseline")
    with pytest.raises(UsageError, match="has no variant 'nope'"):
        confirm_in_result(fare_rules_result, "nope")
    with pytest.raises(UsageError, match="not scored on both runs"):
        confirm_in_result(fare_rules_result, "hybrid", metric="nDCG@10")


def test_a_beir_golden_set_has_no_heldout_split(fare_rules_result: Any, tmp_path: Path) -> None:
    exp = replace(fare_rules_result.experiment, beir=tmp_path / "scifact")
    with pytest.raises(InputError, match="a BEIR golden set has no 'heldout' split") as err:
        check_heldout(exp)
    assert err.value.path == str(tmp_path / "scifact")
    assert check_heldout(fare_rules_result.experiment) == 26


# -- properties ----------------------------------------------------------------------------------
def _ev(run: str, values: list[int], splits: dict[str, str]) -> Evaluation:
    qids = tuple(splits)
    return Evaluation(
        run=run,
        metrics=(parse("Hit@5"),),
        query_ids=qids,
        values=np.array(values, dtype=float)[:, None],
        golden_version="v1",
        splits=splits,
    )


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 1), st.integers(0, 1), st.booleans()), min_size=2, max_size=60
    ).filter(lambda rows: any(h for *_, h in rows)),
    st.integers(0, 2**16),
)
def test_the_heldout_row_is_a_comparison_of_the_heldout_questions_only(
    rows: list[tuple[int, int, bool]], seed: int
) -> None:
    """What confirm reads (the `split heldout` row) equals comparing the held-out questions
    alone: the tuning questions move no number of a confirmation."""
    splits = {f"q{i}": (HELDOUT if h else "tune") for i, (*_, h) in enumerate(rows)}
    a = _ev("base", [x for x, _, _ in rows], splits)
    b = _ev("cand", [y for _, y, _ in rows], splits)
    kept = [i for i, (*_, h) in enumerate(rows) if h]
    only = {f"q{i}": HELDOUT for i in kept}
    a_only = _ev("base", [rows[i][0] for i in kept], only)
    b_only = _ev("cand", [rows[i][1] for i in kept], only)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = compare(a, b, "Hit@5", seed=seed, n_resamples=500).splits[HELDOUT].stats
        alone = compare(a_only, b_only, "Hit@5", seed=seed, n_resamples=500).overall
    assert row == alone


@given(
    n=st.integers(1, 500),
    fixed=st.integers(0, 50),
    broken=st.integers(0, 50),
    lo=st.floats(-1, 1),
    width=st.floats(0, 1),
    p=st.floats(0, 1),
)
def test_a_recorded_result_reads_back_and_holds_by_the_rule(
    n: int, fixed: int, broken: int, lo: float, width: float, p: float
) -> None:
    r = ConfirmResult(n, 0.5, 0.6, (fixed - broken) / n, (lo, lo + width), fixed, broken, p)
    assert ConfirmResult.from_entry(json.loads(json.dumps(r.to_dict()))) == r
    assert r.held == (fixed - broken > 0 and not (lo <= 0 <= lo + width))
