"""``/golden/diff?a=V1&b=V2``: the lab's page of ``ragmeter golden diff`` on stored versions.
Its counts are the command's; hostile question and document text (tests/fixtures/xss) stays
inert; a version that is not stored is a page saying so, never a traceback."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

# justified: the lab is the optional [web] extra; the test extra installs it
pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.data import Evidence, GoldenSet, load_corpus, load_golden
from ragmeter.lab import create_app
from ragmeter.store import Store

FIX = Path(__file__).parents[1] / "fixtures"
HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(1)>'


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A store with the two labellers' sets and the XSS set before and after an edit."""
    root = tmp_path_factory.mktemp("golden-diff")
    url = f"sqlite:///{root / 'store.db'}"
    lab_corpus = FIX / "labellers" / "corpus.jsonl"
    xss_corpus = load_corpus(FIX / "xss" / "corpus.jsonl")
    xss = load_golden(FIX / "xss" / "golden.jsonl", xss_corpus)
    first, *rest = list(xss)
    doc = xss_corpus[first.evidence[0].doc].text  # a span over the document's own markup
    start = doc.index("<script>")
    end = doc.index("</script>") + len("</script>")
    markup = Evidence(doc=first.evidence[0].doc, start=start, end=end, text=doc[start:end])
    edited = first.model_copy(
        update={
            "question": f"{first.question} {HOSTILE} [bold]x[/bold] {{{{ 7*7 }}}}",
            "evidence": [e.model_copy(update={"grade": 1}) for e in first.evidence] + [markup],
        }
    )
    with Store.open(url) as store:
        v = {
            "a": store.put_golden(load_golden(FIX / "labellers" / "a.jsonl", lab_corpus)),
            "b": store.put_golden(load_golden(FIX / "labellers" / "b.jsonl", lab_corpus)),
            "x1": store.put_golden(xss),
            "x2": store.put_golden(GoldenSet([edited, *rest[1:]], corpus=xss_corpus)),
        }
    store = Store.open(url)
    client = TestClient(create_app(store=store), base_url="http://127.0.0.1")
    yield {"url": url, "v": v, "client": client}
    store.close()


