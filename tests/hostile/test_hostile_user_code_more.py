"""The user's code prints and fails without harming ragmeter's output; the demo's lab binds first.

- **prints**: a generator function (``[generator] kind = "python"``) and a pipeline
  (``retriever = {kind = "python"}``) that print, at import and on every call, in ragmeter's
  thread (``timeout = 0``) or in the worker thread that runs each call, with ``print``,
  ``sys.stdout.write``, ``writelines`` and ``sys.stdout.buffer``: ``ragmeter run --format
  json`` still prints one JSON document on stdout (in this process and in a real one), and the
  prints are on stderr. A caller's own prints (``on_variant``) stay on stdout, and stdout is
  given back when the run ends. A property over generated sequences of writes from the user's
  code and from ragmeter, in either thread, checks the routing write for write;
- **loading early**: a generator or pipeline module that does not import or has the wrong
  signature, named by any variant, fails before any chunking, retrieval or cache write (the
  retriever factory and the chunker are never called, no cache folder is made), with the
  loader's own one-line error; a property over generated broken modules in a random variant
  holds it; every module is still imported once;
- **``ragmeter demo --lab``** on a port another socket holds is one ``error:`` line and exit
  code 2 before the demo runs (it was exit 3 from uvicorn after the whole demo).
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _experiment_files import TEXTS, fare_rules_experiment, toy_documents
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile_user_code import broken_modules
from typer.testing import CliRunner

from ragmeter._errors import InputError, UsageError
from ragmeter.cli import app
from ragmeter.data import Evidence, Question, write_corpus, write_golden
from ragmeter.experiments import run_experiment
from ragmeter.retrieval.pipelines._calls import Caller

REPO = Path(__file__).resolve().parents[2]
FEE = "75 dollars"

EXPERIMENT = """
name = "printing user code"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "runs"
k = 2
headroom_k = 4
metrics = ["R"]

[generator]
kind = "python"
target = "gen.py:answer"
cache = false
{generator}

[baseline]
name = "base"
chunker = "tokens:50:0"
retriever = "bm25"
depth = 4

[[variant]]
name = "mine"
retriever = {{ kind = "python", target = "rag.py:retrieve"{pipeline} }}
"""

#: every way Python code writes to stdout; each line holds a marker the test looks for
PRINTS = """
import sys

print("{who}-IMPORT-print")


def _loud(question):
    print("{who}-CALL-print", question)
    sys.stdout.write("{who}-CALL-write\\n")
    sys.stdout.writelines(["{who}-CALL-", "writelines\\n"])
    print("{who}-CALL-file", file=sys.stdout, flush=True)
    sys.stdout.buffer.write(b"{who}-CALL-buffer\\n")
    sys.stdout.flush()
"""

GEN = (
    PRINTS.format(who="GEN")
    + """

def answer(question, passages):
    _loud(question)
    return "75 dollars [1]"
"""
)

RAG = (
    PRINTS.format(who="RAG")
    + """

def retrieve(question):
    _loud(question)
    return [("fees", 0, 60, 2.0)]
"""
)

#: a generator that prints nothing
QUIET = 'def answer(question, passages):\n    return "75 dollars [1]"\n'

MARKERS = [
    f"{who}-{what}"
    for who in ("GEN", "RAG")
    for what in (
        "IMPORT-print",
        "CALL-print",
        "CALL-write",
        "CALL-writelines",
        "CALL-file",
        "CALL-buffer",
    )
]


def _data(folder: Path) -> None:
    """The toy corpus and three questions on its fees document (each answered by ``GEN``)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_corpus(toy_documents(), folder / "corpus.jsonl")
    at = TEXTS["fees"].index(FEE)
    evidence = [Evidence(doc="fees", start=at, end=at + len(FEE), grade=1)]
    questions = [
        Question(
            id=f"q{i}", question=f"What is the change fee? ({i})", answer=FEE, evidence=evidence
        )
        for i in range(3)
    ]
    write_golden(questions, folder / "golden.jsonl")


