"""The module import graph of ragmeter: cycles, imports that go up a layer, private imports.

ragmeter is laid out as the RAG chain, each package a layer that may import only from its own
layer or lower ones, so that the experiment store and the web lab can sit on top without pulling
the chain apart. tests/architecture/test_import_graph.py enforces the rule with this module; run it
as a script to see the figures (also on an older checkout, for before/after numbers):

    .venv/bin/python tools/import_graph.py                # this checkout's src/
    mkdir -p /tmp/before && git archive 67bc5d9 src | tar -x -C /tmp/before   # older tree
    .venv/bin/python tools/import_graph.py /tmp/before/src --old-layout
    .venv/bin/python tools/import_graph.py --private         # imports of another package's
                                                             # private modules, with the reasons

How the graph is built (static, from ``ast``; nothing is imported):
- every ``import``/``from ... import`` anywhere in a file is an edge: at module level and
  inside functions (a lazy import still ties the modules together at run time);
- an import under ``if TYPE_CHECKING:`` counts for the layer rule (a lower layer that names an
  upper layer's type depends on it all the same: the type belongs lower) but not for cycles
  (it never executes, so it cannot half-initialise a module, and mypy resolves type-only
  cycles; it is the standard way for a helper module to annotate the class that calls it);
- relative imports are resolved against the importing module's package;
- ``from pkg import name`` is an edge to the submodule ``pkg.name`` when that file exists, else
  to ``pkg`` itself (its ``__init__``); ``import pkg`` is an edge to ``pkg``'s ``__init__``;
- only the module named is an edge: the parent packages Python runs on the way are not (they
  would tie every module to its own ``__init__`` and to ``ragmeter/__init__``);
- imports built from strings (``importlib.import_module``) are not seen; only the lazy top-level
  surface (exempt, below) builds its imports so: the CLI's command modules and the lab's
  routers are imported explicitly;
- ``ragmeter/__init__.py`` (the lazy public surface) and ``__main__.py`` are exempt as
  importers; importing the top package from inside it is an upward edge. A subpackage
  ``__init__`` that re-exports its own modules is a normal module.

Private imports: a package's private modules (``ragmeter.io._tables``) are its own; another
package imports the names its ``__init__`` exports (``from ragmeter.io import Run``), so an
internal module can be renamed without breaking distant packages. :func:`private_imports`
finds the imports that do not; each one kept has a reason in :data:`ALLOWED_PRIVATE`, and the
test fails on one that is new (file and line) or on an entry that no longer matches an import.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "ragmeter"

#: Layer of each package or module (longest prefix wins). A module may import only from its own
#: layer or a lower one. Keep in step with docs/architecture.md.
LAYERS: dict[str, int] = {
    "ragmeter._about": 0,
    "ragmeter._compiled": 0,
    "ragmeter._errors": 0,
    "ragmeter._extras": 0,
    "ragmeter._literal": 0,
    "ragmeter._numbers": 0,
    "ragmeter._pvalue": 0,
    "ragmeter._interval": 0,
    "ragmeter.io": 1,
    "ragmeter.metrics": 2,
    "ragmeter.data": 3,
    "ragmeter.chunking": 4,
    "ragmeter.labels": 5,
    "ragmeter.retrieval": 6,
    "ragmeter.paired": 7,
    "ragmeter.explain": 7,
    # the OpenAI-compatible chat transport and its reply cache, below answers' judges (8) and
    # generation (9), so making answers does not depend on checking them
    "ragmeter.chat": 7,
    "ragmeter.answers": 8,
    "ragmeter.diagnosis": 9,
    "ragmeter.generation": 9,
    "ragmeter.experiments": 10,
    # where embedding, generation and judging run (local or Ray): wraps retrieval's encoders,
    # generation's generators and answers' judges; the runner (same layer) hands them on
    "ragmeter.engines": 10,
    "ragmeter.store": 11,
    # the user's jobs written once (score, compare, diagnose, run and record, report): above the
    # store, below the interfaces that only parse input, call one workflow and render
    "ragmeter.workflows": 12,
    "ragmeter.lab": 13,
    "ragmeter.cli": 14,  # the demo included (cli/_demo/)
    # The lazy public surface (this entry names the top __init__ only, not the modules under
    # it): above everything, so importing it from inside the package is an upward edge.
    "ragmeter": 15,
}

#: Modules of the layout before commit 55310c0 ("Layers that read as the chain"), each placed at
#: the layer of the package it moved to, so that the old tree can be measured by today's rule
#: (``--old-layout``).
OLD_LAYOUT: dict[str, int] = {
    "ragmeter.evaluation": 2,  # -> metrics/_evaluation.py
    "ragmeter.retrieval.experiment": 10,  # -> experiments/
    "ragmeter.retrieval.runner": 10,
    "ragmeter.retrieval._table": 10,
    "ragmeter.retrieval._outputs": 10,
    "ragmeter.retrieval._sources": 10,
    "ragmeter.answers.diagnose": 9,  # -> diagnosis/
    "ragmeter.answers.position": 9,
    "ragmeter.answers.refutation": 9,
    "ragmeter.answers.table": 9,
    "ragmeter.answers.demo": 11,  # -> cli/_demo/
    "ragmeter.demo": 11,
}

#: Importers the rules do not apply to.
EXEMPT = frozenset({"ragmeter", "ragmeter.__main__"})


@dataclass(frozen=True)
class Edge:
    """One import statement's target: ``importer`` imports ``imported`` at ``path:line``."""

    importer: str
    imported: str
    path: str
    line: int
    type_checking: bool  # only under ``if TYPE_CHECKING:``

    def where(self) -> str:
        return f"{self.path}:{self.line}" + (" (TYPE_CHECKING)" if self.type_checking else "")


