"""The package reads as the RAG chain: no import cycles between modules, no import up a layer.

The layers (tools/import_graph.py LAYERS, docs/architecture.md) let the experiment store and the
web lab sit on top of the chain without pulling it apart. The graph is built statically with
``ast`` (every import statement, inside functions and under ``TYPE_CHECKING`` too); the first
tests pin the graph builder on small hand-made packages so the gate itself cannot pass by
seeing nothing.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
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
        ("ragmeter.io.x", "ragmeter", 1, 14)
    ]
    assert "ragmeter.io.x (layer 1) -> ragmeter (layer 14)" in ig.format_upward(*up[0])


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
    assert layer("ragmeter.lab._app") == 12
    assert layer("ragmeter.cli._app") == 13
    assert layer("ragmeter") == 14
    assert layer("ragmeter.iox") is None  # neither io's nor the top's: a new package needs a row


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
