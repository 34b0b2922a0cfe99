"""The Ray engine gives what the local engine gives: the same vectors to the last bit, the same
answers and judge labels, the same stored results of ``ragmeter run``; and a worker killed in
the middle of a batch loses nothing that was finished.

One local Ray cluster (2 CPUs, no dashboard) serves the whole module; every engine uses ONE
actor of 1 CPU (a 2-actor pool on a 2-CPU cluster has been seen to hang). Each test runs under
an alarm (a hung cluster fails the test instead of the suite). Slow: starting Ray and loading a
model in a worker take seconds each, so these run with ``make test-slow``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _ray_cluster import alarm, cluster  # noqa: F401 (autouse fixtures)
from typer.testing import CliRunner

# justified: Ray is the optional [ray] extra (make test-slow installs it)
ray = pytest.importorskip(
    "ray", reason="the Ray engine's tests need Ray: pip install 'ragmeter[ray]'"
)

from ragmeter.cli import app  # noqa: E402
from ragmeter.engines import RayEngine, WorkerLost, local  # noqa: E402
from ragmeter.retrieval import Cache  # noqa: E402
from ragmeter.retrieval.dense import MiniLMEncoder  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
#: seconds one test may take before the alarm fails it
LIMIT_S = 300
#: a few dozen texts of varied length (padding differs from batch to batch)
TEXTS = [
    f"Rule {i}: " + " ".join(["a refund is allowed within", str(i), "days"] * (1 + i % 7))
    for i in range(40)
]


def engine(**kw: Any) -> RayEngine:
    return RayEngine(actors=1, cpus_per_actor=1, **kw)


class DyingEncoder(MiniLMEncoder):
    """MiniLM that kills its own worker process (SIGKILL, mid-batch) the first time a batch
    holds ``marker``; a file remembers the death, so the replacement worker lives."""

    def __init__(self, marker: str, tombstone: str) -> None:
        super().__init__(threads=1)
        self.marker, self.tombstone = marker, tombstone

    def encode(self, texts: Any, *, role: str = "passage") -> np.ndarray:
        if self.marker in texts and not os.path.exists(self.tombstone):
            Path(self.tombstone).write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return super().encode(texts, role=role)


def test_vectors_are_the_same_to_the_last_bit_and_land_in_the_same_cache(tmp_path: Path) -> None:
    expected = local().embed({"model": "minilm"}, TEXTS, cache=Cache(tmp_path / "local"))
    with engine(batch_texts=16) as eng:
        got = eng.embed({"model": "minilm"}, TEXTS, cache=Cache(tmp_path / "ray"))
    assert got.dtype == expected.dtype == np.float32
    assert got.tobytes() == expected.tobytes()
    # the shards Ray's batches were stored in are the local cache's: a local run reads them all
    reader = MiniLMEncoder()
    again = local().embed(reader, TEXTS, cache=Cache(tmp_path / "ray"))
    assert reader.calls == 0 and reader.texts_encoded == 0
    assert again.tobytes() == expected.tobytes()


def test_a_worker_killed_mid_batch_loses_nothing_finished(tmp_path: Path) -> None:
    expected = local().embed({"model": "minilm"}, TEXTS, cache=None)
    marker = TEXTS[20]  # in the third batch of 8 (texts 16..23)

    # retried: the dead actor is replaced, its batch sent again, every vector arrives
    dying = DyingEncoder(marker, str(tmp_path / "died-a"))
    with engine(batch_texts=8, retries=2) as eng:
        got = eng.embed(dying, TEXTS, cache=Cache(tmp_path / "a"))
        assert (tmp_path / "died-a").exists()  # the worker really died
        assert next(iter(eng._pools.values())).replaced == 1
    assert got.tobytes() == expected.tobytes()

    # not retried: the job stops, the two batches finished before the death are stored ...
    # (one batch in flight: with two, the reply of the batch before the death can be lost with
    # the worker on a loaded machine, and then only one batch has finished for the driver)
    dying = DyingEncoder(marker, str(tmp_path / "died-b"))
    cache = Cache(tmp_path / "b")
    with engine(batch_texts=8, retries=0, concurrency=1) as eng:
        wrapped = eng.wrap_encoder(dying, lambda: dying)
        with pytest.raises(WorkerLost, match="run again"):
            eng.embed(wrapped, TEXTS, cache=cache)
        assert wrapped.texts_encoded == 16
    assert len(Cache(tmp_path / "b").embeddings(dying.model_id, "text")) == 16
    # ... and running again encodes only the 24 texts that were missing (counted, like the
    # first 16, on the encoder the workers' copies stand for)
    assert (dying.calls, dying.texts_encoded) == (2, 16)
    with engine(batch_texts=8, retries=0) as eng:
        wrapped = eng.wrap_encoder(dying, lambda: dying)
        got = eng.embed(wrapped, TEXTS, cache=Cache(tmp_path / "b"))
        assert dying.texts_encoded == 16 + (40 - 16)
        assert dying.calls == 2 + 3  # batches of 8: texts 16..23, 24..31, 32..39
    assert got.tobytes() == expected.tobytes()


EXPERIMENT = """
name = "fare rules on Ray"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "runs"
k = 4
headroom_k = 20
metrics = ["R", "AllR", "nDCG@10"]

