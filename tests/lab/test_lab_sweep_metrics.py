"""The lab's sweep metrics (``lab._data_sweeps.sweep_metrics``): read from the metric registry,
never a list of its own; every span metric drawable by a span sweep, and P and nDCG over k on
item qrels (for runs of one chunking: tests/lab/test_lab_rough_edges.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ragmeter import UsageError
from ragmeter.chunking import Chunking
from ragmeter.data import Corpus, Document, Evidence, GoldenSet, Question
from ragmeter.lab._data_sweeps import sweep_choices, sweep_metrics, sweeps_context
from ragmeter.metrics import REGISTRY
from ragmeter.paired import sweep_spans
from ragmeter.workflows.sweep import span_metrics

TEXTS = {"d1": "The lounge opens at six.", "d2": "Exit rows are orange.", "d3": "Pets fly."}


def test_the_sweep_metrics_are_the_registrys_span_metrics_and_p_and_ndcg() -> None:
    names = sweep_metrics()
    assert set(names) == {"R", "Hit", "P", "RR", "nDCG", "AllR"}
    assert set(span_metrics()) == {n for n, info in REGISTRY.items() if info.budget}
    assert names == tuple(n for n in REGISTRY if n in span_metrics() or n in ("P", "nDCG"))


def test_a_new_span_metric_is_offered_without_touching_the_lab(monkeypatch) -> None:
    extra = replace(REGISTRY["R"], name="Rx")
    monkeypatch.setitem(REGISTRY, "Rx", extra)
    assert sweep_metrics()[-1] == "Rx"

    class NoRuns:
        def runs(self) -> list[Any]:
            return []

    assert sweep_choices(NoRuns()).metrics == list(sweep_metrics())  # type: ignore[arg-type]


def test_a_metric_the_sweep_cannot_draw_is_refused_by_name() -> None:
    with pytest.raises(
        UsageError, match=r"a sweep draws one of R, Hit, P, RR, nDCG, AllR, got 'AP'"
    ):
        sweeps_context(None, [1], metric="AP")  # type: ignore[arg-type]


def test_every_span_metric_draws_on_span_labels() -> None:
    corpus = Corpus([Document(id=d, text=t) for d, t in TEXTS.items()])
    qs = [
        Question(
            id=f"q{i}",
            question=f"q{i}?",
            answer="x",
            evidence=[Evidence(doc=d, start=0, end=len(TEXTS[d]), grade=1)],
        )
        for i, d in enumerate(TEXTS, 1)
    ]
    ids = list(TEXTS)
    chunking = Chunking(
        name="whole-docs",
        tokenizer="test",
        ids=[f"{d}#0" for d in ids],
        doc=ids,
        start=[0] * len(ids),
        end=[len(TEXTS[d]) for d in ids],
        text=list(TEXTS.values()),
        n_tokens=[5] * len(ids),
    )
    ranked = {f"q{i}": {f"{d}#0": 3.0 - j for j, d in enumerate(ids)} for i in (1, 2, 3)}
    golden = GoldenSet(qs, corpus=corpus)
    for name in span_metrics():
        s = sweep_spans(golden, {"run": (chunking, ranked)}, name, "1..3", kind="k", headroom_k=3)
        assert s.values.shape == (1, 3), name
        assert s.values[0, -1] == pytest.approx(1.0 if name != "RR" else 11 / 18), name
