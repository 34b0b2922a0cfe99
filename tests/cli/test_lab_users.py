"""``ragmeter lab users add|list|remove`` (cli/_lab_users.py), and ``ragmeter lab`` refusing to be
served beyond loopback while no labeller has a token."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli import _lab_users as users
from ragmeter.cli import app
from ragmeter.store import Store

XSS = Path(__file__).parents[1] / "fixtures" / "xss"
HOSTILE_NAMES: list[str] = json.loads((XSS / "labellers.json").read_text(encoding="utf-8"))


def cli(*args: str, input: str | None = None) -> tuple[int, str, str]:
    res = CliRunner().invoke(app, list(args), input=input, env={"COLUMNS": "200"})
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store.db'}"


def add(db: str, name: str) -> str:
    code, out, err = cli("lab", "users", "add", name, "--db", db)
    assert code == 0, err
    return out.strip()


def test_add_prints_the_token_once_and_stores_its_hash(db: str, tmp_path: Path) -> None:
    code, out, err = cli("lab", "users", "add", "ann", "--db", db)
    assert code == 0, err
    token = out.strip()
    assert out == token + "\n" and len(token) >= 43  # stdout: the token alone, for a script
    assert "shown this once" in err and "/login" in err and "Authorization: Bearer" in err
    with Store.open(db) as store:
        row = store.labeller_by_token(token)
        assert row is not None and row.name == "ann" and row.has_token
    raw = b"".join(f.read_bytes() for f in tmp_path.glob("store.db*"))  # the file, its WAL
    assert token.encode() not in raw  # only its sha256 is stored
    assert hashlib.sha256(token.encode()).hexdigest().encode() in raw
    assert add(db, "bob") != token  # each labeller their own


def test_add_refuses_a_duplicate_and_a_bad_name(db: str) -> None:
    add(db, "ann")
    code, out, err = cli("lab", "users", "add", "ann", "--db", db)
    assert code == 2 and out == ""
    assert "already has a token" in err and "ragmeter lab users remove" in err
    for bad in (" ann", "x" * 101, "a\tb"):
        code, out, err = cli("lab", "users", "add", bad, "--db", db)
        assert code == 2 and out == "" and "labeller name" in err, bad
        assert "Traceback" not in err


def test_list_shows_names_never_tokens(db: str) -> None:
    tokens = [add(db, name) for name in ("ann", *HOSTILE_NAMES)]
    code, out, err = cli("lab", "users", "list", "--db", db)
    assert code == 0, err
    for name in ("ann", *HOSTILE_NAMES):
        assert name in out  # printed literally: [bold] is no rich markup here
    assert "created (UTC)" in out and "yes" in out
    code, js, _ = cli("lab", "users", "list", "--db", db, "-f", "json")
    listed = json.loads(js)
    assert sorted(x["name"] for x in listed) == sorted(["ann", *HOSTILE_NAMES])
    assert all(x["token"] is True and x["created_at"] for x in listed)
    for t in tokens:
        assert t not in out and t not in js


def test_list_of_an_empty_store_says_how_to_add(db: str) -> None:
    # a store file that is not there is named, and not created by a command that only reads
    code, out, err = cli("lab", "users", "list", "--db", db)
    assert code == 2 and out == "" and "no experiment store at" in err
    assert not Path(db.removeprefix("sqlite:///")).exists()
    code, _, err = cli("db", "upgrade", "--db", db)  # an empty store
    assert code == 0, err
    code, out, err = cli("lab", "users", "list", "--db", db)
    assert code == 0 and out == "" and "ragmeter lab users add NAME" in err


def test_remove_asks_and_needs_a_terminal_or_yes(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    token = add(db, "ann")
    code, _, err = cli("lab", "users", "remove", "ann", "--db", db)
    assert code == 2 and "no terminal to ask on; pass --yes" in err
    monkeypatch.setattr(users, "can_ask", lambda: True)
    code, _, err = cli("lab", "users", "remove", "ann", "--db", db, input="n\n")
    assert code == 0 and "nothing removed" in err
    with Store.open(db) as store:
        assert store.labeller_by_token(token) is not None
    code, _, err = cli("lab", "users", "remove", "nobody", "--db", db, "--yes")
    assert code == 2 and "no labeller named 'nobody'" in err and "'ann'" in err


def test_remove_takes_the_token_away_and_keeps_the_labeller(db: str) -> None:
    token = add(db, "ann")
    code, _, err = cli("lab", "users", "remove", "ann", "--db", db, "--yes")
    assert code == 0 and "can no longer sign in" in err and "labels stay" in err
    with Store.open(db) as store:
        assert store.labeller_by_token(token) is None
        assert not store.labeller("ann").has_token  # still there, with their labels
    code, _, err = cli("lab", "users", "remove", "ann", "--db", db, "--yes")
    assert code == 0 and "no token" in err
    again = add(db, "ann")  # a new token for the same labeller
    assert again != token
    with Store.open(db) as store:
        row = store.labeller_by_token(again)
        assert row is not None and row.name == "ann"


def test_the_loopback_labeller_can_be_given_a_token(db: str) -> None:
    with Store.open(db) as store:
        store.add_labeller("me", token=False)  # as the lab on loopback makes them
    code, out, err = cli("lab", "users", "add", "me", "--db", db)
    assert code == 0 and "labels stay theirs" in err
    with Store.open(db) as store:
        row = store.labeller_by_token(out.strip())
        assert row is not None and row.name == "me"


@pytest.mark.parametrize(
    "where", [["--host", "0.0.0.0"], ["--host", "127.0.0.1", "--allowed-host", "lab.example.org"]]
)
def test_the_lab_is_refused_beyond_loopback_without_a_token(db: str, where: list[str]) -> None:
    """One error line, exit 2, before anything listens; a token-less labeller does not count."""
    with Store.open(db) as store:
        store.add_labeller("me", token=False)
    code, out, err = cli("lab", *where, "--port", "1", "--db", db)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "no labeller with a token" in lines[0] and "ragmeter lab users add NAME" in lines[0]
    assert "ragmeter lab on" not in err


def test_lab_help_names_the_users_commands() -> None:
    code, out, _ = cli("lab", "--help")
    assert code == 0 and "users" in out and "--allowed-host" in out
    code, out, _ = cli("lab", "users", "--help")
    assert code == 0 and all(c in out for c in ("add", "list", "remove"))
