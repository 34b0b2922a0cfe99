"""What the lab's tests in a real browser share: Debian's Chromium driven by Playwright (never a
browser download; .ci/run installs the package when it is missing), the lab served by uvicorn in
a thread on 127.0.0.1 (a free port), a page that records what went wrong on it, screenshots,
and a real mouse drag that selects a quote of the label page's document.

Nothing here imports Playwright or uvicorn at import: a test module calls ``skip_without_browser``
first (the module is skipped, saying what to install), and the fixtures import them when used
(``from _browser import browser, shots  # noqa: F401 (fixtures)``)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ragmeter.store import Store

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[1]
#: above this a screenshot is re-saved with a 256-colour palette (the docs stay small)
MAX_SHOT_BYTES = 300_000


def skip_without_browser() -> None:
    """Skip the calling test module unless Debian's Chromium, Playwright and uvicorn are here."""
    if not CHROMIUM.exists():  # justified: a system package; .ci/run installs it, CI never skips
        pytest.skip(
            "Debian's Chromium is not installed (/usr/bin/chromium): apt-get install chromium",
            allow_module_level=True,
        )
    # justified: playwright and uvicorn come with the test and web extras CI installs
    pytest.importorskip("playwright.sync_api")  # justified: the [test] extra's browser driver
    pytest.importorskip("uvicorn")  # justified: the [web] extra's server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Serve the ASGI ``app`` with uvicorn on 127.0.0.1 (a free port) until the block ends;
    yields its base URL."""
    import uvicorn

    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    try:
        for _ in range(400):  # the server says when it listens; no wall-clock assertion
            if srv.started:
                break
            time.sleep(0.05)
        assert srv.started, "the lab did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


@contextmanager
def serving_store(store: Store, **options: Any) -> Iterator[str]:
    """The lab over ``store`` on loopback (the store's folder as its --root, ``options`` for
    ``create_app``), served until the block ends; yields its base URL."""
    from ragmeter.lab import create_app

    folder = Path(str(store.engine.url.database)).parent
    with serving(create_app(store.url, host="127.0.0.1", root=folder, **options)) as url:
        yield url


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium, launched by Playwright, until the block ends."""
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=str(CHROMIUM))
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: a temporary folder, or ``$RAGMETER_SCREENSHOTS``
    (``RAGMETER_SCREENSHOTS=docs/lab`` refreshes the documentation's)."""
    target = os.environ.get("RAGMETER_SCREENSHOTS")
    folder = (REPO / target) if target else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shrink(path: Path) -> None:
    """Re-save the screenshot ``path`` with a 256-colour palette when it is over
    ``MAX_SHOT_BYTES``."""
    if path.stat().st_size > MAX_SHOT_BYTES:
        from PIL import Image

        with Image.open(path) as img:
            small = img.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
        small.save(path, optimize=True)


def snap(page: Any, path: Path, width: int, height: int = 1100) -> None:
    """Screenshot the top of ``page``, ``width`` wide and at most ``height`` tall."""
    page.evaluate("window.scrollTo(0, 0)")
    full = int(page.evaluate("document.documentElement.scrollHeight"))
    clip = {"x": 0, "y": 0, "width": width, "height": max(1, min(height, full))}
    page.screenshot(path=str(path), full_page=True, clip=clip)
    shrink(path)


class Watch:
    """A page with every request, console message, page error and dialog recorded; a dialog
    (alert, confirm, prompt) is dismissed and counts as a failure."""

    def __init__(self, browser: Any, width: int = 1280) -> None:
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.page.set_default_timeout(10_000)
        self.requests: list[str] = []
        self.console: list[tuple[str, str]] = []
        self.dialogs: list[str] = []
        self.failed: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("response", lambda r: self.failed.append(r.url) if r.status >= 400 else None)
        self.page.on(
            "console",
            lambda m: self.console.append((m.type, f"{m.text} [{m.location.get('url')}]")),
        )
        self.page.on("pageerror", lambda e: self.console.append(("pageerror", str(e))))

        def dialog(d: Any) -> None:
            self.dialogs.append(d.message)
            d.dismiss()

        self.page.on("dialog", dialog)

    def errors(self) -> list[str]:
        """Console errors and failed responses; the browser's own favicon request (the lab has
        none) is not the page's doing."""
        out = [t for kind, t in self.console if kind in ("error", "pageerror")]
        out = [t for t in out if not t.endswith("/favicon.ico]")]
        return out + [u for u in self.failed if not u.endswith("/favicon.ico")]

    def csp_violations(self) -> list[str]:
        return [t for _, t in self.console if "Content Security Policy" in t]

    def close(self) -> None:
        self.page.close()


# -- the label page --------------------------------------------------------------------------
def u16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


#: the client rectangles of two stretches of the document's text (UTF-16 offsets), found by
#: walking its text nodes; the document is scrolled so the first can be seen
RECTS = """(el, [a, a2, b1, b]) => {
  function at(i) {
    const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let n, last = null, seen = 0;
    while ((n = w.nextNode())) {
      if (i < seen + n.data.length) { return [n, i - seen]; }
      seen += n.data.length;
      last = n;
    }
    return [last, last.data.length];
  }
  function rect(i, j, lastOne) {
    const r = document.createRange();
    const s = at(i), e = at(j);
    r.setStart(s[0], s[1]);
    r.setEnd(e[0], e[1]);
    const rs = r.getClientRects();
    return lastOne ? rs[rs.length - 1] : rs[0];
  }
  let first = rect(a, a2, false);
  const box = el.getBoundingClientRect();
  if (first.top < box.top || first.bottom > box.bottom) {
    el.scrollTop += first.top - box.top - 40;
    first = rect(a, a2, false);
  }
  const last = rect(b1, b, true);
  return [first.left, first.top, first.width, first.height,
          last.left, last.top, last.width, last.height];
}"""


def drag_select(page: Any, text: str, quote: str) -> None:
    """Select ``quote`` in the shown document with the mouse: press at the left edge of its
    first character, release at the right edge of its last (a grapheme: ✈️ is two units)."""
    start = text.index(quote)
    a = u16(text[:start])
    b = a + u16(quote)
    first = quote[:2] if quote[1:2] == "\ufe0f" else quote[0]
    last = quote[-2:] if quote.endswith("\ufe0f") else quote[-1]
    box = page.locator(".label-doc .doc-text").evaluate(
        RECTS, [a, a + u16(first), b - u16(last), b]
    )
    x1, y1, _, h1, x2, y2, w2, h2 = box
    page.mouse.move(x1 + 1, y1 + h1 / 2)
    page.mouse.down()
    page.mouse.move((x1 + x2) / 2, (y1 + y2) / 2, steps=4)
    page.mouse.move(x2 + w2 - 1, y2 + h2 / 2, steps=4)
    page.mouse.up()


def open_from_search(page: Any, doc: str) -> None:
    """Search with the question (the box starts with it) and open ``doc`` from the results."""
    page.locator(".search-form button[type=submit]").click()
    hit = page.locator(f'.search-results li.result:has(code:text-is("{doc}"))').first
    hit.wait_for()
    hit.click()
    page.locator(".label-doc .doc-id", has_text=doc).wait_for()
    page.locator(".label-doc .doc-text mark.passage").first.wait_for()


def item_ids(store: Store, queue: str) -> dict[str, int]:
    return {it.qid: it.id for it in store.items(queue)}
