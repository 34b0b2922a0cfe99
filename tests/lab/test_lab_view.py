"""The lab view (``/lab``, ``/lab/question``) through FastAPI's test client on a store holding the
fare-rules runs: the metric cards and table show what the command line prints, at the run's
own k and at any other k or budget; each ``<mark>`` covers exactly the labelled characters;
the prompt cutoff is drawn after the k-th chunk; question ids and document text holding HTML
print escaped; the choices live in the URL."""

from __future__ import annotations

import html
import json
import re
import shutil
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from markupsafe import escape

# justified: the lab is the optional [web] extra; the test extra installs it
pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ragmeter import Store, load_corpus
from ragmeter.cli import app as cli_app
from ragmeter.lab import create_app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
HOSTILE_ID = '<script>alert(1)</script>"><img/src=x/onerror=alert(1)>'
HOSTILE_TEXT = '"><img src=x onerror=alert(1)> </script><script>alert(2)</script> [bold]x[/bold]'


def cli_json(*args: Any) -> dict[str, Any]:
    result = CliRunner().invoke(cli_app, [str(a) for a in args])
    assert result.exit_code == 0, (args, result.output)
    out = result.stdout
    return json.loads(out[out.index("{") :])  # type: ignore[no-any-return]


def record(root: Path, url: str, cache: Path | None = None) -> dict[str, int]:
    from ragmeter.workflows.experiment import run_and_record

    with Store.open(url) as store, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, ids = run_and_record(
            store, root / "experiment.toml", cache_dir=cache, write=cache is not None
        )
    return ids


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("lab-view")
    for name in ("golden.jsonl", "corpus.jsonl", "experiment.toml"):
        shutil.copy(EXAMPLE / name, root / name)
    url = f"sqlite:///{root / 'lab.db'}"
    ids = record(root, url, EXAMPLE / ".ragmeter-cache")
    chunks = root / "chunks-300.jsonl"
    CliRunner().invoke(cli_app, ["chunk", str(root / "corpus.jsonl"), "-c", "tokens:300:0",
                                 "-o", str(chunks)])  # fmt: skip
    store = Store.open(url)
    client = TestClient(create_app(store=store, root=root), base_url="http://127.0.0.1")
    yield {"root": root, "ids": ids, "chunks": chunks, "client": client, "store": store}
    store.close()


def get(lab: Any, url: str, status: int = 200, **headers: str) -> str:
    r = lab["client"].get(url, headers=headers)
    assert r.status_code == status, (url, r.status_code, r.text[-800:])
    return r.text


def cards(page: str) -> dict[str, tuple[str, str]]:
    """metric key -> (card label, shown value)."""
    out = {}
    for key, label, value in re.findall(
        r'<div class="card[^"]*" data-metric="([^"]+)">\s*<div class="card-label">([^<]*)</div>'
        r'\s*<div class="card-value">([^<]*)</div>',
        page,
    ):
        out[key] = (html.unescape(label), value)
    return out


def cli_eval(lab: Any, variant: str, metrics: str) -> dict[str, Any]:
    root = lab["root"]
    return cli_json("eval", "--no-store", "--golden", root / "golden.jsonl", "--corpus",
                    root / "corpus.jsonl", "--chunks", lab["chunks"], root / "runs" / variant /
                    "run.trec", "-m", metrics, "-f", "json", "--per-query")  # fmt: skip


def test_the_cards_show_the_cli_numbers_and_follow_k_and_budget(lab: Any) -> None:
    run = lab["ids"]["hybrid"]
    default = cards(get(lab, f"/lab?run={run}"))  # the run's own cutoff: k = 4
    assert default["R"][0].startswith("R@4") and default["headroom"][0] == (
        "R@20 · headroom, not quality"
    )
    for query, cut in (({}, "4"), ({"k": 7}, "7"), ({"k": 2}, "2")):
        shown = cards(get(lab, f"/lab?run={run}&" + urlencode(query)))
        printed = cli_eval(lab, "hybrid", f"R@{cut},RR@{cut},AllR@{cut},R@20")["aggregate"]
        for key in ("R", "RR", "AllR"):
            assert shown[key] == (shown[key][0], f"{printed[f'{key}@{cut}']:.3f}"), (cut, key)
        assert shown["headroom"][1] == f"{printed['R@20']:.3f}"
    budget = cards(get(lab, f"/lab?run={run}&cut=budget&budget=600"))
    printed = cli_eval(lab, "hybrid", "R@budget=600,AllR@budget=600")["aggregate"]
    assert budget["R"] == ("R@budget=600 · Recall", f"{printed['R@budget=600']:.3f}")
    assert budget["AllR"][1] == f"{printed['AllR@budget=600']:.3f}"
    assert budget["nDCG"][1] == "-"  # nDCG has no budget form: said, not invented


