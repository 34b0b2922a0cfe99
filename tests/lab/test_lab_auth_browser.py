"""Signing in to a shared lab in a real browser: Debian's Chromium driven by Playwright.

The server is uvicorn on 127.0.0.1 with an app made by ``create_app(host="0.0.0.0")`` (the
beyond-loopback policy without binding a public interface). Two browser contexts, two labellers
(one named with the hostile fixture's markup): each gets the sign-in page, pastes a token, lands
where it was going, and sees its own name as text; no console error, no CSP violation, no
dialog. ``RAGMETER_SCREENSHOTS=docs/lab`` saves the sign-in page as docs/lab/login.png.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _browser import skip_without_browser

skip_without_browser()

from _browser import REPO, chromium, serving  # noqa: E402

from ragmeter.data import Corpus, Document  # noqa: E402
from ragmeter.lab import create_app  # noqa: E402
from ragmeter.store import NewItem, Store  # noqa: E402

XSS = Path(__file__).parents[1] / "fixtures" / "xss"
HOSTILE = json.loads((XSS / "labellers.json").read_text(encoding="utf-8"))[0]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("lab-auth-browser")
    store = Store.open(f"sqlite:///{folder / 'store.db'}")
    doc = Document(id="fees", title="Fees", text="The change fee is seventy five dollars.")
    items = [NewItem(qid="q1", question="What is the change fee?", double=True)]
    store.create_queue("fees", kind="evidence", corpus=Corpus([doc]), items=items, source="t")
    tokens = {name: store.add_labeller(name)[1] for name in ("ann", HOSTILE)}
    app = create_app(store=store, host="0.0.0.0", root=folder)
    with serving(app) as url, chromium() as browser:
        yield {"url": url, "tokens": tokens, "browser": browser}
    store.close()


def watched(context: Any) -> tuple[Any, list[str], list[str]]:
    """A page of ``context`` with its console errors and dialogs recorded (a dialog is
    dismissed: it would mean a hostile name ran)."""
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def dialog(d: Any) -> None:
        dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    return page, errors, dialogs


def test_two_labellers_sign_in_in_two_browser_contexts(lab: dict[str, Any]) -> None:
    browser = lab["browser"]
    for name in ("ann", HOSTILE):
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page, errors, dialogs = watched(context)
        first = page.goto(f"{lab['url']}/label/fees")
        assert first is not None and first.status == 401
        assert page.locator("h1").inner_text() == "Sign in"
        target = os.environ.get("RAGMETER_SCREENSHOTS")
        if target and name == "ann":
            clip = {"x": 0, "y": 0, "width": 1280, "height": 420}  # the page, not the blank
            page.screenshot(path=str(REPO / target / "login.png"), clip=clip)
        page.fill('input[name="token"]', "not a token")
        page.click('button[type="submit"]')
        assert "no labeller's token" in page.locator("p.warn").inner_text()
        page.fill('input[name="token"]', lab["tokens"][name])
        page.click('button[type="submit"]')
        page.wait_for_url(f"{lab['url']}/label/fees/item/*")
        assert name in page.locator("body").inner_text()  # the name, shown as text
        cookies = {c["name"]: c for c in context.cookies()}
        session = cookies["ragmeter_session"]
        assert session["httpOnly"] and session["sameSite"] == "Strict"
        assert lab["tokens"][name] not in json.dumps(context.cookies())
        page.goto(f"{lab['url']}/label")  # the session carries on, page after page
        assert name in page.locator("body").inner_text()
        # the two 401 answers (the first page, the wrong token) are the browser's only errors
        expected = "the server responded with a status of 401"
        assert [e for e in errors if expected not in e] == [] and dialogs == []
        assert len(errors) == 2
        context.close()