[generator]
kind = "python"
target = "generators.extractive:answer"

[judge]
kind = "fake"
metrics = ["faithfulness", "answer_relevance"]

[baseline]
name = "rank"
chunker = "tokens:300:0"
retriever = { kind = "dense", model = "minilm" }
depth = 20

[[variant]]
name = "sandwich"
order = "sandwich"
"""

#: output files that hold no timings: what must be byte for byte the same on both engines
SAME = ("run.trec", "evaluation.json", "chunk_evaluation.json", "answers.jsonl", "chunks.jsonl")


def _experiment(folder: Path) -> Path:
    folder.mkdir()
    for name in ("golden.jsonl", "corpus.jsonl"):
        shutil.copy(EXAMPLE / name, folder / name)
    shutil.copytree(EXAMPLE / "generators", folder / "generators")
    path = folder / "experiment.toml"
    path.write_text(EXPERIMENT, encoding="utf-8")
    return path


def _run(path: Path, *extra: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["run", str(path), "--no-store", "--format", "json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _without_seconds_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows less what measures time (and whether an answer came from the cache)."""
    drop = ("seconds", "cached", "seconds_per_answer")
    return [{k: v for k, v in r.items() if k not in drop} for r in rows]


def _without_seconds(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return _without_seconds_rows([json.loads(line) for line in lines])


def test_ragmeter_run_on_ray_stores_what_the_local_engine_stores(tmp_path: Path) -> None:
    path = _experiment(tmp_path / "exp")
    runs = tmp_path / "exp" / "runs"
    # one experiment file (its path is in the results), two caches, outputs moved aside
    here = _run(path, "--cache-dir", str(tmp_path / "exp" / "cache-local"))
    runs.rename(tmp_path / "local-runs")
    there = _run(path, "--cache-dir", str(tmp_path / "exp" / "cache-ray"), "--engine", "ray")
    assert there["table"] == here["table"]
    assert _without_seconds_rows(there["answers"]) == _without_seconds_rows(here["answers"])
    for variant in ("rank", "sandwich"):
        a, b = tmp_path / "local-runs" / variant, runs / variant
        for name in SAME:
            assert (b / name).read_bytes() == (a / name).read_bytes(), f"{variant}/{name}"
        # the same judge labels (fake judge), judged on the worker
        assert _without_seconds(b / "judgements.jsonl") == _without_seconds(a / "judgements.jsonl")
        assert _without_seconds(b / "generations.jsonl") == _without_seconds(
            a / "generations.jsonl"
        )
    # the first Ray run made every vector and answer on a worker; a second reads the caches
    assert sum(there["encoder_calls"].values()) > 0
    assert all(row["model_calls"] == row["answers"] for row in there["answers"])
    again = _run(path, "--cache-dir", str(tmp_path / "exp" / "cache-ray"), "--engine", "ray")
    assert sum(again["encoder_calls"].values()) == 0
    assert all(row["model_calls"] == 0 for row in again["answers"])
    assert again["table"] == here["table"]