def test_the_table_is_per_question_values_with_gained_and_lost_against_the_baseline(
    lab: Any,
) -> None:
    ids = lab["ids"]
    page = get(lab, f"/lab?run={ids['hybrid']}&k=4&baseline={ids['baseline']}&metric=AllR")
    printed = cli_eval(lab, "hybrid", "AllR@4")["per_query"]
    base = cli_eval(lab, "baseline", "AllR@4")["per_query"]
    rows = re.findall(r'<summary class="qrow" role="row">(.*?)</summary>', page, re.S)
    assert len(rows) == 50  # 80 scored questions (10 have no evidence), 50 a page
    fixed_shown = set()
    for row in rows:
        qid = html.unescape(re.search(r"<code>(.*?)</code>", row).group(1))
        cells = re.findall(r'role="cell" class="num[^"]*">([^<]*)<', row)
        assert cells[3] == f"{printed[qid]['AllR@4']:.3f}"  # R, RR, nDCG, AllR, headroom
        if "badge fixed" in row:
            fixed_shown.add(qid)
    fixed = {q for q in printed if base[q]["AllR@4"] == 0 and printed[q]["AllR@4"] == 1}
    assert fixed_shown == fixed  # biggest changes sort first: every fixed one is on page 1
    only = get(lab, f"/lab?run={ids['hybrid']}&k=4&baseline={ids['baseline']}&metric=AllR"
                    "&show=fixed")  # fmt: skip
    listed = {
        html.unescape(q)
        for q in re.findall(r'<span class="qid" role="cell"><code>(.*?)</code>', only)
    }
    assert listed == fixed and len(fixed) == 12
    # the second page holds the other 30, and its links keep every choice
    second = get(lab, f"/lab?run={ids['hybrid']}&k=4&baseline={ids['baseline']}&page=2")
    assert len(re.findall(r"<summary class=\"qrow\"", second)) == 30
    prev = html.unescape(re.search(r'<a href="([^"]+)" rel="prev"', second).group(1))
    assert parse_qs(urlparse(prev).query)["k"] == ["4"]
    assert parse_qs(urlparse(prev).query)["baseline"] == [str(ids["baseline"])]


def test_losses_sort_first(lab: Any) -> None:
    ids = lab["ids"]
    page = get(lab, f"/lab?run={ids['reranker']}&k=4&baseline={ids['baseline']}&sort=lost")
    deltas = [float(x.replace("−", "-")) for x in re.findall(
        r'role="cell" class="num (?:gain|loss|)">([+-][0-9.]+)<', page)]  # fmt: skip
    assert deltas and deltas == sorted(deltas) and deltas[0] < 0


def test_each_mark_is_the_labelled_text_and_the_cutoff_is_drawn(lab: Any) -> None:
    corpus = load_corpus(lab["root"] / "corpus.jsonl")
    golden = {json.loads(x)["id"]: json.loads(x) for x in
              (lab["root"] / "golden.jsonl").read_text().splitlines() if x.strip()}  # fmt: skip
    run = lab["ids"]["baseline"]
    whole = 0
    for qid in ("24h-rule-basic", "family-seating-age", "change-fee-basic"):
        frag = get(lab, f"/lab/question?run={run}&qid={qid}&k=4", **{"HX-Request": "true"})
        assert "<html" not in frag  # an htmx fragment
        for li in re.findall(r"<li class=\"[^\"]*\" data-rank=.*?</li>", frag, re.S):
            doc, start = re.search(r'data-doc="([^"]*)" data-start="(\d+)"', li).groups()
            for g, e, a, b, text in re.findall(
                r'<mark data-grade="(\d)" data-evidence="(\d)" data-start="(\d+)" '
                r'data-end="(\d+)"[^>]*>(.*?)</mark>', li, re.S):  # fmt: skip
                lo, hi = int(start) + int(a), int(start) + int(b)
                assert html.unescape(text) == corpus[doc].text[lo:hi]
                ev = golden[qid]["evidence"][int(e) - 1]
                assert ev["doc"] == doc and ev.get("grade", 1) == int(g)
                assert ev["start"] <= lo < hi <= ev["end"]
                if (lo, hi) == (ev["start"], ev["end"]):
                    whole += 1
                    assert html.unescape(text) == corpus[doc].text[ev["start"] : ev["end"]]
        ranks = re.findall(r'data-rank="(\d+)"|(prompt ends here: k = 4)', frag)
        at = [r for r, _ in ranks].index("")
        assert [r for r, _ in ranks[:at]] == ["1", "2", "3", "4"]  # the line after rank 4
    assert whole >= 3
    page = get(lab, f"/lab/question?run={run}&qid=24h-rule-basic&k=4")
    assert page.startswith("<!doctype html>") and "back to the lab" in page


