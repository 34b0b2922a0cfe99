"""``ragmeter report``: one self-contained HTML file (structure, numbers equal to the command
line's, nothing a browser would fetch, the CSP hashes of exactly its inline scripts, hostile
text escaped)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

# justified: jinja2 is a core dependency; the guard names it if an install lacks it
pytest.importorskip("jinja2")  # justified: a core dependency, named if missing

from _lab_store import FareStore, cli, cli_json, record_fare_rules

from ragmeter.cli import app
from ragmeter.store import Store

FIXTURES = Path(__file__).parents[1] / "fixtures"


class Page(HTMLParser):
    """What the report's HTML holds: ids, inline script texts (with their type), every URL an
    element names, the meta CSP and the text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.scripts: list[tuple[str | None, str]] = []
        self.urls: list[tuple[str, str, str]] = []
        self.csp: str | None = None
        self.tags: list[str] = []
        self.text: list[str] = []
        self._script: str | bool | None = False
        self._buf: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        for name in ("src", "href", "action", "data", "poster", "srcset", "formaction"):
            if a.get(name) is not None:
                self.urls.append((tag, name, str(a[name])))
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy":
            self.csp = a.get("content")
        if tag == "script":
            self._script, self._buf = a.get("type"), []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not False:
            self.scripts.append((self._script or None, "".join(self._buf)))  # type: ignore[arg-type]
            self._script = False

    def handle_data(self, data: str) -> None:
        if self._script is not False:
            self._buf.append(data)
        else:
            self.text.append(data)


def parse(html: str) -> Page:
    p = Page()
    p.feed(html)
    p.close()
    return p


#: a judge validation with hand-computed figures: pairs (human, judge) s = supported,
#: u = unsupported: agreement 4/6; each side labels 3 s and 3 u, so p_e = 0.5 and
#: kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3; rows human, columns judge: s -> [2, 1], u -> [1, 2]
JUDGED = [("change-fee-standard", "s", "s"), ("change-fee-basic", "u", "s"),
          ("which-fee-schedule", "u", "u"), ("infant-minimum-age", "u", "u"),
          ("pet-fee", "s", "s"), ("voucher-validity", "s", "u")]  # fmt: skip
WORD = {"s": "supported", "u": "unsupported"}


@pytest.fixture(scope="module")
def fare(tmp_path_factory: pytest.TempPathFactory) -> FareStore:
    """The example recorded as a user records it (``ragmeter run``, then ``answers check`` of
    the baseline's and the reranker's answers)."""
    return record_fare_rules(tmp_path_factory.mktemp("report-store"))


@pytest.fixture(scope="module")
def judged(fare: FareStore) -> dict[str, object]:
    """``ragmeter judge validate`` of :data:`JUDGED`, recorded into the store."""
    human, judge = fare.root / "human.jsonl", fare.root / "judge.jsonl"
    human.write_text("".join(json.dumps({"id": i, "label": WORD[h]}) + "\n" for i, h, _ in JUDGED))
    judge.write_text("".join(json.dumps({"id": i, "label": WORD[j]}) + "\n" for i, _, j in JUDGED))
    out = cli_json("judge", "validate", "--human", human, "--judge", judge, "--db", fare.url,
                   "-f", "json")  # fmt: skip
    assert isinstance(out, dict)
    return out


@pytest.fixture(scope="module")
def fare_store(fare: FareStore) -> Iterator[Store]:
    with Store.open(fare.url) as store:
        yield store


