"""The lab served beyond loopback: per-labeller tokens on every request (lab/_auth.py).

A real uvicorn server listens on 127.0.0.1 (a free port), but its app is made with
``create_app(host="0.0.0.0")``: the policy of a lab bound to every interface applies without
binding a public one. Every route the app has (walked from ``app.routes``) answers 401 without a
token; a label saved with labeller A's token is A's whatever the request names; a wrong or
removed token is 401; a browser signs in on /login (CSRF-checked, HttpOnly SameSite=Strict
cookie, Secure behind an https proxy); failed attempts are limited per address; the lab is
refused when the store has no labeller with a token. Labeller names from the hostile fixture
print inert on every page that shows names.
"""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# justified: the lab is the optional [web] extra; the test extra installs it
pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
httpx = pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client
pytest.importorskip("uvicorn")  # justified: the [web] extra's server

from _browser import serving  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ragmeter import UsageError  # noqa: E402
from ragmeter.data import Corpus, Document  # noqa: E402
from ragmeter.lab import create_app  # noqa: E402
from ragmeter.lab._auth import (  # noqa: E402
    LOGIN_PATH,
    LOGOUT_PATH,
    SESSION_COOKIE,
    FailedLogins,
    beyond_loopback,
    is_loopback,
    safe_next,
)
from ragmeter.store import NewItem, Store, upgrade_schema  # noqa: E402

XSS = Path(__file__).parents[1] / "fixtures" / "xss"
HOSTILE_NAMES: list[str] = json.loads((XSS / "labellers.json").read_text(encoding="utf-8"))
#: what must never reach a page unescaped
RAW = ("<script>alert(1)</script>", "<img src=x", 'href="javascript:', "</script><script>")
DOC = Document(id="fees", title="Fees", text="Change fees. The change fee is seventy five dollars.")
QUOTE = "seventy five dollars"
CSRF = "c" * 43


def evidence(grade: int = 2) -> dict[str, Any]:
    start = DOC.text.index(QUOTE)
    span = {"doc": DOC.id, "start": start, "end": start + len(QUOTE), "grade": grade,
            "required": True, "text": QUOTE}  # fmt: skip
    return {"spans": [span], "answer": None, "answerable": True, "slices": [], "split": None,
            "skipped": False, "note": None}  # fmt: skip


def make_store(path: Path | str) -> Store:
    """A store with the queue "fees" (two questions, both labelled twice): a SQLite file, or a
    server URL (migrated first, as `ragmeter db upgrade` does)."""
    if isinstance(path, str):
        upgrade_schema(path)
    store = Store.open(path if isinstance(path, str) else f"sqlite:///{path}")
    items = [NewItem(qid=f"q{i}", question=f"What is the fee {i}?", double=True) for i in (1, 2)]
    store.create_queue("fees", kind="evidence", corpus=Corpus([DOC]), items=items, source="t")
    return store


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The store (queue "fees", labellers ann and bob with tokens, the hostile names) and a real
    server on 127.0.0.1 whose app applies the beyond-loopback policy."""
    folder = tmp_path_factory.mktemp("lab-auth")
    store = make_store(folder / "store.db")
    tokens = {name: store.add_labeller(name)[1] for name in ("ann", "bob", *HOSTILE_NAMES)}
    app = create_app(store=store, host="0.0.0.0", root=folder)
    with serving(app) as url:
        items = [it.id for it in store.items("fees")]
        yield {"app": app, "store": store, "tokens": tokens, "url": url, "items": items}
    store.close()


def client(world: dict[str, Any], token: str | None = None) -> Any:
    """An HTTP client of the real server with the CSRF cookie (so a POST lacks only the token)
    and, given a token, ``Authorization: Bearer``."""
    headers = {"x-csrf-token": CSRF}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    c = httpx.Client(base_url=world["url"], headers=headers, timeout=30)
    c.cookies.set("ragmeter_csrf", CSRF)
    return c


def routes(app: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(method, path) of every route of the app, included routers and mounts walked into."""
    for r in app.routes if prefix == "" else app:
        contexts = getattr(r, "effective_route_contexts", None)
        if callable(contexts):
            for c in contexts():
                for m in sorted(c.methods or ()):
                    yield m, prefix + c.path
        elif getattr(r, "methods", None):
            for m in sorted(r.methods):
                yield m, prefix + r.path
        elif getattr(r, "routes", None):
            yield from routes(r.routes, prefix + getattr(r, "path", ""))
        else:  # a mount without routes (the static files)
            yield "GET", prefix + getattr(r, "path", "") + "/{path}"