@dataclass
class Graph:
    """Modules (dotted names) and the edges between them, exempt importers left out."""

    modules: dict[str, Path]
    edges: list[Edge] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)

    def adjacency(self, runtime_only: bool = False) -> dict[str, dict[str, Edge]]:
        """importer -> imported -> first edge (by line), self-imports dropped; with
        ``runtime_only``, imports under ``TYPE_CHECKING`` left out."""
        adj: dict[str, dict[str, Edge]] = {m: {} for m in self.modules if m not in EXEMPT}
        for e in sorted(self.edges, key=lambda e: (e.importer, e.line)):
            if e.importer != e.imported and not (runtime_only and e.type_checking):
                adj[e.importer].setdefault(e.imported, e)
        return adj


def module_name(src: Path, file: Path) -> str:
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def discover(src: Path, package: str = PACKAGE) -> dict[str, Path]:
    root = src / package
    if not root.is_dir():
        raise SystemExit(f"no package {package!r} under {src}")
    return {module_name(src, f): f for f in sorted(root.rglob("*.py"))}


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import node in the tree, with whether it sits under ``if TYPE_CHECKING:``."""

    def is_type_checking(test: ast.expr) -> bool:
        return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        )

    def walk(node: ast.AST, under_tc: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, under_tc
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.body:
                yield from walk(child, True)
            for child in node.orelse:
                yield from walk(child, under_tc)
            return
        for sub in ast.iter_child_nodes(node):
            yield from walk(sub, under_tc)

    yield from walk(tree, False)


def build(src: Path, package: str = PACKAGE) -> Graph:
    modules = discover(src, package)
    graph = Graph(modules)
    for mod, file in modules.items():
        if mod in EXEMPT:
            continue
        is_pkg = file.name == "__init__.py"
        rel = file.relative_to(src.parent).as_posix()
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        for node, tc in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.split(".")[0] == package]
            else:
                if node.level:
                    base_parts = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    if node.level - 1 > len(base_parts) - 1:
                        graph.unresolved.append(f"{rel}:{node.lineno}: relative import too deep")
                        continue
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                if base.split(".")[0] != package:
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if alias.name != "*" and sub in modules else base)
            for target in targets:
                if target not in modules:
                    problem = f"{rel}:{node.lineno}: {target} is not a module"
                    if problem not in graph.unresolved:
                        graph.unresolved.append(problem)
                    continue
                graph.edges.append(Edge(mod, target, rel, node.lineno, tc))
    return graph


def layer_of(module: str, layers: dict[str, int] = LAYERS) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for prefix, layer in layers.items():
        inside = module.startswith(prefix + ".") and prefix != PACKAGE  # the top: itself only
        if (module == prefix or inside) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), layer)
    return None if best is None else best[1]


def upward_edges(graph: Graph, layers: dict[str, int] = LAYERS) -> list[tuple[Edge, int, int]]:
    """Imports whose target sits in a higher layer than the importer: (edge, from, to)."""
    out = []
    for importer, targets in graph.adjacency().items():
        li = layer_of(importer, layers)
        for imported, edge in targets.items():
            lt = layer_of(imported, layers)
            if li is not None and lt is not None and lt > li:
                out.append((edge, li, lt))
    return out


def unlayered(graph: Graph, layers: dict[str, int] = LAYERS) -> list[str]:
    return [m for m in graph.modules if m not in EXEMPT and layer_of(m, layers) is None]


def package_of(module: str) -> str:
    """The subpackage a module belongs to (``ragmeter.store._blobs`` -> ``ragmeter.store``);
    a top-level module (``ragmeter._errors``) is its own."""
    return ".".join(module.split(".")[:2])


def private_imports(graph: Graph) -> list[Edge]:
    """Imports of ANOTHER subpackage's private module (a part after the package that starts
    with ``_``): ``ragmeter.cli._eval`` importing ``ragmeter.store._blobs``. One edge per
    (importer, imported) pair, the first by line; imports inside a package, of a package's
    ``__init__``, of a public module (``ragmeter.workflows.compare``) and of the top-level
    modules every layer shares (``ragmeter._errors``) are not private imports."""
    packages = {m for m, f in graph.modules.items() if f.name == "__init__.py"}
    out: dict[tuple[str, str], Edge] = {}
    for e in sorted(graph.edges, key=lambda e: (e.importer, e.line)):
        home, target = package_of(e.importer), package_of(e.imported)
        if target == home or target not in packages or target == PACKAGE:
            continue
        if any(part.startswith("_") for part in e.imported.split(".")[2:]):
            out.setdefault((e.importer, e.imported), e)
    return list(out.values())


#: The private cross-package imports that stay, each with why its names are not exported by
#: the package's ``__init__``: (importer, imported module) -> reason.
#: tests/architecture/test_import_graph.py requires the private imports to be exactly these: a new
#: one fails (export the name instead), and so does an entry no import matches any more (delete it).
_PYDANTIC = "pydantic field types: exporting them would make `import ragmeter.{}` load pydantic"
ALLOWED_PRIVATE: dict[tuple[str, str], str] = {
    ("ragmeter.answers._schema", "ragmeter.data._schema"): (
        "lone_surrogate_field: the golden records' text check, applied to answer records; a "
        "validation helper, not API"
    ),
    ("ragmeter.answers.contexts", "ragmeter.labels._span_metrics"): (
        "_to_run (a private name): the span scorer's run coercion, so a context is ranked "
        "exactly as the same run is scored"
    ),
    ("ragmeter.chunking._id_lookup", "ragmeter.io._duplicates"): (
        "padded_words, word_hashes, mix: the id hashing kernels of io's duplicate check, not API"
    ),
    ("ragmeter.chunking._id_lookup", "ragmeter.io._trec_arrays"): (
        "string_offsets: an Arrow buffer kernel of the TREC reader, not API"
    ),
    ("ragmeter.experiments._output_schema", "ragmeter.io._json_fields"): _PYDANTIC.format("io"),
    ("ragmeter.experiments._output_schema", "ragmeter.metrics._name_field"): _PYDANTIC.format(
        "metrics"
    ),
    ("ragmeter.experiments._outputs", "ragmeter.io._writing"): (
        "write_lines: the run writers' numpy line kernel, shared with the experiment outputs only"
    ),
    ("ragmeter.experiments._schema", "ragmeter.io._schema_problems"): _PYDANTIC.format("io"),
    ("ragmeter.experiments._schema", "ragmeter.retrieval._spec_schema"): (
        "the retriever spec models: pydantic, and their Retriever/Reranker are spec tables, "
        "not the Retriever protocol ragmeter.retrieval exports"
    ),
    ("ragmeter.generation._callable", "ragmeter.retrieval.pipelines._calls"): (
        "Caller, describe, one_line: the user-code call machinery (threads, timeouts, messages) "
        "the callable generator shares with pipelines; not API"
    ),
    ("ragmeter.labels._span_metrics", "ragmeter.metrics._kernels"): (
        "SpanInputs, per_group_min: the span kernels' inputs; labels is their only caller"
    ),
    ("ragmeter.metrics._chunked", "ragmeter.io._duplicates"): (
        "check_policy, dedupe_run, Table: the readers' duplicate rule applied to a chunked run, "
        "not API"
    ),
    ("ragmeter.metrics._chunked", "ragmeter.io._trec_chunks"): (
        "run_blocks: the TREC run reader's checked blocks, read by the chunked scorer only"
    ),
    ("ragmeter.metrics._join", "ragmeter.io._duplicates"): (
        "string_hashes: the id hashing kernel of io's duplicate check, not API"
    ),
    ("ragmeter.metrics._join", "ragmeter.io._trec_arrays"): (
        "string_offsets: an Arrow buffer kernel of the TREC reader, not API"
    ),
    ("ragmeter.metrics._name_field", "ragmeter.io._json_fields"): _PYDANTIC.format("io"),
    ("ragmeter.metrics._score", "ragmeter.io._tables"): (
        "doc_hashes_of, qid_starts_of: the hashes a reader keeps on a Qrels/Run, handed to the "
        "scorer; a handshake between io's readers and scoring, not API"
    ),
    ("ragmeter.paired._ledger_schema", "ragmeter.io._json_fields"): _PYDANTIC.format("io"),
    ("ragmeter.retrieval._spec_schema", "ragmeter.io._schema_problems"): _PYDANTIC.format("io"),
    ("ragmeter.store._import_plan", "ragmeter.experiments._output_schema"): (
        "ExperimentSummary, VariantConfig: the output files' pydantic models, which runs import "
        "validates with; exporting them would make `import ragmeter.experiments` load pydantic"
    ),
    ("ragmeter.store._import_plan", "ragmeter.io._schema_problems"): _PYDANTIC.format("io"),
    ("ragmeter.store._import_plan", "ragmeter.metrics._evaluation_file"): (
        "read_records, pick_record, _json_type: an evaluation file's raw records and the words "
        "of its messages, which runs import checks beyond Evaluation.from_dict; the file "
        "format's internals, not API"
    ),
    ("ragmeter.store._import_plan", "ragmeter.paired._ledger_schema"): (
        "LedgerEntry: the ledger line's pydantic model, which runs import validates with; "
        "exporting it would make `import ragmeter.paired` load pydantic"
    ),
    ("ragmeter.store._run_file", "ragmeter.io._json_fields"): _PYDANTIC.format("io"),
    ("ragmeter.store._run_file", "ragmeter.io._schema_problems"): _PYDANTIC.format("io"),
    ("ragmeter.store._run_file", "ragmeter.metrics._name_field"): _PYDANTIC.format("metrics"),
}


def check_private(
    graph: Graph, allowed: dict[tuple[str, str], str] = ALLOWED_PRIVATE
) -> tuple[list[Edge], list[tuple[str, str]]]:
    """The private imports not in ``allowed`` (first edge of each pair) and the entries of
    ``allowed`` that match no private import (stale)."""
    found = private_imports(graph)
    pairs = {(e.importer, e.imported) for e in found}
    new = [e for e in found if (e.importer, e.imported) not in allowed]
    stale = sorted(k for k in allowed if k not in pairs)
    return new, stale


def format_private(edge: Edge, allowed: dict[tuple[str, str], str] = ALLOWED_PRIVATE) -> str:
    reason = allowed.get((edge.importer, edge.imported))
    why = f": {reason}" if reason else "  NOT ALLOWED (import the name from the package)"
    return f"{edge.importer} -> {edge.imported}  ({edge.where()}){why}"


def private_report(
    graph: Graph, allowed: dict[tuple[str, str], str] = ALLOWED_PRIVATE
) -> tuple[str, int]:
    """Each private import with its reason, the stale entries, counts per importing package;
    and the number of problems (private imports not allowed plus stale entries)."""
    found = private_imports(graph)
    new, stale = check_private(graph, allowed)
    out = [format_private(e, allowed) for e in found]
    out += [f"stale ALLOWED_PRIVATE entry (no such import): {a} -> {b}" for a, b in stale]
    per: dict[str, int] = {}
    for e in found:
        per[package_of(e.importer)] = per.get(package_of(e.importer), 0) + 1
    counts = ", ".join(f"{p} {n}" for p, n in sorted(per.items(), key=lambda x: (-x[1], x[0])))
    out.append(
        f"{len(found)} private cross-package imports ({counts or 'none'}); "
        f"{len(new)} not allowed, {len(stale)} stale allow-list entries"
    )
    return "\n".join(out), len(new) + len(stale)


def strongly_connected(adj: dict[str, dict[str, Edge]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative); components of two or more modules, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(adj):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(adj[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in adj:
                    continue  # exempt module: no outgoing edges
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(adj[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def shortest_cycle(adj: dict[str, dict[str, Edge]], component: Iterable[str]) -> list[Edge]:
    """A shortest cycle through the component's first module, as the edges that close it."""
    members = set(component)
    start = min(members)
    prev: dict[str, Edge] = {}
    queue = deque([start])
    seen = {start}
    while queue:
        node = queue.popleft()
        for nxt, edge in sorted(adj[node].items()):
            if nxt not in members:
                continue
            if nxt == start:
                path = [edge]
                while path[0].importer != start:
                    path.insert(0, prev[path[0].importer])
                return path
            if nxt not in seen:
                seen.add(nxt)
                prev[nxt] = edge
                queue.append(nxt)
    raise AssertionError("a strongly connected component always has a cycle")


