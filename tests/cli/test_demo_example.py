"""Where `ragmeter demo` finds the fare-rules example and where it writes (issue 27, item 6).

The installed case end to end (a wheel, a venv outside the clone) is
tests/cli/test_demo_installed.py; these are the rules it rests on, fast: the platform's cache
folder, the order the example is looked for in, and the copy into the cache folder.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import InputError
from ragmeter.cli import app
from ragmeter.cli._demo import _example
from ragmeter.cli._demo._example import copy_example, find_example, user_cache_dir

FARE_RULES = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"


@pytest.mark.parametrize(
    ("env", "platform", "want"),
    [
        ({"HOME": "/h", "XDG_CACHE_HOME": "/x"}, "linux", "/x/ragmeter"),
        ({"HOME": "/h"}, "linux", "/h/.cache/ragmeter"),
        ({"HOME": "/h", "XDG_CACHE_HOME": "rel"}, "linux", "/h/.cache/ragmeter"),  # XDG: ignored
        ({"HOME": "/h", "XDG_CACHE_HOME": "/x"}, "darwin", "/h/Library/Caches/ragmeter"),
        ({"HOME": "/h", "LOCALAPPDATA": "/l"}, "win32", "/l/ragmeter/Cache"),
    ],
)
def test_the_cache_folder_is_the_platforms(env: dict[str, str], platform: str, want: str) -> None:
    assert user_cache_dir(env, platform) == Path(want)


def test_a_checkout_uses_its_examples_folder_and_its_caches_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./examples here: the source tree's
    found = find_example()
    assert found.folder.resolve() == FARE_RULES and not found.packaged
    assert found.cache_dir is None  # the experiment's own default, as before
    assert find_example(None, tmp_path / "c").cache_dir == tmp_path / "c"


def test_an_installed_package_runs_a_copy_in_the_cache_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No checkout (an installed wheel): the package's files, copied into the cache folder,
    which is the demo's cache too; nothing is written in the current folder."""
    work, cache = tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setattr(_example, "checkout_example", lambda: None)
    monkeypatch.setattr(_example, "packaged_example", lambda: files("ragmeter") / "_resources")
    monkeypatch.setattr(_example.sys, "platform", "linux")
    found = find_example()
    assert found.packaged and found.cache_dir == cache / "ragmeter"
    assert found.folder == cache / "ragmeter" / "fare-rules"
    assert (found.folder / "minilm-tokenizer.json").is_file()  # the stand-in package's files
    assert list(work.iterdir()) == []
    named = find_example(None, tmp_path / "mine")  # --cache-dir: the copy goes there
    assert named.folder == tmp_path / "mine" / "fare-rules" and named.cache_dir == tmp_path / "mine"


def test_no_example_anywhere_says_how_to_point_at_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_example, "checkout_example", lambda: None)
    monkeypatch.setattr(_example, "packaged_example", lambda: None)
    with pytest.raises(InputError, match="--example"):
        find_example()


def test_an_editable_install_has_no_packaged_copy() -> None:
    """setup.py copies the example into wheels only: the checkout holds the one copy."""
    assert _example.packaged_example() is None
    assert not (Path(_example.__file__).parents[2] / "_resources" / "examples").exists()


def test_the_help_names_the_cache_folder() -> None:
    r = CliRunner().invoke(app, ["demo", "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "~/.cache/ragmeter" in r.output


@settings(max_examples=25, deadline=None)
@given(
    tree=st.dictionaries(
        st.sampled_from(["a.jsonl", "b.toml", "answers/x.jsonl", "answers/y.jsonl"]),
        st.binary(max_size=64),
        min_size=1,
    ),
    stale=st.dictionaries(
        st.sampled_from(["a.jsonl", "answers/x.jsonl"]), st.binary(max_size=8), max_size=2
    ),
)
def test_the_copy_equals_the_package_and_leaves_equal_files_alone(
    tree: dict[str, bytes], stale: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("copy")
    source, target = root / "source", root / "target"
    for name, data in tree.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(data)
    for name, data in stale.items():  # an older version's copy
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_bytes(data)
    copy_example(source, target)
    for name, data in tree.items():
        assert (target / name).read_bytes() == data
    stamps = {n: (target / n).stat().st_mtime_ns for n in tree}
    inodes = {n: (target / n).stat().st_ino for n in tree}
    copy_example(source, target)  # again: nothing rewritten
    assert {n: (target / n).stat().st_mtime_ns for n in tree} == stamps
    assert {n: (target / n).stat().st_ino for n in tree} == inodes
    assert not [p for p in target.rglob(".*") if p.is_file()]  # no temporary file left
