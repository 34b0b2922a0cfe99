"""The answers demo hook on a synthetic example folder: no network, deterministic output."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from _answers_fixture import answers, write_jsonl, write_world
from rich.console import Console

from ragmeter.cli._demo._answers_section import run
from ragmeter.metrics import Evaluation, parse


def test_demo_section(tmp_path: Path) -> None:
    paths = write_world(tmp_path)
    (tmp_path / "answers").mkdir()
    paths["answers"].rename(tmp_path / "answers" / "baseline.jsonl")
    recs = answers()
    recs[0] = {"id": "change-fee", "answer": "It is $75.", "citations": [{"doc": "fees-2026"}]}
    write_jsonl(tmp_path / "answers" / "rerank.jsonl", recs)
    qids = ("change-fee", "refund-window", "first-bag", "name-change")
    ev = Evaluation(
        "baseline",
        (parse("AllR@3"), parse("AllR@50")),
        qids,
        np.array([[1, 1], [1, 1], [0, 1], [0, 1]], dtype=float),
    )
    buf = io.StringIO()
    out = run(
        Console(file=buf, width=120),
        tmp_path,
        evaluations={"baseline": ev},
        headroom_metric="AllR@50",
    )
    text = buf.getvalue()
    t = out["tables"]["baseline"]
    # no evidence in context for first-bag and name-change, both right: answered from memory
    # (first-bag misquotes its citation, name-change quotes nothing; below the evidence line the
    # split is on correctness)
    assert [
        t.count(k) for k in ("working", "generation_failure", "from_memory", "retrieval_failure")
    ] == [1, 1, 2, 0]
    assert out["comparison"].comparison.fixed == 1
    assert out["diagnosis"].failing_link is not None
    assert "faithful but wrong" in text and "synthetic" in text and "refute" in text
