"""`python -m ragmeter` ends with its own exit code while a pyarrow thread is inside Python.

pyarrow's worker threads sometimes drop the last reference to a Python object a reader lent
them (the checked stream of a TREC file, the bytes of a stored blob) just after the read has
returned, and need the GIL for it. When the interpreter was finalizing by then (a command that
fails on a file prints its error and exits at once; a loaded machine delays the thread), CPython
ended that thread inside arrow's C++ worker loop and the process aborted with SIGABRT after the
right error message: the rare "signal 6" of the hostile probe (issue 22, item 9). Here a pyarrow
I/O thread is held inside a Python read until the process exits, which makes that race certain.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import atexit, runpy, sys, threading
import pyarrow as pa, pyarrow.csv as pcsv

inside, leave = threading.Event(), threading.Event()

class Held:
    # a Python file pyarrow reads on its own I/O thread; the read returns when the process exits
    closed = False
    def __init__(self):
        self.raw = pa.BufferReader(b"a b\n1 2\n")
    def read_buffer(self, nbytes=None):
        inside.set()
        leave.wait(30)
        return self.raw.read_buffer(nbytes)
    def read(self, nbytes=None):
        return bytes(self.read_buffer(nbytes).to_pybytes())
    def close(self):
        pass

threading.Thread(target=lambda: pcsv.read_csv(Held()), daemon=True).start()
inside.wait(30)
atexit.register(leave.set)  # the arrow thread comes back into Python as the process exits
sys.argv = ["ragmeter", *sys.argv[1:]]
runpy.run_module("ragmeter", run_name="__main__", alter_sys=True)
"""


def _env(tmp_path: Path) -> dict[str, str]:
    """This test's own store (the session's default store holds other tests' runs)."""
    env = {k: v for k, v in os.environ.items() if k != "RAGMETER_ARTIFACTS"}
    env["RAGMETER_DATABASE_URL"] = f"sqlite:///{tmp_path / '.ragmeter' / 'ragmeter.db'}"
    return {**env, "COLUMNS": "120"}


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=120,
    )


def test_a_refused_command_exits_2_while_an_arrow_thread_is_in_python(tmp_path: Path) -> None:
    p = _run(tmp_path, "eval", "no-such-qrels.txt", "no-such.run", "--no-store")
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("error: no-such-qrels.txt"), p.stderr
    assert "Fatal Python error" not in p.stderr and "terminate called" not in p.stderr


def test_a_successful_command_exits_0_and_keeps_its_output(tmp_path: Path) -> None:
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "r.txt").write_text("q1 Q0 d1 1 2.0 r\n")
    p = _run(tmp_path, "eval", "q.txt", "r.txt", "-m", "R@10", "-f", "json")
    assert p.returncode == 0, p.stderr
    assert '"R@10": 1.0' in p.stdout  # flushed before the process ended
    assert "stored: run 1" in p.stderr
    # the store's connections were closed as at a normal exit: its log folded back, no -wal
    assert not (tmp_path / ".ragmeter" / "ragmeter.db-wal").exists()
    listed = subprocess.run(
        [sys.executable, "-m", "ragmeter", "runs", "list", "-f", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=120,
    )
    assert listed.returncode == 0 and '"id": 1' in listed.stdout, listed.stderr
