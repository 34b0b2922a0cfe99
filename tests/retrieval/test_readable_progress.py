"""Progress off a terminal (issue 16, item 4): a line at least every 30 s of work and an estimate
before slow work, on an injected clock (never the wall clock)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.retrieval import progress_for
from ragmeter.retrieval._progress import SILENT, LineProgress, RichProgress, _about


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
        advance(32)  # the first batch, after loading the model: start-up, no rate yet
        assert lines == []
        clock.now = 34.0
        advance(32)  # 32 in the 10 s after it: 3.2/s, 3,112 left take about 16 min
        assert lines == [
            (34.0, "embed 3176 items (e5): about 16 min left, 3,112 of 3,176 items to go on "
                   "2 cores (from 32 items at 3.20/s; the 24 s to the first item, start-up "
                   "such as a model load or an index build, excluded)"),
        ]  # fmt: skip
        for i in range(3, 100):  # then 32 more every 10 s: 3,168 done at t = 1004 s
            clock.now = 24.0 + 10.0 * (i - 1)
            advance(32)
    # a line 30 s after the last one: at t = 34 + 30m
    assert [t for t, _ in lines[1:-1]] == [34.0 + 30.0 * m for m in range(1, 33)]
    # the last one at t = 994 s, 3,136 done: 3.2/s since the first batch, 40 left take 12 s
    assert lines[-2][1] == (
        "embed 3176 items (e5): 3,136/3,176 (99%), 16 min 34 s elapsed, about 12 s left"
    )
    assert lines[-1] == (1004.0, "embed 3176 items (e5): done, 3,168 in 16 min 44 s")


class SlowStartGenerator:
    """A local model as :meth:`ragmeter.generation.LocalGenerator.generate` runs one: the model
    loads once (90 s) before the first answer, then each answer takes 9 s, on the fake clock."""

    def __init__(self, clock: Clock, load: float = 90.0, each: float = 9.0) -> None:
        self.clock, self.load, self.each = clock, load, each

    def generate(self, requests: list[str], progress: object) -> list[str]:
        assert callable(progress)
        self.clock.now += self.load
        out = []
        for i, req in enumerate(requests, 1):
            self.clock.now += self.each
            out.append(req.upper())
            progress(i, len(requests))
        return out


def test_a_model_load_is_not_counted_as_the_first_answer() -> None:
    """Issue 27, item 4: 90 answers at 9 s after a 90 s load take 15 min; counting the load as
    the first answer's time promised 90 x 99 s = about 2.5 h."""
    sink, clock, lines = _sink()
    requests = [f"q{i}" for i in range(90)]
    with sink.step("generate baseline (90 answers)", len(requests)) as advance:
        done = [0]

        def report(n: int, total: int) -> None:  # as the experiment runner reports
            advance(n - done[0])
            done[0] = n

        SlowStartGenerator(clock).generate(requests, report)
    assert lines[0][1] == (  # the first answer, after the load: no rate to speak of yet
        "generate baseline (90 answers): 1/90 (1%), 1 min 39 s elapsed, no estimate yet "
        "(start-up is not counted)"
    )
    first = lines[1][1]
    assert "2.5 h" not in first and " h" not in first
    assert first == (
        "generate baseline (90 answers): about 13 min left, 88 of 90 items to go on 2 cores "
        "(from 1 item at 9.0 s each; the 1 min 39 s to the first item, start-up such as a model "
        "load or an index build, excluded)"
    )
    # every later line's estimate is the honest one: items left x 9 s
    for _, text in lines[2:-1]:
        done_n = int(text.split(": ")[1].split("/")[0])
        left_s = (90 - done_n) * 9.0
        assert text.endswith(f"about {_about(left_s)} left")
    assert lines[-1][1] == "generate baseline (90 answers): done, 90 in 15 min 0 s"


@settings(max_examples=100, deadline=None)
@given(
    load=st.floats(min_value=0.0, max_value=3600.0),
    each=st.floats(min_value=0.5, max_value=60.0),
    n=st.integers(min_value=3, max_value=200),
)
def test_start_up_never_inflates_the_estimate(load: float, each: float, n: int) -> None:
    """Whatever the load and the answer time, the first estimate is the time the answers
    still to go take (within rounding of the words), never the load spread over every item."""
    sink, clock, lines = _sink()
    with sink.step("generate v", n) as advance:
        done = [0]

        def report(k: int, total: int) -> None:
            advance(k - done[0])
            done[0] = k

        SlowStartGenerator(clock, load, each).generate([f"q{i}" for i in range(n)], report)
    estimates = [s for _, s in lines if " items to go " in s]
    assert len(estimates) <= 1
    for text in estimates:
        to_go = int(text.split("left, ")[1].split(" of ")[0].replace(",", ""))
        assert text.startswith(f"generate v: about {_about(to_go * each)} left")


def test_a_cached_head_and_empty_reports_do_not_fool_the_estimate() -> None:
    sink, clock, lines = _sink()
    with sink.step("embed 1000 items (m)", 1000) as advance:
        advance(0)  # nothing yet
        advance(200)  # 200 from the cache, at once: no rate to speak of
        clock.now = 10.0
        advance(100)  # 100 in 10 s after it: 700 left take 70 s, 80 s in all
        clock.now = 20.0
        advance(100)
    assert lines == [
        (10.0, "embed 1000 items (m): about 70 s left, 700 of 1,000 items to go on 2 cores "
               "(from 100 items at 10.00/s; the 0 s to the first item, start-up such as a model "
               "load or an index build, excluded)"),
        (20.0, "embed 1000 items (m): done, 400 in 20 s"),
    ]  # fmt: skip
    sink, clock, lines = _sink()
    with sink.step("embed 1000 items (m)", 1000) as advance:
        advance(200)
        clock.now = 5.0
        advance(200)  # 200 in 5 s after the cached head: 600 left take 15 s: no estimate
        clock.now = 10.0
        advance(200)
    assert lines == []


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
