"""The package reads as the RAG chain: no import cycles between modules, no import up a layer,
no import of another package's private module beyond the short list that says why.

The layers (tools/import_graph.py LAYERS, docs/architecture.md) let the experiment store and the
web lab sit on top of the chain without pulling it apart. The graph is built statically with
``ast`` (every import statement, inside functions and under ``TYPE_CHECKING`` too); the first
tests pin the graph builder on small hand-made packages so the gate itself cannot pass by
seeing nothing. A package's private modules (``ragmeter.io._tables``) are its own: other
packages import what its ``__init__`` exports, so renaming an internal module breaks nothing
far away; the command line and the lab import only workflows, ``__init__``s and public modules.
"""

from __future__ import annotations

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