def filled(path: str, world: dict[str, Any]) -> str:
    """A route's path with its parameters filled with real values where they matter."""
    values = {"queue": "fees", "item_id": str(world["items"][0]), "doc_id": DOC.id}
    return re.sub(r"\{([^}:]+)(:[^}]*)?\}", lambda m: values.get(m[1], "1"), path)


OPEN = {LOGIN_PATH, LOGOUT_PATH}


def test_every_route_without_a_token_is_401(world: dict[str, Any]) -> None:
    """Each route of the app, each method: 401 without a token (the POSTs carry the CSRF
    token, so only the labeller's is missing); JSON for a script, the login page for a
    browser. Open: /login, /logout and the package's static files."""
    found = sorted(set(routes(world["app"])))
    assert ("POST", "/label/{queue}/item/{item_id}") in found and ("GET", "/") in found
    checked = 0
    with client(world) as c:
        for method, path in found:
            if method not in ("GET", "POST") or path in OPEN or path.startswith("/static"):
                continue
            url = filled(path, world)
            r = c.request(method, url, json={} if method == "POST" else None)
            assert r.status_code == 401, (method, url, r.status_code, r.text[:200])
            assert r.json()["error"] == "unauthorized"
            assert r.headers["www-authenticate"].startswith("Bearer")
            page = c.request(method, url, headers={"accept": "text/html"})
            assert page.status_code == 401 and 'action="/login"' in page.text, (method, url)
            checked += 1
        assert checked >= 15
        # open: the package's own CSS and JavaScript (nothing from the store), and the login
        assert c.get("/static/lab.css").status_code == 200
        assert c.get("/static/label.js").status_code == 200
        assert c.get(LOGIN_PATH).status_code == 200
    # the open prefix leads nowhere else: a dot-dot path is the static files' 404, sent raw
    # (httpx would resolve the dots itself)
    host, port = world["url"].removeprefix("http://").split(":")
    for raw in ("/static/../label", "/static/%2e%2e/label", "/login/../label"):
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        conn.request("GET", raw)
        answer = conn.getresponse()
        assert answer.status in (401, 404), (raw, answer.status)
        assert b"fees" not in answer.read()
        conn.close()


def test_with_a_token_every_page_opens(world: dict[str, Any]) -> None:
    with client(world, world["tokens"]["ann"]) as c:
        for method, path in sorted(set(routes(world["app"]))):
            if method != "GET" or path.startswith("/static"):
                continue
            r = c.get(filled(path, world))
            assert r.status_code not in (401, 403) and r.status_code < 500, (
                path,
                r.status_code,
                r.text[:200],
            )
        assert c.get("/label").status_code == 200


def test_a_token_cannot_write_as_another_labeller(world: dict[str, Any]) -> None:
    """ann's token saves ann's label, whatever the request names (a body field, a query
    parameter, a form field): the name comes from the token only."""
    store: Store = world["store"]
    item = world["items"][1]
    url = f"/label/fees/item/{item}?labeller=bob"
    body = {"payload": evidence(), "expected_revision": 0, "labeller": "bob", "as": "bob"}
    with client(world, world["tokens"]["ann"]) as c:
        r = c.post(url, json=body)
        assert r.status_code == 200, r.text
    labels = store.labels(item_id=item)
    assert [lab.labeller for lab in labels] == ["ann"]
    with client(world, world["tokens"]["bob"]) as c:  # bob's own save is bob's, not a conflict
        assert c.post(url, json={**body, "labeller": "ann"}).status_code == 200
    assert sorted(lab.labeller for lab in store.labels(item_id=item)) == ["ann", "bob"]


def test_a_wrong_token_is_401(world: dict[str, Any]) -> None:
    ann = world["tokens"]["ann"]
    for bad in (f"Bearer {'x' * 43}", f"Bearer {ann}x", f"Bearer {ann[:-1]}", "Bearer",
                f"Basic {ann}", ann):  # fmt: skip
        with client(world) as c:
            r = c.get("/label", headers={"authorization": bad})
            assert r.status_code == 401, bad
    world["app"].state.auth.failures.clear("127.0.0.1")


