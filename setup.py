"""The build's one step pyproject.toml cannot declare: the fare-rules example inside the wheel.

examples/fare-rules/ in the repository is the example's only copy in git. ``ragmeter demo`` run
from an installed package (no checkout beside it) reads the files it needs from the package, so
the build copies them into ``ragmeter/_resources/examples/fare-rules/`` of the wheel: the
experiment file, corpus, golden set, the answers of the demo's two variants and the vectors of
the texts it embeds (so a first demo embeds nothing), nothing else (no runs, models, caches or
scripts). An editable install (``pip install -e .``, ``make demo``) copies nothing: the demo
finds the checkout's examples/ there. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

EXAMPLE = Path(__file__).resolve().parent / "examples" / "fare-rules"
#: the example's files ``ragmeter demo`` and ``ragmeter demo --lab`` read (about 0.6 MB)
SHIPPED = (
    "experiment.toml",
    "corpus.jsonl",
    "golden.jsonl",
    "answers/baseline.jsonl",
    "answers/rerank.jsonl",
    # the vectors of every text the demo embeds (tools/demo_embeddings.py; about 0.4 MB)
    "demo-embeddings.npz",
)
TARGET = ("ragmeter", "_resources", "examples", "fare-rules")


class BuildWithExample(build_py):
    """build_py, then the example's files into the package's resources."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # the checkout's examples/ is read in place
        missing = [name for name in SHIPPED if not (EXAMPLE / name).is_file()]
        if missing:
            raise SystemExit(f"the fare-rules example lacks {', '.join(missing)} in {EXAMPLE}")
        target = Path(self.build_lib, *TARGET)
        for name in SHIPPED:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(EXAMPLE / name, target / name)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            outputs += [str(Path(self.build_lib, *TARGET, name)) for name in SHIPPED]
        return outputs


setup(cmdclass={"build_py": BuildWithExample})
