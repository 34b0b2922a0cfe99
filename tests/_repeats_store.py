"""A generating experiment made with ``repeat = 3`` in ``[judge]`` and recorded in a store, for
the lab's repeats view (its HTTP and browser tests).

The experiment, the scripted judge (a real HTTP server on 127.0.0.1) and the question slice are
those of tests/experiments/test_experiment_repeats.py (loaded from there, not copied). The
judge's script makes, with the extractive stand-in answering the slice:

- the candidate's answer to ``A`` unsupported in repeats 0 and 1: broken in the headline and
  flaky (a headline mover the noise can explain);
- the candidate's answer to ``B`` unsupported in repeat 1 only: flaky;
- the candidate's answer to ``D`` unsupported in every repeat: broken in every repeat;
- the baseline's answer to ``C`` unsupported in repeat 2 only: flaky on the baseline's side.
"""

from __future__ import annotations

import importlib.util
import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

REPEATS_TEST = Path(__file__).resolve().parent / "experiments" / "test_experiment_repeats.py"


def _repeats_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_experiment_repeats_helpers", REPEATS_TEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Judged:
    """The experiment file, the slice's question ids in order, and the scripted questions."""

    path: Path
    order: list[str]
    a: str
    b: str
    c: str
    d: str


@contextmanager
def judged_experiment(root: Path) -> Iterator[Judged]:
    """Write the experiment under ``root``; its scripted judge serves until the block ends."""
    m = _repeats_module()
    ids = m.questions()
    order = list(ids.values())
    # the first four questions the stand-in answers right (lines 25, 33, 36, 47 of the example)
    a, b, c, d = order[:4]

    def script(question: str, answer: str, seed: Any) -> bool:
        r = 0 if seed is None else int(seed)
        q = ids[question]
        if answer.endswith(m.MARK):
            return not ((q == a and r in (0, 1)) or (q == b and r == 1) or q == d)
        return not (q == c and r == 2)

    with m.judge_server(script) as srv:
        yield Judged(m.make(root, srv["url"], judge="repeat = 3"), order, a, b, c, d)


def record_repeats(store: Any, judged: Judged) -> dict[str, int]:
    """``ragmeter run`` of the experiment, recorded in ``store``: {variant: run id}."""
    from ragmeter.workflows.experiment import run_and_record

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, ids = run_and_record(store, judged.path)
    return dict(ids)


def written_repeats(judged: Judged, variant: str) -> dict[str, Any]:
    """The ``repeats`` of the variant's answer_check.json (what ``gate --stable`` reads)."""
    path = judged.path.parent / "runs" / variant / "answer_check.json"
    return dict(json.loads(path.read_text(encoding="utf-8"))["repeats"])
