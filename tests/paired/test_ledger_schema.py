"""The selection ledger's entry schema: comparisons, and confirmations on the held-out split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ragmeter.paired import Ledger
from ragmeter.paired._ledger_schema import LedgerEntry

OLD = {  # an entry as every ledger written before confirmations holds it (no "kind")
    "time": "2026-01-02T03:04:05+00:00",
    "golden_version": "g-1",
    "metric": "AllR@4",
    "baseline": "baseline#c113b463",
    "candidate": "hybrid#62f573d1",
    "changes": ["retriever"],
    "n": 80,
    "mean_delta": 0.15,
    "ci": [0.075, 0.225],
}


def _confirm(book: Ledger, version: str, split: str, name: str, k1: float) -> dict:
    return book.record_confirmation(
        golden_version=version,
        split=split,
        metric="AllR@4",
        baseline="baseline",
        candidate=name,
        baseline_config={"settings": {"k1": 1.2}},
        candidate_config={"settings": {"k1": k1}},
        result={"n": 23, "fixed": 4, "broken": 0, "ci": (0.04, 0.35), "sign_test_p": 0.125},
    )


def test_old_entries_still_validate_and_read_as_comparisons(tmp_path: Path) -> None:
    assert LedgerEntry.model_validate(OLD).kind == "compare"
    book = Ledger(tmp_path / "l.jsonl")
    book.append(OLD)
    assert book.summary("g-1").n_comparisons == 1 and book.confirmations("g-1") == []


def test_every_confirmation_written_validates(tmp_path: Path) -> None:
    book = Ledger(tmp_path / "l.jsonl")
    e = _confirm(book, "g-1", "heldout", "hybrid", 0.9)
    assert (e["kind"], e["split"], e["config"]) == ("confirm", "heldout", {"settings.k1": 0.9})
    assert e["candidate"] == Ledger.variant_id("hybrid", {"settings": {"k1": 0.9}})
    assert e["ci"] == [0.04, 0.35] and e["baseline_mean"] is None
    line = (tmp_path / "l.jsonl").read_text(encoding="utf-8")
    assert LedgerEntry.model_validate(json.loads(line)).fixed == 4


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"kind": "confirm"}, "names its 'split'"),
        ({"split": "heldout"}, "only a confirmation"),
        ({"fixed": 3}, "only a confirmation"),
        ({"kind": "select"}, "kind"),
        ({"kind": "confirm", "split": "heldout", "sign_test_p": 1.5}, "sign_test_p"),
        ({"kind": "confirm", "split": " "}, "split"),
    ],
)
def test_entries_the_writer_never_writes_are_refused(change: dict, why: str) -> None:
    with pytest.raises(ValidationError, match=why):
        LedgerEntry.model_validate({**OLD, **change})


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.booleans(),  # a confirmation (else a comparison)
            st.sampled_from(["g-1", "g-2"]),
            st.sampled_from(["heldout", "tune"]),
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from([0.5, 0.9]),
        ),
        max_size=12,
    )
)
def test_confirmations_never_count_as_variants_tried(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[bool, str, str, str, float]]
) -> None:
    book = Ledger(tmp_path_factory.mktemp("ledger") / "l.jsonl")
    for is_confirm, version, split, name, k1 in ops:
        if is_confirm:
            _confirm(book, version, split, name, k1)
        else:
            book.record(
                golden_version=version,
                metric="AllR@4",
                baseline="baseline",
                candidate=name,
                candidate_config={"settings": {"k1": k1}},
            )
    for version in ("g-1", "g-2"):
        compared = [op for op in ops if not op[0] and op[1] == version]
        summary = book.summary(version)
        assert summary.n_comparisons == len(compared)
        assert summary.n_variants == len({(n, k) for *_, n, k in compared})
        for split in ("heldout", "tune"):
            mine = book.confirmations(version, split)
            assert len(mine) == sum(op[0] and op[1:3] == (version, split) for op in ops)
            assert all(LedgerEntry.model_validate(e).kind == "confirm" for e in mine)
