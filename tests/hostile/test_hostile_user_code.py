"""Hostile user code: the generator functions (``[generator] kind = "python"``) and pipelines
(``retriever = {kind = "python", ...}``) an experiment file names, misbehaving every way a new
user's code does, through ``ragmeter run`` on a tiny experiment and through the loaders.

The promises (docs/generation-experiments.md "Your own function", docs/pipelines.md "Errors are
recorded, never hidden"):

- **loading** a module that does not parse, raises or calls ``sys.exit()`` while importing,
  lacks the function, is a folder, or has a function of the wrong signature is one ``error:``
  line naming the target and the file and line, exit code 2; never a traceback, never exit 0;
- **on one question**, an exception, a return value that is not an answer (None, numbers,
  bytes, dicts, lone surrogates anywhere, a huge text, endless citations), ``sys.exit()`` or
  another ``BaseException``, and a call that never returns (``timeout``) are that question's
  recorded error; the run goes on, writes its files as valid UTF-8 and is stored ``finished``;
- **Ctrl-C** still stops the run and the stored runs are marked ``interrupted``; the process
  still exits when a timed-out call is left running.

Generated cases (hypothesis: modules broken at random lines in random ways, signatures, return
values, surrogate positions) run against the loaders and the generator directly, where each
case costs milliseconds; the end-to-end runs batch many misbehaviours into one experiment (one
question per behaviour), so the file stays fast.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from _experiment_files import TEXTS, toy_documents
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter._errors import InputError, UsageError
from ragmeter.cli import app
from ragmeter.data import Evidence, Question, write_corpus, write_golden
from ragmeter.generation import (
    CachedGenerator,
    CallableGenerator,
    ContextSpec,
    Generation,
    Passage,
    assemble,
    load_prompt,
    make_generator,
    make_request,
)

FEE = "75 dollars"
FEE_AT = TEXTS["fees"].index(FEE)

#: one question per behaviour of the generator module below: (case, expected error words or
#: None for an answer that is recorded as given)
GENERATOR_CASES: list[tuple[str, str | None]] = [
    ("fine", None),
    ("fine_nul", None),  # NUL is valid text: kept, and stored on both databases
    ("str_subclass", None),  # the text itself, not the subclass's __str__
    ("surrogate_start", "lone surrogate U+D800 at character 0"),
    ("surrogate_middle", "lone surrogate U+DBFF at character 4"),
    ("surrogate_end", "lone surrogate U+DFFF at character 10"),
    ("surrogate_low_alone", "lone surrogate U+DC80 at character 0"),
    ("surrogate_in_citation", "a citation is not valid text"),
    ("none", "got NoneType"),
    ("int", "got int"),
    ("nan", "got float"),
    ("bytes", "got bytes (decode bytes to str first)"),
    ("dict", "got dict"),
    ("list", "got list"),
    ("text_is_bytes", "(the text is a bytes)"),
    ("nan_citation", "a citation is a passage id or number, got float"),
    ("huge_citation_number", "a citation number must be a passage number"),
    ("too_many_citations", "more than 10000 citations"),
    ("huge_answer", "characters long; ragmeter keeps answers of at most"),
    ("raises", "ValueError: two lines \ufffd here"),
    ("sys_exit_0", "called sys.exit(0)"),
    ("sys_exit_bare", "called sys.exit()"),
    ("raise_system_exit", "called sys.exit()"),
    ("sys_exit_text", "called sys.exit('bye')"),
    ("base_exception", "Stop: halt (a BaseException raised by the generator function"),
    ("generator_exit", "GeneratorExit (a BaseException"),
]

GENERATOR = """
import itertools
import sys


class Stop(BaseException):
    pass


class Loud(str):
    def __str__(self):
        return "not the answer"


