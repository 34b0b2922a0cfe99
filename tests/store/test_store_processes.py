"""Nothing is lost across processes: an experiment killed with SIGKILL at any moment leaves every
run it started either finished with all its rows or interrupted (never running, never finished
without rows), a re-run finishes every variant from the cache, and two processes recording
experiments into one store at once both finish with every row (no "database is locked").

Each child runs a small BM25-only experiment over copies of the fare-rules golden set and corpus
through ``ragmeter.workflows.experiment.run_and_record`` (what ``ragmeter run`` records through),
with large blobs forced into artifact files so a kill also lands between a file and its row."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from _experiment_files import fare_rules_experiment

from ragmeter.store import Store
from ragmeter.store import _models as m
from ragmeter.store._url import artifact_root

#: a child: run the experiment into the store, print what the runner's cache did
CHILD = """
import json, sys, warnings
warnings.simplefilter("ignore")
from ragmeter.store import Store, _blobs
from ragmeter.workflows.experiment import run_and_record
url, toml, cache, inline_max = sys.argv[1:5]
_blobs.INLINE_MAX = int(inline_max)
if len(sys.argv) > 5:  # hold: record two variants, then say so and wait inside the third
    import os, time
    from ragmeter.workflows import experiment as _experiment
    real, held = _experiment.record_variant, sys.argv[5]
    def record_variant(*args, **kwargs):
        if len(record_variant.done) == 2:
            open(held, "w").close()
            time.sleep(600)
        real(*args, **kwargs)
        record_variant.done.append(1)
    record_variant.done = []
    _experiment.record_variant = record_variant
with Store.open(url) as store:
    result, ids = run_and_record(store, toml, cache_dir=cache)
print(json.dumps({"ids": ids, "hits": result.cache_hits, "misses": result.cache_misses}))
"""

#: baseline plus four variants that each change one thing
EXPERIMENT = """
name = "{name}"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "runs"
k = 4
metrics = ["R", "RR", "nDCG"]

[baseline]
name = "baseline"
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50

[[variant]]
name = "overlap"
chunker = "tokens:300:50"

[[variant]]
name = "recursive"
chunker = "recursive:300:30"

[[variant]]
name = "k1"
retriever = {{ kind = "bm25", k1 = 0.9 }}

