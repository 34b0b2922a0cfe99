"""Benchmark: the experiment store against the floor of writing and reading Parquet files.

One seeded run of ``--queries`` questions (default 100,000) x 5 metrics of per-question values,
plus its ranked lists at ``--depth`` (default 100: 10M rows), then times:

- store: ``Store.finish_run`` of that run (values, extras and ranked lists; large blobs become
  Parquet files in the artifact folder), into a fresh store each repeat (SQLite, and PostgreSQL
  when ``--pg URL`` is given), against the floor ``pyarrow.parquet.write_table`` of the same
  values table and ranked table to two files;
- list: ``Store.runs()`` (what ``ragmeter runs list`` reads) over ``--runs`` stored runs
  (default 1,000);
- load: ``Store.evaluation(run_id)`` of the big run (an ``Evaluation`` with its 100,000
  question ids and values) against the floor ``pyarrow.parquet.read_table`` of the Parquet file
  the store wrote those values to.

Medians of ``--repeats`` (default 3); the machine may be shared, so the ratios within one run
are the comparable part. Prints a markdown table. Usage::

    python benchmarks/bench_store.py [--queries 100000] [--depth 100] [--runs 1000]
        [--repeats 3] [--pg postgresql+psycopg://user@host/db]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

METRICS = ("R@10", "RR", "nDCG@10", "Hit@5", "P@5")


def evaluation(n: int, seed: int = 0) -> Any:
    import numpy as np

    from ragmeter.metrics import parse
    from ragmeter.metrics._evaluation import Evaluation

    rng = np.random.default_rng(seed)
    values = rng.random((n, len(METRICS)))
    values[:, 3] = values[:, 3] > 0.5  # Hit@5 is 0/1
    return Evaluation(
        run="bench",
        metrics=tuple(parse(m) for m in METRICS),
        query_ids=tuple(f"q{i:07d}" for i in range(n)),
        values=values,
        golden_version="bench-golden",
        config={"retriever": "bm25", "k": 10},
    )


def ranked(n: int, depth: int, seed: int = 0) -> Any:
    """The ranked lists: qid, rank, item (chunk id), doc, start, end, score (RANKED_SCHEMA)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from ragmeter.experiments._ranked import RANKED_SCHEMA

    rng = np.random.default_rng(seed)
    rows = n * depth
    q = np.repeat(np.arange(n), depth)
    rank = np.tile(np.arange(1, depth + 1, dtype=np.int32), n)
    doc = (rng.integers(0, 1_000_003, n)[q] + rank * 7919) % 1_000_003
    chunk = rng.integers(0, 40, rows)
    start = chunk * 1200
    score = -np.sort(-rng.random((n, depth)), axis=1).ravel()
    qid = pc.binary_join_element_wise(
        "q", pc.utf8_lpad(pc.cast(pa.array(q), pa.string()), 7, "0"), ""
    )
    docs = pc.binary_join_element_wise("d", pc.cast(pa.array(doc), pa.string()), "")
    item = pc.binary_join_element_wise(docs, pc.cast(pa.array(chunk), pa.string()), "#")
    return pa.Table.from_arrays(
        [qid, pa.array(rank), item, docs, pa.array(start), pa.array(start + 1200), pa.array(score)],
        schema=RANKED_SCHEMA,
    )


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    t = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def fresh_pg_schema(base: str) -> tuple[str, Callable[[], None]]:
    """A private schema on the server (dropped by the returned callback)."""
    import secrets

    import sqlalchemy as sa
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    schema = f"bench_{secrets.token_hex(6)}"
    engine = sa.create_engine(base, poolclass=NullPool)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})

    def drop() -> None:
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()

    return url.render_as_string(hide_password=False), drop


def open_fresh(kind: str, work: Path, pg: str | None, tag: str) -> tuple[Any, Callable[[], None]]:
    from ragmeter.store import Store

    folder = work / tag
    folder.mkdir(parents=True)
    if kind == "sqlite":
        store = Store.open(f"sqlite:///{folder / 'ragmeter.db'}")
        return store, store.close
    assert pg is not None
    os.environ["RAGMETER_ARTIFACTS"] = str(folder / "artifacts")
    url, drop = fresh_pg_schema(pg)
    store = Store.open(url, migrate=True)

    def close() -> None:
        store.close()
        drop()

    return store, close


def values_file(store: Any, run_id: int) -> Path:
    """The Parquet file the store wrote the run's per-question values to."""
    import sqlalchemy as sa

    from ragmeter.store import _models as m
    from ragmeter.store._url import artifact_root

    with store.engine.connect() as conn:
        rel = conn.execute(
            sa.select(m.blobs.c.path)
            .join(m.evaluations, m.evaluations.c.values_blob == m.blobs.c.hash)
            .where(m.evaluations.c.run_id == run_id)
        ).scalar_one()
    assert rel is not None, "the values blob was meant to be a file (over INLINE_MAX)"
    return artifact_root(store.url) / rel


