"""``ragmeter diagnose --run``: the documented forms score the run at the prompt k or budget.

The issue's forms (``--k 4``, ``--budget 1200``, ``--k 4 --prompt-metric AllR@4``) on the
bundled example. ``--budget`` was read wrong: recall at a budget has no rank cutoff, so the
prompt step took AllR@50 (the headroom k) as recall in the prompt and built the
retrieval-by-answer table from it (no retrieval failure at all), and headroom went unmeasured.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.metrics import Evaluation

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
RUNS = EXAMPLE / "runs"  # written by `ragmeter run` at session start (conftest)


def _diagnose(*extra: str) -> dict:
    args = [
        "diagnose",
        "--golden", str(EXAMPLE / "golden.jsonl"),
        "--corpus", str(EXAMPLE / "corpus.jsonl"),
        "--chunks", str(RUNS / "chunks-300.jsonl"),
        "--run", str(RUNS / "baseline" / "run.trec"),
        "--answers", str(EXAMPLE / "answers" / "baseline.jsonl"),
        *extra,
        "--format", "json",
    ]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _in_context(metric: str) -> set[str]:
    """Questions whose evidence is all in the prompt, from the experiment's own evaluation
    (runs/baseline/evaluation.json, written by ragmeter run: k = 4, budget = 1200)."""
    ev = Evaluation.load(RUNS / "baseline" / "evaluation.json")
    return {q for q, v in ev.column(metric).items() if v == 1.0}


@pytest.mark.parametrize(
    ("extra", "prompt"),
    [
        (("--k", "4"), "AllR@4"),
        (("--budget", "1200"), "AllR@budget=1200"),
        (("--k", "4", "--prompt-metric", "AllR@4"), "AllR@4"),
    ],
)
def test_the_documented_run_forms_read_recall_at_the_prompt(extra, prompt: str) -> None:
    out = _diagnose(*extra)
    steps = {s["key"]: s for s in out["steps"]}
    assert steps["prompt_k"]["detail"].startswith(f"{prompt} = 0.800 ")
    assert steps["headroom"]["detail"].startswith("AllR@50 = 1.000 ")
    cells = {c["cell"]: c for c in out["table"]["cells"]}
    in_context = set(cells["working"]["ids"]) | set(cells["generation_failure"]["ids"])
    answered = (
        in_context | set(cells["from_memory"]["ids"]) | set(cells["retrieval_failure"]["ids"])
    )
    assert in_context == _in_context(prompt) & answered
    assert cells["retrieval_failure"]["count"] == 14  # 80 questions: 49 + 14 + 2 + 14 (+ 1)