def cycles(graph: Graph, runtime_only: bool = True) -> list[tuple[list[str], list[Edge]]]:
    """Each group of modules that import each other, with a shortest cycle through it.

    By default only imports that run count (module level and inside functions): an import under
    ``TYPE_CHECKING`` never executes, so it cannot half-initialise a module, and mypy resolves
    type-only cycles. It still counts for the layer rule (see the module docstring).
    """
    adj = graph.adjacency(runtime_only)
    return [(comp, shortest_cycle(adj, comp)) for comp in strongly_connected(adj)]


def package_graph(graph: Graph, layers: dict[str, int] = LAYERS) -> Graph:
    """The same graph with each module collapsed to its entry in ``layers`` (its package)."""

    def home(module: str) -> str:
        keys = [k for k in layers if module == k or module.startswith(k + ".")]
        best = max(keys, key=len) if keys else module
        return module if best == PACKAGE else best  # a top-level module is its own node

    modules = {home(m): p for m, p in graph.modules.items() if m not in EXEMPT}
    edges = [
        Edge(home(e.importer), home(e.imported), e.path, e.line, e.type_checking)
        for e in graph.edges
    ]
    return Graph(modules, edges, list(graph.unresolved))


def format_cycle(component: list[str], cycle: list[Edge], noun: str = "modules") -> str:
    lines = [f"cycle among {len(component)} {noun}: {', '.join(component)}"]
    lines += [f"    {e.importer} -> {e.imported}  ({e.where()})" for e in cycle]
    return "\n".join(lines)