def answer(question, passages):
    case = question.rsplit(" ", 1)[-1]
    fee = "75 dollars [1]"
    if case == "fine":
        return fee
    if case == "fine_nul":
        return fee + "\\x00"
    if case == "str_subclass":
        return Loud(fee)
    if case == "surrogate_start":
        return "\\ud800" + fee
    if case == "surrogate_middle":
        return "75 d\\udbffollars"
    if case == "surrogate_end":
        return "75 dollars\\udfff"
    if case == "surrogate_low_alone":
        return "\\udc80"
    if case == "surrogate_in_citation":
        return fee, ["\\ud800"]
    if case == "none":
        return None
    if case == "int":
        return 42
    if case == "nan":
        return float("nan")
    if case == "bytes":
        return b"75 dollars"
    if case == "dict":
        return {"text": fee}
    if case == "list":
        return [fee]
    if case == "text_is_bytes":
        return b"75 dollars", [1]
    if case == "nan_citation":
        return fee, [float("nan")]
    if case == "huge_citation_number":
        return fee, [10**5000]
    if case == "too_many_citations":
        return fee, itertools.islice(itertools.count(1), 20_000)
    if case == "huge_answer":
        return "x" * (4 * 1024 * 1024 + 1)
    if case == "raises":
        raise ValueError("two\\nlines \\ud800 here")
    if case == "sys_exit_0":
        sys.exit(0)
    if case == "sys_exit_bare":
        sys.exit()
    if case == "raise_system_exit":
        raise SystemExit
    if case == "sys_exit_text":
        sys.exit("bye")
    if case == "base_exception":
        raise Stop("halt")
    if case == "generator_exit":
        raise GeneratorExit
    if case == "hang":
        HANG.wait()
        return fee
    if case == "interrupt":
        raise KeyboardInterrupt
    raise AssertionError(case)


import threading  # noqa: E402

HANG = threading.Event()  # set by the test once the run is over: the hung call then returns
"""

EXPERIMENT = """
name = "hostile user code"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "runs"
k = 2
headroom_k = 4
metrics = ["R"]

[generator]
kind = "python"
target = "{module}:answer"
cache = false
{generator}

[baseline]
name = "base"
chunker = "tokens:50:0"
retriever = {retriever}
depth = 4
"""


# -- the tiny experiment -----------------------------------------------------------------------
def _module_name(folder: Path, what: str) -> str:
    """A module name of this test's own (a module imports once per process, by name)."""
    return f"hostile_{what}_{hashlib.sha256(str(folder).encode()).hexdigest()[:12]}"


