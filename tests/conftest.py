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
