"""Shared fixtures. Real datasets are read from $RAGMETER_DATA (CI points it at ../shared/data)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

DATA_HINT = (
    "set RAGMETER_DATA to the folder holding beir-scifact/ and squad-v1.1-dev/ "
    "(e.g. ../shared/data)"
)


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The real-datasets folder, or skip the test saying how to get the data."""
    root = os.environ.get("RAGMETER_DATA")
    if not root or not Path(root).is_dir():
        # justified: the real datasets live outside the repo (licences); CI sets RAGMETER_DATA
        pytest.skip(DATA_HINT)
    return Path(root)


@pytest.fixture(scope="session")
def fare_rules_dir() -> Path:
    return EXAMPLES / "fare-rules"


def pytest_configure(config: pytest.Config) -> None:
    """Make the fare-rules example's run outputs (git-ignored: ``ragmeter run`` writes them)
    before any test reads them, as a user would: ``ragmeter run examples/fare-rules/
    experiment.toml`` and ``ragmeter chunk ... -c tokens:300:0 -o runs/chunks-300.jsonl``.

    Runs once, in the controller (xdist workers start after it); about 20-60 s from an empty
    cache, a fraction of a second from a warm one. Tests that read these files then check the
    outputs of the current code, never stale ones.
    """
    if hasattr(config, "workerinput"):
        return
    import warnings

    from ragmeter import load_corpus
    from ragmeter.chunking import chunk_corpus
    from ragmeter.chunking._format import save_chunking
    from ragmeter.experiments import run_experiment

    example = EXAMPLES / "fare-rules"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_experiment(example / "experiment.toml")
    chunking = chunk_corpus(load_corpus(example / "corpus.jsonl"), "tokens:300:0")
    save_chunking(chunking, example / "runs" / "chunks-300.jsonl")
