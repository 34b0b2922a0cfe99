"""A store holding generated answers, as ``ragmeter run --db`` records them: a small slice of
the fare-rules example (10 answerable and 4 unanswerable questions) answered by the example's
extractive generator in two context orders (``rank`` the baseline, ``sandwich``) and judged by
the fake judge (faithfulness and answer relevance, each with its reason). Shared by the trace
view's tests."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from _experiment_files import FARE_RULES, fare_rules_experiment

#: 10 answerable questions and 4 unanswerable ones (lines 81-84 of the example's golden set)
SLICE = (*range(0, 10), *range(80, 84))

EXPERIMENT = """
name = "judged context order"
golden = "golden.jsonl"
corpus = "{corpus}"
output = "runs"
k = 4
metrics = ["R"]
headroom_k = 20

[generator]
kind = "python"
target = "generators.extractive:answer"

[judge]
kind = "fake"
metrics = ["faithfulness", "answer_relevance"]

[baseline]
name = "rank"
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50

[[variant]]
name = "sandwich"
order = "sandwich"
"""


@dataclass
class TraceStore:
    root: Path
    url: str
    ids: dict[str, int]  #: variant -> run id
    qids: list[str]  #: the slice's question ids, in the golden set's order


def record_generated(root: Path) -> TraceStore:
    """Run the experiment under ``root`` and record it into ``root/lab.db``."""
    import json

    from ragmeter import Store
    from ragmeter.workflows.experiment import run_and_record

    text = EXPERIMENT.format(corpus=FARE_RULES / "corpus.jsonl")
    path = fare_rules_experiment(
        root, text, files=(), trees=["generators"], cache=["chunkings", "bm25"]
    )
    lines = (FARE_RULES / "golden.jsonl").read_text(encoding="utf-8").splitlines()
    kept = [lines[i] for i in SLICE]
    (root / "golden.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    url = f"sqlite:///{root / 'lab.db'}"
    with Store.open(url) as store, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, ids = run_and_record(store, path)
    return TraceStore(root, url, ids, [json.loads(x)["id"] for x in kept])
