"""The local Ray cluster and the per-test time limit the Ray test modules share: a module
imports the fixtures ``cluster`` and ``alarm`` (autouse) and may set ``LIMIT_S``."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest


@contextmanager
def local_cluster() -> Iterator[None]:
    """A 2-CPU local Ray for one test module (actors x CPUs stay below it: a 2-actor pool on a
    2-CPU cluster has been seen to hang)."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """TimeoutError in the test when it runs past ``seconds`` (a hung Ray call fails, not CI)."""

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"a Ray test ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    with local_cluster():
        yield


@pytest.fixture(autouse=True)
def alarm(request: pytest.FixtureRequest) -> Iterator[None]:
    with time_limit(getattr(request.module, "LIMIT_S", 300)):
        yield