def write_floor(values: Any, table: Any, out: Path) -> None:
    import pyarrow.parquet as pq

    pq.write_table(values, out / "values.parquet")
    pq.write_table(table, out / "ranked.parquet")


def bench_store(
    kind: str, ev: Any, table: Any, work: Path, pg: str | None, repeats: int
) -> tuple[list[float], list[float], list[float], list[float]]:
    """(finish_run seconds, write floor seconds, evaluation load seconds, read floor seconds)."""
    import pyarrow.parquet as pq

    from ragmeter.store._records import evaluation_tables

    values, _ = evaluation_tables(ev)
    store_s, floor_s, load_s, read_s = [], [], [], []
    for r in range(repeats):
        # the floor: the same values and ranked lists, written as two Parquet files
        out = work / f"floor-{kind}-{r}"
        out.mkdir()
        floor_s.append(timed(write_floor, values, table, out))
        store, close = open_fresh(kind, work, pg, f"{kind}-{r}")
        try:
            run_id = store.start_run(experiment="bench", name="big", golden_version="bench-golden")
            store_s.append(
                timed(
                    store.finish_run,
                    run_id,
                    evaluations={"span": ev},
                    ranked=table,
                    metrics=ev.aggregate,
                )
            )
            back = store.evaluation(run_id)
            assert back.query_ids == ev.query_ids and back.values.tobytes() == ev.values.tobytes()
            own = values_file(store, run_id)  # the run's own Parquet file in the artifacts
            for _ in range(3):
                load_s.append(timed(store.evaluation, run_id))
                read_s.append(timed(pq.read_table, own))
        finally:
            close()
        shutil.rmtree(out)
    return store_s, floor_s, load_s, read_s


def bench_list(kind: str, work: Path, pg: str | None, n_runs: int) -> tuple[float, int]:
    """Median seconds of ``Store.runs()`` over ``n_runs`` stored runs (and how many it lists)."""
    store, close = open_fresh(kind, work, pg, f"list-{kind}")
    try:
        config = {
            "settings": {
                "chunker": "tokens:300:0",
                "retriever": {"kind": "bm25", "k1": 1.2},
                "k": 4,
                "depth": 50,
                "reranker": None,
            },
            "level": "span",
        }
        for i in range(n_runs):
            ev = evaluation(20, seed=i)
            run_id = store.start_run(
                experiment=f"exp {i // 10}",
                name=f"variant {i % 10}",
                config=config,
                golden_version="bench-golden",
            )
            store.finish_run(
                run_id,
                evaluations={"span": ev},
                metrics=ev.aggregate,
                timings={"retrieve": 0.5, "score": 0.1},
                seconds=0.6,
            )
        store.runs()  # warm: the first call pays for imports
        times = [timed(store.runs) for _ in range(7)]
        return median(times), len(store.runs())
    finally:
        close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--runs", type=int, default=1_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pg", default=None, help="a PostgreSQL URL to measure as well")
    args = ap.parse_args()

    import numpy as np
    import pyarrow as pa

    from ragmeter import __version__

    t = time.perf_counter()
    ev = evaluation(args.queries)
    table = ranked(args.queries, args.depth)
    made = time.perf_counter() - t
    kinds = ["sqlite"] + (["postgresql"] if args.pg else [])
    load1 = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        work = Path(tmp)
        for kind in kinds:
            store_s, floor_s, load_s, read_s = bench_store(
                kind, ev, table, work, args.pg, args.repeats
            )
            list_s, listed = bench_list(kind, work, args.pg, args.runs)
            rows.append(
                (
                    kind,
                    median(store_s),
                    median(floor_s),
                    median(load_s),
                    median(read_s),
                    list_s,
                    listed,
                )
            )
    load2 = os.getloadavg()[0]
    print(
        f"one run: {args.queries:,} questions x {len(METRICS)} metrics, ranked lists at depth "
        f"{args.depth} ({table.num_rows:,} rows, {table.nbytes / 2**20:.0f} MiB in memory); "
        f"made in {made:.1f} s; medians of {args.repeats}\n"
    )
    print(
        "| database | finish_run s | parquet write s | ratio | runs list over "
        f"{args.runs:,} runs ms | load evaluation ms | parquet read ms | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for kind, st, fl, ld, rd, ls, listed in rows:
        assert listed == args.runs
        print(
            f"| {kind} | {st:.2f} | {fl:.2f} | {st / fl:.2f}x | {ls * 1000:.0f} | "
            f"{ld * 1000:.0f} | {rd * 1000:.0f} | {ld / rd:.2f}x |"
        )
    print(
        f"\nVersions: ragmeter {__version__}, numpy {np.__version__}, pyarrow {pa.__version__}."
        f" Load average (1 min) at start / end: {load1:.1f} / {load2:.1f}."
    )


if __name__ == "__main__":
    main()