def _experiment(
    folder: Path, *, timeout: str | None = None, gen: str = GEN, rag: str = RAG
) -> Path:
    """The toy experiment: a bm25 baseline and a variant whose retriever is the user's
    pipeline, every variant answering through the user's generator; ``timeout`` for both."""
    _data(folder)
    (folder / "gen.py").write_text(gen, encoding="utf-8")
    (folder / "rag.py").write_text(rag, encoding="utf-8")
    setting = "" if timeout is None else f"timeout = {timeout}"
    pipeline = "" if timeout is None else f", timeout = {timeout}"
    path = folder / "experiment.toml"
    path.write_text(EXPERIMENT.format(generator=setting, pipeline=pipeline), encoding="utf-8")
    return path


def _cli(path: Path, *args: str) -> Any:
    """``ragmeter run`` in this process (cwd: the experiment's folder)."""
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return CliRunner().invoke(app, ["run", path.name, *args])
    finally:
        os.chdir(cwd)


# -- prints go to stderr ---------------------------------------------------------------------------
@pytest.mark.parametrize("timeout", [None, "0"], ids=["worker thread", "ragmeter's thread"])
def test_user_prints_never_reach_run_json_stdout(tmp_path: Path, timeout: str | None) -> None:
    path = _experiment(tmp_path, timeout=timeout)
    res = _cli(path, "--format", "json", "--no-store")
    assert res.exit_code == 0, res.output
    result = json.loads(res.stdout)  # one JSON document: nothing else on stdout
    assert [v["name"] for v in result["variants"]] == ["base", "mine"]
    for marker in MARKERS:
        assert marker not in res.stdout
        assert marker in res.stderr, marker
    assert res.stderr.count("GEN-IMPORT-print") == 1  # imported once, checked before the run


def test_a_real_process_prints_one_json_document(tmp_path: Path) -> None:
    """``python -m ragmeter run --format json`` in a real process: stdout is the file
    descriptor itself, and still holds the JSON alone."""
    path = _experiment(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "ragmeter", "run", path.name, "--format", "json", "--no-store"],
        cwd=path.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    json.loads(done.stdout)
    for marker in MARKERS:
        assert marker not in done.stdout and marker in done.stderr, marker


def test_a_callers_own_prints_stay_on_stdout_and_stdout_is_given_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _experiment(tmp_path, timeout="5")
    before = sys.stdout
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_experiment(path, write=False, on_variant=lambda v: print("CALLER", v.name))
    assert sys.stdout is before
    out, err = capsys.readouterr()
    assert out.splitlines() == ["CALLER base", "CALLER mine"]
    for marker in MARKERS:
        assert marker in err and marker not in out, marker
    print("after the run")
    assert capsys.readouterr().out == "after the run\n"


#: one write: who writes (the user's code or ragmeter), how, what, and in which thread
Write = tuple[str, str, str, bool]
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


def _writes(way: str, text: str) -> None:
    if way == "print":
        print(text)
    elif way == "write":
        sys.stdout.write(text)
    elif way == "writelines":
        sys.stdout.writelines([text, text])
    elif way == "file":
        print(text, file=sys.stdout, end="")
    else:
        sys.stdout.buffer.write(text.encode("utf-8"))


def _written(way: str, text: str) -> str:
    return {"print": text + "\n", "writelines": text + text}.get(way, text)


def _stream() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)


def _read(stream: io.TextIOWrapper) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]


@settings(max_examples=200)
@given(
    writes=st.lists(
        st.tuples(
            st.sampled_from(["user", "ragmeter"]),
            st.sampled_from(["print", "write", "writelines", "file", "buffer"]),
            TEXT,
            st.booleans(),
        ),
        max_size=12,
    )
)
def test_each_write_goes_where_its_author_says(writes: list[Write]) -> None:
    """Under ``routed()``: what the user's code writes (called by a Caller in ragmeter's thread,
    or in a worker thread) is on stderr, in order; what ragmeter writes stays on stdout, in
    order; the old stdout is back afterwards."""
    from ragmeter.retrieval.pipelines import _stdout

    out, err = _stream(), _stream()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        callers = {False: Caller("test code", None), True: Caller("test code", 30)}
        with _stdout.routed():
            for who, way, text, worker in writes:
                if who == "user":
                    callers[worker](_writes, way, text)
                else:
                    _writes(way, text)
        assert sys.stdout is out
    finally:
        sys.stdout, sys.stderr = saved
    expected = {
        who: "".join(_written(w, t) for u, w, t, _ in writes if u == who)
        for who in ("user", "ragmeter")
    }
    assert (_read(out), _read(err)) == (expected["ragmeter"], expected["user"])