def text_of(page: str) -> str:
    page = re.sub(r"<script[^>]*>.*?</script>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def cli_diff(url: str, a: str, b: str) -> dict[str, Any]:
    r = CliRunner().invoke(app, ["golden", "diff", a, b, "--db", url, "-f", "json"])
    assert r.exit_code == 0, r.output
    out: dict[str, Any] = json.loads(r.stdout)
    return out


def test_the_page_shows_the_numbers_golden_diff_prints(lab: dict[str, Any]) -> None:
    v = lab["v"]
    want = cli_diff(lab["url"], v["a"], v["b"])
    r = lab["client"].get(f"/golden/diff?a={v['a']}&b={v['b'][:7]}")
    assert r.status_code == 200, r.text[-500:]
    text = text_of(r.text)
    s = want["summary"]
    for label, key in (
        ("questions added", "questions_added"),
        ("questions removed", "questions_removed"),
        ("questions changed", "questions_changed"),
        ("spans moved", "spans_moved"),
        ("grades changed", "grades_changed"),
    ):
        assert f"{label} {s[key]}" in text, label
    assert f"{s['spans_added']} / {s['spans_removed']}" in text
    assert (
        f"Added ({s['questions_added']})" in text and f"Changed ({s['questions_changed']})" in text
    )
    # every changed question and every move is listed, with old and new offsets
    for c in want["changed"]:
        assert c["id"] in text
        for m in c["spans_moved"]:
            assert f"{m['old'][0]}–{m['old'][1]} → {m['new'][0]}–{m['new'][1]}" in text
        for g in c["grades_changed"]:
            assert f"{g['start']}–{g['end']}: {g['old']} → {g['new']}" in text
    # the pickers show both versions selected by their full names
    assert f'<option value="{v["a"]}" selected>' in r.text
    assert f'<option value="{v["b"]}" selected>' in r.text


def test_hostile_question_and_document_text_stays_inert(lab: dict[str, Any]) -> None:
    v = lab["v"]
    r = lab["client"].get(f"/golden/diff?a={v['x1']}&b={v['x2']}")
    assert r.status_code == 200, r.text[-500:]
    page = r.text
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "javascript:alert" not in re.findall(r'href="([^"]*)"', page)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    text = text_of(page)
    assert "[bold]x[/bold] {{ 7*7 }}" in text and "49" not in text
    # the added span's text (the document's markup, recorded in the label) shows as written
    assert "span added on doc-script 31–56, grade 1: <script>alert(1)</script>" in text
    assert "grade on doc-script 57–77: 2 → 1" in text
    # no script runs inline: every script element loads a file of the lab's own
    assert all("src=" in tag for tag in re.findall(r"<script[^>]*>", page))


def test_versions_not_stored_or_ambiguous_are_pages_not_tracebacks(lab: dict[str, Any]) -> None:
    v, client = lab["v"], lab["client"]
    r = client.get(f"/golden/diff?a=g-abcabc&b={v['b']}")
    assert r.status_code == 404
    assert "holds no golden-set version starting with" in text_of(r.text)
    r = client.get(f"/golden/diff?a=g-&b={v['b']}")
    assert r.status_code == 400 and "stored versions" in text_of(r.text)
    r = client.get(f"/golden/diff?a={quote(HOSTILE)}&b={v['b']}")
    assert r.status_code == 404 and "<script>alert" not in r.text
    r = client.get(f"/golden/diff?a={'f' * 5000}&b={v['b']}")
    assert r.status_code in (400, 404) and len(r.text) < 50_000


def test_without_both_versions_the_page_offers_the_stored_ones(lab: dict[str, Any]) -> None:
    v, client = lab["v"], lab["client"]
    for url in ("/golden/diff", f"/golden/diff?b={v['b']}", "/golden/diff?a=&b="):
        r = client.get(url)
        assert r.status_code == 200
        for version in v.values():
            assert f'<option value="{version}"' in r.text
        assert "card-label" not in r.text  # no diff until both are named


def test_an_empty_store_says_so(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'empty.db'}") as store:
        client = TestClient(create_app(store=store), base_url="http://127.0.0.1")
        r = client.get("/golden/diff")
        assert r.status_code == 200 and "No golden-set version is stored yet" in text_of(r.text)


def test_a_version_against_itself_shows_no_difference(lab: dict[str, Any]) -> None:
    v = lab["v"]
    r = lab["client"].get(f"/golden/diff?a={v['a']}&b={v['a']}")
    assert r.status_code == 200 and "No difference" in text_of(r.text)


# -- in a browser ------------------------------------------------------------------------------
@pytest.mark.parametrize("width", [1440, 1024])
def test_in_chromium_the_page_runs_nothing_hostile_and_breaks_no_policy(
    lab: dict[str, Any], width: int, tmp_path: Path
) -> None:
    """The hostile versions' diff in Debian's Chromium: no dialog, no console error, no CSP
    violation; screenshots go to $RAGMETER_SCREENSHOTS (docs/lab) when it is set."""
    import os

    from _browser import CHROMIUM, chromium, serving

    if not CHROMIUM.exists():  # justified: a system package the browser tests share
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api")  # justified: the [test] extra's
    pytest.importorskip("uvicorn")  # justified: the [web] extra's server
    v = lab["v"]
    with serving(create_app(lab["url"])) as base, chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": 900})
        dialogs: list[str] = []
        console: list[str] = []

        def dialog(d: Any) -> None:  # an alert is the page running hostile text
            dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", dialog)
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
        for a, b, name in ((v["x1"], v["x2"], "golden-diff-xss"), (v["a"], v["b"], "golden-diff")):
            page.goto(f"{base}/golden/diff?a={a}&b={b}")
            page.wait_for_selector(".cards")
            assert page.locator("h1").inner_text() == "Golden-set diff"
            target = os.environ.get("RAGMETER_SCREENSHOTS")
            if target and name == "golden-diff":
                suffix = "" if width == 1440 else f"-{width}"
                folder = Path(__file__).parents[2] / target
                folder.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(folder / f"{name}{suffix}.png"), full_page=True)
        # the pickers choose versions; the form's GET lands on the same page
        page.select_option('select[name="a"]', v["b"])
        page.select_option('select[name="b"]', v["a"])
        page.locator("form.controls button[type=submit]").click()
        page.wait_for_url(f"**/golden/diff?a={v['b']}&b={v['a']}")
        assert "A was made from B" not in page.content()  # no lineage recorded in this store
        errors = [c for c in console if c.startswith(("error", "pageerror"))]
        assert dialogs == [] and errors == [], (dialogs, errors)
