"""One rule for "one change per run": `ragmeter run` (experiment warnings), `compare`, `gate` and
the ledger all ask :func:`ragmeter.paired.changes`.

The evaluation configs below are built exactly as ``ragmeter run`` writes them into
``runs/<variant>/evaluation.json`` (the span evaluator's keys, then the run's ``settings``).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter import Evaluation, RagmeterWarning, UsageError
from ragmeter.experiments import Settings, effective_changes, load_experiment, settings_config
from ragmeter.metrics import parse
from ragmeter.paired import Change, Ledger, changes, compare, context_budget
from ragmeter.retrieval import describe
from ragmeter.retrieval._specs import normalize_reranker, normalize_retriever

BM25 = normalize_retriever("bm25", "retriever", [])
HYBRID = normalize_retriever(
    {"kind": "hybrid", "fusion": "rrf", "of": ["bm25", "dense"]}, "retriever", []
)
E5 = normalize_reranker({"kind": "bi-encoder", "model": "e5", "top": 20}, "reranker", [])
BASE = Settings(chunker="tokens:300:0", retriever=BM25, depth=50, k=4, budget=1200)


def as_run_writes(s: Settings, budgets: tuple[int, ...] = (1200,)) -> dict[str, Any]:
    """The ``config`` of an evaluation.json written by ``ragmeter run`` for these settings."""
    chunking = s.chunker or str(s.chunks)
    cfg: dict[str, Any] = {
        "level": "span",
        "chunking": chunking,
        "tokenizer": "minilm-wordpiece",
        "cover": 0.5,
        "budgets": list(budgets),
        "ties": "trec",
        "missing": "zero",
        "n_spans": 138,
        "effective_k": {str(b): {"min": 4, "median": 4.0, "max": 6} for b in budgets},
        "experiment": "examples/fare-rules/experiment.toml",
        "settings": {
            "chunker": chunking,
            "retriever": describe(s.retriever) if s.run is None else f"imported {s.run.name}",
            "reranker": describe(s.reranker),
            "depth": s.depth,
            "k": s.k,
            "budget": s.budget,
        },
    }
    return cfg


def span_eval(run: str, config: dict[str, Any], values: list[float]) -> Evaluation:
    qids = tuple(f"q{i:02d}" for i in range(len(values)))
    return Evaluation(
        run,
        (parse("AllR@budget=1200"),),
        qids,
        np.array(values)[:, None],
        golden_version="g1",
        config=config,
    )


# -- the regression: smaller chunks at an equal budget ------------------------------------------
def test_compare_counts_smaller_chunks_at_equal_budget_as_one_change() -> None:
    # the fare-rules baseline and "smaller chunks" configs, as written by `ragmeter run`
    base = json.loads(
        '{"level": "span", "chunking": "tokens:300:0", "tokenizer": '
        '"minilm-wordpiece", "cover": 0.5, "budgets": [1200], "ties": "trec", '
        '"missing": "zero", "n_spans": 138, "effective_k": {"1200": {"min": 4, '
        '"median": 4.0, "max": 6}}, "experiment": '
        '"examples/fare-rules/experiment.toml", "settings": {"chunker": '
        '"tokens:300:0", "retriever": "bm25", "reranker": "none", "depth": 50, '
        '"k": 4, "budget": 1200}}'
    )
    small = json.loads(
        json.dumps(base)
        .replace("tokens:300:0", "tokens:100:0")
        .replace('"k": 4', '"k": 12')
        .replace('"median": 4.0', '"median": 12.0')
    )
    assert small["settings"]["k"] == 12 and small["chunking"] == "tokens:100:0"
    a = span_eval("baseline", base, [1, 0, 1, 1, 0, 1])
    b = span_eval("smaller chunks", small, [1, 1, 1, 0, 0, 1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c = compare(a, b, "AllR@budget=1200", strict=True)
    notes = [str(w.message) for w in caught]
    assert not any("more than one change" in n for n in notes), notes
    assert not any("more than one change" in n for n in c.warnings)
    assert [ch.name for ch in c.changes] == ["chunking"]
    (ch,) = c.changes
    # the chunking recorded twice and the k that keeps the budget, grouped in one change
    assert [d.key for d in ch.diffs] == ["chunking", "settings.chunker", "settings.k"]
    assert "equal context budget" in ch.note and "1200" in ch.note
    assert c.fairness == ()
    assert c.to_dict()["changes"] == [ch.to_dict()]
    assert c.to_dict()["changes"][0]["settings"] == ["chunking", "settings.chunker", "settings.k"]


# -- one verdict for run and compare over a table of pairs ---------------------------------------
CASES: list[tuple[str, Settings, Settings, list[str]]] = [
    ("nothing", BASE, BASE, []),
    (
        "smaller chunks, explicit equal budget",
        BASE,
        replace(BASE, chunker="tokens:100:0", k=12),
        ["chunking"],
    ),
    ("chunker only", BASE, replace(BASE, chunker="tokens:200:0"), ["chunking"]),
    (
        "k scaled within 10% (no budget set)",
        replace(BASE, budget=None),
        replace(BASE, budget=None, chunker="tokens:100:0", k=13),
        ["chunking"],
    ),
    (
        "k scaled exactly 10% (no budget set)",
        replace(BASE, budget=None, chunker="tokens:250:0"),
        replace(BASE, budget=None, chunker="tokens:100:0", k=11),
        ["chunking"],
    ),
    (
        "k scaled outside 10% (no budget set)",
        replace(BASE, budget=None),
        replace(BASE, budget=None, chunker="tokens:100:0", k=14),
        ["chunking", "k"],
    ),
    (
        "k scaled, chunker not size-named",
        replace(BASE, budget=None),
        replace(BASE, budget=None, chunker="sentences:3", k=12),
        ["chunking", "k"],
    ),
    ("k only", BASE, replace(BASE, k=8), ["k"]),
    ("retriever", BASE, replace(BASE, retriever=HYBRID), ["retriever"]),
    ("reranker", BASE, replace(BASE, reranker=E5), ["reranker"]),
    (
        "retriever and reranker",
        BASE,
        replace(BASE, retriever=HYBRID, reranker=E5),
        ["reranker", "retriever"],
    ),
    ("reranker and depth", BASE, replace(BASE, reranker=E5, depth=100), ["depth", "reranker"]),
    (
        "imported run",
        replace(BASE, reranker=E5),
        replace(BASE, retriever=None, reranker=None, run=Path("prod/run.jsonl")),
        ["run"],
    ),
    ("budget", BASE, replace(BASE, budget=2400), ["budget"]),
    (
        "chunking and budget",
        BASE,
        replace(BASE, chunker="tokens:100:0", k=12, budget=600),
        ["budget", "chunking", "k"],
    ),
]


@pytest.mark.parametrize("what, base, cand, expected", CASES, ids=[c[0] for c in CASES])
def test_run_and_compare_give_one_verdict(
    what: str, base: Settings, cand: Settings, expected: list[str]
) -> None:
    # `ragmeter run`: the experiment's count, and its warning
    ran = sorted(effective_changes(base, cand))
    assert ran == expected, what
    # `ragmeter compare` on the evaluation.json files that run writes
    a = span_eval("A", as_run_writes(base), [1, 0, 1])
    b = span_eval("B", as_run_writes(cand), [1, 1, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagmeterWarning)
        c = compare(a, b, "AllR@budget=1200")
    assert sorted(ch.name for ch in c.changes) == expected, what
    several = any("more than one change" in w for w in c.warnings)
    assert several == (len(expected) > 1), what
    # the rule on the two mapping shapes (the run's settings, the evaluation's config) agrees
    assert (
        sorted(ch.name for ch in changes(settings_config(base), settings_config(cand))) == expected
    )


def test_run_warnings_and_compare_notes_agree(tmp_path: Path) -> None:
    """An experiment file with one variant per case: warned iff compare notes several changes."""
    text = [
        'name = "t"\ngolden = "g.jsonl"\ncorpus = "c.jsonl"\nk = 4\nheadroom_k = 4\n'
        'metrics = ["R"]\n[baseline]\nchunker = "tokens:300:0"\nretriever = "bm25"\n'
        "depth = 50\n"
    ]
    variants = {
        "smaller chunks k13": 'chunker = "tokens:100:0"\nk = 13',
        "smaller chunks k14": 'chunker = "tokens:100:0"\nk = 14',
        "two": 'retriever = "hybrid"\nreranker = "e5"',
        "one": 'reranker = "e5"',
    }
    for name, body in variants.items():
        text.append(f'[[variant]]\nname = "{name}"\n{body}\n')
    path = tmp_path / "experiment.toml"
    path.write_text("\n".join(text), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagmeterWarning)
        exp = load_experiment(path)
    several = {
        v.name
        for v in exp.variants
        if any(f"variant '{v.name}' changes" in w and "things" in w for w in exp.warnings)
    }
    assert several == {"smaller chunks k14", "two"}
    for v in exp.variants:
        a = span_eval("A", as_run_writes(exp.baseline.settings), [1, 0])
        b = span_eval("B", as_run_writes(v.settings), [0, 1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RagmeterWarning)
            c = compare(a, b, "AllR@budget=1200")
        assert any("more than one change" in w for w in c.warnings) == (v.name in several)


# -- the budget notion ---------------------------------------------------------------------------
def test_context_budget_sources_in_order() -> None:
    assert (
        context_budget({"settings": {"budget": 1200, "k": 4, "chunker": "tokens:100:0"}}).tokens
        == 1200
    )
    b = context_budget({"chunking": "tokens:300:50", "k": 4})
    assert b is not None and b.tokens == 1200 and b.source == "k x chunk size"
    m = context_budget({"chunking": "sentences:3", "k": 4, "context_tokens": 1087.5})
    assert m is not None and m.tokens == 1087.5 and m.source == "measured"
    assert context_budget({"chunking": "sentences:3", "k": 4}) is None
    # a hybrid retriever's RRF k is not the prompt k
    assert (
        context_budget(
            {"settings": {"retriever": {"kind": "hybrid", "k": 60}, "chunker": "tokens:100:0"}}
        )
        is None
    )


def test_same_setting_under_two_keys_counts_once() -> None:
    a = {
        "chunking": "tokens:300:0",
        "settings": {"chunker": "tokens:300:0", "depth": 50},
        "depth": 50,
    }
    b = {
        "chunking": "tokens:900:0",
        "settings": {"chunker": "tokens:900:0", "depth": 100},
        "depth": 100,
    }
    got = changes(a, b)
    assert [(c.name, [d.key for d in c.diffs]) for c in got] == [
        ("chunking", ["chunking", "settings.chunker"]),
        ("depth", ["depth", "settings.depth"]),
    ]
    assert str(got[0]) == "chunking: tokens:300:0 -> tokens:900:0"
    assert isinstance(got[0], Change)
    # bookkeeping and measurements are never a change
    assert (
        changes(
            {"run": "a", "effective_k": 4, "context_tokens": 1000.0},
            {"run": "b", "effective_k": 12, "context_tokens": 1010.0},
        )
        == []
    )


def test_fairness_uses_the_same_budget_notion() -> None:
    def at_k(run: str, config: dict[str, Any]) -> Evaluation:
        return Evaluation(
            run, (parse("R@4"),), ("q1", "q2"), np.array([[1.0], [0.0]]), config=config
        )

    cfg = {"chunking": "tokens:300:0", "k": 4}
    within = {"chunking": "tokens:100:0", "k": 13}  # 1300 vs 1200: within 10%
    outside = {"chunking": "tokens:100:0", "k": 14}  # 1400 vs 1200: 16.7% more
    for cand, unfair_budget in ((within, False), (outside, True)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RagmeterWarning)
            c = compare(at_k("A", cfg), at_k("B", cand), "R@4")
        budget_notes = [f for f in c.fairness if "different context budgets" in f]
        assert bool(budget_notes) == unfair_budget
        if unfair_budget:
            assert "1200 -> 1400 tokens" in budget_notes[0]
        # a chunking compared at a rank cutoff is unfair either way
        assert any("different chunkings" in f for f in c.fairness)
    # explicit budgets are flagged beyond 10% whatever the metric, as before
    a = span_eval("A", {"budget": 1200}, [1, 0])
    with pytest.raises(UsageError, match="different context budgets"):
        compare(a, span_eval("B", {"budget": 3600}, [0, 1]), strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = compare(a, span_eval("B", {"budget": 1250}, [0, 1]), strict=True)
    assert [ch.name for ch in c.changes] == ["budget"] and c.fairness == ()

    # at a rank cutoff, measured budgets apart by more than 10% are unfair; within, fair
    def measured(run: str, tokens: float) -> Evaluation:
        return Evaluation(
            run,
            (parse("R@4"),),
            ("q",),
            np.array([[1.0]]),
            config={"chunking": "sentences:3", "k": 4, "context_tokens": tokens},
        )

    with pytest.raises(
        UsageError,
        match=r"different context budgets \(1100 -> 1500 tokens, "
        r"measured",
    ):
        compare(measured("A", 1100.0), measured("B", 1500.0), strict=True)
    assert compare(measured("A", 1100.0), measured("B", 1200.0), strict=True).fairness == ()


def test_ledger_records_the_changes(tmp_path: Path) -> None:
    book = Ledger(tmp_path / "ledger.jsonl")
    base = as_run_writes(BASE)
    small = as_run_writes(replace(BASE, chunker="tokens:100:0", k=12))
    entry = book.record(
        golden_version="g1",
        metric="AllR@budget=1200",
        baseline="baseline",
        candidate="smaller chunks",
        baseline_config=base,
        candidate_config=small,
    )
    assert entry["changes"] == ["chunking"]
    assert book.entries()[0]["changes"] == ["chunking"]


@pytest.mark.parametrize(
    "candidate",
    [
        {"chunker": None, "retriever": "langchain(rag:make_retriever)", "reranker": "none"},
        {"chunker": "tokens:300:0", "retriever": {"kind": "python", "target": "rag:retrieve"}},
        {"chunker": None, "retriever": "llamaindex(rag:make)", "reranker": "e5@20"},
    ],
)
def test_a_pipeline_replaces_chunking_retrieval_and_reranking_as_one_change(candidate) -> None:
    base = {"chunker": "tokens:300:0", "retriever": "bm25", "reranker": "none", "k": 4}
    found = changes({"settings": base}, {"settings": {**base, **candidate}})
    assert [c.name for c in found] == ["pipeline"]


def test_a_pipeline_does_not_swallow_a_k_change() -> None:
    base = {"chunker": "tokens:300:0", "retriever": "bm25", "k": 4}
    cand = {"chunker": None, "retriever": "python(rag:retrieve)", "k": 8}
    assert [c.name for c in changes({"settings": base}, {"settings": cand})] == ["k", "pipeline"]


@pytest.mark.parametrize("threads", [1, 2, "auto"])
def test_encoder_threads_are_not_a_change(threads: Any) -> None:
    """Threads change speed, never the vectors: a variant that only sets them changes nothing,
    and beside a real change they do not make it two."""
    base = {"settings": {"chunker": "tokens:300:0", "retriever": {"kind": "dense"}, "k": 4}}
    same = {"settings": {**base["settings"], "retriever": {"kind": "dense", "threads": threads}}}
    assert changes(base, same) == []
    moved = {"settings": {**same["settings"], "k": 5}}
    assert [c.name for c in changes(base, moved)] == ["k"]