def test_runs_that_overlap_give_stdout_back_when_the_last_ends() -> None:
    """The lab runs jobs in threads: the router stays while any run holds it."""
    from ragmeter.retrieval.pipelines import _stdout

    saved = sys.stdout
    first_in, second_out = threading.Event(), threading.Event()

    def first() -> None:
        with _stdout.routed():
            first_in.set()
            second_out.wait(30)
            assert isinstance(sys.stdout, _stdout.Router)

    t = threading.Thread(target=first)
    t.start()
    first_in.wait(30)
    with _stdout.routed():
        assert isinstance(sys.stdout, _stdout.Router)
    assert isinstance(sys.stdout, _stdout.Router)  # the first run still holds it
    second_out.set()
    t.join(30)
    assert sys.stdout is saved


# -- user code is loaded before any work -----------------------------------------------------------
@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every chunking and retriever build, recorded (the test asserts there is none)."""
    import ragmeter.chunking
    import ragmeter.experiments._runner as runner

    done: list[str] = []

    def recorded(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def fn(*args: Any, **kwargs: Any) -> Any:
            done.append(name)
            return real(*args, **kwargs)

        return fn

    monkeypatch.setattr(runner, "build_retriever", recorded("retrieve", runner.build_retriever))
    chunk = recorded("chunk", ragmeter.chunking.chunk_corpus)
    monkeypatch.setattr(ragmeter.chunking, "chunk_corpus", chunk)
    return done


BROKEN = [
    ("def answer(question, passages):\n    return 1 +\n", "SyntaxError"),
    ("raise ValueError('no index')\n", "ValueError: no index"),
    ("import sys\nsys.exit(4)\n", "SystemExit (sys.exit(4))"),
    ("def other(question, passages):\n    return ''\n", "it defines: other"),
    ("def answer(question):\n    return ''\n", "takes (question) but ragmeter calls"),
]


@pytest.mark.parametrize(("text", "words"), BROKEN)
def test_a_broken_generator_fails_before_any_retrieval(
    tmp_path: Path, no_work: list[str], text: str, words: str
) -> None:
    path = _experiment(tmp_path, gen=text)
    res = _cli(path, "--no-store")
    assert res.exit_code == 2, res.output
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("error: ") and "field 'generator.target'" in line and words in line
    assert no_work == []
    assert not (tmp_path / ".ragmeter-cache").exists() and not (tmp_path / "runs").exists()


def test_a_broken_pipeline_of_a_later_variant_fails_before_the_baseline_runs(
    tmp_path: Path, no_work: list[str]
) -> None:
    for rag, words in [
        ("def retrieve(question):\n    return [\n", "SyntaxError"),
        ("def retrieve():\n    return []\n", "takes () but ragmeter calls it as (question)"),
    ]:
        folder = Path(tempfile.mkdtemp(dir=tmp_path))
        res = _cli(_experiment(folder, gen=QUIET, rag=rag), "--no-store")
        assert res.exit_code == 2, res.output
        (line,) = res.stderr.strip().splitlines()
        assert line.startswith("error: ") and "rag.py:retrieve" in line and words in line
        assert no_work == []
        assert not (folder / ".ragmeter-cache").exists() and not (folder / "runs").exists()


def test_a_broken_module_leaves_no_run_in_the_store(tmp_path: Path, no_work: list[str]) -> None:
    """Recording into the store, a broken module fails before any run is started: no run is
    left ``failed`` for a mistake that cost no work."""
    from ragmeter import Store

    url = f"sqlite:///{tmp_path / 'store.db'}"
    path = _experiment(tmp_path / "exp", gen="def answer(question, passages):\n    return [\n")
    res = _cli(path, "--db", url)
    assert res.exit_code == 2, res.output
    assert "SyntaxError" in res.stderr and no_work == []
    with Store.open(url) as store:
        assert store.runs() == []


def test_each_module_is_imported_once(tmp_path: Path) -> None:
    """The early check and the variants' loading share one import: a module's top level (a
    model it loads, a connection it opens) runs once."""
    count = "from pathlib import Path\nwith open(Path(__file__).with_suffix('.n'), 'a') as f:\n"
    count += "    f.write('x')\n"
    path = _experiment(tmp_path, gen=count + GEN, rag=count + RAG)
    res = _cli(path, "--no-store")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "gen.n").read_text() == "x" and (tmp_path / "rag.n").read_text() == "x"


EXPERIMENT_3 = """
name = "three variants"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "runs"
k = 2
metrics = ["R"]
{generator}