def test_a_browser_signs_in_and_out(world: dict[str, Any]) -> None:
    """The login page carries the CSRF token; a POST without it is refused (403); the right
    token sets an HttpOnly, SameSite=Strict session cookie (not Secure over plain http) and
    goes back where the labeller was going; the session names the labeller; logout ends it."""
    with httpx.Client(base_url=world["url"], timeout=30) as c:
        form = c.get("/login?next=/label/fees")
        assert form.status_code == 200
        csrf = c.cookies.get("ragmeter_csrf")
        assert csrf and f'name="csrf_token" value="{csrf}"' in form.text
        assert 'name="next" value="/label/fees"' in form.text
        token = world["tokens"]["bob"]
        refused = c.post("/login", data={"token": token, "next": "/label/fees"})
        assert refused.status_code == 403  # no CSRF token: never reaches the login
        r = c.post("/login", data={"token": token, "next": "/label/fees", "csrf_token": csrf})
        assert r.status_code == 303 and r.headers["location"] == "/label/fees"
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"{SESSION_COOKIE}=") and token not in cookie
        attrs = {a.strip().lower() for a in cookie.split(";")[1:]}
        assert {"httponly", "samesite=strict", "path=/"} <= attrs and "secure" not in attrs
        page = c.get("/label")
        assert page.status_code == 200 and "bob" in page.text
        out = c.post("/logout", data={"csrf_token": csrf})
        assert out.status_code == 303 and out.headers["location"] == "/login"
        assert c.get("/label", headers={"accept": "text/html"}).status_code == 401
        # a pasted wrong token: the login page again, 401, nothing set
        wrong = c.post("/login", data={"token": "nope", "csrf_token": csrf})
        assert wrong.status_code == 401 and "no labeller" in wrong.text
        assert "set-cookie" not in {k.lower() for k in wrong.headers}
    world["app"].state.auth.failures.clear("127.0.0.1")


def test_the_cookie_is_secure_behind_an_https_proxy(world: dict[str, Any]) -> None:
    """A proxy on this machine (the test client connects from 127.0.0.1) says https with
    X-Forwarded-Proto: the session cookie is Secure."""
    with httpx.Client(base_url=world["url"], timeout=30) as c:
        c.get("/login")
        csrf = c.cookies.get("ragmeter_csrf")
        r = c.post(
            "/login",
            data={"token": world["tokens"]["ann"], "csrf_token": csrf},
            headers={"x-forwarded-proto": "https"},
        )
        assert r.status_code == 303
        assert "secure" in {a.strip().lower() for a in r.headers["set-cookie"].split(";")}


def test_a_removed_token_is_401_at_once(world: dict[str, Any], tmp_path: Path) -> None:
    """Removing a labeller's token ends their Bearer access and their open session at the next
    request; their labels stay."""
    store: Store = world["store"]
    _, token = store.add_labeller("carol")
    assert token is not None
    item = world["items"][0]
    with client(world, token) as c:
        assert c.post(f"/label/fees/item/{item}", json={"payload": evidence(),
                      "expected_revision": 0}).status_code == 200  # fmt: skip
    with httpx.Client(base_url=world["url"], timeout=30) as browser:
        browser.get("/login")
        csrf = browser.cookies.get("ragmeter_csrf")
        browser.post("/login", data={"token": token, "csrf_token": csrf})
        assert browser.get("/label").status_code == 200
        store.revoke_token("carol")
        assert browser.get("/label").status_code == 401
    with client(world, token) as c:
        assert c.get("/label").status_code == 401
    assert "carol" in [lab.labeller for lab in store.labels(item_id=item)]
    world["app"].state.auth.failures.clear("127.0.0.1")


def test_hostile_labeller_names_are_inert_on_every_page(world: dict[str, Any]) -> None:
    """Each hostile name labels both questions (double: two labellers each), then every page
    that shows names (the queue list, the label pages, agreement, disagreement, login) is
    read as each of them: the markup is escaped, never raw."""
    store: Store = world["store"]
    tokens = world["tokens"]
    first, second = HOSTILE_NAMES[0], HOSTILE_NAMES[1]
    for name in (first, second):
        with client(world, tokens[name]) as c:
            for item in world["items"]:
                r = c.post(f"/label/fees/item/{item}",
                           json={"payload": evidence(grade=1 if name == first else 2),
                                 "expected_revision": 0})  # fmt: skip
                assert r.status_code == 200, r.text
    assert {first, second} <= {lab.labeller for lab in store.labels(queue_id="fees")}
    item = world["items"][0]
    pages = ["/label", "/label/fees", f"/label/fees/item/{item}", "/label/fees/agreement",
             f"/label/fees/disagreement/{item}", "/login"]  # fmt: skip
    shown = 0
    for name in HOSTILE_NAMES:
        with client(world, tokens[name]) as c:
            for url in pages:
                r = c.get(url, follow_redirects=True, headers={"accept": "text/html"})
                assert r.status_code == 200, (name, url, r.status_code)
                for raw in RAW:
                    assert raw not in r.text, (name, url, raw)
                shown += "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
    assert shown > 0  # the names are shown somewhere, escaped


