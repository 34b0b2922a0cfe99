"""Selection accounting: the local ledger counts comparisons and variants per golden-set version."""

from __future__ import annotations

import json
import os
import warnings
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import pytest

from ragmeter import Evaluation, InputError, RagmeterWarning
from ragmeter.metrics import parse
from ragmeter.paired import DEFAULT_LEDGER, UNVERSIONED, Ledger, compare
from ragmeter.paired._ledger import variant_id


def ev(run: str, values: list[float], version: str | None = "v1", **config) -> Evaluation:
    qids = tuple(f"q{i}" for i in range(len(values)))
    return Evaluation(
        run=run,
        metrics=(parse("Hit@5"),),
        query_ids=qids,
        values=np.array(values, dtype=float)[:, None],
        golden_version=version,
        config=config,
    )


BASE = [1, 1, 0, 0, 1, 0, 1, 0, 1, 1]
CAND = [1, 0, 1, 1, 1, 0, 1, 1, 1, 1]


def test_default_path_is_under_the_current_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert Ledger().path == tmp_path / DEFAULT_LEDGER == tmp_path / ".ragmeter" / "ledger.jsonl"


def test_first_comparison_counts_without_selection_note(tmp_path: Path) -> None:
    book = Ledger(tmp_path / "l.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = compare(ev("bm25", BASE), ev("bm25", CAND, k1=0.9), ledger=book)
    assert c.n_variants_tried == 1 and c.selection is None
    # same name, other settings: another variant, so the selection note appears
    with pytest.warns(RagmeterWarning, match="2 variants"):
        c2 = compare(ev("bm25", BASE), ev("bm25", CAND, k1=0.5), ledger=book)
    assert c2.n_variants_tried == 2 and c2.selection is not None


def test_variants_accumulate_and_optimism_is_reported(tmp_path: Path) -> None:
    book = Ledger(tmp_path / "ledger.jsonl")
    for i in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RagmeterWarning)
            compare(ev("base", BASE), ev(f"cand{i}", CAND), ledger=book)
    with pytest.warns(RagmeterWarning, match="4 variants have been tried on golden set version v1"):
        c = compare(ev("base", BASE), ev("cand3", CAND), ledger=book)
    assert c.n_variants_tried == 4
    assert c.selection is not None and c.selection.n_variants == 4
    assert c.selection.optimism > 0
    s = book.summary("v1")
    assert s.n_comparisons == 4 and s.variants == ("cand0", "cand1", "cand2", "cand3")
    assert book.summary("v2").n_comparisons == 0
    d = c.to_dict()
    assert d["n_variants_tried"] == 4 and d["selection"]["n_variants"] == 4


def test_versions_are_counted_apart_and_unversioned_has_a_key(tmp_path: Path) -> None:
    book = Ledger(tmp_path / "ledger.jsonl")
    compare(ev("a", BASE), ev("b", CAND), ledger=book)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagmeterWarning)
        compare(ev("a", BASE, "v2"), ev("c", CAND, "v2"), ledger=book)
        compare({"q": 1}, {"q": 0}, ledger=book)
    assert book.summary("v1").n_comparisons == 1
    assert book.summary("v2").variants == ("c",)
    assert book.summary(None).golden_version == UNVERSIONED
    assert book.summary(None).n_comparisons == 1
    entry = book.entries()[0]
    assert entry["metric"] == "Hit@5" and entry["n"] == 10 and len(entry["ci"]) == 2


def test_variant_id_ignores_bookkeeping() -> None:
    assert variant_id("r", {}) == "r"
    assert variant_id("r", {"run": "x", "created_at": "t"}) == "r"
    assert variant_id("r", {"k1": 0.9}) != variant_id("r", {"k1": 1.2})
    assert variant_id("r", {"a": {"b": 1}}) == variant_id("r", {"a": {"b": 1}, "path": "/p"})


def test_torn_last_line_is_skipped_and_corrupt_lines_are_errors(tmp_path: Path) -> None:
    p = tmp_path / "ledger.jsonl"
    book = Ledger(p)
    book.record(golden_version="v1", metric="Hit@5", baseline="a", candidate="b")
    with p.open("a") as f:
        f.write('{"golden_version": "v1", "metr')  # a writer killed mid-line
    assert len(book.entries()) == 1
    p.write_text('{"golden_version": "v1"}\nnot json\n{"golden_version": "v1"}\n')
    with pytest.raises(InputError, match=r"ledger.jsonl:2"):
        book.entries()
    p.write_text('{"metric": "x"}\n')
    with pytest.raises(InputError, match="golden_version"):
        book.entries()


def _append_many(args: tuple[str, int]) -> None:
    path, worker = args
    book = Ledger(path)
    for i in range(50):
        book.record(
            golden_version="v1",
            metric="Hit@5",
            baseline="base",
            candidate=f"w{worker}-{i}" + "x" * 200,
        )


def test_concurrent_appends_never_interleave(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.jsonl")
    with get_context("fork").Pool(4) as pool:
        pool.map(_append_many, [(path, w) for w in range(4)])
    lines = Path(path).read_text().splitlines()
    assert len(lines) == 200
    assert all(json.loads(line)["golden_version"] == "v1" for line in lines)


def test_unwritable_ledger_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(InputError, match="cannot write the ledger"):
        Ledger(blocker / "sub" / "ledger.jsonl").record(
            golden_version=None, metric="m", baseline="a", candidate="b"
        )
    assert os.path.isfile(blocker)


def test_non_finite_values_are_written_as_null(tmp_path) -> None:
    """A comparison over no questions has no mean: the ledger records null, not NaN, and reads
    back through the one JSON reader."""
    from ragmeter.paired import Ledger

    led = Ledger(tmp_path / "ledger.jsonl")
    led.append(
        {"golden_version": "g-1", "mean_delta": float("nan"), "ci": [float("-inf"), 0.5], "n": 0}
    )
    text = (tmp_path / "ledger.jsonl").read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert '"mean_delta": null' in text and '"ci": [null, 0.5]' in text
    assert len(list(led.entries())) == 1