def format_upward(edge: Edge, from_layer: int, to_layer: int) -> str:
    return (
        f"{edge.importer} (layer {from_layer}) -> {edge.imported} (layer {to_layer})"
        f"  ({edge.where()})"
    )


def report(
    graph: Graph, layers: dict[str, int] = LAYERS, noun: str = "modules", runtime_only: bool = True
) -> tuple[str, int, int]:
    """Readable report, number of cyclic groups, number of upward edges."""
    cyc = cycles(graph, runtime_only)
    up = upward_edges(graph, layers)
    out = []
    for comp, cycle in cyc:
        out.append(format_cycle(comp, cycle, noun))
    if up:
        out.append("upward edges (importer -> imported):")
        out += ["    " + format_upward(*u) for u in up]
    for m in unlayered(graph, layers):
        out.append(f"module without a layer: {m}")
    for u in graph.unresolved:
        out.append(f"unresolved import: {u}")
    in_cycles = sum(len(c) for c, _ in cyc)
    n_edges = sum(len(t) for t in graph.adjacency().values())
    out.append(
        f"{len(graph.modules)} {noun}, {n_edges} import edges; "
        f"{len(cyc)} cycles (strongly connected groups) covering {in_cycles} {noun}; "
        f"{len(up)} upward edges"
    )
    return "\n".join(out), len(cyc), len(up)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "src",
        nargs="?",
        default=str(Path(__file__).resolve().parents[1] / "src"),
        help="folder holding the ragmeter package (default: this checkout's src/)",
    )
    ap.add_argument(
        "--packages",
        action="store_true",
        help="collapse modules to their packages (cycles between packages)",
    )
    ap.add_argument(
        "--private",
        action="store_true",
        help="list the imports of another package's private modules, each with its reason in "
        "ALLOWED_PRIVATE (exit 1 on one not listed or on a stale entry)",
    )
    ap.add_argument(
        "--type-checking-cycles",
        action="store_true",
        help="count imports under TYPE_CHECKING when looking for cycles too",
    )
    ap.add_argument(
        "--old-layout",
        action="store_true",
        help="measure a tree from before commit 55310c0: modules that moved are "
        "placed at their new package's layer",
    )
    ap.add_argument(
        "--assign",
        action="append",
        default=[],
        metavar="MODULE=LAYER",
        help="give a module of an older layout a layer, e.g. ragmeter.evaluation=2",
    )
    args = ap.parse_args(argv)
    layers = dict(LAYERS) | (OLD_LAYOUT if args.old_layout else {})
    for item in args.assign:
        name, _, value = item.partition("=")
        layers[name] = int(value)
    graph = build(Path(args.src))
    if args.private:
        text, problems = private_report(graph)
        print(text)
        return 1 if problems else 0
    if args.packages:
        graph = package_graph(graph, layers)
    text, n_cycles, n_up = report(
        graph,
        layers,
        "packages" if args.packages else "modules",
        runtime_only=not args.type_checking_cycles,
    )
    print(text)
    return 1 if (n_cycles or n_up) else 0


if __name__ == "__main__":
    sys.exit(main())