def _experiment(
    folder: Path,
    cases: list[str],
    *,
    generator: str = GENERATOR,
    settings_: str = "",
    retriever: str = '"bm25"',
    rag: str | None = None,
) -> tuple[Path, str]:
    """``folder/experiment.toml`` over the toy fees document, one question per case (its last
    word), the generator module beside it; returns (path, the generator's module name)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_corpus(toy_documents(), folder / "corpus.jsonl")
    questions = [
        Question(
            id=f"q-{case}",
            question=f"What is the change fee for a Standard fare? {case}",
            answer=FEE,
            evidence=[Evidence(doc="fees", start=FEE_AT, end=FEE_AT + len(FEE), grade=1)],
        )
        for case in cases
    ]
    write_golden(questions, folder / "golden.jsonl")
    module = _module_name(folder, "gen")
    (folder / f"{module}.py").write_text(generator, encoding="utf-8")
    if rag is not None:
        (folder / f"{_module_name(folder, 'rag')}.py").write_text(rag, encoding="utf-8")
        retriever = retriever.replace("RAG", _module_name(folder, "rag"))
    path = folder / "experiment.toml"
    path.write_text(
        EXPERIMENT.format(module=module, generator=settings_, retriever=retriever),
        encoding="utf-8",
    )
    return path, module


def _run(path: Path, *args: str) -> Any:
    """``ragmeter run`` in this process (cwd: the experiment's folder)."""
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return CliRunner().invoke(app, ["run", path.name, *args])
    finally:
        os.chdir(cwd)


@pytest.fixture
def store(store_url: str) -> str:
    """``store_url`` migrated, as a team migrates a server database before its first run."""
    from ragmeter.store import Store

    Store.open(store_url, migrate=True).close()
    return store_url


def _lines(path: Path) -> list[dict[str, Any]]:
    """A JSON Lines file read strictly: valid UTF-8, one object a line."""
    text = path.read_bytes().decode("utf-8")  # strict: a lone surrogate never reached a file
    return [json.loads(line) for line in text.splitlines()]


def _errors(folder: Path) -> dict[str, str | None]:
    return {g["id"].removeprefix("q-"): g["error"] for g in _lines(folder / "generations.jsonl")}


def _release(module: str) -> None:
    """Let a hung call of the test's generator or pipeline return (the worker thread ends)."""
    for name in (module, module.replace("_gen_", "_rag_")):
        hang = getattr(sys.modules.get(name), "HANG", None)
        if hang is not None:
            hang.set()


# -- loading: one line, the file and the line --------------------------------------------------
LOAD_FAILURES = [
    # (module text or None for a folder, target attribute, words of the one error line)
    ("def answer(question, passages):\n    return 1 +\n", "answer", "SyntaxError"),
    ("x = 1\nraise ValueError('no index')\ndef answer(q, p): return ''\n", "answer", "ValueError"),
    ("import sys\n\nsys.exit(0)\n", "answer", "SystemExit (sys.exit(0))"),
    ("def other(question, passages):\n    return ''\n", "answer", "it defines: other"),
    ("def answer(question):\n    return ''\n", "answer", "takes (question) but ragmeter calls"),
    ("async def answer(q, p):\n    return ''\n", "answer", "is an async function"),
]


@pytest.mark.parametrize(("text", "attr", "words"), LOAD_FAILURES)
def test_a_broken_generator_module_is_one_error_line_naming_file_and_line(
    tmp_path: Path, text: str, attr: str, words: str
) -> None:
    path, module = _experiment(tmp_path, ["fine"], generator=text)
    res = _run(path, "--no-store")
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert res.exit_code == 2, res.output
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("error: ") and "field 'generator.target'" in line
    assert words in line
    failing = [i for i, x in enumerate(text.splitlines(), 1) if "raise" in x or "exit(" in x]
    if words == "SyntaxError":
        failing = [2]
    if failing:  # the user's code failed: the error says where
        assert f"(at {module}.py, line {failing[0]})" in line


def test_a_target_that_is_a_folder_says_so(tmp_path: Path) -> None:
    path, _ = _experiment(tmp_path, ["fine"])
    (tmp_path / "gens.py").mkdir()
    text = path.read_text().replace('target = "', 'target = "gens.py:answer"\n# "')
    path.write_text(text)
    res = _run(path, "--no-store")
    assert res.exit_code == 2
    (line,) = res.stderr.strip().splitlines()
    assert "gens.py is a folder, not a .py file" in line


# -- one run, every bad behaviour on a question of its own --------------------------------------
def test_every_misbehaviour_is_that_questions_recorded_error(tmp_path: Path, store: str) -> None:
    """Each question triggers one behaviour; the run completes (exit 0), every file it writes is
    valid UTF-8, each bad behaviour is exactly its question's error, the good answers are kept
    as given, and the store holds the run finished with its answers (SQLite and PostgreSQL)."""
    cases = [case for case, _ in GENERATOR_CASES]
    path, _ = _experiment(tmp_path, cases)
    res = _run(path, "--db", store)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert res.exit_code == 0, res.output
    folder = tmp_path / "runs" / "base"
    errors = _errors(folder)
    for case, words in GENERATOR_CASES:
        if words is None:
            assert errors[case] is None, (case, errors[case])
        else:
            assert errors[case] is not None and words in errors[case], (case, errors[case])
            assert "\n" not in errors[case]
    answers = {a["id"].removeprefix("q-"): a for a in _lines(folder / "answers.jsonl")}
    assert answers["fine_nul"]["answer"] == "75 dollars [1]\x00"
    assert answers["str_subclass"]["answer"] == "75 dollars [1]"
    assert all(answers[c]["answer"] == "" for c, w in GENERATOR_CASES if w is not None)
    summary = json.loads((tmp_path / "runs" / "summary.json").read_text(encoding="utf-8"))
    assert summary["variants"][0]["answers"]["summary"]["errors"] == sum(
        w is not None for _, w in GENERATOR_CASES
    )
    from ragmeter.store import Store

    with Store.open(store) as opened:
        (run,) = opened.runs()
        assert run.status == "finished"
        with opened.engine.connect() as conn:
            n = conn.execute(sa.text("select n_answers from answer_sets")).scalar_one()
    assert n == len(cases)


def test_on_error_raise_stops_at_the_first_bad_answer_naming_it(tmp_path: Path) -> None:
    path, _ = _experiment(
        tmp_path, ["fine", "surrogate_middle", "sys_exit_0"], settings_='on_error = "raise"'
    )
    res = _run(path, "--no-store")
    assert res.exit_code == 2
    (line,) = res.stderr.strip().splitlines()
    assert "failed on question q-surrogate_middle" in line and "lone surrogate U+DBFF" in line


def test_a_generator_failing_every_question_stops_with_one_line(tmp_path: Path) -> None:
    path, _ = _experiment(tmp_path, ["sys_exit_0", "none"])
    res = _run(path, "--no-store")
    assert res.exit_code == 2
    (line,) = res.stderr.strip().splitlines()
    assert "failed on every one of the 2 questions" in line and "generations.jsonl" in line
    assert set(_errors(tmp_path / "runs" / "base")) == {"sys_exit_0", "none"}  # still written


# -- timeouts ----------------------------------------------------------------------------------
RAG = """
import sys
import threading

HANG = threading.Event()


class Stop(BaseException):
    pass


def retrieve(question):
    case = question.rsplit(" ", 1)[-1]
    if case == "rag_hang":
        HANG.wait()
    if case == "rag_exit":
        sys.exit(3)
    if case == "rag_base":
        raise Stop("halt")
    if case == "rag_many":
        return itertools.repeat(("fees", 0, 60), 150_000)
    return [("fees", 0, 60, 2.0)]


import itertools  # noqa: E402
"""


def test_a_call_that_never_returns_times_out_and_the_run_goes_on(tmp_path: Path) -> None:
    """``timeout = 0.2``: the hung question is recorded "timed out after 0.2 s", the others
    are answered (no wall-clock assert: the recorded error is the evidence)."""
    path, module = _experiment(tmp_path, ["fine", "hang", "fine_nul"], settings_="timeout = 0.2")
    try:
        res = _run(path, "--no-store")
    finally:
        _release(module)
    assert res.exit_code == 0, res.output
    errors = _errors(tmp_path / "runs" / "base")
    assert errors["fine"] is None and errors["fine_nul"] is None
    assert errors["hang"] is not None and errors["hang"].startswith("timed out after 0.2 s")


def test_every_call_timing_out_stops_with_one_line(tmp_path: Path) -> None:
    path, module = _experiment(tmp_path, ["hang"], settings_="timeout = 0.2")
    try:
        res = _run(path, "--no-store")
    finally:
        _release(module)
    assert res.exit_code == 2
    (line,) = res.stderr.strip().splitlines()
    assert "failed on every one of the 1 questions" in line and "timed out after 0.2 s" in line


def test_a_pipeline_that_hangs_exits_or_returns_too_much_is_an_error_of_that_question(
    tmp_path: Path,
) -> None:
    """The same rules for a python pipeline (retriever timeout 0.2 s): the hung question, the
    one that calls sys.exit(3) and the one that raises a BaseException are recorded in
    errors.jsonl, with the line for the last two; a lazy answer of 150,000 hits is refused as
    output without reading past the cap."""
    cases = ["rag_hang", "rag_exit", "rag_base", "fine"]
    retriever = '{ kind = "python", target = "RAG:retrieve", timeout = 0.2 }'
    path, module = _experiment(tmp_path, cases, retriever=retriever, rag=RAG)
    try:
        res = _run(path, "--no-store")
    finally:
        _release(module)
    assert res.exit_code == 0, res.output
    errors = {e["qid"].removeprefix("q-"): e for e in _lines(tmp_path / "runs/base/errors.jsonl")}
    assert set(errors) == {"rag_hang", "rag_exit", "rag_base"}
    assert errors["rag_hang"]["error"].startswith("timed out after 0.2 s")
    assert "called sys.exit(3)" in errors["rag_exit"]["error"]
    assert errors["rag_exit"]["where"].endswith(":17 in retrieve")
    assert "Stop: halt" in errors["rag_base"]["error"]
    many, _ = _experiment(tmp_path / "many", ["rag_many", "fine"], retriever=retriever, rag=RAG)
    res = _run(many, "--no-store")
    assert res.exit_code == 2
    assert "more than 100000 hits for one question" in res.stderr


def test_a_process_with_a_call_left_running_still_exits(tmp_path: Path) -> None:
    """A call that never returns (``timeout = 0.2``) is recorded and ``python -m ragmeter run``
    still ends, exit 0: the call is left in a daemon thread."""
    gen = (
        "import time\n\ndef answer(question, passages):\n"
        "    if question.endswith('sleeps'):\n        time.sleep(10**6)\n"
        "    return '75 dollars [1]'\n"
    )
    path, _ = _experiment(tmp_path, ["fine", "sleeps"], generator=gen, settings_="timeout = 0.2")
    done = subprocess.run(
        [sys.executable, "-m", "ragmeter", "run", path.name, "--no-store"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    errors = _errors(tmp_path / "runs" / "base")
    assert errors["fine"] is None
    assert errors["sleeps"] and errors["sleeps"].startswith("timed out after 0.2 s")


def test_ctrl_c_in_user_code_still_stops_the_run_and_marks_it_interrupted(
    tmp_path: Path, store: str
) -> None:
    """KeyboardInterrupt is not a question's error: the run stops, the stored run is
    ``interrupted`` (guards the SystemExit rule from swallowing Ctrl-C)."""
    path, _ = _experiment(tmp_path, ["fine", "interrupt", "fine_nul"])
    res = _run(path, "--db", store)
    assert res.exit_code != 0
    from ragmeter.store import Store

    with Store.open(store) as opened:
        assert [r.status for r in opened.runs()] == ["interrupted"]


# -- settings -----------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [-1, "10", True, 86_401, float("inf")])
def test_a_bad_timeout_names_the_field(value: Any) -> None:
    spec = {"kind": "python", "target": "m:f", "timeout": value}
    with pytest.raises(InputError) as e:
        make_generator(spec, path="exp.toml")
    assert e.value.field == "generator.timeout"
    assert "unknown setting" not in str(e.value)


@pytest.mark.parametrize("value", ["-1", '"10"', "true", "86401", "nan"])
def test_a_bad_pipeline_timeout_names_the_field(tmp_path: Path, value: str) -> None:
    from ragmeter import ValidationError
    from ragmeter.experiments import load_experiment

    retriever = f'{{ kind = "python", target = "RAG:retrieve", timeout = {value} }}'
    path, _ = _experiment(tmp_path, ["fine"], retriever=retriever, rag=RAG)
    with pytest.raises(ValidationError) as e:
        load_experiment(path)
    (problem,) = e.value.problems
    assert problem.field == "baseline.retriever.timeout" and "seconds from 0 to" in str(problem)


def test_the_timeout_defaults_agree_and_zero_means_no_limit() -> None:
    from ragmeter.generation._callable import DEFAULT_TIMEOUT
    from ragmeter.retrieval.pipelines._calls import DEFAULT_TIMEOUT as PIPELINES

    assert DEFAULT_TIMEOUT == PIPELINES == CallableGenerator(_fine).timeout
    assert CallableGenerator(_fine, timeout=0).timeout is None


def test_context_written_inside_the_generator_table_says_to_move_it(tmp_path: Path) -> None:
    path, _ = _experiment(tmp_path, ["fine"], settings_='context = { order = "reverse" }')
    res = _run(path, "--no-store")
    assert res.exit_code == 2
    assert "field 'generator.context'" in res.stderr and "move it above the header" in res.stderr


# -- generated cases: the loaders ---------------------------------------------------------------
FAILURES = {
    "syntax": ("def broken(:", "SyntaxError"),
    "syntax_return": ("return 1", "SyntaxError"),
    "indent": ("    x = 1", "IndentationError"),
    "zero": ("1 / 0", "ZeroDivisionError: division by zero"),
    "missing_import": ("import hostile_not_installed_xyz", "ModuleNotFoundError"),
    "exit": ("import sys; sys.exit({code})", "SystemExit (sys.exit("),
    "base": ("raise type('Stop', (BaseException,), {{}})({message})", "Stop"),
    "raise": ("raise {exc}({message})", "{exc}"),
}
EXCEPTIONS = ["ValueError", "RuntimeError", "KeyError", "OSError", "TimeoutError", "MemoryError"]
_counter = itertools.count()


@st.composite
def broken_modules(draw: st.DrawFn) -> tuple[str, int, str]:
    """(module text, the line that fails, words the error must hold): good lines, then one
    failure of a random kind (messages with line breaks, quotes and lone surrogates), then more
    good lines and the function ragmeter would call."""
    before = draw(st.integers(0, 6))
    kind = draw(st.sampled_from(sorted(FAILURES)))
    template, words = FAILURES[kind]
    exc = draw(st.sampled_from(EXCEPTIONS))
    message = draw(
        st.one_of(
            st.text(max_size=30),
            st.tuples(st.text(max_size=8), st.integers(0xD800, 0xDFFF)).map(
                lambda t: t[0] + chr(t[1])
            ),
        )
    )
    code = draw(st.sampled_from(["", "0", "1", "'bye'", "None"]))
    line = template.format(code=code, message=ascii(message), exc=exc)
    lines = [f"v{i} = {i}" for i in range(before)] + [line] + ["w = 2"] * draw(st.integers(0, 3))
    lines += ["", "def answer(question, passages):", "    return 'x'", ""]
    lines += ["def retrieve(question):", "    return []", ""]
    return "\n".join(lines), before + 1, words.format(exc=exc)


def _load(kind: str, folder: Path, text: str) -> None:
    name = f"hostile_gen_{next(_counter)}_{os.getpid()}"
    (folder / f"{name}.py").write_text(text, encoding="utf-8")
    if kind == "generator":
        make_generator({"kind": "python", "target": f"{name}:answer"}, folder, path="exp.toml")
    else:
        from ragmeter.retrieval.pipelines import load_pipeline

        load_pipeline({"kind": "python", "target": f"{name}.py:retrieve"}, folder)


@pytest.mark.parametrize("kind", ["generator", "pipeline"])
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(module=broken_modules())
def test_any_broken_module_is_one_line_naming_the_file_and_line(
    kind: str, tmp_path: Path, module: tuple[str, int, str]
) -> None:
    text, line, words = module
    with pytest.raises((InputError, UsageError)) as e:
        _load(kind, tmp_path, text)
    message = str(e.value)
    assert "\n" not in message and words in message, message
    assert f".py, line {line})" in message, message
    message.encode("utf-8")  # printable: a surrogate in the user's message is replaced
    if kind == "generator":
        assert isinstance(e.value, InputError) and e.value.field == "generator.target"


PARAMS = ["question", "passages", "q", "ps", "k=4", "*args", "**kwargs", "*, flag", "*, top=1"]


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params=st.lists(st.sampled_from(PARAMS), max_size=4, unique=True))
def test_a_signature_is_refused_exactly_when_the_call_would_fail(
    tmp_path: Path, params: list[str]
) -> None:
    """The loader accepts a generator function exactly when ``fn(question, passages)`` binds."""
    order = {"positional": 0, "default": 1, "star": 2, "kwonly": 3, "kwargs": 4}

    def rank(p: str) -> int:
        if p.startswith("**"):
            return order["kwargs"]
        if p.startswith("*,"):
            return order["kwonly"]
        if p.startswith("*"):
            return order["star"]
        return order["default"] if "=" in p else order["positional"]

    ordered = sorted(params, key=rank)
    if sum(p.startswith("*,") for p in ordered) + sum(p == "*args" for p in ordered) > 1:
        return  # two star markers: not a valid def
    if any(p.startswith("*,") for p in ordered) and "*args" in ordered:
        return
    text = f"def answer({', '.join(ordered)}):\n    return 'x'\n"
    namespace: dict[str, Any] = {}
    exec(text, namespace)
    try:
        namespace["answer"]("q", [])
        callable_ok = True
    except TypeError:
        callable_ok = False
    try:
        _load("generator", tmp_path, text)
        loaded = True
    except InputError as exc:
        assert "but ragmeter calls it as (question, passages)" in str(exc)
        loaded = False
    assert loaded == callable_ok, text


# -- generated cases: what a function returns ----------------------------------------------------
PASSAGES = [
    Passage("fees#0-40", "fees", 0, 40, "The change fee is 75 dollars.", 6, 1),
    Passage("seats#0-30", "seats", 0, 30, "Exit row seats cost 40 dollars.", 6, 2),
]


def _request(qid: str = "q1") -> Any:
    ctx = assemble(qid, PASSAGES, ContextSpec())
    return make_request(qid, "What is the fee?", ctx, load_prompt("answer-v1"))


def _fine(question: str, passages: list[Passage]) -> str:
    return "75 dollars [1]"


@st.composite
def surrogate_texts(draw: st.DrawFn) -> tuple[str, int]:
    """A text with one lone surrogate at a random position (and the position)."""
    head = draw(st.text(max_size=20))
    tail = draw(st.text(max_size=20))
    return head + chr(draw(st.integers(0xD800, 0xDFFF))) + tail, len(head)


values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.binary(max_size=10),
        st.text(max_size=20),
        surrogate_texts().map(lambda t: t[0]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.tuples(st.text(max_size=10), st.lists(inner, max_size=3)),
        st.dictionaries(st.text(max_size=5), inner, max_size=2),
    ),
    max_leaves=6,
)


def _is_answer(value: Any) -> bool:
    """Whether ``value`` is a valid answer (the protocol of ragmeter.generation._callable)."""

    def text_ok(t: Any) -> bool:
        return isinstance(t, str) and not any(0xD800 <= ord(c) <= 0xDFFF for c in t)

    if isinstance(value, str):
        return text_ok(value)
    if not (isinstance(value, tuple) and len(value) == 2 and text_ok(value[0])):
        return False
    cites = value[1]
    if cites is None:
        return True
    if isinstance(cites, (str, bytes)) or not hasattr(cites, "__iter__"):
        return False
    return all(
        (isinstance(c, int) and not isinstance(c, bool) and abs(c) < 10**12) or text_ok(c)
        for c in cites
    )


@settings(max_examples=150)
@given(value=values)
def test_any_return_value_is_an_answer_or_that_questions_error(value: Any) -> None:
    """Whatever the function returns, the generator returns one Generation that can be written
    as UTF-8 JSON: the answer exactly as given when it is one, else a recorded error."""
    gen = CallableGenerator(lambda q, ps: value)
    (g,) = gen.generate([_request()])
    json.dumps(g.to_dict(), ensure_ascii=False).encode("utf-8")  # never raises
    if _is_answer(value):
        assert g.ok and g.text == (value if isinstance(value, str) else value[0])
    else:
        assert not g.ok and g.text == "" and gen.errors == 1


@settings(max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=surrogate_texts())
def test_a_lone_surrogate_anywhere_from_any_backend_is_an_error_never_cached(
    tmp_path: Path, case: tuple[str, int]
) -> None:
    """A backend (here a stand-in for a server whose JSON held a ``\\ud800`` escape) returning
    a lone surrogate at any position: the cached generator records the question's error naming
    the character, writes no cache entry, and a later good answer is made and cached."""
    text, at = case
    bad = text[at]

    class Backend:
        name = "backend"

        def fingerprint(self) -> str:
            return f"backend/{next(_counter)}"

        def generate(self, requests: Any, progress: Any = None) -> list[Generation]:
            return [Generation(r.question_id, text, ("fees#0-40",)) for r in requests]

    cached = CachedGenerator(Backend(), tmp_path)
    (g,) = cached.generate([_request()])
    assert not g.ok and f"U+{ord(bad):04X} at character {at}" in (g.error or "")
    assert cached.stats.misses == 1 and not list(tmp_path.rglob("*.json"))
    (again,) = cached.generate([_request()])
    assert not again.cached  # never replayed from the cache


def test_exceptions_with_unprintable_messages_are_one_writable_line() -> None:
    def raises(q: str, ps: list[Passage]) -> str:
        raise RuntimeError("line one\nline two \ud800\x1b[31m" + "x" * 5000)

    (g,) = CallableGenerator(raises).generate([_request()])
    assert g.error is not None and g.error.startswith("RuntimeError: line one line two \ufffd")
    assert "\n" not in g.error and "\x1b" not in g.error and len(g.error) < 1100
    g.error.encode("utf-8")


def test_an_endless_answer_is_cut_inside_the_timed_call() -> None:
    """Endless citations (or an endless list of hits) are read only up to the cap, inside the
    call: the question's error, not a hung run or a runaway list."""
    from ragmeter.retrieval.pipelines._adapters import MAX_ITEMS, settle

    def endless(q: str, ps: list[Passage]) -> Any:
        return "75 dollars", itertools.count(1)

    (g,) = CallableGenerator(endless, timeout=5).generate([_request()])
    assert g.error == "more than 10000 citations in one answer"
    assert len(settle(itertools.repeat(("fees", 0, 1)))) == MAX_ITEMS + 1


@pytest.mark.parametrize(
    "body",
    [
        "sys.exit(0)",
        "raise SystemExit",
        "raise GeneratorExit",
        "raise type('Halt', (BaseException,), {})()",
    ],
)
@pytest.mark.parametrize("timeout", [None, 0])
def test_exit_in_user_code_is_recorded_in_either_thread(body: str, timeout: float | None) -> None:
    """In a worker thread (the default timeout) or in ragmeter's own (``timeout=0``)."""
    namespace: dict[str, Any] = {"sys": sys, "__name__": "hostile_user_code_exec"}
    exec(textwrap.dedent(f"def answer(q, ps):\n    {body}\n"), namespace)
    kwargs: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    gen = CallableGenerator(namespace["answer"], **kwargs)
    first, second = gen.generate([_request("q1"), _request("q2")])
    assert first.error and second.error and gen.errors == 2
    with pytest.raises(UsageError, match="failed on question q1"):
        CallableGenerator(namespace["answer"], on_error="raise", **kwargs).generate(
            [_request("q1")]
        )


@pytest.mark.parametrize("timeout", [None, 0])
def test_keyboard_interrupt_from_user_code_is_never_a_recorded_error(timeout: float | None) -> None:
    def interrupted(q: str, ps: list[Passage]) -> str:
        raise KeyboardInterrupt

    kwargs: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    with pytest.raises(KeyboardInterrupt):
        CallableGenerator(interrupted, **kwargs).generate([_request()])


def test_worker_threads_end_with_their_generator() -> None:
    """A generator made per run (the lab) leaves no idle thread behind once it is gone."""
    import gc
    import threading

    before = threading.active_count()
    for _ in range(20):
        gen = CallableGenerator(_fine)
        gen.generate([_request()])
    del gen
    gc.collect()
    for _ in range(200):  # the workers end as soon as they read their stop: no fixed sleep
        if threading.active_count() <= before:
            break
        threading.Event().wait(0.01)
    assert threading.active_count() <= before
