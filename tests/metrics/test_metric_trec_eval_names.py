"""trec_eval's measure names are accepted as metrics (``-m map``), each read as the ragmeter metric
the differential tests prove equal to it, and the CLI says how it read them."""

from __future__ import annotations

import json

import pytest
from test_differential_peers import PYTREC_PAIRS
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.metrics import parse, parse_list, trec_eval_aliases
from ragmeter.metrics._spec import trec_eval_alias

# (ragmeter metric, trec_eval measure) pairs with trec_eval's defaults (rel=1, linear gain)
DEFAULT_PAIRS = sorted({(m, t) for m, t, rel, exp in PYTREC_PAIRS if rel == 1 and not exp})


@pytest.mark.parametrize(("metric", "measure"), DEFAULT_PAIRS, ids=[t for _, t in DEFAULT_PAIRS])
def test_each_trec_eval_name_reads_as_the_metric_it_equals(metric: str, measure: str) -> None:
    """The pairs test_differential_peers checks value for value against pytrec_eval."""
    assert parse(measure) == parse(metric)


def test_the_names_the_issue_lists() -> None:
    got = {t: str(parse(t)) for t in ("map", "P_5", "ndcg_cut_10", "recip_rank", "recall_100")}
    assert got == {
        "map": "AP",
        "P_5": "P@5",
        "ndcg_cut_10": "nDCG@10",
        "recip_rank": "RR",
        "recall_100": "R@100",
    }
    assert str(parse("success_1")) == "Hit@1" and str(parse("Rprec")) == "Rprec"


def test_ragmeter_names_are_not_trec_eval_aliases() -> None:
    for text in ("AP", "nDCG@10", "Rprec", "R@budget=1200", "P_x", "foo_3", "MAP"):
        assert trec_eval_alias(text) is None
    assert trec_eval_aliases("nDCG@10,map,P_5") == {"map": "AP", "P_5": "P@5"}
    assert parse_list("map,AP,P_5,P@5") == [parse("AP"), parse("P@5")]


def test_cli_reads_trec_eval_names_and_says_so(tmp_path) -> None:
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 d2 1 2.0 t\nq1 Q0 d1 2 1.0 t\nq2 Q0 d3 1 5.0 t\n")
    res = CliRunner().invoke(
        app, ["eval", str(qrels), str(run), "-m", "map,P_1,recip_rank", "-f", "json", "--no-store"]
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["aggregate"] == {"AP": 0.75, "P@1": 0.5, "RR": 0.75}
    assert "read trec_eval's 'map' as AP, 'P_1' as P@1, 'recip_rank' as RR" in res.stderr