[baseline]
name = "v0"
chunker = "tokens:50:0"
retriever = {r0}

[[variant]]
name = "v1"
retriever = {r1}

[[variant]]
name = "v2"
retriever = {r2}
"""


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    module=broken_modules(),
    kind=st.sampled_from(["generator", "pipeline"]),
    where=st.integers(0, 2),
)
def test_any_broken_module_in_any_variant_fails_before_any_work(
    tmp_path: Path, no_work: list[str], module: tuple[str, int, str], kind: str, where: int
) -> None:
    """A generated broken module, as the generator or as the pipeline of the drawn variant
    (the others bm25 or a working pipeline): run_experiment raises the loader's one-line
    error naming the file and line, and nothing was chunked, retrieved or cached."""
    text, line, words = module
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    _data(folder)
    (folder / "broken.py").write_text(text, encoding="utf-8")
    (folder / "ok.py").write_text(RAG + GEN, encoding="utf-8")
    retrievers = ['"bm25"', '{ kind = "python", target = "ok.py:retrieve" }', '"bm25"']
    generator = '[generator]\nkind = "python"\ntarget = "ok.py:answer"\ncache = false'
    if kind == "pipeline":
        retrievers[where] = '{ kind = "python", target = "broken.py:retrieve" }'
    else:
        generator = generator.replace("ok.py", "broken.py")
    text = EXPERIMENT_3.format(generator=generator, r0=retrievers[0], r1=retrievers[1],
                               r2=retrievers[2])  # fmt: skip
    (folder / "experiment.toml").write_text(text, encoding="utf-8")
    with pytest.raises((InputError, UsageError)) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_experiment(folder / "experiment.toml", write=False)
    message = str(e.value)
    assert "\n" not in message and words in message, message
    assert f"broken.py, line {line})" in message, message
    assert no_work == [] and not (folder / ".ragmeter-cache").exists()


# -- ragmeter demo --lab on a taken port -----------------------------------------------------------
@pytest.fixture
def taken() -> Iterator[int]:
    """A port another socket listens on (127.0.0.1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        yield s.getsockname()[1]


def test_demo_lab_on_a_taken_port_is_one_line_before_the_demo(tmp_path: Path, taken: int) -> None:
    from test_lab_jobs import DEMO_EXPERIMENT

    example = fare_rules_experiment(tmp_path / "example", DEMO_EXPERIMENT, trees=["answers"])
    cache = tmp_path / "cache"
    args = ["demo", "--lab", "--port", str(taken), "--example", str(example.parent)]
    res = CliRunner().invoke(app, [*args, "--cache-dir", str(cache)], env={"COLUMNS": "200"})
    assert res.exit_code == 2, res.output
    assert res.stderr.strip().splitlines() == [
        f"error: cannot listen on 127.0.0.1:{taken}: the port is taken (another server, perhaps "
        "another ragmeter lab, listens there); pick another with --port"
    ]
    assert res.stdout == ""  # not a line of demo
    assert not (cache / "demo-lab.db").exists()
