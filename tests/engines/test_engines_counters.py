"""Counting a worker's work on the caller's object, without Ray: what each class says it counts,
and that adding the counts of batches done on copies (made at any time, as an engine ships them)
gives exactly what the object counts when it does every batch itself."""

from __future__ import annotations

import pickle
import random
from collections.abc import Sequence
from typing import Any, ClassVar

from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.answers.judges import FakeJudge, OpenAIJudge
from ragmeter.engines._counters import add, counted_call, counters, difference
from ragmeter.engines._pool import _Holder
from ragmeter.generation import CallableGenerator, OpenAIGenerator
from ragmeter.retrieval.dense import MiniLMEncoder

USAGE = (
    "http_requests",
    "cache_hits",
    "retries",
    "failures",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "unknown_usage",
)


def _answer(question: str, passages: list[Any]) -> str:
    return "an answer"


def test_what_each_class_counts() -> None:
    url = "http://127.0.0.1:9/v1"
    assert set(counters(FakeJudge())) == {"calls"}
    assert set(counters(MiniLMEncoder())) == {"calls", "texts_encoded"}
    assert set(counters(CallableGenerator(_answer))) == {"calls", "errors"}
    # no prices: cost is None, not counted (never turned into 0 by adding)
    judge = OpenAIJudge(base_url=url, model="m")
    assert set(counters(judge)) == {f"usage.{f}" for f in USAGE if f != "cost"}
    priced = OpenAIJudge(base_url=url, model="m", price_per_1k_prompt=1.0)
    assert set(counters(priced)) == {f"usage.{f}" for f in USAGE}
    gen = OpenAIGenerator(url, "m", price_per_1k_completion=2.0)
    assert set(counters(gen)) == {f"client.usage.{f}" for f in USAGE}


class Usage:
    COUNTERS: ClassVar[tuple[str, ...]] = ("tokens", "cost", "unpriced")

    def __init__(self) -> None:
        self.tokens = 0
        self.cost = 0.0
        self.unpriced: float | None = None


class Model:
    """Counts calls and items, tokens and cost in a usage record; ``limit`` and ``seen`` are
    numbers that are not counters (never added to)."""

    COUNTERS: ClassVar[tuple[str, ...]] = ("calls", "items", "usage", "missing")

    def __init__(self) -> None:
        self.calls = 0
        self.items = 0
        self.usage = Usage()
        self.limit = 1000
        self.seen = 0

    def work(self, batch: Sequence[int], *, scale: int = 1) -> list[int]:
        self.calls += 1
        self.seen = len(batch)  # a number, not a counter: the last batch's size
        for x in batch:
            self.items += 1
            self.usage.tokens += x * scale
            self.usage.cost += x / 8  # exact in binary: sums the same in any order
        return [x * scale for x in batch]


def _state(m: Model) -> tuple[Any, ...]:
    return (m.calls, m.items, m.usage.tokens, m.usage.cost, m.usage.unpriced, m.limit)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.lists(st.integers(0, 50), max_size=6), min_size=1, max_size=12),
    workers=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1),
)
def test_counts_added_from_copies_equal_the_work_done_in_place(
    sizes: list[list[int]], workers: int, seed: int
) -> None:
    rnd = random.Random(seed)
    here = Model()
    expected = [here.work(b, scale=2) for b in sizes]

    caller = Model()
    caller.work([7])  # counts from before the job: they travel in the copies and are not re-added
    before = _state(caller)
    copies: list[Any] = []
    got = []
    for batch in sizes:
        if not copies or (len(copies) < workers and rnd.random() < 0.5):
            copies.append(pickle.loads(pickle.dumps(caller)))  # a worker built now
        worker = rnd.choice(copies)
        result, delta = counted_call(worker, "work", batch, {"scale": 2})
        add(caller, delta)
        got.append(result)
    assert got == expected
    assert caller.calls - before[0] == here.calls
    assert caller.items - before[1] == here.items
    assert caller.usage.tokens - before[2] == here.usage.tokens
    assert caller.usage.cost - before[3] == here.usage.cost
    assert caller.usage.unpriced is None and caller.limit == 1000 and caller.seen == 1


def test_a_worker_returns_its_counts_with_each_batch() -> None:
    holder = _Holder(Model)
    added = {"calls": 1, "items": 2, "usage.tokens": 3, "usage.cost": 0.375}
    assert holder.call("work", [1, 2], {}) == ([1, 2], added)
    # only what this batch added: the worker's earlier batches are not sent again
    assert holder.call("work", [], {"scale": 3}) == ([], {"calls": 1})


def test_difference_and_add() -> None:
    assert difference({"a": 3, "b.c": 2.5, "d": 1}, {"a": 1, "b.c": 2.5}) == {"a": 2, "d": 1}
    m = Model()
    # unknown paths, a counter kept as None and a path through a missing holder are skipped
    add(m, {"calls": 2, "usage.unpriced": 1.5, "nothing": 4, "missing.x": 1, "usage.cost": 0.5})
    assert (m.calls, m.usage.unpriced, m.usage.cost) == (2, None, 0.5)
    assert not hasattr(m, "nothing")
