"""The README's quick start works as written for a new user (issue 27, item 6): `ragmeter` is on
PATH after the step the README names, every file a command names exists in the checkout, `make
test` finds the real data beside the clone as the README describes, and every torch note says
how to get the CPU wheel on an ordinary machine."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _quick_start() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```console\n(.*?)```", section, flags=re.S)
    assert block is not None
    return [ln[2:] for ln in block.group(1).splitlines() if ln.startswith("$ ")]


def test_the_quick_start_puts_ragmeter_on_path_first() -> None:
    lines = _quick_start()
    first = next(i for i, ln in enumerate(lines) if ln.startswith("ragmeter"))
    assert any(ln.startswith(". .venv/bin/activate") for ln in lines[:first]), lines


def test_every_file_the_quick_start_names_exists() -> None:
    named = []
    for ln in _quick_start():
        words = shlex.split(ln.split(" #", 1)[0])
        if words[0] != "ragmeter":
            continue
        for w in words[1:]:
            if not w.startswith("-") and ("/" in w or re.search(r"\.(txt|run|toml|jsonl)$", w)):
                named.append(w)
                assert (REPO / w).exists(), f"the README's quick start names {w}, not in the repo"
    assert len(named) >= 4


# justified: the test runs the Makefile, and GNU make may be absent outside CI
@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
@pytest.mark.parametrize("beside", [True, False])
def test_make_points_the_tests_at_the_data_beside_the_clone(tmp_path: Path, beside: bool) -> None:
    clone = tmp_path / "ragmeter"
    clone.mkdir()
    shutil.copy(REPO / "Makefile", clone / "Makefile")
    if beside:
        (tmp_path / "shared" / "data").mkdir(parents=True)
        (tmp_path / "shared" / "peer-data" / "trec_eval").mkdir(parents=True)
    env = {"PATH": "/usr/bin:/bin"}  # no RAGMETER_* of this process
    show = "show: ; @echo data=$$RAGMETER_DATA peer=$$RAGMETER_PEER_DATA"
    out = subprocess.run(
        ["make", "-s", "--no-print-directory", "--eval", show, "show"],
        cwd=clone, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    if beside:
        data, peer = (tmp_path / "shared" / "data").resolve(), tmp_path / "shared" / "peer-data"
        assert out == f"data={data} peer={(peer / 'trec_eval').resolve()}"
    else:
        assert out == "data= peer="
    # a value the environment sets wins
    out = subprocess.run(
        ["make", "-s", "--no-print-directory", "--eval", show, "show"],
        cwd=clone, env={**env, "RAGMETER_DATA": "/elsewhere"}, capture_output=True, text=True,
        check=True,
    ).stdout.strip()  # fmt: skip
    assert out.startswith("data=/elsewhere ")


def test_every_torch_note_says_how_to_get_the_cpu_wheel() -> None:
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    notes = 0
    for doc in docs:
        lines = doc.read_text(encoding="utf-8").splitlines()
        for i, ln in enumerate(lines, 1):
            if "pip install torch" in ln:
                notes += 1
                near = "\n".join(lines[max(0, i - 12) : i + 3])
                assert "download.pytorch.org/whl/cpu" in near, f"{doc.name}:{i}"
    assert notes >= 2
