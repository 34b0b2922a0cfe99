"""The compare and gate workflows (``ragmeter.workflows.compare``, ``.gate``): the comparison
``ragmeter compare``, ``ragmeter gate`` and the lab's comparison page all make, its ledger
handling, its recording, and the bootstrap distribution the lab draws as a histogram."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragmeter import Evaluation, RagmeterWarning
from ragmeter.metrics import parse
from ragmeter.paired import DEFAULT_LEDGER, GateRule, Ledger, bootstrap_means, compare
from ragmeter.store import Store
from ragmeter.workflows import compare as flow
from ragmeter.workflows.gate import run_gate
from ragmeter.workflows.refs import RunRef

M = "Hit@5"
BASE = [1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1]
CAND = [1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1]


def ev(run: str, values: list[float], **config: object) -> Evaluation:
    return Evaluation(
        run=run,
        metrics=(parse(M),),
        query_ids=tuple(f"q{i}" for i in range(len(values))),
        values=np.array(values, dtype=float)[:, None],
        golden_version="v1",
        config=config,
    )


@pytest.fixture()
def files(tmp_path: Path) -> tuple[str, str]:
    out = []
    for e in (ev("base", BASE), ev("cand", CAND, k1=0.9)):
        p = tmp_path / f"{e.run}.json"
        p.write_text(json.dumps(e.to_dict(per_query=True)))
        out.append(str(p))
    return out[0], out[1]


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(f"sqlite:///{tmp_path / 'store.db'}", migrate=True) as s:
        yield s


def quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagmeterWarning)
        return compare(*args, **kwargs)


def test_compare_runs_is_paired_compare_on_the_resolved_sides(files) -> None:
    opts = flow.CompareOptions(n_resamples=700, seed=3, randomisation=True, max_movers=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the workflow keeps its warnings in the record
        out = flow.compare_runs(*files, M, options=opts)
    want = quiet(
        ev("base", BASE), ev("cand", CAND, k1=0.9), M, n_resamples=700, seed=3,
        randomisation=True, max_movers=2,
    )  # fmt: skip
    assert out.comparison.to_dict() == want.to_dict()
    assert out.metric == M and out.stored_ids == (None, None) and out.distribution is None
    assert out.base == RunRef.parse(files[0])


def test_counting_in_a_ledger_and_only_reading_its_estimate(files, tmp_path: Path) -> None:
    book = Ledger(tmp_path / "ledger.jsonl")
    first = flow.compare_runs(*files, M, ledger=flow.LedgerUse(count_in=book))
    assert first.comparison.n_variants_tried == 1 and len(book.entries()) == 1
    for i in range(2):
        book.record(golden_version="v1", metric=M, baseline="base", candidate=f"other{i}",
                    baseline_config={}, candidate_config={"x": i}, n=12, mean_delta=0.1,
                    ci=(0.0, 0.2))  # fmt: skip
    entries = len(book.entries())
    seen = flow.compare_runs(*files, M, ledger=flow.LedgerUse(estimate_from=book))
    assert len(book.entries()) == entries  # a page view counts nothing
    n = book.summary("v1").n_variants
    assert n > 1 and seen.comparison.n_variants_tried == n
    assert seen.comparison.selection is not None
    none = flow.compare_runs(*files, M)
    assert none.comparison.n_variants_tried is None and none.comparison.selection is None


def test_ledger_for_picks_the_commands_ledger(store: Store, tmp_path: Path) -> None:
    named = tmp_path / "l.jsonl"
    assert flow.ledger_for(store, named, no_ledger=True) is None
    assert flow.ledger_for(store, named) == named
    assert flow.ledger_for(None) == DEFAULT_LEDGER
    assert isinstance(flow.ledger_for(store), Ledger)


def test_the_distribution_is_the_one_the_interval_came_from(files) -> None:
    out = flow.compare_runs(*files, M, options=flow.CompareOptions(seed=5), distribution=True)
    c, dist = out.comparison, out.distribution
    assert dist is not None and dist.method == c.bootstrap_method
    means, _ = bootstrap_means(c.deltas, n_resamples=c.n_resamples, seed=5, method="auto")
    assert np.array_equal(dist.means, means)
    assert dist.matches(c.ci) and dist.interval() == pytest.approx(c.ci, abs=1e-12)
    bins = dist.bins(40)  # few distinct means: one bar each
    assert sum(b.count for b in bins) == c.n_resamples
    assert len(bins) == len(np.unique(np.round(means, 12)))
    wide = dist.bins(3)
    assert len(wide) == 3 and sum(b.count for b in wide) == c.n_resamples


def test_the_distribution_is_the_draw_compare_made_not_a_second_one(files, monkeypatch) -> None:
    import ragmeter.paired._bootstrap as boot

    draws: list[np.ndarray] = []
    real = boot.resample_means

    def counted(*args, **kwargs):
        means = real(*args, **kwargs)
        draws.append(means)
        return means

    monkeypatch.setattr(boot, "resample_means", counted)
    opts = flow.CompareOptions(seed=5)
    out = flow.compare_runs(*files, M, options=opts, distribution=True)
    c, dist = out.comparison, out.distribution
    # one bootstrap (the runs have no slices or splits): the interval's; the histogram reads it
    assert len(draws) == 1
    assert dist is not None and dist.means is c.bootstrap_means is draws[0]
    assert dist.matches(c.ci) and dist.method == c.bootstrap_method
    # the kept means are not part of the record: the JSON is the one without them
    plain = flow.compare_runs(*files, M, options=opts)
    assert plain.comparison.bootstrap_means is None and len(draws) == 2
    assert json.dumps(c.to_dict()) == json.dumps(plain.comparison.to_dict())
    assert "bootstrap_means" not in c.to_dict()
    back = type(c).from_dict(json.loads(json.dumps(c.to_dict())))
    assert back.bootstrap_means is None and back.to_dict() == c.to_dict()
    # read back (no means kept), the distribution is drawn again: the same draws
    again = flow.BootstrapDistribution.of(back)
    assert again is not None and np.array_equal(again.means, dist.means) and len(draws) == 3


def test_recorded_comparisons_name_their_stored_runs(store: Store) -> None:
    a = store.record_evaluation(ev("base", BASE), name="base")
    b = store.record_evaluation(ev("cand", CAND, k1=0.9), name="cand")
    out = flow.compare_runs(str(a), f"run:{b}", M, store=store)
    assert out.stored_ids == (a, b)
    cid = flow.record(store, out)
    assert cid is not None
    back = flow.stored_comparison(store, cid)
    assert (back.baseline_run, back.candidate_run) == (a, b)
    assert back.comparison.ci == out.comparison.ci
    assert back.distribution is not None and back.distribution.matches(out.comparison.ci)


def test_the_lab_histogram_is_the_workflows_distribution(store: Store, monkeypatch) -> None:
    from ragmeter.lab._data_comparison import MAX_BINS, live_comparison_context

    a = store.record_evaluation(ev("base", BASE), name="base")
    b = store.record_evaluation(ev("cand", CAND, k1=0.9), name="cand")
    ctx = live_comparison_context(store, a, b, M)
    out = flow.compare_runs(
        RunRef.stored(a), RunRef.stored(b), M, store=store, distribution=True,
        ledger=flow.LedgerUse(estimate_from=store.ledger),
    )  # fmt: skip
    assert out.distribution is not None
    want = [{"x0": x.x0, "x1": x.x1, "count": x.count} for x in out.distribution.bins(MAX_BINS)]
    assert ctx["histogram"]["bins"] == want
    assert ctx["histogram"]["percentile_ci"] == out.distribution.interval()
    assert ctx["histogram_matches"] and ctx["ci"] == out.comparison.ci
    # the lab draws nothing itself: a distribution the workflow hands over is what it bins
    made: list[flow.BootstrapDistribution] = []
    real = flow.BootstrapDistribution.of

    def spy(c):
        d = real(c)
        made.append(d)
        return d

    monkeypatch.setattr(flow.BootstrapDistribution, "of", staticmethod(spy))
    again = live_comparison_context(store, a, b, M)
    assert len(made) == 1
    assert again["histogram"]["bins"] == [
        {"x0": x.x0, "x1": x.x1, "count": x.count} for x in made[0].bins(MAX_BINS)
    ]


def test_the_gate_checks_its_rule_on_the_workflows_comparison(files) -> None:
    passing = run_gate(*files, M, GateRule(max_broken=1), n_resamples=500)
    assert passing.passed and passing.result.passed
    assert passing.compared.comparison.n_resamples == 500
    assert passing.compared.comparison.confidence == 0.95
    failing = run_gate(*files, M, GateRule(max_broken=0))
    assert not failing.passed


def test_a_ledger_file_must_be_a_ledger_before_anything_is_appended(tmp_path: Path) -> None:
    from ragmeter import UsageError

    flow.check_ledger_file(tmp_path / "new.jsonl")  # a new file is fine
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    with pytest.raises(UsageError, match=r"--ledger .*notes.txt is not a selection ledger"):
        flow.check_ledger_file(notes)
    assert notes.read_text() == "my notes\n"


def test_the_gate_report_needs_two_stored_runs(store: Store, files) -> None:
    from ragmeter import UsageError
    from ragmeter.workflows.gate import report_run_ids, rule_statement

    assert report_run_ids(["12", "run:13"], store, scored=False) == ["12", "13"]
    with pytest.raises(UsageError, match="drop --no-store"):
        report_run_ids(["12", "13"], None, scored=False)
    with pytest.raises(UsageError, match="as stored runs"):
        report_run_ids([files[0], "13"], store, scored=False)
    with pytest.raises(UsageError, match="as stored runs"):
        report_run_ids(["12", "13"], store, scored=True)
    rule = GateRule(max_broken=0)
    assert rule_statement(rule, "nDCG@10") == rule.statement(str(parse("nDCG@10")))
    assert rule_statement(rule, "no-such-metric") == rule.statement("no-such-metric")
