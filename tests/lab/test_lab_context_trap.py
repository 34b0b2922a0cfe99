"""The lab shows the "changing k" trap (k = 8 under ``budget = 1200`` on the fare-rules example)
on its experiments page and on the comparison page, through its TestClient as a browser asks.

Three experiments are recorded: one as ``ragmeter run`` records it now; one as a run stored
before ragmeter kept the measured context in its evaluations (the run's own ``context_tokens``
still stored: the experiments page checks it, a comparison of its evaluations cannot); and one
with no measured context at all (nothing to check, the pages still read).
"""

from __future__ import annotations

import html
import re
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from _experiment_files import fare_rules_experiment, k_against_budget_text
from fastapi.testclient import TestClient

from ragmeter import Store
from ragmeter.experiments import load_experiment, run_experiment
from ragmeter.lab import create_app
from ragmeter.workflows.experiment import record_variant, run_and_record, start_variants

TRAP = (
    "changing k (4 -> 8): the candidate's generator receives 2,159 tokens of context against "
    "the baseline's 1,087 (+98.6%, more than 10% apart)"
)


def text_of(page: str) -> str:
    page = re.sub(r"<script[^>]*>.*?</script>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def record_old(store: Store, exp_path: Path, *, tokens: bool) -> dict[str, int]:
    """Record the experiment as a run stored before ragmeter kept the measured context in the
    evaluation (``tokens``: the run still has its own ``context_tokens``)."""
    exp = load_experiment(exp_path, warn=False)
    result = run_experiment(exp, write=False)
    ids = dict(zip([v.name for v in exp.all_variants], start_variants(store, exp,
               exp.all_variants), strict=True))  # fmt: skip
    for r in result.variants:
        config = {k: v for k, v in r.evaluation.config.items() if k != "context_tokens"}
        old = replace(r, evaluation=replace(r.evaluation, config=config), warnings=())
        if not tokens:
            old = replace(old, context_tokens=None)
        record_variant(store, exp, ids[r.name], old)
    return ids


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("lab-k-against-budget")
    cache = ("chunkings", "bm25", "runs")
    paths = {
        name: fare_rules_experiment(folder / name, k_against_budget_text(name), cache=cache)
        for name in ("now", "old", "bare")
    }
    store = Store.open(f"sqlite:///{folder / 'lab.db'}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the store's own notices; the trap is no warning
        _, now = run_and_record(store, paths["now"])
        old = record_old(store, paths["old"], tokens=True)
        bare = record_old(store, paths["bare"], tokens=False)
    client = TestClient(create_app(store=store, root=folder), base_url="http://127.0.0.1")
    yield client, {"now": now, "old": old, "bare": bare}
    store.close()


def test_experiments_page_flags_the_variant(lab: Any) -> None:
    client, _ = lab
    r = client.get("/")
    assert r.status_code == 200
    text = text_of(r.text)
    # the new run and the run stored before (its own context_tokens): two rows flagged
    assert text.count(TRAP) == 2
    for name in ("now", "old", "bare"):
        assert name in text


def test_comparison_page_lists_it_as_not_a_fair_test(lab: Any) -> None:
    client, ids = lab
    for name, flagged in (("now", True), ("old", False), ("bare", False)):
        base, cand = ids[name]["baseline"], ids[name]["k = 8"]
        r = client.get(f"/compare?base={base}&cand={cand}&metric=R@budget=1200")
        assert r.status_code == 200, r.text
        text = text_of(r.text)
        assert (TRAP in text) == flagged, name
        assert ("same context budget no" in text) == flagged, name
