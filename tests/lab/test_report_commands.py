"""Every command line ``ragmeter report`` prints runs as printed from the folder the report
names (issue 27): the fare-rules example's report (its four runs, and a variant that changes k
without a budget, so a pair note lists the comparisons still possible), each block of lines run
in a copy of the experiments folder, exits 0 and prints the report's numbers. The answers the
diagnosis read were checked from files outside that folder: the lines write them from the store
(``ragmeter answers export``); the pair note's ``ragmeter compare`` lines name the store."""

from __future__ import annotations

import html
import json
import re
import shlex
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jinja2")  # justified: a core dependency, named if missing

from _experiment_files import k_against_budget_text
from _lab_store import EXAMPLE, FareStore, cli, record_fare_rules

from ragmeter import Store

#: the line of the k-against-budget example this test drops: a variant changing k, no budget
BUDGET_LINE = re.compile(r"^budget = 1200.*\n", flags=re.M)
#: a word a line could not fill in (CORPUS, GOLDEN, EXPERIMENT.toml)
PLACEHOLDER = re.compile(r"[A-Z_]{3,}(\.[a-z]+)?")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from ragmeter.workflows.experiment import run_and_record

    root = tmp_path_factory.mktemp("report-commands-store")
    fare: FareStore = record_fare_rules(root)
    text, n = BUDGET_LINE.subn("", k_against_budget_text("fare rules: k without a budget"))
    assert n == 1
    # its baseline named apart: the stored answer set "baseline" stays the fare-rules baseline's
    text = text.replace('name = "baseline"', 'name = "k = 4"', 1)
    (root / "k-no-budget.toml").write_text(text, encoding="utf-8")
    with Store.open(fare.url) as store, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, more = run_and_record(
            store, root / "k-no-budget.toml", cache_dir=EXAMPLE / ".ragmeter-cache"
        )
    runs = [*sorted(fare.ids.values()), more["k = 8"]]
    out = tmp_path_factory.mktemp("report-commands") / "report.html"
    cli("report", *runs, "-o", out, "--db", fare.url, "--root", root)
    return {"html": out.read_text(encoding="utf-8"), "fare": fare, "runs": runs}


def _lines(block: str) -> list[list[str]]:
    lines = [shlex.split(ln) for ln in html.unescape(block).splitlines() if ln.strip()]
    for words in lines:
        assert words[0] == "ragmeter", words
        assert not any(PLACEHOLDER.fullmatch(w) for w in words), f"a placeholder in {words}"
        assert "None" not in words, words
    return [w[1:] for w in lines]


def _blocks(page: str) -> list[list[list[str]]]:
    """Each ``<pre class="mono cmd">`` block's lines, and each ``<code class="cmd">`` line."""
    pre = re.findall(r'<pre class="mono cmd">(.*?)</pre>', page, flags=re.S)
    code = re.findall(r'<code class="cmd">(.*?)</code>', page, flags=re.S)
    return [_lines(b) for b in [*pre, *code]]


def _run_in_copy(
    lines: list[list[str]], root: Path, into: Path, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """Run ``lines`` in a fresh copy of the experiments folder; the last one's JSON output."""
    shutil.copytree(root, into)
    monkeypatch.chdir(into)
    for words in lines[:-1]:
        cli(*words)
    out = cli(*lines[-1], "--format", "json").stdout
    return json.loads(out[min(i for i in (out.find("{"), out.find("[")) if i >= 0) :])


def _context(written: dict[str, Any]) -> Any:
    """The report's own model, built as ``ragmeter report`` built it."""
    from ragmeter.lab._commands import paths_relative_to
    from ragmeter.lab._report import report_context

    fare = written["fare"]
    with Store.open(fare.url) as store, paths_relative_to(fare.root):
        return report_context(store, [str(r) for r in written["runs"]], root=fare.root)


def test_the_report_states_the_folder_and_prints_every_kind_of_line(
    written: dict[str, Any],
) -> None:
    page = html.unescape(re.sub(r"\s+", " ", written["html"]))
    assert "Its command lines run from the experiments folder" in page
    firsts = {tuple(block[-1][:1]) for block in _blocks(written["html"])}
    assert firsts == {("sweep",), ("diagnose",), ("compare",)}


def test_every_line_of_the_report_runs_and_prints_its_numbers(
    written: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fare: FareStore = written["fare"]
    page = _context(written)
    diagnoses = [s.d for s in page.diagnoses if s.d is not None]
    assert len(diagnoses) == 2  # the baseline's and the reranker's answer sets
    pairs = [c.pair for c in page.comparisons if c.pair is not None]
    assert len(pairs) == 1 and pairs[0].possible
    ran = {"sweep": 0, "diagnose": 0, "compare": 0}
    named: set[str] = set()
    for n, lines in enumerate(_blocks(written["html"])):
        got = _run_in_copy(lines, fare.root, tmp_path / f"block-{n}", monkeypatch)
        kind = lines[-1][0]
        ran[kind] += 1
        if kind == "sweep":
            assert page.sweep is not None and page.sweep.s is not None
            want = page.sweep.s.sweep
            (printed,) = got
            for run, values in want["values"].items():
                assert printed["values"][run] == pytest.approx(values, abs=1e-12), run
            assert printed["leaders"] == json.loads(json.dumps(want["leaders"]))
        elif kind == "diagnose":
            answers = lines[-1][lines[-1].index("--answers") + 1]
            (d,) = [d for d in diagnoses if answers == f"answers-{d.answers.id}.jsonl"]
            counts = {c["cell"]: c["count"] for c in [*got["table"]["cells"],
                                                       *got["table"]["other"]]}  # fmt: skip
            assert {k: counts[k] for k in d.cells} == {k: c.count for k, c in d.cells.items()}
            # the lab's diagnosis (the report's) is the line's, whole: both read every metric
            # the run measured (nDCG@4 among them, which the next experiment may name)
            want = json.loads(json.dumps(d.diagnosis))
            assert {k: got[k] for k in want} == want
            assert "not among the metrics" not in json.dumps(want)
            named.add(d.experiment.metric)
        else:
            metric = lines[-1][lines[-1].index("-m") + 1]
            assert "--db" in lines[-1]
            assert metric in pairs[0].shared
            assert got["metric"] == metric and got["n"] > 0
    assert any("nDCG@4" in m for m in named), named
    assert ran["sweep"] == 1 and ran["diagnose"] == 2 and ran["compare"] == len(pairs[0].shared)
