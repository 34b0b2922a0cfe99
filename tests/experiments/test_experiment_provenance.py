"""Provenance: the ragmeter version and the git commit of the folder a run was made in, None
wherever git cannot say, and never an exception."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import ragmeter
from ragmeter.experiments import _provenance, provenance
from ragmeter.experiments._provenance import versions


@pytest.fixture(autouse=True)
def no_repo_above(tmp_path, monkeypatch) -> None:
    """git must not find a repository above the test's folder (a checkout holding /tmp)."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "init", "-q")
    (folder / "experiment.toml").write_text("name = 'x'\n")
    git(folder, "add", "experiment.toml")
    git(folder, "commit", "-q", "-m", "first")
    return folder


def test_a_clean_repository(repo) -> None:
    head = git(repo, "rev-parse", "HEAD")
    assert len(head) == 40
    assert provenance(repo) == {
        "ragmeter": ragmeter.__version__,
        "git_commit": head,
        "git_dirty": False,
    }
    # a file stands for its folder, a sub-folder for its repository
    assert provenance(repo / "experiment.toml")["git_commit"] == head
    (repo / "runs").mkdir()
    assert provenance(repo / "runs")["git_commit"] == head


def test_dirty_means_a_tracked_file_changed(repo) -> None:
    (repo / "runs.db").write_text("untracked output")  # outputs and databases do not count
    assert provenance(repo)["git_dirty"] is False
    (repo / "experiment.toml").write_text("name = 'y'\n")
    assert provenance(repo)["git_dirty"] is True
    git(repo, "commit", "-q", "-am", "second")
    after = provenance(repo)
    assert after["git_dirty"] is False
    assert after["git_commit"] == git(repo, "rev-parse", "HEAD")


def test_outside_a_repository_and_before_the_first_commit(tmp_path) -> None:
    unknown = {"ragmeter": ragmeter.__version__, "git_commit": None, "git_dirty": None}
    assert provenance(tmp_path) == unknown
    assert provenance(tmp_path / "no" / "such" / "folder") == unknown
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    assert provenance(empty) == unknown


def test_no_git_on_the_path(repo, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert provenance(repo) == {
        "ragmeter": ragmeter.__version__,
        "git_commit": None,
        "git_dirty": None,
    }


def test_a_git_that_hangs_is_given_up(repo, monkeypatch, tmp_path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(_provenance, "GIT_TIMEOUT", 0.2)
    assert provenance(repo)["git_commit"] is None


def test_versions_name_ragmeter_and_the_cache_libraries() -> None:
    v = versions()
    assert v["ragmeter"] == ragmeter.__version__
    assert {"bm25s", "onnxruntime", "sentence-transformers"} <= set(v)
    assert all(isinstance(x, str) for x in v.values())
