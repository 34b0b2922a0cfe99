"""``ragmeter run``: every variant chunked, retrieved, scored and written; re-runs come from the
cache."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
from _experiment_files import toy_experiment
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.experiments import run_experiment, table_rows

EXPERIMENT = """\
name = "toy experiment"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "out"
k = 2
budget = 40
headroom_k = 8
metrics = ["R", "RR", "nDCG"]

[baseline]
chunker = "tokens:20:0"
retriever = "bm25"
depth = 10

[[variant]]
name = "smaller chunks"
chunker = "tokens:10:0"
k = 4

[[variant]]
name = "dense"
retriever = "dense"

[[variant]]
name = "hybrid"
retriever = { kind = "hybrid", fusion = "weighted", weight = 0.5, of = ["bm25", "dense"] }

[[variant]]
name = "rerank"
reranker = { kind = "bi-encoder", model = "minilm", top = 5 }
"""


@pytest.fixture
def experiment(tmp_path) -> Path:
    return toy_experiment(tmp_path, EXPERIMENT)


def quiet_run(path: Path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_experiment(path, **kwargs)


def test_every_variant_is_scored_and_written(experiment) -> None:
    result = quiet_run(experiment)
    names = [v.name for v in result.variants]
    assert names == ["baseline", "smaller chunks", "dense", "hybrid", "rerank"]
    assert result.golden_version and result.golden_version.startswith("g-")
    base = result.baseline
    assert set(base.evaluation.aggregate) == {"R@2", "R@budget=40", "RR@2", "RR@budget=40", "R@8"}
    assert set(base.chunk_evaluation.aggregate) == {"nDCG@2"}
    assert result.variant("smaller chunks").evaluation.metrics[0].k == 4
    assert result.variant("rerank").label == "bm25 > minilm@5"
    out = experiment.parent / "out"
    lines = (out / "baseline" / "run.trec").read_text().splitlines()
    qid, q0, chunk, rank, _score, name = lines[0].split()
    assert q0 == "Q0" and rank == "1" and name == "baseline" and "#" in chunk
    assert [ln.split()[3] for ln in lines if ln.split()[0] == qid][:3] == ["1", "2", "3"]
    cfg = json.loads((out / "dense" / "config.json").read_text())
    assert cfg["golden_version"] == result.golden_version
    assert cfg["changes"] == ["retriever"] and cfg["settings"]["retriever"]["model"] == "minilm"
    assert {"chunk", "index", "search", "score", "total"} <= set(cfg["timings"])
    evaluation = json.loads((out / "dense" / "evaluation.json").read_text())
    assert set(evaluation["per_query"]) == {"q1", "q2", "q3", "q4", "q5"}
    summary = json.loads((out / "summary.json").read_text())
    assert [r["variant"] for r in summary["table"]] == names
    head = [k for k in summary["table"][0] if "headroom (not quality)" in k]
    assert head == ["R@8 headroom (not quality)"]


def test_rerunning_an_unchanged_experiment_makes_no_encoder_call(experiment) -> None:
    cold = quiet_run(experiment)
    assert cold.total_encoder_calls > 0
    warm = quiet_run(experiment)
    assert warm.total_encoder_calls == 0
    assert all(v.cached == {"chunking": True, "run": True} for v in warm.variants)
    assert table_rows(warm) == table_rows(cold)
    assert warm.cache_misses == {}


def test_changing_only_k_re_embeds_nothing(experiment) -> None:
    quiet_run(experiment)
    experiment.write_text(EXPERIMENT.replace("k = 2\n", "k = 3\n").replace("k = 4\n", "k = 6\n"))
    result = quiet_run(experiment)
    assert result.total_encoder_calls == 0
    assert result.baseline.evaluation.metrics[0].k == 3


def test_embeddings_survive_when_finished_runs_are_dropped(experiment) -> None:
    quiet_run(experiment)
    shutil.rmtree(experiment.parent / ".ragmeter-cache" / "runs")
    result = quiet_run(experiment)
    assert result.total_encoder_calls == 0  # every text and query vector came from the cache
    assert not any(v.cached["run"] for v in result.variants)
    assert all(v.cached["chunking"] for v in result.variants)


def test_no_cache_recomputes_and_writes_no_cache(experiment) -> None:
    result = quiet_run(experiment, use_cache=False)
    assert result.total_encoder_calls > 0
    assert not (experiment.parent / ".ragmeter-cache").exists()


def test_an_imported_run_is_scored_like_a_retriever(experiment) -> None:
    quiet_run(experiment)
    trec = (experiment.parent / "out" / "baseline" / "run.trec").read_text().splitlines()
    rows = [ln.split() for ln in trec]
    (experiment.parent / "prod.jsonl").write_text(
        "".join(json.dumps({"qid": r[0], "chunk": r[2], "rank": int(r[3])}) + "\n" for r in rows)
    )
    experiment.write_text(EXPERIMENT + '\n[[variant]]\nname = "production"\nrun = "prod.jsonl"\n')
    result = quiet_run(experiment)
    prod, base = result.variant("production"), result.baseline
    assert prod.changes == ("run",)
    assert prod.evaluation.aggregate == base.evaluation.aggregate
    assert prod.chunk_evaluation.aggregate == base.chunk_evaluation.aggregate


def test_cli_prints_the_table_and_writes_outputs(experiment) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["run", str(experiment)])
    assert res.exit_code == 0, res.output
    out = " ".join(res.stdout.split())  # the table may wrap in a narrow terminal
    assert "headroom" in out and "smaller" in out and "budget 40 tokens" in out
    res = runner.invoke(app, ["run", str(experiment), "--format", "json"])
    data = json.loads(res.stdout)
    assert sum(data["encoder_calls"].values()) == 0  # the first invocation filled the cache
    assert data["vs_baseline"][0]["metric"] == "R@budget=40"
    res = runner.invoke(app, ["run", str(experiment), "--format", "csv"])
    assert res.stdout.splitlines()[0].startswith("variant,pipeline,chunking,changes,k,budget")


def test_cli_reports_a_bad_experiment_with_file_and_field(tmp_path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        'golden = "g.jsonl"\ncorpus = "c.jsonl"\nk = 4\n[baseline]\n'
        'chunker = "tokens:300:0"\nretriever = "splade"\n'
    )
    res = CliRunner().invoke(app, ["run", str(path)])
    assert res.exit_code == 2
    err = " ".join(res.stderr.split())
    assert ":6: field 'baseline.retriever': unknown name 'splade'" in err and "bad.toml" in err
    assert "Traceback" not in res.output
