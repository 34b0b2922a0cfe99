"""The causal table recovers known causes: constructed generators (``_causal_gens.py``) whose
true cause per question is known run the fare-rules ablation experiment
(``examples/fare-rules/ablation.toml``: retrieved, oracle, none, oracle+distractors), and every
question must land in its true category, over many seeds of which question gets which
behaviour.

The expected category is computed here from the behaviour and the recorded contexts alone (the
baseline's answers.jsonl context ids and its chunks.jsonl texts; for the noise-sensitive
behaviour, whether the oracle+distractors context held a passage without evidence text), never
from the answers or their checks. The causal table comes from the run's result through the
workflow every interface uses (``result_ablations``), and for the first seed also from
``ragmeter diagnose --experiment``'s workflow, which reads the written outputs: the two must
agree. So the whole chain is under test: oracle contexts, answer checks, the one-change rule
and the table.

Each seed is one run of the experiment (a fresh generator version, so the answer cache never
serves another seed's answers; retrieval comes from the cache shared by all seeds). Four seeds
run in the everyday suite; the rest are marked slow.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from _causal_gens import BEHAVIOURS, PLAN_ENV, WRONG
from _experiment_files import FARE_RULES

from ragmeter.experiments import run_experiment
from ragmeter.workflows.diagnose import causal_of, diagnose_experiment, result_ablations

EXAMPLE = FARE_RULES / "ablation.toml"
HERE = Path(__file__).resolve().parent
FAST_SEEDS = 4
SEEDS = [pytest.param(s, marks=() if s < FAST_SEEDS else pytest.mark.slow) for s in range(20)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example's data and the constructed generators, in one folder for every seed (its
    retrieval cache is shared)."""
    root = tmp_path_factory.mktemp("causal-gens")
    for name in ("golden.jsonl", "corpus.jsonl"):
        shutil.copy(FARE_RULES / name, root / name)
    shutil.copy(HERE / "_causal_gens.py", root / "causal_gens.py")
    return root


def golden() -> list[dict[str, Any]]:
    lines = (FARE_RULES / "golden.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def experiment_text(seed: int) -> str:
    """ablation.toml with the constructed generator (a version per seed) and no judge (its
    scores play no part in correctness)."""
    text = EXAMPLE.read_text(encoding="utf-8")
    text = text.replace(
        'target = "generators.extractive:answer"',
        f'target = "causal_gens.py:answer"\nversion = "seed-{seed}"',
    )
    text = re.sub(r'\n\[judge\]\nkind = "fake"\nmetrics = \[[^\]]*\]\n', "\n", text)
    text = text.replace('output = "runs/ablation"', f'output = "runs/seed-{seed}"')
    assert 'version = "seed-' in text and "[judge]" not in text, "ablation.toml changed shape"
    return text


def plan(seed: int) -> dict[str, dict[str, Any]]:
    """Each question's behaviour, drawn with ``seed``; unanswerable ones ignore their context."""
    rng = random.Random(seed)
    out = {}
    for q in golden():
        spans = q["evidence"]
        # the highest-graded span, the earliest of a tie: the one the oracle always keeps
        key = (
            max(enumerate(spans), key=lambda e: (e[1].get("grade", 1), -e[0]))[1] if spans else None
        )
        out[q["question"]] = {
            "id": q["id"],
            "behaviour": rng.choice(BEHAVIOURS) if q["answerable"] else "ignores_context",
            "right": q["answer"] if q["answerable"] else WRONG,
            "key": key["text"] if key else "",
            "spans": [s["text"] for s in spans],
            "answerable": q["answerable"],
        }
    return out


def contexts(folder: Path) -> dict[str, list[str]]:
    """Question id -> the texts of the passages its prompt held, from the written files."""
    chunks = {}
    for line in (folder / "chunks.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        chunks[rec["id"]] = rec["text"]
    out = {}
    for line in (folder / "answers.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        out[rec["id"]] = [chunks[c] for c in rec["context"]]
    return out


def expected(entry: dict[str, Any], retrieved: list[str], distracted: list[str]) -> str:
    """The true cause, from the behaviour and the contexts (the module docstring)."""
    if not entry["answerable"]:
        return "unanswerable"
    has_key = any(entry["key"] in t for t in retrieved)
    behaviour = entry["behaviour"]
    if behaviour == "memory":
        return "memory"  # right with every context, none included
    if behaviour == "ignores_context":
        return "generation_failure"  # wrong even with the oracle
    if behaviour == "grounded":
        # the oracle holds the key span; so does oracle+distractors
        return "working" if has_key else "retrieval_failure"
    assert behaviour == "noise_sensitive"
    every_passage_holds_evidence = all(any(s in t for s in entry["spans"]) for t in retrieved)
    if has_key and every_passage_holds_evidence:
        return "working"
    noisy = any(not any(s in t for s in entry["spans"]) for t in distracted)
    return "noise_sensitive" if noisy else "retrieval_failure"


@pytest.mark.parametrize("seed", SEEDS)
def test_every_question_lands_in_its_true_category(
    seed: int, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = plan(seed)
    plan_file = folder / f"plan-{seed}.json"
    plan_file.write_text(json.dumps(entries), encoding="utf-8")
    monkeypatch.setenv(PLAN_ENV, str(plan_file))
    path = folder / f"ablation-{seed}.toml"
    path.write_text(experiment_text(seed), encoding="utf-8")

    result = run_experiment(path)
    assert [v.name for v in result.variants] == [
        "retrieved",
        "oracle",
        "none",
        "oracle+distractors",
    ]
    ablations = result_ablations(result)
    assert ablations is not None
    causal = causal_of(ablations)
    if seed == 0:  # the written outputs, read back as `ragmeter diagnose --experiment` does
        written = diagnose_experiment(path).causal
        assert written is not None
        assert [(q.id, q.cause, dict(q.outcomes)) for q in written.questions] == [
            (q.id, q.cause, dict(q.outcomes)) for q in causal.questions
        ]
    assert causal.sources == ("retrieved", "oracle", "none", "oracle+distractors")

    out = folder / "runs" / f"seed-{seed}"
    retrieved = contexts(out / "retrieved")
    distracted = contexts(out / "oracle-distractors")
    by_id = {e["id"]: e for e in entries.values()}
    want = {qid: expected(e, retrieved[qid], distracted.get(qid, [])) for qid, e in by_id.items()}
    got = {q.id: q.cause for q in causal.questions}
    wrong = {q: (by_id[q]["behaviour"], want[q], got.get(q)) for q in want if got.get(q) != want[q]}
    assert not wrong, f"seed {seed}: (behaviour, expected, got) {wrong}"
    assert set(got) == set(want)

    # every behaviour was drawn, and each true category the seed allows was seen
    drawn = {e["behaviour"] for e in entries.values() if e["answerable"]}
    assert drawn == set(BEHAVIOURS)
    counts = causal.counts()
    assert counts["unknown"] == 0 and counts["unanswerable"] == 10
    assert counts["memory"] == sum(e["behaviour"] == "memory" for e in by_id.values())

    # the ceiling: the oracle fixes the retrieval failures and the noise-sensitive questions and
    # breaks none (every behaviour right with the retrieved context is right with the oracle)
    c = causal.ceiling
    assert c is not None and c.n == 80
    fixed = counts["retrieval_failure"] + counts["noise_sensitive"]
    assert (c.fixed, c.broken) == (fixed, 0)
    assert c.mean_delta == pytest.approx(fixed / 80)
