"""ragmeter's numba kernels compiled once, before the xdist workers start, when their on-disk
cache is cold.

The kernels are compiled with ``cache=True`` (``ragmeter._compiled``): numba keeps the machine
code beside each kernel module (``__pycache__/*.nbi`` and ``*.nbc``, or under
``NUMBA_CACHE_DIR``) and a later process loads it in milliseconds. On a machine that has never
run them (a fresh checkout in CI) the first compile of every kernel and signature the suite
reaches costs about 20 s of CPU (tests/metrics/test_compiled_paths.py: 28 s cold, 8 s warm),
and with ``-n 2`` both workers meet the same kernels at about the same time and compile them
each. :func:`warm_up_if_cold` compiles them in the controller first, on the seeds of
tests/metrics/test_compiled_paths.py that reach every signature its tests reach (both workers
then load); where every kernel module already has a cache index newer than its source it does
nothing (no numba import: a warm run pays nothing).
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src" / "ragmeter"
#: the modules holding compiled kernels
KERNEL_MODULES = (
    SRC / "metrics" / "_join_kernel.py",
    SRC / "metrics" / "_counts_kernel.py",
    SRC / "paired" / "_fused_kernel.py",
)
#: seeds of test_compiled_paths' random cases that reach each kernel signature its tests reach
#: (the plain cases, then the cases with grades moved into far bands)
PLAIN_SEEDS = range(8)
HUGE_SEEDS = range(20)


def _has_index(module: Path) -> bool:
    # numba's own order: NUMBA_CACHE_DIR where set, else beside the module (where that is
    # read-only it uses a per-user folder: counted as cold here, a warm-up then only loads)
    user = os.environ.get("NUMBA_CACHE_DIR")
    folders = [Path(user)] if user else [module.parent / "__pycache__"]
    source = module.stat().st_mtime
    return any(
        p.stat().st_mtime >= source
        for folder in folders
        if folder.is_dir()
        for p in folder.rglob(f"{module.stem}.*.nbi")
    )


def cold() -> bool:
    """Whether some kernel module has no cache index newer than its source."""
    return not all(_has_index(m) for m in KERNEL_MODULES)


def warm_up_if_cold() -> bool:
    """Compile the kernels here when :func:`cold`; whether it did."""
    from ragmeter import _compiled

    if not _compiled.available() or not cold():
        return False
    import numpy as np
    import pytest

    from ragmeter import evaluate
    from ragmeter.paired import paired_bootstrap

    spec = importlib.util.spec_from_file_location(
        "_compiled_paths_cases", TESTS / "metrics" / "test_compiled_paths.py"
    )
    assert spec is not None and spec.loader is not None
    cases = importlib.util.module_from_spec(spec)  # not in sys.modules: pytest imports its own
    spec.loader.exec_module(cases)
    patch = pytest.MonkeyPatch()
    patch.setattr(cases._join, "COMPILED_MIN_ROWS", 0)  # the thresholds the tests lower
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a random case's id-space warning
            for seed in PLAIN_SEEDS:
                qrels, run, ties = cases._case(seed)
                for missing in ("skip", "zero"):
                    evaluate(qrels, run, cases.METRICS, ties=ties, missing=missing)
            for seed in HUGE_SEEDS:
                qrels, run, ties = cases._case(seed)
                evaluate(cases._huge(qrels, seed), run, cases.HUGE_METRICS, ties=ties)
        paired_bootstrap(np.linspace(-1, 1, 50), n_resamples=100, seed=0, method="fused")
    finally:
        patch.undo()
    return True