[[variant]]
name = "deeper"
depth = 100
"""
VARIANTS = {"baseline", "overlap", "recursive", "k1", "deeper"}
#: blobs over this many bytes go to artifact files in the children (the default is 4 MiB)
INLINE_MAX = "2048"
KILLS = 8


def experiment(folder: Path, name: str = "bm25 only") -> Path:
    return fare_rules_experiment(folder, EXPERIMENT.format(name=name))


def child(url: str, toml: Path, cache: Path, held: Path | None = None) -> subprocess.Popen[str]:
    """A child recording the experiment; with ``held``, it records two variants, creates that
    file and waits inside recording the third (a kill at a known moment, whatever the load)."""
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, url, str(toml), str(cache), INLINE_MAX]
        + ([str(held)] if held else []),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(p: subprocess.Popen[str]) -> dict:
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert "database is locked" not in err
    return json.loads(out.strip().splitlines()[-1])


def check_complete(
    store: Store, run_id: int, reference: Store | None = None, ref_id: int | None = None
) -> None:
    """A finished run holds both evaluations, its ranked lists and every blob it names."""
    rec = store.run(run_id)
    assert rec.status == "finished"
    assert rec.levels == ("span", "chunk") and rec.has_ranked
    span = store.evaluation(run_id, "span")
    assert span.n_queries == rec.n_queries > 0
    ranked = store.ranked(run_id)
    assert ranked.num_rows > 0
    asked = set(span.query_ids) | set(span.no_relevant_ids)  # every golden question
    assert set(ranked.column("qid").to_pylist()) <= asked and len(asked) == 90
    if reference is not None and ref_id is not None:
        ref = reference.evaluation(ref_id, "span")
        assert (span.query_ids, span.values.tobytes()) == (ref.query_ids, ref.values.tobytes())
        assert ranked.equals(reference.ranked(ref_id))


def referenced_files_exist(store: Store) -> None:
    root = artifact_root(store.url)
    with store.engine.connect() as conn:
        paths = list(
            conn.execute(sa.select(m.blobs.c.path).where(m.blobs.c.path.is_not(None))).scalars()
        )
    assert paths, "the children were meant to write artifact files"
    assert all((root / p).is_file() for p in paths)


# slow: eleven child processes, each starting Python and running the experiment on a cold
# cache, killed at spread-out moments (a crash-consistency stress check, 1-2 min of CPU); CI
# runs it in `make test-slow`. The two-writer checks below stay in the everyday suite.
@pytest.mark.slow
def test_a_killed_experiment_leaves_finished_or_interrupted_runs(
    store_url: str, tmp_path: Path
) -> None:
    Store.open(store_url, migrate=True).close()  # `ragmeter db upgrade` for a server database
    toml = experiment(tmp_path / "exp")

    # an uninterrupted run, on a cold cache: its timing spreads the kills, its rows are the truth
    t0 = time.time()
    whole = finish(child(store_url, toml, tmp_path / "cache-whole"))
    duration = time.time() - t0
    ref_ids = whole["ids"]
    assert set(ref_ids) == VARIANTS
    with Store.open(store_url) as store:
        ref = [store.run(i) for i in ref_ids.values()]
    # most of a child's life is starting Python and importing; the runs exist in between
    first = min(r.started_at.timestamp() for r in ref) - t0
    last = max(r.finished_at.timestamp() for r in ref if r.finished_at) - t0

    # half the kills over the whole life of a child, half while its runs are being recorded
    # (each child works on a cold cache of its own, so it repeats the reference's work)
    rng = random.Random(20261201)
    half = KILLS // 2
    delays = sorted(
        [duration * (i + rng.random()) / half for i in range(half)]
        + [first + (last - first) * (i + rng.random()) / half for i in range(half)]
    )
    with Store.open(store_url) as store:
        for i, delay in enumerate(delays):
            p = child(store_url, toml, tmp_path / f"cache-{i}")
            time.sleep(delay)
            p.send_signal(signal.SIGKILL)
            p.communicate(timeout=60)
            runs = [r for r in store.runs() if r.pid == p.pid]
            # the runs of one invocation are started together: all of them or none
            assert {r.name for r in runs} in (set(), VARIANTS)
            assert len({r.invocation for r in runs}) <= 1
            for r in runs:
                assert r.status in ("finished", "interrupted"), (delay, r)
                if r.status == "finished":
                    check_complete(store, r.id, store, ref_ids[r.name])
                else:
                    assert r.levels == () and not r.has_ranked
                    assert "ended before it finished" in (r.message or "")
        referenced_files_exist(store)

        # re-running on the cache of the latest kill finishes everything, from the cache
        again = finish(child(store_url, toml, tmp_path / f"cache-{KILLS - 1}"))
        assert set(again["ids"]) == VARIANTS
        for name, run_id in again["ids"].items():
            check_complete(store, run_id, store, ref_ids[name])
        assert sum(again["hits"].values()) > 0
        assert not store.runs(status="running")
    # the kills above land wherever the machine's speed puts them; this one lands while a run
    # is being recorded, on any machine: two runs finished with every row, three interrupted
    held = tmp_path / "held"
    p = child(store_url, toml, tmp_path / "cache-held", held)
    for _ in range(1200):  # 120 s at most (a child starts Python and runs 2 variants)
        if held.exists() or p.poll() is not None:
            break
        time.sleep(0.1)
    assert held.exists(), p.communicate(timeout=10)[1]
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    with Store.open(store_url) as store:
        runs = [r for r in store.runs() if r.pid == p.pid]
        assert sorted(r.status for r in runs) == ["finished"] * 2 + ["interrupted"] * 3
        for r in runs:
            if r.status == "finished":
                check_complete(store, r.id, store, ref_ids[r.name])
            else:
                assert r.levels == () and not r.has_ranked
                assert "ended before it finished" in (r.message or "")


def test_two_writers_both_finish_with_every_row(store_url: str, tmp_path: Path) -> None:
    if not store_url.startswith("sqlite"):
        Store.open(store_url, migrate=True).close()  # a server database is migrated first
    # (a SQLite store does not exist yet: both children create and migrate it at once)
    tomls = [experiment(tmp_path / f"exp{i}", f"writer {i}") for i in (0, 1)]
    procs = [child(store_url, t, tmp_path / f"cache{i}") for i, t in enumerate(tomls)]
    results = [finish(p) for p in procs]
    with Store.open(store_url) as store:
        runs = store.runs()
        assert len(runs) == 2 * len(VARIANTS)
        assert {r.experiment for r in runs} == {"writer 0", "writer 1"}
        for res in results:
            assert set(res["ids"]) == VARIANTS
            for run_id in res["ids"].values():
                check_complete(store, run_id)
        # the two experiments are the same work: equal values, stored once
        for name in VARIANTS:
            check_complete(store, results[0]["ids"][name], store, results[1]["ids"][name])
        referenced_files_exist(store)


def test_more_writers_than_cores_on_one_sqlite_file(tmp_path: Path) -> None:
    """Three writers on two cores, on the embedded default: SQLite's one writer at a time,
    waited for under the busy timeout, never a 'database is locked' failure."""
    n = 3
    url = f"sqlite:///{tmp_path}/store.db"
    tomls = [experiment(tmp_path / f"exp{i}", f"writer {i}") for i in range(n)]
    procs = [child(url, t, tmp_path / f"cache{i}") for i, t in enumerate(tomls)]
    results = [finish(p) for p in procs]
    with Store.open(url) as store:
        assert len(store.runs(status="finished")) == n * len(VARIANTS)
        for res in results:
            for run_id in res["ids"].values():
                check_complete(store, run_id)