@pytest.fixture(scope="module")
def report(
    fare: FareStore,
    fare_store: Store,
    judged: dict[str, object],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp("report") / "report.html"
    result = CliRunner().invoke(
        app,
        ["report", "1", "run:2", "3", "4", "-o", str(out), "--db", fare_store.url,
         "--root", str(fare.root)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8"), out


def text_of(html: str) -> str:
    return " ".join(" ".join(parse(html).text).split())


def test_sections_and_numbers_equal_the_cli(report: tuple[str, Path], fare_store: Store) -> None:
    html, _ = report
    page = parse(html)
    for section in ("runs", "lab", "comparisons", "sweep", "diagnosis"):
        assert section in page.ids, section
    for rid in (1, 2, 3, 4):
        assert f"run-{rid}" in page.ids
    for rid in (2, 3, 4):
        assert f"cmp-{rid}" in page.ids
    # each question of each run has its collapsible ranked list; the evidence is marked
    qs = list(fare_store.evaluation(1).query_ids)
    assert len(qs) == 80
    for rid in (1, 2):
        for q in qs:
            assert f"r{rid}-q{q.encode().hex()}" in page.ids
    assert page.tags.count("details") >= 4 * 80
    assert page.tags.count("mark") > 80
    text = " ".join(" ".join(page.text).split())
    # the baseline's stored means, as `ragmeter runs show 1` prints them (3 decimals here)
    base = fare_store.run(1)
    for metric in ("R@4", "RR@4", "AllR@4", "R@20"):
        assert f"{base.metrics[metric]:.3f}" in text, metric
    nd = fare_store.evaluation(1, "chunk").aggregate["nDCG@4"]
    assert f"nDCG · nDCG@4 (linear) {nd:.3f}" in text  # the gain said (issue 27)
    # smaller chunks at its own k = 12
    r2 = fare_store.run(2)
    assert f"Recall · R@12 {r2.metrics['R@12']:.3f}" in text
    # each comparison as `ragmeter compare 1 N -m AllR@budget=1200 --format json` prints it
    for rid in (2, 3, 4):
        c = cli_json("compare", "1", rid, "-m", "AllR@budget=1200", "--format", "json",
                     "--no-ledger", "--db", fare_store.url)  # fmt: skip
        assert isinstance(c, dict)
        lo, hi = c["ci"]
        assert f"Difference {c['mean_delta']:+.4f}, 95% interval [{lo:+.3f}, {hi:+.3f}]" in text
        assert f"{c['wins']} / {c['losses']} / {c['ties']}" in text
        if c["fixed_ids"]:
            anchor = f"#r{rid}-q{c['fixed_ids'][0].encode().hex()}"
            assert ("a", "href", anchor) in page.urls


def cells_of(html: str, pre: str) -> dict[str, int]:
    """The retrieval-by-answer grid's counts: each cell is a link to its questions."""
    found = re.findall(
        rf'<a class="cell[^"]*" href="#{pre}cell-(\w+)">\s*<div class="count">(\d+)</div>', html
    )
    return {key: int(n) for key, n in found}


def cell_questions(html: str, pre: str, key: str) -> list[str]:
    """The questions the cell's in-page target lists (the text of each item)."""
    block = re.search(rf'<details id="{pre}cell-{key}"[^>]*>(.*?)</details>', html, re.S)
    assert block is not None, key
    return [re.sub(r"<[^>]+>", "", li) for li in re.findall(r"<li>(.*?)</li>", block.group(1))]


def test_diagnosis_grid_is_what_ragmeter_diagnose_prints(
    report: tuple[str, Path], fare: FareStore
) -> None:
    html, _ = report
    page = parse(html)
    text = text_of(html)
    for answers, variant, run_id, want in (
        # the counts the example's README gives (working / generation failure / from memory /
        # retrieval failure / support unknown)
        ("baseline", "baseline", 1, (49, 14, 2, 14, 1)),
        ("rerank", "reranker", 4, (57, 12, 2, 8, 1)),
    ):
        cli = fare.diagnose(answers, variant)
        pre = f"a{fare.answers[answers]}-"
        grid = cells_of(html, pre)
        by_cli = {c["cell"]: c for c in (*cli["table"]["cells"], *cli["table"]["other"])}
        keys = ("working", "generation_failure", "from_memory", "retrieval_failure",
                "support_unknown")  # fmt: skip
        assert tuple(grid[k] for k in keys) == want, answers
        assert grid["cites_outside_context"] == 0
        for key, n in grid.items():
            assert n == by_cli[key]["count"], (answers, key)
            # the cell links to its own questions, in the page: each one, to its ranked list
            assert f"{pre}cell-{key}" in page.ids
            assert cell_questions(html, pre, key) == by_cli[key]["ids"], (answers, key)
            for qid in by_cli[key]["ids"]:
                assert ("a", "href", f"#r{run_id}-q{qid.encode().hex()}") in page.urls
        for step in cli["steps"]:
            assert " ".join(step["detail"].split()) in text, step["question"]
        assert " ".join(cli["experiment"]["refutation"].split()) in text
        assert f"failing link {cli['failing_link']}" in text
    assert "Largest bad cell: retrieval failure (14 of 80), tied with generation failure" in text


def test_sweep_is_the_sweeps_view_and_equals_ragmeter_sweep(
    report: tuple[str, Path], fare: FareStore, fare_store: Store
) -> None:
    from ragmeter.lab._data_sweeps import sweeps_context
    from ragmeter.lab._paths import LabCache

    html, _ = report
    # four runs, two chunkings: the sweeps view's default is recall over token budgets
    view = sweeps_context(fare_store, [1, 2, 3, 4], metric="R", cache=LabCache(fare.root))
    assert view.kind == "budget" and view.cutoffs_text == "200..2400:200"
    chunks_100 = fare.root / "chunks-100.jsonl"
    cli("chunk", fare.root / "corpus.jsonl", "-c", "tokens:100:0", "-o", chunks_100)
    variants = ("baseline", "smaller chunks", "hybrid", "reranker")
    swept = cli_json(
        "sweep", *(fare.run_file(v) for v in variants), "--golden", fare.root / "golden.jsonl",
        "--chunks", fare.chunks, "--chunks", chunks_100, "--chunks", fare.chunks,
        "--chunks", fare.chunks, "-m", "R",
        "--budget", "200..2400:200", "--headroom-k", "20", "-f", "json",
    )  # fmt: skip
    (cli_sweep,) = swept
    assert cli_sweep["cutoffs"] == list(range(200, 2401, 200))
    # the chart's data in the report: every value exactly the one `ragmeter sweep` printed
    spec = json.loads(
        re.search(r'id="sweep-chart-spec">(.*?)</script>', html, re.S).group(1)  # type: ignore[union-attr]
    )
    assert spec == view.spec
    points = next(x for x in spec["layer"] if x["mark"]["type"] == "line")["data"]["values"]
    drawn: dict[str, list[float]] = {}
    for pt in points:
        drawn.setdefault(pt["run"], []).append(pt["value"])
    cli_values = [list(v.values()) for v in cli_sweep["values"].values()]
    assert list(drawn.values()) == cli_values
    assert list(drawn) == [f"{i}: {v}" for i, v in enumerate(variants, 1)]
    # the table: each budget's row, at 3 decimals, in the run order
    text = text_of(html)
    values = cli_values
    for j, cut in enumerate(cli_sweep["cutoffs"]):
        row = " ".join(f"{values[i][j]:.3f}" for i in range(4))
        assert f"{cut} {row}" in text, cut
    heads = list(cli_sweep["headroom"]["values"].values())
    assert [f"{h:.3f}" for h in heads] == ["0.996", "0.887", "0.996", "0.996"]
    for name, h in zip(drawn, heads, strict=True):
        assert f"{name} {h:.3f} R@20" in text
    assert view.summary in text


def test_judge_validation_is_in_the_report(
    report: tuple[str, Path], judged: dict[str, object], fare_store: Store
) -> None:
    html, _ = report
    text = text_of(html)
    assert "judge" in parse(html).ids
    assert judged["kappa"] == pytest.approx(1 / 3) and judged["agreement"] == pytest.approx(2 / 3)
    assert "Cohen's kappa 0.333" in text and "observed agreement 0.667" in text
    assert judged["confusion"] == {"rows_human_cols_judge": [[2, 1], [1, 2]]}  # type: ignore[comparison-overlap]
    assert "supported 2 1 3 unsupported 1 2 3 total 3 3 6" in text
    # a validation names no run: it belongs to a report whose golden set holds its questions
    from ragmeter.lab._report_data import judge_section

    version = fare_store.run(1).golden_version
    assert judge_section(fare_store, [version]) is not None
    assert judge_section(fare_store, ["g-000000000000", None]) is None


def test_every_href_is_an_in_page_anchor_that_exists(report: tuple[str, Path]) -> None:
    html, _ = report
    page = parse(html)
    hrefs = [u for _, attr, u in page.urls if attr == "href"]
    assert len(hrefs) > 500  # sections, questions, comparisons' and cells' question links
    for href in hrefs:
        assert href.startswith("#"), href
        assert href[1:] in page.ids, href
    # and no live lab URL anywhere in the page's markup
    markup = re.sub(r"<script>.*?</script>", "", html, flags=re.S)
    for live in ("/lab?", "/compare?", "/question?", "/diagnosis?", "/sweeps?", "/judges/"):
        assert live not in markup, live


def test_nothing_to_fetch_and_the_csp_allows_exactly_its_scripts(report: tuple[str, Path]) -> None:
    html, _ = report
    page = parse(html)
    # every URL an element names stays in the page
    assert page.urls, "the report links its own sections"
    for tag, attr, url in page.urls:
        assert url.startswith("#"), (tag, attr, url)
    assert "<link" not in html and "@import" not in html
    styles = re.findall(r"<style>(.*?)</style>", html, re.S)
    assert len(styles) == 1 and "style=" not in html.split("<script", 1)[0].split("</head>")[1]
    assert not re.search(r"url\(|@import", styles[0]), "the CSS would fetch something"
    code = [s for t, s in page.scripts if t is None]
    data = [s for t, s in page.scripts if t == "application/json"]
    assert len(code) == 5 and data, "vega, vega-lite, vega-embed, the interpreter and lab.js"
    from ragmeter.lab._render import STATIC

    assert (STATIC / "vendor/htmx.min.js").read_text(encoding="utf-8") not in code
    assert page.csp is not None
    rules = dict(r.strip().split(" ", 1) for r in page.csp.split(";"))
    assert rules["default-src"] == "'none'"
    assert "connect-src" not in rules
    hashes = sorted(rules["script-src"].split())
    want = sorted(
        f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in code
    )
    assert hashes == want
    assert "unsafe" not in rules["script-src"]


def test_hostile_text_is_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "xss"
    shutil.copytree(FIXTURES / "xss", folder)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    run = CliRunner().invoke(app, ["run", str(folder / "experiment.toml"), "--db", url])
    assert run.exit_code == 0, run.output
    out = tmp_path / "x.html"
    name = "xss <script>alert(1)</script> [bold]x[/bold]"
    result = CliRunner().invoke(
        app, ["report", name, "-o", str(out), "--db", url, "--root", str(folder)]
    )
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    page = parse(html)
    assert [t for t, _ in page.scripts if t is None] == [None] * 5  # no injected script
    assert "onerror" not in " ".join(f"{a}={u}" for _, a, u in page.urls)
    assert not any(u.lower().startswith("javascript:") for _, _, u in page.urls)
    markup = html
    for t, code in page.scripts:
        if t is None:
            markup = markup.replace(code, "")
    assert "<img" not in markup and "<script>alert" not in markup
    text = "".join(page.text)
    for literal in ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>',
                    "[bold]x[/bold]", "{{ 7*7 }}", "javascript:alert(1)"):  # fmt: skip
        assert literal in text, literal
    # JSON blocks stay JSON: a </script> inside data is escaped by tojson
    for t, s in page.scripts:
        if t == "application/json":
            json.loads(s)


def test_selectors(fare_store: Store, tmp_path: Path) -> None:
    from ragmeter._errors import NotFoundError, UsageError
    from ragmeter.workflows.report import resolve_runs

    name = fare_store.run(1).experiment
    assert [r.id for r in resolve_runs(fare_store, [name])] == [1, 2, 3, 4]
    assert [r.id for r in resolve_runs(fare_store, ["run:3", name])] == [3, 1, 2, 4]
    with pytest.raises(NotFoundError, match="neither a stored run id nor an experiment"):
        resolve_runs(fare_store, ["no such experiment"])
    with pytest.raises(UsageError):
        resolve_runs(fare_store, [])
    result = CliRunner().invoke(
        app, ["report", "99", "-o", str(tmp_path / "r.html"), "--db", fare_store.url]
    )
    assert result.exit_code == 2 and "no run 99" in result.output
