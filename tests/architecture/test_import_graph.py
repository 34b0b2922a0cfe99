"""The package reads as the RAG chain: no import cycles between modules, no import up a layer,
no import of another package's private module beyond the short list that says why.

The layers (tools/import_graph.py LAYERS, docs/architecture.md) let the experiment store and the
web lab sit on top of the chain without pulling it apart. The graph is built statically with
``ast`` (every import statement, inside functions and under ``TYPE_CHECKING`` too); the first
tests pin the graph builder on small hand-made packages so the gate itself cannot pass by
seeing nothing. A package's private modules (``ragmeter.io._tables``) are its own: other
packages import what its ``__init__`` exports, so renaming an internal module breaks nothing
far away; the command line and the lab import only workflows, ``__init__``s and public modules.
The tests hold to it too: a test imports public names, or a private module it is named after
(tests/store/test_blobs.py and ``ragmeter.store._blobs``), or one ALLOWED_TEST_PRIVATE says why.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_import_graph", ROOT / "tools/import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while building
    spec.loader.exec_module(module)
    return module


ig = _load_tool()


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    """Write a fake ``ragmeter`` package under tmp_path/src and return that src folder."""
    src = tmp_path / "src"
    for rel, text in files.items():
        path = src / "ragmeter" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return src


def _edges(graph) -> set[tuple[str, str]]:
    return {(e.importer, e.imported) for e in graph.edges}


# --- the graph builder ----------------------------------------------------------------------


def test_relative_absolute_submodule_and_package_imports_resolve(tmp_path):
    src = _package(
        tmp_path,
        {
            "__init__.py": "from .io import trec\n",  # top package: exempt as importer
            "_errors.py": "",
            "io/__init__.py": "from .trec import read\n",
            "io/trec.py": "from .._errors import x\nimport ragmeter.io._tables\n",
            "io/_tables.py": "",
            "metrics/__init__.py": "",
            "metrics/_engine.py": (
                "from ..io import trec, read_thing\n"  # submodule -> edge to it; name -> __init__
                "from .. import io\n"  # `from pkg import subpackage`
                "import ragmeter.metrics\n"  # a package: edge to its __init__
                "from . import _kernels as K\n"
            ),
            "metrics/_kernels.py": "",
        },
    )
    graph = ig.build(src)
    assert graph.unresolved == []
    assert _edges(graph) == {
        ("ragmeter.io", "ragmeter.io.trec"),
        ("ragmeter.io.trec", "ragmeter._errors"),
        ("ragmeter.io.trec", "ragmeter.io._tables"),
        ("ragmeter.metrics._engine", "ragmeter.io.trec"),
        ("ragmeter.metrics._engine", "ragmeter.io"),
        ("ragmeter.metrics._engine", "ragmeter.metrics"),
        ("ragmeter.metrics._engine", "ragmeter.metrics._kernels"),
    }


def test_imports_inside_functions_and_type_checking_count(tmp_path):
    src = _package(
        tmp_path,
        {
            "__init__.py": "",
            "io/__init__.py": "",
            "io/jsonl.py": """
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from ..metrics import Metric
            else:
                from .._errors import E
            def load():
                import ragmeter.data.golden
                class K:
                    def m(self):
                        from ..paired import compare
        """,
            "_errors.py": "",
            "metrics/__init__.py": "",
            "data/__init__.py": "",
            "data/golden.py": "",
            "paired/__init__.py": "",
        },
    )
    graph = ig.build(src)
    got = {(e.imported, e.type_checking) for e in graph.edges}
    assert got == {
        ("ragmeter.metrics", True),
        ("ragmeter._errors", False),
        ("ragmeter.data.golden", False),
        ("ragmeter.paired", False),
    }
    up = ig.upward_edges(graph)
    assert sorted((e.imported, a, b) for e, a, b in up) == [
        ("ragmeter.data.golden", 1, 3),
        ("ragmeter.metrics", 1, 2),
        ("ragmeter.paired", 1, 7),
    ]


def test_a_cycle_is_found_and_printed_with_its_lines(tmp_path):
    src = _package(
        tmp_path,
        {
            "__init__.py": "from .chunking import a\n",
            "chunking/__init__.py": "",
            "chunking/a.py": "import os\nfrom . import b\n",
            "chunking/b.py": "from .c import thing\n",
            "chunking/c.py": "def f():\n    from .a import g\n",
            "chunking/d.py": "from .a import g\n",  # imports into the cycle, not part of it
        },
    )
    found = ig.cycles(ig.build(src))
    assert len(found) == 1
    component, cycle = found[0]
    assert component == ["ragmeter.chunking.a", "ragmeter.chunking.b", "ragmeter.chunking.c"]
    assert [(e.importer, e.imported, e.line) for e in cycle] == [
        ("ragmeter.chunking.a", "ragmeter.chunking.b", 2),
        ("ragmeter.chunking.b", "ragmeter.chunking.c", 1),
        ("ragmeter.chunking.c", "ragmeter.chunking.a", 2),
    ]
    text = ig.format_cycle(component, cycle)
    assert "ragmeter.chunking.c -> ragmeter.chunking.a" in text
    assert "ragmeter/chunking/c.py:2" in text


def test_a_type_checking_back_edge_is_no_cycle_but_a_lazy_one_is(tmp_path):
    # A helper that only annotates the class calling it is the TYPE_CHECKING idiom: it never
    # runs, so it cannot half-initialise a module. A lazy import inside a function does run.
    src = _package(
        tmp_path,
        {
            "__init__.py": "",
            "chunking/__init__.py": "",
            "chunking/model.py": "def save(self):\n    from .writer import write\n",
            "chunking/writer.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .model import M\n"
            ),
            "chunking/reader.py": "from .model import M\n",
            "chunking/lazy.py": "def f():\n    from .reader import r\n",
        },
    )
    graph = ig.build(src)
    assert ig.cycles(graph) == []
    strict = ig.cycles(graph, runtime_only=False)
    assert [c for c, _ in strict] == [["ragmeter.chunking.model", "ragmeter.chunking.writer"]]
    (src / "ragmeter/chunking/model.py").write_text("from .lazy import f\n", encoding="utf-8")
    found = ig.cycles(ig.build(src))
    assert [c for c, _ in found] == [
        ["ragmeter.chunking.lazy", "ragmeter.chunking.model", "ragmeter.chunking.reader"]
    ]


def test_two_separate_cycles_are_two_groups_and_the_shortest_cycle_is_shown(tmp_path):
    src = _package(
        tmp_path,
        {
            "__init__.py": "",
            "labels/__init__.py": "",
            # a <-> b directly, and a -> c -> d -> a: one group of four, shortest cycle a -> b -> a
            "labels/a.py": "from . import c\nfrom . import b\n",
            "labels/b.py": "from . import a\n",
            "labels/c.py": "from . import d\n",
            "labels/d.py": "from . import a\n",
            "io/__init__.py": "",
            "io/x.py": "from .y import z\n",
            "io/y.py": "from .x import z\n",
        },
    )
    found = ig.cycles(ig.build(src))
    assert [c for c, _ in found] == [
        ["ragmeter.io.x", "ragmeter.io.y"],
        ["ragmeter.labels.a", "ragmeter.labels.b", "ragmeter.labels.c", "ragmeter.labels.d"],
    ]
    assert [(e.importer, e.imported) for e in found[1][1]] == [
        ("ragmeter.labels.a", "ragmeter.labels.b"),
        ("ragmeter.labels.b", "ragmeter.labels.a"),
    ]


def test_top_package_and_main_are_exempt_but_importing_the_top_package_is_upward(tmp_path):
    src = _package(
        tmp_path,
        {
            "__init__.py": "from .cli import app\nfrom .io import x\n",
            "__main__.py": "from .cli import app\n",
            "io/__init__.py": "",
            "io/x.py": "from ragmeter import __version__\n",
            "cli/__init__.py": "app = 1\n",
        },
    )
    graph = ig.build(src)
    assert ig.cycles(graph) == []  # ragmeter -> io.x -> ragmeter is no cycle: the top is exempt
    up = ig.upward_edges(graph)
    assert [(e.importer, e.imported, a, b) for e, a, b in up] == [
        ("ragmeter.io.x", "ragmeter", 1, 15)
    ]
    assert "ragmeter.io.x (layer 1) -> ragmeter (layer 15)" in ig.format_upward(*up[0])


def test_unknown_modules_and_missing_targets_are_reported(tmp_path):
    src = _package(
        tmp_path,
        {
            "__init__.py": "",
            "newpkg/__init__.py": "import json\nfrom ragmeter.gone import x\n",
        },
    )
    graph = ig.build(src)
    assert ig.unlayered(graph) == ["ragmeter.newpkg"]
    assert graph.unresolved == ["src/ragmeter/newpkg/__init__.py:2: ragmeter.gone is not a module"]
    assert graph.edges == []


def test_layers_follow_the_chain():
    layer = ig.layer_of
    assert layer("ragmeter._errors") == 0
    assert layer("ragmeter.io.jsonl") == 1
    assert layer("ragmeter.metrics._evaluation") == 2
    assert layer("ragmeter.explain") == layer("ragmeter.paired._gate") == 7
    assert layer("ragmeter.diagnosis") == 9 < layer("ragmeter.experiments._runner") == 10
    assert layer("ragmeter.store._store") == 11
    assert layer("ragmeter.workflows.compare") == 12
    assert layer("ragmeter.lab._app") == 13
    assert layer("ragmeter.cli._app") == 14
    assert layer("ragmeter") == 15
    assert layer("ragmeter.iox") is None  # neither io's nor the top's: a new package needs a row


def test_private_imports_across_packages_are_counted_and_nothing_else(tmp_path):
    src = _package(
        tmp_path,
        {
            "__init__.py": "from .io._tables import Run\n",  # the top package: exempt
            "_errors.py": "",
            "io/__init__.py": "from ._tables import Run\n",  # its own private module
            "io/_tables.py": "from .._errors import E\n",  # a shared top-level module
            "io/_reading.py": "from ._tables import Run\n",  # inside the package
            "io/trec.py": "",
            "metrics/__init__.py": "",
            "metrics/_engine.py": (
                "from ..io._tables import Run\n"  # counted
                "from ..io import Run\n"  # the package __init__: not counted
                "from ..io import trec\n"  # a public module: not counted
                "def f():\n"
                "    from ragmeter.io._reading import x\n"  # lazy: counted
                "    from ragmeter.io._tables import y\n"  # same pair again: one entry
            ),
            "retrieval/__init__.py": "",
            "retrieval/pipelines/__init__.py": "",
            "retrieval/pipelines/_calls.py": "from ...io._tables import Run\n",  # counted
            "retrieval/bm25.py": "from .pipelines._calls import Caller\n",  # same package
            "cli/__init__.py": "",
            "cli/_eval.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from ..metrics._engine import Missing\n"  # type-only: counted
                "from ..retrieval.pipelines import _calls\n"  # a private submodule by name
            ),
        },
    )
    found = ig.private_imports(ig.build(src))
    assert [(e.importer, e.imported, e.line, e.type_checking) for e in found] == [
        ("ragmeter.cli._eval", "ragmeter.metrics._engine", 3, True),
        ("ragmeter.cli._eval", "ragmeter.retrieval.pipelines._calls", 4, False),
        ("ragmeter.metrics._engine", "ragmeter.io._tables", 1, False),
        ("ragmeter.metrics._engine", "ragmeter.io._reading", 5, False),
        ("ragmeter.retrieval.pipelines._calls", "ragmeter.io._tables", 1, False),
    ]
    assert found[0].where() == "src/ragmeter/cli/_eval.py:3 (TYPE_CHECKING)"


def test_the_allow_list_must_match_the_private_imports_exactly(tmp_path):
    src = _package(
        tmp_path,
        {
            "__init__.py": "",
            "io/__init__.py": "",
            "io/_tables.py": "",
            "io/_atomic.py": "",
            "metrics/__init__.py": "",
            "metrics/_engine.py": "from ..io._tables import Run\nfrom ..io._atomic import w\n",
        },
    )
    graph = ig.build(src)
    allowed = {
        ("ragmeter.metrics._engine", "ragmeter.io._tables"): "a kernel only metrics needs",
        ("ragmeter.labels._files", "ragmeter.io._tables"): "an import that is gone",
    }
    new, stale = ig.check_private(graph, allowed)
    assert [(e.importer, e.imported, e.line) for e in new] == [
        ("ragmeter.metrics._engine", "ragmeter.io._atomic", 2)
    ]
    assert stale == [("ragmeter.labels._files", "ragmeter.io._tables")]
    text, problems = ig.private_report(graph, allowed)
    assert problems == 2
    assert (
        "ragmeter.metrics._engine -> ragmeter.io._tables  (src/ragmeter/metrics/_engine.py:1): "
        "a kernel only metrics needs" in text
    )
    assert "src/ragmeter/metrics/_engine.py:2)  NOT ALLOWED" in text
    assert "stale ALLOWED_PRIVATE entry (no such import): ragmeter.labels._files" in text
    assert ig.main([str(src), "--private"]) == 1  # the real list does not fit this package


def test_every_allowed_private_import_says_why():
    for (importer, imported), why in ig.ALLOWED_PRIVATE.items():
        assert ig.package_of(importer) != ig.package_of(imported), (importer, imported)
        assert len(why.split()) >= 4, (importer, imported)
        assert ig.package_of(importer) not in ("ragmeter.cli", "ragmeter.lab"), importer


# --- the gate on the real package -----------------------------------------------------------


@pytest.fixture(scope="module")
def graph():
    return ig.build(SRC)


def test_the_graph_sees_the_package(graph):
    # A broken builder that finds no imports would pass every gate below.
    assert len(graph.modules) > 80
    assert len(graph.edges) > 300
    assert ("ragmeter.cli._app", "ragmeter._errors") in _edges(graph)


def test_every_module_has_a_layer(graph):
    missing = ig.unlayered(graph)
    if missing:
        pytest.fail(
            "modules without a layer (add their package to LAYERS in tools/import_graph.py and "
            "to docs/architecture.md):\n" + "\n".join(missing),
            pytrace=False,
        )


def test_every_import_of_ragmeter_resolves(graph):
    if graph.unresolved:
        pytest.fail(
            "imports of modules that do not exist:\n" + "\n".join(graph.unresolved), pytrace=False
        )


def test_no_import_cycles_between_modules(graph):
    found = ig.cycles(graph)
    if found:
        pytest.fail(
            f"{len(found)} import cycle(s); break each by moving the shared piece into the lower "
            "module:\n" + "\n".join(ig.format_cycle(c, cyc) for c, cyc in found),
            pytrace=False,
        )


def test_no_module_imports_from_a_higher_layer(graph):
    up = ig.upward_edges(graph)
    if up:
        pytest.fail(
            f"{len(up)} import(s) go up a layer (a module may import only from its own layer or "
            "lower ones; see docs/architecture.md):\n"
            + "\n".join(ig.format_upward(*u) for u in up),
            pytrace=False,
        )


def test_the_interfaces_import_no_private_module_of_another_package(graph):
    # cli/ and lab/ parse input, call a workflow and render: they import workflows, package
    # __init__s and public modules, never another package's internals
    found = [
        e
        for e in ig.private_imports(graph)
        if ig.package_of(e.importer) in ("ragmeter.cli", "ragmeter.lab")
    ]
    if found:
        pytest.fail(
            f"{len(found)} import(s) of another package's private module from cli/ or lab/ "
            "(import the name from the package's __init__ or a workflow; export it there if "
            "it is missing):\n"
            + "\n".join(f"    {e.where()}: {e.importer} -> {e.imported}" for e in found),
            pytrace=False,
        )


def test_private_imports_across_packages_are_exactly_the_allowed_ones(graph):
    new, stale = ig.check_private(graph)
    problems = []
    if new:
        problems.append(
            f"{len(new)} new import(s) of another package's private module (import the name "
            "from the package's __init__, exporting it there, or add the pair to "
            "ALLOWED_PRIVATE in tools/import_graph.py with the reason):"
        )
        problems += [f"    {e.where()}: {e.importer} -> {e.imported}" for e in new]
    if stale:
        problems.append(
            f"{len(stale)} ALLOWED_PRIVATE entr(y/ies) match no import any more (delete them):"
        )
        problems += [f"    {a} -> {b}" for a, b in stale]
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


# --- tests import public names, or test the module they are named after -----------------------


def _test_imports(tests: Path, modules: set[str]) -> list[tuple[str, int, str]]:
    """Every import of a private ragmeter module (a part after ``ragmeter.<pkg>`` that starts
    with ``_``) in the .py files under ``tests``: (file relative to tests' parent, line, module).
    ``modules`` tells ``from ragmeter.store import _blobs`` (a module) from a name. The
    top-level modules every layer shares (``ragmeter._errors``) are not private here."""
    out: list[tuple[str, int, str]] = []
    for file in sorted(tests.rglob("*.py")):
        rel = file.relative_to(tests.parent).as_posix()
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets = [node.module]
                for alias in node.names:
                    if f"{node.module}.{alias.name}" in modules:
                        targets.append(f"{node.module}.{alias.name}")
            for target in targets:
                parts = target.split(".")
                if parts[0] == "ragmeter" and any(p.startswith("_") for p in parts[2:]):
                    out.append((rel, node.lineno, target))
    return sorted(set(out))


def _named_after(test_file: str, module: str) -> bool:
    """Whether the test file is named after the private module: its name's words contain the
    module's name without the underscore (tests/store/test_blobs.py, test_store_blobs.py for
    ragmeter.store._blobs; test_kernels_props.py for ragmeter.metrics._kernels)."""
    words = Path(test_file).stem.split("_")
    for part in module.split(".")[2:]:
        if not part.startswith("_"):
            continue
        want = part.strip("_").split("_")
        if any(words[i : i + len(want)] == want for i in range(len(words))):
            return True
    return False


def check_test_imports(
    tests: Path, modules: set[str], allowed: dict[tuple[str, str], str]
) -> tuple[list[str], list[tuple[str, str]], int, int]:
    """The test files' private imports that are neither named after nor allowed (``file:line:
    module``), the stale allow-list entries, and how many imports the name and the list allow."""
    found = _test_imports(tests, modules)
    by_name = [f for f in found if _named_after(f[0], f[2])]
    listed = [f for f in found if not _named_after(f[0], f[2]) and (f[0], f[2]) in allowed]
    new = [
        f"{file}:{line}: {module}"
        for file, line, module in found
        if not _named_after(file, module) and (file, module) not in allowed
    ]
    pairs = {(file, module) for file, _, module in found if not _named_after(file, module)}
    stale = sorted(k for k in allowed if k not in pairs)
    return new, stale, len(by_name), len(listed)


#: The test files' imports of a private module they are not named after, each with why the test
#: reaches past the package's ``__init__``: (test file, private module) -> reason. A new one fails
#: (import the public name, or name the test after the module), and so does a stale entry.
_STORE = (
    "failure injection into the store's tables, blob files, migrations and URLs: internals the "
    "Store API hides on purpose"
)
_READERS = (
    "the TREC/JSONL readers' stages and atomic writer, driven one by one with hostile bytes; "
    "io exports the readers, not their stages"
)
_KERNELS = (
    "numeric kernels and their inputs checked directly against a reference or at scale; not API"
)
_LAB = (
    "the lab's view models, paths, jobs and security helpers tested without a browser; the lab "
    "exports only its app"
)
_CLI = (
    "the command line's renderers and helpers checked on their output without running a "
    "command; cli exports only its app"
)
_PYDANTIC = (
    "a pydantic model not exported on purpose: exporting it would make importing the package "
    "load pydantic"
)
_USER_CODE = (
    "the user-code call machinery (threads, timeouts, stdout capture) attacked with hostile "
    "user code; not API"
)
_SPECS = (
    "normalize_retriever, normalize_reranker: the retriever spec tables' parsing, which "
    "ragmeter.retrieval does not export"
)
_PROTOCOL = (
    "ranked_lists, top_k, parse_json_object: a protocol module's result helpers, checked "
    "directly; the package exports the protocol, not them"
)
_CACHE = "the on-disk cache's internals (keys, files), corrupted or inspected by the test"
ALLOWED_TEST_PRIVATE: dict[tuple[str, str], str] = {
    ("tests/lab/test_lab_commands.py", "ragmeter.lab._data_diagnosis"): (
        "diagnosis_context: the page's own numbers, to compare with what its printed lines print"
    ),
    ("tests/lab/test_lab_commands.py", "ragmeter.lab._data_sweeps"): (
        "sweeps_context: the page's own numbers, to compare with what its printed lines print"
    ),
    ("tests/lab/test_lab_commands.py", "ragmeter.lab._data_comparison"): (
        "live_comparison_context: the page's own numbers, to compare with what its line prints"
    ),
    ("tests/lab/test_lab_rough_edges.py", "ragmeter.lab._lab_page"): _LAB,
    ("tests/lab/test_lab_rough_edges.py", "ragmeter.lab._data_sweeps"): _LAB,
    ("tests/lab/test_lab_rough_edges.py", "ragmeter.lab._prepared"): _LAB,
    ("tests/lab/test_lab_rough_edges.py", "ragmeter.lab._recompute"): _LAB,
    ("tests/answers/judges/test_judge_metrics.py", "ragmeter.answers.judges._protocol"): _PROTOCOL,
    ("tests/answers/test_answers_correctness.py", "ragmeter.answers._values"): (
        "extract_values: the correctness check's value parser, tested on its own cases"
    ),
    ("tests/answers/test_answers_faithfulness.py", "ragmeter.answers._passages"): (
        "PassageIndex: the faithfulness check's passage lookup, not API"
    ),
    ("tests/answers/test_answers_judge_usage.py", "ragmeter.cli._render_usage"): _CLI,
    ("tests/cli/test_cli_store.py", "ragmeter.cli._runs"): _CLI,
    ("tests/cli/test_console_literal.py", "ragmeter.cli._chunk"): _CLI,
    ("tests/cli/test_console_literal.py", "ragmeter.cli._render_answers"): _CLI,
    ("tests/cli/test_console_literal.py", "ragmeter.cli._render_diagnosis"): _CLI,
    ("tests/cli/test_console_literal.py", "ragmeter.retrieval._progress"): (
        "RichProgress: the progress bar's console output, checked for literal text"
    ),
    ("tests/cli/test_readable_messages.py", "ragmeter.cli._run"): _CLI,
    ("tests/cli/test_readable_messages.py", "ragmeter.diagnosis._diagnose"): (
        "_some (a private name): the diagnosis message's list wording"
    ),
    ("tests/cli/test_readable_width.py", "ragmeter.cli._fit"): _CLI,
    ("tests/conftest.py", "ragmeter.chunking._format"): (
        "save_chunking: writes a chunking file for fixtures; the package exports the reader"
    ),
    ("tests/diagnosis/test_answers_refutation.py", "ragmeter.cli._demo._verdict_section"): _CLI,
    ("tests/docs/test_docs_examples.py", "ragmeter.chunking._format"): (
        "save_chunking: writes a chunking file for the examples; the package exports the reader"
    ),
    ("tests/engines/test_engines_counters.py", "ragmeter.engines._pool"): (
        "_Holder (a private name): the pool's counter holder, inspected by the test"
    ),
    ("tests/engines/test_engines_local.py", "ragmeter.engines._ray"): (
        "import_roots: the Ray engine's import-path helper, tested without Ray"
    ),
    ("tests/examples/test_example_fare_rules.py", "ragmeter.cli._demo._verdict_section"): _CLI,
    ("tests/experiments/test_experiment.py", "ragmeter.experiments._config"): (
        "chunk_size: the config's chunk size rule, checked on its edge cases"
    ),
    ("tests/experiments/test_experiment_document.py", "ragmeter.cli._render_experiment"): _CLI,
    ("tests/experiments/test_experiment_ranked.py", "ragmeter.experiments._outputs"): (
        "ranked_rows, write_run: the experiment output writers, not API"
    ),
    ("tests/generation/test_generation_callable.py", "ragmeter.generation._cache"): _CACHE,
    ("tests/generation/test_generation_local.py", "ragmeter.diagnosis._table"): (
        "CELLS: the diagnosis table's cell names, compared with generation's outcomes"
    ),
    ("tests/generation/test_generation_prompts.py", "ragmeter.answers._schema"): (
        "looks_abstained: the answer records' abstention check, compared with the prompts; not API"
    ),
    ("tests/hostile/test_hostile_files.py", "ragmeter.experiments._outputs"): (
        "write_run, write_cached_run: the experiment output writers, fed hostile files"
    ),
    ("tests/hostile/test_hostile_files.py", "ragmeter.retrieval._cache"): _CACHE,
    ("tests/hostile/test_hostile_import.py", "ragmeter.cli._render_runs"): _CLI,
    ("tests/hostile/test_hostile_import.py", "ragmeter.experiments._output_schema"): _PYDANTIC,
    ("tests/hostile/test_hostile_import.py", "ragmeter.experiments._ranked"): (
        "RANKED_SCHEMA: the ranked-list file's Arrow schema, used to forge files"
    ),
    ("tests/hostile/test_hostile_import.py", "ragmeter.paired._ledger_schema"): _PYDANTIC,
    ("tests/hostile/test_hostile_import.py", "ragmeter.store._blobs"): _STORE,
    ("tests/hostile/test_hostile_import.py", "ragmeter.store._models"): _STORE,
    ("tests/hostile/test_hostile_import.py", "ragmeter.store._run_file"): _STORE,
    ("tests/hostile/test_hostile_import.py", "ragmeter.store._runs"): _STORE,
    ("tests/hostile/test_hostile_judges.py", "ragmeter.answers.judges._protocol"): _PROTOCOL,
    ("tests/hostile/test_hostile_lab_paths.py", "ragmeter.lab._context"): _LAB,
    ("tests/hostile/test_hostile_lab_paths.py", "ragmeter.lab._notices"): _LAB,
    ("tests/hostile/test_hostile_lab_paths.py", "ragmeter.store._damage"): _STORE,
    ("tests/hostile/test_hostile_lab_paths.py", "ragmeter.store._models"): _STORE,
    ("tests/hostile/test_hostile_lab_requests.py", "ragmeter.lab._job_plan"): _LAB,
    ("tests/hostile/test_hostile_lab_requests.py", "ragmeter.lab._jobs"): _LAB,
    ("tests/hostile/test_hostile_lab_requests.py", "ragmeter.lab._security"): _LAB,
    ("tests/hostile/test_hostile_numbers.py", "ragmeter.paired._bootstrap"): _KERNELS,
    ("tests/hostile/test_hostile_numbers.py", "ragmeter.paired._sweep"): (
        "parse_cutoffs: the sweep's cutoff parser, fed hostile numbers"
    ),
    ("tests/hostile/test_hostile_outputs.py", "ragmeter.store._url"): _STORE,
    ("tests/hostile/test_hostile_parsers.py", "ragmeter.io._duplicates"): _READERS,
    ("tests/hostile/test_hostile_parsers.py", "ragmeter.io._jsonl_read"): _READERS,
    ("tests/hostile/test_hostile_parsers.py", "ragmeter.io._reading"): _READERS,
    ("tests/hostile/test_hostile_parsers.py", "ragmeter.io._trec_bytes"): _READERS,
    ("tests/hostile/test_hostile_parsers.py", "ragmeter.io._trec_check"): _READERS,
    ("tests/hostile/test_hostile_parsers.py", "ragmeter.io._trec_columns"): _READERS,
    ("tests/hostile/test_hostile_parsers.py", "ragmeter.io._trec_fast"): _READERS,
    ("tests/hostile/test_hostile_parsers.py", "ragmeter.io._trec_format"): _READERS,
    ("tests/hostile/test_hostile_parsers.py", "ragmeter.io._trec_lines"): _READERS,
    ("tests/hostile/test_hostile_parsers.py", "ragmeter.io._trec_read"): _READERS,
    ("tests/hostile/test_hostile_report.py", "ragmeter.experiments._table"): (
        "primary_metric: the results table's metric choice, not API"
    ),
    ("tests/hostile/test_hostile_report.py", "ragmeter.lab._data_comparison"): _LAB,
    ("tests/hostile/test_hostile_store_rows.py", "ragmeter.lab._data_stored"): _LAB,
    ("tests/hostile/test_hostile_store_rows.py", "ragmeter.store._blobs"): _STORE,
    ("tests/hostile/test_hostile_store_urls.py", "ragmeter.store._url"): _STORE,
    ("tests/hostile/test_hostile_user_code.py", "ragmeter.generation._callable"): _USER_CODE,
    (
        "tests/hostile/test_hostile_user_code.py",
        "ragmeter.retrieval.pipelines._adapters",
    ): _USER_CODE,
    ("tests/hostile/test_hostile_user_code.py", "ragmeter.retrieval.pipelines._calls"): _USER_CODE,
    ("tests/hostile/test_hostile_user_code_more.py", "ragmeter.experiments._runner"): _USER_CODE,
    (
        "tests/hostile/test_hostile_user_code_more.py",
        "ragmeter.retrieval.pipelines._calls",
    ): _USER_CODE,
    (
        "tests/hostile/test_hostile_user_code_more.py",
        "ragmeter.retrieval.pipelines._stdout",
    ): _USER_CODE,
    ("tests/io/test_io_readers_writers.py", "ragmeter.io._atomic"): _READERS,
    ("tests/io/test_io_trec.py", "ragmeter.io._duplicates"): _READERS,
    ("tests/io/test_io_trec.py", "ragmeter.io._trec_columns"): _READERS,
    ("tests/io/test_io_trec.py", "ragmeter.io._trec_fast"): _READERS,
    ("tests/io/test_io_trec.py", "ragmeter.io._trec_format"): _READERS,
    ("tests/io/test_io_trec.py", "ragmeter.io._trec_lines"): _READERS,
    ("tests/io/test_trec_fail_fast.py", "ragmeter.io._trec_check"): _READERS,
    ("tests/io/test_trec_fail_fast.py", "ragmeter.io._trec_columns"): _READERS,
    ("tests/io/test_trec_fail_fast.py", "ragmeter.io._trec_format"): _READERS,
    ("tests/lab/test_lab_jobs.py", "ragmeter.lab._data_stored"): _LAB,
    ("tests/lab/test_lab_jobs.py", "ragmeter.lab._job_plan"): _LAB,
    ("tests/lab/test_lab_recompute.py", "ragmeter.lab._context"): _LAB,
    ("tests/lab/test_lab_recompute.py", "ragmeter.lab._paths"): _LAB,
    ("tests/lab/test_lab_recompute.py", "ragmeter.lab._prepared"): _LAB,
    ("tests/lab/test_lab_recompute.py", "ragmeter.lab._ranked_list"): _LAB,
    ("tests/lab/test_lab_report.py", "ragmeter.lab._data_sweeps"): _LAB,
    ("tests/lab/test_lab_report.py", "ragmeter.lab._paths"): _LAB,
    ("tests/lab/test_lab_report.py", "ragmeter.lab._render"): _LAB,
    ("tests/lab/test_lab_report.py", "ragmeter.lab._report_data"): _LAB,
    ("tests/lab/test_lab_sweep_metrics.py", "ragmeter.lab._data_sweeps"): _LAB,
    ("tests/lab/test_lab_view_models.py", "ragmeter.lab._charts"): _LAB,
    ("tests/lab/test_lab_view_models.py", "ragmeter.lab._data_question"): _LAB,
    ("tests/lab/test_lab_view_models.py", "ragmeter.lab._data_slider"): _LAB,
    ("tests/lab/test_lab_view_models.py", "ragmeter.lab._render"): _LAB,
    ("tests/lab/test_lab_view_models.py", "ragmeter.lab._views"): _LAB,
    ("tests/lab/test_lab_views.py", "ragmeter.lab._data_comparison"): _LAB,
    ("tests/lab/test_lab_views.py", "ragmeter.lab._data_diagnosis"): _LAB,
    ("tests/lab/test_lab_views.py", "ragmeter.lab._data_experiments"): _LAB,
    ("tests/lab/test_lab_views.py", "ragmeter.lab._data_judges"): _LAB,
    ("tests/lab/test_lab_views.py", "ragmeter.lab._data_sweeps"): _LAB,
    ("tests/lab/test_lab_views.py", "ragmeter.lab._lab_page"): _LAB,
    ("tests/lab/test_lab_views.py", "ragmeter.paired._bootstrap"): _KERNELS,
    ("tests/metrics/test_compiled_paths.py", "ragmeter.metrics._join"): _KERNELS,
    ("tests/metrics/test_compiled_paths.py", "ragmeter.metrics._join_kernel"): _KERNELS,
    ("tests/metrics/test_ties_path.py", "ragmeter.metrics._join"): _KERNELS,
    ("tests/cli/test_demo_embeddings.py", "ragmeter.retrieval._cache"): (
        "the embedding cache's shard layout: the shipped vectors must land where the encoders read"
    ),
    ("tests/labels/test_span_linear.py", "ragmeter.chunking._id_lookup"): _KERNELS,
    ("tests/labels/test_span_linear.py", "ragmeter.labels._mapping"): _KERNELS,
    ("tests/labels/test_span_linear.py", "ragmeter.labels._span_metrics"): _KERNELS,
    ("tests/metrics/test_ties_path.py", "ragmeter.metrics._join_kernel"): _KERNELS,
    ("tests/metrics/test_ties_path.py", "ragmeter.metrics._score"): _KERNELS,
    ("tests/metrics/test_engine_scale.py", "ragmeter.io._duplicates"): _READERS,
    ("tests/metrics/test_engine_scale.py", "ragmeter.io._tables"): _KERNELS,
    ("tests/metrics/test_engine_scale.py", "ragmeter.io._trec_fast"): _READERS,
    ("tests/metrics/test_engine_scale.py", "ragmeter.io._trec_format"): _READERS,
    ("tests/metrics/test_engine_scale.py", "ragmeter.io._trec_lines"): _READERS,
    ("tests/metrics/test_engine_scale.py", "ragmeter.metrics._join"): _KERNELS,
    ("tests/metrics/test_engine_scale.py", "ragmeter.metrics._kernels"): _KERNELS,
    ("tests/metrics/test_metric_registry.py", "ragmeter.metrics._doc"): (
        "the README metric table generator, checked to be up to date"
    ),
    ("tests/metrics/test_metric_registry.py", "ragmeter.metrics._kernels"): _KERNELS,
    ("tests/metrics/test_metric_trec_eval_names.py", "ragmeter.metrics._spec"): (
        "trec_eval_alias: the metric spec's trec_eval name mapping, not API"
    ),
    ("tests/metrics/test_query_chunks.py", "ragmeter.io._trec_chunks"): _READERS,
    ("tests/metrics/test_query_chunks.py", "ragmeter.metrics._chunked"): _KERNELS,
    ("tests/metrics/test_seed_toy.py", "ragmeter.cli._demo.toy"): _CLI,
    ("tests/paired/test_bootstrap_fused.py", "ragmeter.paired._fused_kernel"): _KERNELS,
    ("tests/paired/test_changes.py", "ragmeter.retrieval._specs"): _SPECS,
    ("tests/paired/test_compare.py", "ragmeter.cli._demo.toy"): _CLI,
    ("tests/paired/test_compare_stats.py", "ragmeter.paired._bootstrap"): _KERNELS,
    ("tests/paired/test_compare_stats.py", "ragmeter.paired._fused"): _KERNELS,
    ("tests/paired/test_compare_stats.py", "ragmeter.paired._selection"): _KERNELS,
    ("tests/paired/test_frames.py", "ragmeter.cli._common"): _CLI,
    ("tests/paired/test_frames.py", "ragmeter.cli._run"): _CLI,
    ("tests/paired/test_plan.py", "ragmeter.paired._plan_io"): (
        "spread_from_record: the plan file's reader of a stored spread, not API"
    ),
    ("tests/retrieval/pipelines/test_pipelines.py", "ragmeter.retrieval._protocol"): _PROTOCOL,
    (
        "tests/retrieval/pipelines/test_pipelines_libraries.py",
        "ragmeter.retrieval._protocol",
    ): _PROTOCOL,
    ("tests/retrieval/test_index_titles.py", "ragmeter.retrieval._specs"): _SPECS,
    ("tests/retrieval/test_retrieval.py", "ragmeter.retrieval._protocol"): _PROTOCOL,
    ("tests/retrieval/test_retrieval.py", "ragmeter.retrieval._specs"): _SPECS,
    ("tests/retrieval/test_retrieval_torch.py", "ragmeter.retrieval._protocol"): _PROTOCOL,
    ("tests/retrieval/test_retriever_kinds.py", "ragmeter.retrieval._progress"): (
        "SILENT: the silent progress reporter, passed to retrievers in tests"
    ),
    ("tests/retrieval/test_retriever_kinds.py", "ragmeter.retrieval._spec_schema"): _PYDANTIC,
    ("tests/retrieval/test_retriever_kinds.py", "ragmeter.retrieval._specs"): _SPECS,
    ("tests/retrieval/test_threads.py", "ragmeter.retrieval._specs"): _SPECS,
    ("tests/store/test_store.py", "ragmeter.experiments._ranked"): (
        "RANKED_SCHEMA: the ranked-list file's Arrow schema, used to forge stored files"
    ),
    ("tests/store/test_store.py", "ragmeter.store._blobs"): _STORE,
    ("tests/store/test_store.py", "ragmeter.store._migrate"): _STORE,
    ("tests/store/test_store.py", "ragmeter.store._models"): _STORE,
    ("tests/store/test_store.py", "ragmeter.store._url"): _STORE,
    ("tests/store/test_store_labelling.py", "ragmeter.store._migrate"): _STORE,
    ("tests/store/test_store_labelling.py", "ragmeter.store._models"): _STORE,
    ("tests/store/test_store_migrations.py", "ragmeter.store._migrate"): _STORE,
    ("tests/store/test_store_migrations.py", "ragmeter.store._models"): _STORE,
    ("tests/store/test_store_processes.py", "ragmeter.store._models"): _STORE,
    ("tests/store/test_store_processes.py", "ragmeter.store._url"): _STORE,
    ("tests/workflows/test_workflows_compare.py", "ragmeter.lab._data_comparison"): _LAB,
    ("tests/workflows/test_workflows_compare.py", "ragmeter.paired._bootstrap"): _KERNELS,
    ("tests/workflows/test_workflows_evaluate.py", "ragmeter.cli._eval"): _CLI,
}


def test_a_test_may_import_a_private_module_it_is_named_after_or_one_the_list_allows(tmp_path):
    tests = tmp_path / "tests"
    files = {
        "store/test_blobs.py": "from ragmeter.store._blobs import put\n",  # named after it
        "store/test_store_blobs.py": "import ragmeter.store._blobs\n",  # <pkg>_<mod>
        "metrics/test_kernels_props.py": "from ragmeter.metrics import _kernels\n",
        "io/test_trec_lines_more.py": "from ragmeter.io._trec_lines import split\n",
        "store/test_store.py": (
            "from ragmeter.store import Store\n"  # public: fine
            "from ragmeter._errors import RagmeterError\n"  # shared top-level module: fine
            "from ragmeter.store._models import runs\n"  # listed
            "def test_x():\n"
            "    from ragmeter.store._url import parse\n"  # lazy and not listed: fails
            "    from ragmeter.retrieval.pipelines._calls import Caller\n"  # not listed
            "    from ragmeter.store import _blobs\n"  # a private module by name: fails
        ),
        "hostile/test_runs.py": "from ragmeter.store._blobs import put\n",  # another name
        "conftest.py": "from ragmeter.io._tables import Run\n",  # listed
    }
    for rel, text in files.items():
        path = tests / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    modules = {"ragmeter.store", "ragmeter.store._blobs", "ragmeter.metrics._kernels"}
    allowed = {
        ("tests/store/test_store.py", "ragmeter.store._models"): "failure injection",
        ("tests/conftest.py", "ragmeter.io._tables"): "a shared fixture's table",
        ("tests/store/test_blobs.py", "ragmeter.store._blobs"): "named after it already",
        ("tests/gone.py", "ragmeter.io._tables"): "an import that is gone",
    }
    new, stale, by_name, listed = check_test_imports(tests, modules, allowed)
    assert new == [
        "tests/hostile/test_runs.py:1: ragmeter.store._blobs",
        "tests/store/test_store.py:5: ragmeter.store._url",
        "tests/store/test_store.py:6: ragmeter.retrieval.pipelines._calls",
        "tests/store/test_store.py:7: ragmeter.store._blobs",
    ]
    assert stale == [
        ("tests/gone.py", "ragmeter.io._tables"),
        ("tests/store/test_blobs.py", "ragmeter.store._blobs"),  # allowed by its name
    ]
    assert (by_name, listed) == (4, 2)


def test_every_allowed_test_private_import_says_why():
    for (file, module), why in ALLOWED_TEST_PRIVATE.items():
        assert (ROOT / file).is_file(), file
        assert len(why.split()) >= 4, (file, module)


def test_tests_import_public_names_or_the_module_they_are_named_after():
    modules = set(ig.discover(SRC))
    new, stale, by_name, listed = check_test_imports(ROOT / "tests", modules, ALLOWED_TEST_PRIVATE)
    assert by_name + listed > 100  # a scanner that sees nothing would pass the rest
    problems = []
    if new:
        problems.append(
            f"{len(new)} import(s) of a private module from a test not named after it (import "
            "the name from the package, name the test after the module, or add the pair to "
            "ALLOWED_TEST_PRIVATE in tests/architecture/test_import_graph.py with the reason):"
        )
        problems += [f"    {line}" for line in new]
    if stale:
        problems.append(
            f"{len(stale)} ALLOWED_TEST_PRIVATE entr(y/ies) match no import any more (delete them):"
        )
        problems += [f"    {a} -> {b}" for a, b in stale]
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
