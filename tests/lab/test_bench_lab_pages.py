"""benchmarks/bench_lab.py --fare-rules times every page of the lab (issue 28): its list of
pages (``PAGES``) must name each GET route the app registers, and only those, so that a new
page is never left out of the benchmark and a removed one never lingers in it."""

from __future__ import annotations

import importlib.util
import string
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("fastapi")  # justified: the lab is the [web] extra

from ragmeter import Store
from ragmeter.lab import create_app

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_lab.py"


def bench_lab() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_lab", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_lab", module)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_times_every_page_of_the_lab(tmp_path: Path) -> None:
    bench = bench_lab()
    with Store.open(f"sqlite:///{tmp_path / 'lab.db'}") as store:
        app = create_app(store=store, root=tmp_path)
        routes = bench.lab_pages(app)
    assert "/diagnosis" in routes and "/lab" in routes  # (the routes are read, not an empty set)
    assert "/static" not in routes  # a mount of files, not a page
    assert set(bench.PAGES) == routes, (
        f"missing from PAGES: {sorted(routes - set(bench.PAGES))}; "
        f"in PAGES but not a route: {sorted(set(bench.PAGES) - routes)}"
    )


def test_each_page_is_timed_on_a_url_of_its_own_route() -> None:
    """Every URL under a route opens that route: its path, with each ``{parameter}`` filled in
    (a URL written for another route would leave this one untimed)."""
    bench = bench_lab()
    names = {n for urls in bench.PAGES.values() for u in urls
             for _, n, _, _ in string.Formatter().parse(u) if n}  # fmt: skip
    values = {n: f"V{n}" for n in names}
    for route, urls in bench.PAGES.items():
        assert urls, route
        for url in urls:
            path = url.format(**values).split("?")[0]
            parts, want = path.split("/"), route.split("/")
            assert len(parts) == len(want), (route, url)
            for got, expected in zip(parts, want, strict=True):
                assert got == expected or expected.startswith("{"), (route, url)
    filled = bench.fare_rules_urls(values)
    assert len(filled) == sum(len(u) for u in bench.PAGES.values())
    assert not any("{" in u for u in filled)
