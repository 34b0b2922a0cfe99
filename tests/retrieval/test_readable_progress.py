"""Progress off a terminal (issue 16, item 4): a line at least every 30 s of work and an estimate
before slow work, on an injected clock (never the wall clock)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.retrieval import progress_for
from ragmeter.retrieval._progress import SILENT, LineProgress, RichProgress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _sink(every: float = 30.0) -> tuple[LineProgress, Clock, list[tuple[float, str]]]:
    clock = Clock()
    lines: list[tuple[float, str]] = []
    sink = LineProgress(
        lambda s: lines.append((clock.now, s)), clock=clock, every=every, cores=2, heartbeat=False
    )
    return sink, clock, lines


def test_a_slow_encoder_prints_an_estimate_then_a_line_every_30_s() -> None:
    sink, clock, lines = _sink()
    with sink.step("embed 3176 items (e5)", 3176) as advance:
        clock.now = 24.0
        advance(32)  # 1.33 texts/s: 3,176 take about 40 min
        assert lines == [
            (24.0, "embed 3176 items (e5): about 40 min for 3,176 items on 2 cores "
                   "(1.33/s over the first 32)"),
        ]  # fmt: skip
        for i in range(2, 100):  # then 32 more every 10 s: 3,168 done at t = 1004 s
            clock.now = 24.0 + 10.0 * (i - 1)
            advance(32)
    # a line 30 s after the last one: at t = 24 + 30m, when 32 * (3m + 1) are done
    assert [t for t, _ in lines[1:-1]] == [24.0 + 30.0 * m for m in range(1, 33)]
    # the last one at t = 984 s, 3,104 done: 3.15/s overall, 72 left take about 23 s
    assert lines[-2][1] == (
        "embed 3176 items (e5): 3,104/3,176 (98%), 16 min 24 s elapsed, about 23 s left"
    )
    assert lines[-1] == (1004.0, "embed 3176 items (e5): done, 3,168 in 16 min 44 s")


def test_a_cached_head_and_empty_reports_do_not_fool_the_estimate() -> None:
    sink, clock, lines = _sink()
    with sink.step("embed 1000 items (m)", 1000) as advance:
        advance(0)  # nothing yet
        advance(200)  # 200 from the cache, at once: no rate to speak of
        clock.now = 10.0
        advance(100)  # 300 in 10 s: 1,000 take about 33 s, under a minute: no estimate
        clock.now = 20.0
        advance(100)
    assert lines == []
    sink, clock, lines = _sink()
    with sink.step("embed 1000 items (m)", 1000) as advance:
        advance(200)
        clock.now = 40.0
        advance(10)  # 210 in 40 s: 1,000 take about 3 min
    assert lines[0] == (
        40.0,
        "embed 1000 items (m): about 3 min for 1,000 items on 2 cores (5.25/s over the first 210)",
    )


def test_quick_steps_print_nothing() -> None:
    sink, clock, lines = _sink()
    with sink.step("score baseline", None):
        clock.now = 29.0
        sink.tick()
    with sink.step("embed 80 items (minilm)", 80) as advance:
        clock.now = 29.0
        advance(80)
    assert lines == []


def test_a_step_without_a_total_still_says_it_is_working() -> None:
    sink, clock, lines = _sink()
    with sink.step("score 63520 pairs (e5)", None):
        for second in range(1, 95):
            clock.now = float(second)
            sink.tick()  # the heartbeat thread's call
    assert [t for t, _ in lines] == [30.0, 60.0, 90.0, 94.0]
    assert lines[0][1] == "score 63520 pairs (e5): working, 30 s elapsed"
    assert lines[-1][1] == "score 63520 pairs (e5): done in 1 min 34 s"


@settings(max_examples=200, deadline=None)
@given(
    gaps=st.lists(st.floats(min_value=0.0, max_value=20.0), min_size=1, max_size=80),
    every=st.sampled_from([5.0, 30.0]),
)
def test_never_silent_longer_than_the_interval(gaps: list[float], every: float) -> None:
    """Advances at random times plus the heartbeat's tick each second: no stretch without a line
    is longer than the interval plus one tick, and a periodic line never follows the previous
    line sooner than the interval."""
    sink, clock, lines = _sink(every)
    total = len(gaps) * 10
    with sink.step("embed items (m)", total) as advance:
        for gap in gaps:
            end = clock.now + gap
            while clock.now + 1.0 < end:
                clock.now += 1.0
                sink.tick()
            clock.now = end
            advance(10)
    finished = clock.now
    body = [(t, s) for t, s in lines if ": done" not in s]
    times = [0.0] + [t for t, _ in body]
    for a, b in itertools.pairwise(times):
        assert b - a <= every + 1.0 + 1e-9
    assert finished - times[-1] <= every + 1.0 + 1e-9 or lines[-1][0] == finished
    for (a, _), (b, s) in itertools.pairwise(body):
        if "elapsed" in s:
            assert b - a >= every - 1e-9


def test_the_sink_follows_the_console() -> None:
    class Term:
        is_terminal = True

    class File:
        is_terminal = False

        def print(self, *a: object, **k: object) -> None:
            pass

    assert progress_for(None) is SILENT
    assert isinstance(progress_for(Term()), RichProgress)
    assert isinstance(progress_for(File()), LineProgress)