# -- the policy without a server -----------------------------------------------------------------
def test_start_is_refused_with_no_labeller_token(tmp_path: Path) -> None:
    """Beyond loopback with no labeller who has a token: refused, saying what to do. A labeller
    with no token (the loopback one) does not count. On loopback, no token is needed."""
    store = make_store(tmp_path / "s.db")
    store.add_labeller("local", token=False)
    for host, allowed in (("0.0.0.0", ()), ("192.0.2.7", ()), ("127.0.0.1", ["lab.example.org"])):
        with pytest.raises(UsageError, match="no labeller with a token") as info:
            create_app(store=store, host=host, allowed_hosts=allowed, root=tmp_path)
        assert "ragmeter lab users add NAME" in str(info.value)
    app = create_app(store=store, host="127.0.0.1", root=tmp_path)
    assert TestClient(app, base_url="http://127.0.0.1").get("/label").status_code == 200
    store.close()


def test_behind_a_proxy_the_host_name_is_allowed_and_tokens_are_required(tmp_path: Path) -> None:
    """Bound to 127.0.0.1 with --allowed-host lab.example.org (a reverse proxy's name): that Host
    is answered and needs a token; another Host is refused (DNS rebinding); on loopback names
    the same lab still needs the token (the proxy connects from loopback too)."""
    store = make_store(tmp_path / "s.db")
    _, token = store.add_labeller("ann")
    app = create_app(store=store, host="127.0.0.1", allowed_hosts=["lab.example.org"],
                     root=tmp_path)  # fmt: skip
    proxied = TestClient(app, base_url="http://lab.example.org")
    assert proxied.get("/label").status_code == 401
    ok = proxied.get("/label", headers={"authorization": f"Bearer {token}"})
    assert ok.status_code == 200 and "ann" in ok.text
    assert TestClient(app, base_url="http://evil.example").get("/label").status_code == 400
    assert TestClient(app, base_url="http://127.0.0.1").get("/label").status_code == 401
    store.close()


def test_two_tokens_on_one_question_keep_two_labels(store_url: str, tmp_path: Path) -> None:
    """On SQLite and PostgreSQL: ann and bob, each with their token, save the same question, each
    naming the other in the request; the store keeps one label from each, under the token's
    owner, and a stale edit of ann's is a conflict, never written over her label."""
    store = make_store(store_url)
    tokens = {n: store.add_labeller(n)[1] for n in ("ann", "bob")}
    app = create_app(store=store, host="0.0.0.0", root=tmp_path)
    c = TestClient(app, base_url="http://lab.example")
    c.get("/static/lab.css")  # the CSRF cookie (static needs no token)
    csrf = c.cookies.get("ragmeter_csrf") or ""
    item = store.items("fees")[0].id
    for name, other in (("ann", "bob"), ("bob", "ann")):
        headers = {"x-csrf-token": csrf, "authorization": f"Bearer {tokens[name]}"}
        body = {"payload": evidence(), "expected_revision": 0, "labeller": other}
        r = c.post(f"/label/fees/item/{item}", json=body, headers=headers)
        assert r.status_code == 200, r.text
    labels = store.labels(item_id=item)
    assert sorted((lab.labeller, lab.revision) for lab in labels) == [("ann", 1), ("bob", 1)]
    headers = {"x-csrf-token": csrf, "authorization": f"Bearer {tokens['ann']}"}
    stale = {"payload": evidence(grade=1), "expected_revision": 0}
    assert c.post(f"/label/fees/item/{item}", json=stale, headers=headers).status_code == 409
    assert all(lab.payload["spans"][0]["grade"] == 2 for lab in store.labels(item_id=item))
    store.close()