def test_a_combination_not_run_offers_to_run_it(lab: Any) -> None:
    exp = lab["store"].run(lab["ids"]["baseline"]).experiment
    page = get(lab, "/lab?" + urlencode({"experiment": exp, "method": "bm25 > e5@20",
                                         "chunking": "tokens:100:0"}))  # fmt: skip
    assert "bm25 &gt; e5@20 × tokens:100:0 has not been run yet" in page
    form = re.search(r'<form method="post" action="/jobs".*?</form>', page, re.S).group(0)
    assert re.search(r'name="csrf_token" value="[^"]+"', form)
    assert 'name="retriever" value="bm25 &gt; e5@20"' in form
    assert 'name="chunker" value="tokens:100:0"' in form


def test_bad_choices_are_one_message_not_a_traceback(lab: Any) -> None:
    assert "k must be a whole number" in get(lab, "/lab?k=abc", 400)
    assert "no finished run 999" in get(lab, "/lab?run=999", 404)
    assert "k must be between 1 and 10000" in get(
        lab, f"/lab?run={lab['ids']['baseline']}&k=0", 400
    )
    frag = get(lab, f"/lab/question?run={lab['ids']['baseline']}&qid=nope&k=4", 400,
               **{"HX-Request": "true"})  # fmt: skip
    assert "has no question &#39;nope&#39;" in frag


def test_hostile_ids_and_document_text_print_escaped(tmp_path: Path) -> None:
    corpus = [
        {"id": "rules", "text": "Fees apply. " + HOSTILE_TEXT + " The change fee is 75 dollars."},
        {"id": "other", "text": "Bags are free. javascript:alert(3) Seats cost extra."},
    ]
    start = corpus[0]["text"].index(HOSTILE_TEXT)
    golden = [
        {"id": HOSTILE_ID, "question": "What does <b>it</b> cost? </script>",
         "evidence": [{"doc": "rules", "start": start, "end": start + len(HOSTILE_TEXT)}]},
        {"id": "plain", "question": "Bags?", "evidence": [{"doc": "other", "start": 0, "end": 14}]},
    ]  # fmt: skip
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (tmp_path / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in golden))
    (tmp_path / "experiment.toml").write_text(
        'name = "hostile <script>alert(4)</script>"\ngolden = "golden.jsonl"\n'
        'corpus = "corpus.jsonl"\noutput = "runs"\nk = 2\nmetrics = ["R", "RR", "nDCG"]\n\n'
        '[baseline]\nname = "base"\nchunker = "document"\nretriever = "bm25"\n'
    )
    url = f"sqlite:///{tmp_path / 'h.db'}"
    ids = record(tmp_path, url)
    with Store.open(url) as store:
        client = TestClient(create_app(store=store, root=tmp_path), base_url="http://127.0.0.1")
        page = client.get(f"/lab?run={ids['base']}").text
        query = urlencode({"run": ids["base"], "qid": HOSTILE_ID, "k": 2})
        frag = client.get(f"/lab/question?{query}", headers={"HX-Request": "true"}).text
    for text in (page, frag):
        assert (
            "<script>alert" not in text and "<img" not in text and "</script><script>" not in text
        )
    assert str(escape(HOSTILE_ID)) in page and "hostile &lt;script&gt;alert(4)" in page
    assert "What does &lt;b&gt;it&lt;/b&gt; cost? &lt;/script&gt;" in frag
    marked = re.search(r"<mark[^>]*>(.*?)</mark>", frag, re.S).group(1)
    assert html.unescape(marked) == HOSTILE_TEXT  # escaped, and still the labelled text
    assert "[bold]x[/bold]" in html.unescape(marked)
