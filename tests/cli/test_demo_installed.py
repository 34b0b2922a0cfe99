"""`ragmeter demo` from an installed wheel, in a folder outside the clone (issue 27, item 6).

The wheel is built from this checkout (``pip wheel --no-deps --no-build-isolation``), installed
with ``--no-deps`` into a fresh virtual environment outside the clone whose only other packages
are this venv's (a ``.pth`` file names its site-packages: no network), and ``ragmeter demo`` runs
there in an empty folder: the example ships inside the package, and the demo writes only to the
cache folder ($XDG_CACHE_HOME/ragmeter). ``demo --lab`` from the same install serves the lab.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import site
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: the example's files the demo and ``demo --lab`` read, inside the installed package
SHIPPED = (
    "experiment.toml",
    "corpus.jsonl",
    "golden.jsonl",
    "answers/baseline.jsonl",
    "answers/rerank.jsonl",
    "demo-embeddings.npz",
)
PACKAGED = "ragmeter/_resources/examples/fare-rules/"
#: the tests' own folders beside the venv (either test may run first)
OURS = ("work", "work-lab", "lab.log")

pytestmark = pytest.mark.slow  # a wheel build, a venv and the whole demo: minutes on 2 cores


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The wheel built from the checkout, installed in a venv outside the clone; yields its
    paths, and an environment whose cache and home are empty folders of the test's own."""
    base = tmp_path_factory.mktemp("installed")
    source, dist = tmp_path_factory.mktemp("source"), base / "dist"
    # the checkout's files as git sees them (no build/ or caches), so the build writes nothing
    # into the clone and no stale build/ of an earlier build slips into the wheel
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True, cwd=ROOT, capture_output=True, text=True,
    ).stdout.split("\0")  # fmt: skip
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(source)],
        check=True, cwd=base, capture_output=True,
    )  # fmt: skip
    (wheel,) = dist.glob("ragmeter-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (purelib,) = venv.glob("lib/python3*/site-packages")
    # this venv's packages, after the new one's own (the wheel's ragmeter comes first)
    here = [p for p in site.getsitepackages() if p.endswith("site-packages")]
    (purelib / "zz-deps.pth").write_text("\n".join(here) + "\n", encoding="utf-8")
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "-q", str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    yield {"wheel": wheel, "venv": venv, "purelib": purelib, "base": base}


def _env(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGMETER_", "VIRTUAL_ENV"))}
    env.update(
        XDG_CACHE_HOME=str(base / "cache"), HOME=str(base / "home"), COLUMNS="160",
        PYTHONDONTWRITEBYTECODE="1",
    )  # fmt: skip
    (base / "home").mkdir(exist_ok=True)
    return env


def test_the_wheel_carries_the_example_the_demo_reads(installed: dict[str, Path]) -> None:
    with zipfile.ZipFile(installed["wheel"]) as z:
        names = {n[len(PACKAGED) :] for n in z.namelist() if n.startswith(PACKAGED)}
    assert names == set(SHIPPED)  # no runs, no models, no caches, no scripts
    for name in SHIPPED:
        with zipfile.ZipFile(installed["wheel"]) as z:
            assert z.read(PACKAGED + name) == (ROOT / "examples/fare-rules" / name).read_bytes()


def test_demo_runs_from_the_installed_package_in_an_empty_folder(
    installed: dict[str, Path],
) -> None:
    base, venv = installed["base"], installed["venv"]
    env, work = _env(base), base / "work"
    work.mkdir()
    package = installed["purelib"] / "ragmeter"
    before = _files(installed["purelib"])
    ragmeter = str(venv / "bin" / "ragmeter")
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import ragmeter; print(ragmeter.__file__)"],
        check=True, capture_output=True, text=True, cwd=work, env=env,
    )  # fmt: skip
    assert Path(where.stdout.strip()).parent == package  # the wheel's, not the checkout's

    toy = subprocess.run(
        [ragmeter, "demo", "--toy-only"], capture_output=True, text=True, cwd=work, env=env
    )
    assert toy.returncode == 0, toy.stderr
    assert "1. " in toy.stdout

    r = subprocess.run([ragmeter, "demo"], capture_output=True, text=True, cwd=work, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert "was not found" not in r.stdout + r.stderr
    for section in ("2. Span labels", "3. Retrieval experiment", "4. Answers", "5. The named"):
        assert section in r.stdout, section
    assert "Traceback" not in r.stderr
    cache = base / "cache" / "ragmeter"
    assert (cache / "fare-rules" / "experiment.toml").is_file()  # the example's copy
    assert str(cache / "fare-rules" / "experiment.toml") in r.stdout.replace("\n", "")
    # nothing written but the cache: the empty folder stays empty, the install untouched
    assert list(work.iterdir()) == [] and list((base / "home").iterdir()) == []
    assert _files(installed["purelib"]) == before
    assert {p.name for p in base.iterdir()} <= {"cache", "dist", "home", "venv", *OURS}
    assert "ragmeter demo --lab" in r.stdout  # the closing line names the lab's command


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_demo_lab_from_the_installed_package_serves_the_lab(installed: dict[str, Path]) -> None:
    base, venv = installed["base"], installed["venv"]
    env, work = _env(base), base / "work-lab"
    work.mkdir()
    before = _files(installed["purelib"])
    port = _free_port()
    log = base / "lab.log"  # a file, not a pipe: the demo's pages of output never block it
    with log.open("w", encoding="utf-8") as out_file:
        p = subprocess.Popen(
            [str(venv / "bin" / "ragmeter"), "demo", "--lab", "--port", str(port)],
            cwd=work, env=env, stdout=out_file, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    page = ""
    try:
        deadline = time.monotonic() + 600  # the demo runs first
        while time.monotonic() < deadline and p.poll() is None:
            if "The lab is on" not in log.read_text(encoding="utf-8"):
                time.sleep(0.5)
                continue
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as res:
                    assert res.status == 200
                    page = res.read().decode("utf-8")
                break
            except OSError:
                time.sleep(0.5)  # uvicorn starting
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    out = log.read_text(encoding="utf-8")
    assert page, out[-3000:]
    assert "<html" in page.lower() and "fare rules" in page
    assert re.search(r"The lab is on http://127\.0\.0\.1:\d+/", out), out[-3000:]
    assert (base / "cache" / "ragmeter" / "demo-lab.db").is_file()
    assert list(work.iterdir()) == [] and _files(installed["purelib"]) == before