def test_on_loopback_a_token_is_optional_but_a_wrong_one_is_401(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s.db")
    _, token = store.add_labeller("ann")
    app = create_app(store=store, host="127.0.0.1", root=tmp_path, labeller="me")
    c = TestClient(app, base_url="http://127.0.0.1")
    c.get("/label")
    csrf = {"x-csrf-token": c.cookies.get("ragmeter_csrf") or ""}
    item = store.items("fees")[0].id
    body = {"payload": evidence(), "expected_revision": 0, "labeller": "ann"}
    assert c.post(f"/label/fees/item/{item}", json=body, headers=csrf).status_code == 200
    assert [lab.labeller for lab in store.labels(item_id=item)] == ["me"]  # the local labeller
    bearer = {**csrf, "authorization": f"Bearer {token}"}
    assert c.post(f"/label/fees/item/{item}", json=body, headers=bearer).status_code == 200
    assert sorted(lab.labeller for lab in store.labels(item_id=item)) == ["ann", "me"]
    wrong = {"authorization": "Bearer nope"}
    assert c.get("/label", headers=wrong).status_code == 401
    store.close()


def test_failed_attempts_are_limited_per_address(tmp_path: Path) -> None:
    """Ten wrong tokens from one address within the window: the eleventh attempt, even with the
    right token, is 429 with Retry-After; once the window has passed (a fake clock), the right
    token works again. A success clears the count."""
    store = make_store(tmp_path / "s.db")
    _, token = store.add_labeller("ann")
    app = create_app(store=store, host="0.0.0.0", root=tmp_path)
    now = [1000.0]
    app.state.auth.failures = FailedLogins(limit=10, window=600.0, clock=lambda: now[0])
    c = TestClient(app, base_url="http://lab.example")
    good = {"authorization": f"Bearer {token}"}
    for _ in range(10):
        assert c.get("/label", headers={"authorization": "Bearer wrong"}).status_code == 401
        now[0] += 1
    r = c.get("/label", headers=good)
    assert r.status_code == 429 and int(r.headers["retry-after"]) > 0
    c.get("/login")
    form = {"token": token, "csrf_token": c.cookies.get("ragmeter_csrf")}
    page = c.post("/login", data=form)
    assert page.status_code == 429 and "too many failed sign-ins" in page.text
    now[0] += 600
    assert c.get("/label", headers=good).status_code == 200
    for _ in range(9):
        c.get("/label", headers={"authorization": "Bearer wrong"})
    assert c.post("/login", data=form, follow_redirects=False).status_code == 303  # clears
    for _ in range(9):
        assert c.get("/label", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert c.get("/label", headers=good).status_code == 200
    store.close()


def test_htmx_is_sent_to_the_login_page(tmp_path: Path) -> None:
    store = make_store(tmp_path / "s.db")
    store.add_labeller("ann")
    app = create_app(store=store, host="0.0.0.0", root=tmp_path)
    r = TestClient(app, base_url="http://lab.example").get(
        "/label/fees?x=1", headers={"hx-request": "true"}
    )
    assert r.status_code == 401
    assert r.headers["hx-redirect"] == "/login?next=%2Flabel%2Ffees%3Fx%3D1"
    store.close()


# -- the pieces ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.3.4.5", True), ("localhost", True), ("::1", True),
     ("[::1]", True), ("0.0.0.0", False), ("::", False), ("192.168.1.4", False),
     ("lab.example.org", False), ("localhost.evil", False)],
)  # fmt: skip
def test_loopback_names(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    assert beyond_loopback(host) is not loopback
    assert beyond_loopback("127.0.0.1", [host]) is not loopback


@given(st.text(max_size=40))
def test_after_signing_in_the_lab_never_sends_anyone_elsewhere(value: str) -> None:
    """Whatever ``next`` a link carries, the redirect stays on this lab: a path starting with
    one slash (no ``//host`` nor ``/\\host``), never the login page again."""
    to = safe_next(value)
    assert to.startswith("/") and not to.startswith(("//", "/\\")) and to.isprintable()
    assert to.split("?")[0] not in (LOGIN_PATH, LOGOUT_PATH)
    if to != "/":
        assert to == value


def test_the_failure_window_slides() -> None:
    now = [0.0]
    f = FailedLogins(limit=3, window=10.0, clock=lambda: now[0])
    for t in (0.0, 4.0, 8.0):
        now[0] = t
        assert f.retry_after("a") is None
        f.fail("a")
    assert f.retry_after("a") == 2 and f.retry_after("b") is None
    now[0] = 10.0  # the first failure has left the window
    assert f.retry_after("a") is None
    f.clear("a")
    now[0] = 11.0
    f.fail("a")
    assert f.retry_after("a") is None
