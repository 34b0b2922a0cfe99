"""``[judge] metrics = ["claims"]`` in an experiment file: the five claim-level metrics scored
for every variant end to end (the shape of examples/fare-rules/generation-judged.toml), equal to
``ragmeter answers check --judge-metrics claims`` on the same answers."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from _experiment_files import FARE_RULES
from test_experiment_judge import SLICE, cli, make, run

from ragmeter import ValidationError
from ragmeter.answers.judged import CLAIM_METRICS

CLAIMS = '[judge]\nkind = "fake"\nmetrics = ["claims"]'


@pytest.fixture(scope="module")
def claims_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("claims")
    path = make(root, CLAIMS)
    out = cli("run", path, "--format", "json", "--no-store")
    assert out.exit_code == 0, out.output
    return path, json.loads(out.stdout)


def test_every_variant_is_scored_on_the_five_claim_metrics(claims_run) -> None:
    path, data = claims_run
    rows = {r["variant"]: r for r in data["answers"]}
    assert set(rows) == {"rank", "sandwich"}
    for name, r in rows.items():
        assert r["judge"].startswith("FAKE JUDGE") and r["judge_failed"] == 0
        lines = (path.parent / "runs" / name / "judgements.jsonl").read_text().splitlines()
        judged = [json.loads(x) for x in lines]
        assert {j["metric"] for j in judged} == set(CLAIM_METRICS)
        for metric in CLAIM_METRICS:
            mine = [j for j in judged if j["metric"] == metric]
            assert 0 < len(mine) <= len(SLICE)
            scores = [j["score"] for j in mine if j["score"] is not None]
            assert r[f"judge_{metric}"] == pytest.approx(sum(scores) / len(scores))
            # abstentions have no claims: None, never 0 or 1
            assert all(j["label"] == "no claims" for j in mine if j["score"] is None)
        # the claim lists with their verdicts are in the written judgements
        some = next(j for j in judged if j["metric"] == "hallucination" and j["score"] is not None)
        assert [c["against"] for c in some["detail"]["checks"]] == ["context", "reference"]
        config = json.loads((path.parent / "runs" / name / "config.json").read_text())
        assert config["judge"]["metrics"] == ["claims"]


def test_the_run_equals_answers_check_with_the_same_judge(claims_run) -> None:
    path, data = claims_run
    for r in data["answers"]:
        folder = path.parent / "runs" / r["variant"]
        out = cli(
            "answers", "check", folder / "answers.jsonl", "--golden", path.parent / "golden.jsonl",
            "--corpus", FARE_RULES / "corpus.jsonl", "--chunks", folder / "chunks.jsonl",
            "--judge", "fake", "--judge-metrics", "claims", "--format", "json", "--no-store",
        )  # fmt: skip
        assert out.exit_code == 0, out.output
        s = json.loads(out.stdout)["summary"]["judged"]
        for metric in CLAIM_METRICS:
            assert s[metric]["mean"] == pytest.approx(r[f"judge_{metric}"])
            assert s[metric]["failed"] == 0 and s[metric]["failed_ids"] == []


def test_a_prompt_folder_needs_both_claim_prompts(tmp_path) -> None:
    shipped = resources.files("ragmeter.answers.judges").joinpath("prompts")
    (tmp_path / "prompts").mkdir(parents=True)
    text = shipped.joinpath("claims.v1.txt").read_text(encoding="utf-8")
    (tmp_path / "prompts" / "claims.v1.txt").write_text(text)
    path = make(tmp_path, CLAIMS + '\nprompt = "prompts"')
    with pytest.raises(ValidationError, match="claim_support") as err:
        run(path, write=False)
    assert "judge.prompt" in str(err.value)
    support = shipped.joinpath("claim_support.v1.txt").read_text(encoding="utf-8")
    (tmp_path / "prompts" / "claim_support.v1.txt").write_text(support)
    result = run(path, write=False)
    judged = [s for c in result.baseline.answers.report.checks for s in c.judged.values()]
    assert judged and {s.metric for s in judged} == set(CLAIM_METRICS)
