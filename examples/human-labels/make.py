"""Write this folder's constructed example (run from anywhere; the files are committed).

400 questions; humans would call the baseline's answer correct on about 60% and the candidate's
on about 72% (the true difference is +0.12). A model judge scored both variants on all 400
(``baseline.csv``, ``candidate.csv``: 1 = the judge says correct); it errs on 10% of correct
and incorrect baseline answers alike, but it is lenient with the candidate's style and calls
half of its incorrect answers correct, so its difference overstates the gain. Humans labelled
both answers of 100 questions drawn at random (``human.jsonl``: id, run, label)."""

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
N, LABELLED = 400, 100


def main() -> None:
    rng = np.random.default_rng(12)
    base = rng.random(N) < 0.6
    cand = rng.random(N) < np.where(base, 0.9, 0.45)
    judge_base = np.where(base, rng.random(N) >= 0.1, rng.random(N) < 0.1)
    judge_cand = np.where(cand, rng.random(N) >= 0.1, rng.random(N) < 0.5)
    ids = [f"q{i:03d}" for i in range(N)]
    for name, judged in (("baseline", judge_base), ("candidate", judge_cand)):
        rows = ["id,judge_correct"] + [f"{q},{int(v)}" for q, v in zip(ids, judged, strict=True)]
        (HERE / f"{name}.csv").write_text("\n".join(rows) + "\n")
    labelled = sorted(rng.choice(N, size=LABELLED, replace=False))
    lines = []
    for i in labelled:
        for run, human in (("baseline", base), ("candidate", cand)):
            label = "pass" if human[i] else "fail"
            lines.append(json.dumps({"id": ids[i], "run": run, "label": label}))
    (HERE / "human.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
