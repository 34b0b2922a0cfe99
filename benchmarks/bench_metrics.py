"""Metric engine benchmark: ragmeter vs pytrec_eval vs ranx vs ir_measures, from TREC files to
means.

Usage::

    python benchmarks/bench_metrics.py                      # all sizes, writes docs/benchmarks.md
    python benchmarks/bench_metrics.py --sizes 1k --no-docs # quick look

For each size (queries x depth) the same seeded files (``_gen.py``) are scored by every tool on
five measures (nDCG@10, RR@10, R@100, P@5, AP). Each tool runs in its own subprocess: it is
imported, warmed up on a tiny file, run once untimed on the real files (numba specialises ranx's
kernels on the id width of the data; the OS caches the files for every tool alike; this "first
run" time is reported), then timed ``--reps`` times:

- parse: TREC qrels + run from disk into the tool's own input structures;
- compute: those structures to the five means;
- total: parse + compute, i.e. files on disk to means.

The floor is pyarrow alone reading the three columns that matter of the run (qid, doc, score)
and of the qrels (qid, doc, rel) with ``pyarrow.csv``; the run's columnar size is the run
table's ``nbytes``. CPU time is the child process's (every thread) for each timed run; ratios
are medians of per-round ratios (round i of one tool against round i of the other), reported
for wall and CPU time because the machine may be shared. Peak memory is the
growth of the process's peak RSS (``VmHWM``, reset just before) during the first full run over
its RSS just before that run (after import and the tiny warm-up); for ranx it includes numba
specialising its kernels for the data. The means of every tool must agree with ragmeter's to 1e-9
(the data have no ties and every query has a relevant item, so all the definitions agree); the run
stops with an
error otherwise.

pytrec_eval (trec_eval) has no reciprocal rank with a cutoff: it computes ``recip_rank`` over the
whole list, checked against ragmeter's ``RR``.

Whole processes (``--whole``, by default every size run): the command a user types,
``ragmeter eval QRELS RUN -m "nDCG@10,RR@10,R@100,P@5,AP"``, as typed (the table, and recording
into a fresh store in a temporary folder) and with ``--no-store``, beside a process that reads
the floor's columns, one that calls ``ragmeter.evaluate()`` and one that runs pytrec_eval (its
own parsing), each timed from start to exit (import included: what a user waits for). The five
run in interleaved rounds (``--whole-rounds``), so each round sees the same load; CPU is the
child's user + system time, peak the child's maximum RSS (``wait4``); ratios are medians of
per-round ratios; the 1-minute load average is given. Recording's cost is the default's CPU
minus ``--no-store``'s in the same round, as a share of ``evaluate()``'s.

``--shape`` picks the data's score shape (``_gen.SHAPES``: ``strict`` has no ties; ``round1``-3,
``rand6``, ``bm25`` have ties as real runs do); on a shape with ties only the peers that break
ties as trec_eval does (pytrec_eval) must agree with ragmeter's means.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _gen import SHAPES, agreeing_peers, bench_files

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs" / "benchmarks.md"
SECTION = "## Metric engine (bench_metrics.py)"
#: the heading of the section's hand-written analysis, which a new run keeps below its figures
ANALYSIS = "### What bounds each target"

SIZES: dict[str, tuple[int, int]] = {
    "1k": (1_000, 100),
    "10k": (10_000, 1_000),
    "100k": (100_000, 100),
    "1m": (1_000_000, 10),
    # the curve: 10 items per query, 10k -> 1M queries (1m above is its last point)
    "10k-10": (10_000, 10),
    "100k-10": (100_000, 10),
}
#: the three shapes issue 15 sets targets for
TARGETS = ("10k", "100k", "1m")
CURVE = ("10k-10", "100k-10", "1m")
TOOLS = ("floor", "ragmeter", "pytrec_eval", "ranx", "ir_measures")
METRICS = ("nDCG@10", "RR@10", "R@100", "P@5", "AP")
#: a peer whose first timed repetition takes longer than this is timed once (said in the table)
SLOW_S = 30.0
AGREE = 1e-9


# == child side: one tool, one size ============================================================
def _mem_mb() -> tuple[float, float]:
    """(current RSS, peak RSS since the last reset) in MiB, from /proc (Linux)."""
    status = Path("/proc/self/status").read_text()
    vals = {
        ln.split(":")[0]: int(ln.split()[1]) / 1024.0
        for ln in status.splitlines()
        if ln.startswith(("VmRSS:", "VmHWM:"))
    }
    return vals["VmRSS"], vals["VmHWM"]


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS


def _tool_floor() -> tuple[Callable[[Path, Path], Any], Callable[[Any], dict[str, float]]]:
    import pyarrow as pa
    from pyarrow import csv

    names = ["qid", "q0", "doc", "rank", "score", "tag"]

    def read(path: Path, columns: list[str], value: str, kind: Any) -> Any:
        return csv.read_csv(
            path,
            read_options=csv.ReadOptions(column_names=columns),
            parse_options=csv.ParseOptions(delimiter=" "),
            convert_options=csv.ConvertOptions(
                include_columns=["qid", "doc", value],
                column_types={"qid": pa.string(), "doc": pa.string(), value: kind},
            ),
        )

    def parse(qrels: Path, run: Path) -> Any:
        return (
            read(run, names, "score", pa.float64()),
            read(qrels, ["qid", "iter", "doc", "rel"], "rel", pa.int64()),
        )

    def compute(tables: Any) -> dict[str, float]:
        return {"_columnar_bytes": float(tables[0].nbytes)}

    return parse, compute


def _tool_ragmeter() -> tuple[Callable[[Path, Path], Any], Callable[[Any], dict[str, float]]]:
    from ragmeter.io.trec import read_qrels, read_run
    from ragmeter.metrics._engine import evaluate

    def parse(qrels: Path, run: Path) -> Any:
        return read_qrels(qrels), read_run(run)

    def compute(parsed: Any) -> dict[str, float]:
        return evaluate(parsed[0], parsed[1], list(METRICS)).aggregate

    return parse, compute


def _tool_pytrec_eval() -> tuple[Callable[[Path, Path], Any], Callable[[Any], dict[str, float]]]:
    import pytrec_eval

    names = {
        "ndcg_cut_10": "nDCG@10",
        "recip_rank": "RR",
        "recall_100": "R@100",
        "P_5": "P@5",
        "map": "AP",
    }

    def parse(qrels: Path, run: Path) -> Any:
        with open(qrels) as fq, open(run) as fr:
            return pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr)

    def compute(parsed: Any) -> dict[str, float]:
        ev = pytrec_eval.RelevanceEvaluator(
            parsed[0], {"ndcg_cut.10", "recip_rank", "recall.100", "P.5", "map"}
        )
        per_q = ev.evaluate(parsed[1])
        return {ours: statistics.fmean(v[m] for v in per_q.values()) for m, ours in names.items()}

    return parse, compute


def _tool_ranx() -> tuple[Callable[[Path, Path], Any], Callable[[Any], dict[str, float]]]:
    import ranx

    names = {
        "ndcg@10": "nDCG@10",
        "mrr@10": "RR@10",
        "recall@100": "R@100",
        "precision@5": "P@5",
        "map": "AP",
    }

    def parse(qrels: Path, run: Path) -> Any:
        return ranx.Qrels.from_file(str(qrels), kind="trec"), ranx.Run.from_file(
            str(run), kind="trec"
        )

    def compute(parsed: Any) -> dict[str, float]:
        out = ranx.evaluate(parsed[0], parsed[1], list(names))
        return {names[m]: float(v) for m, v in out.items()}

    return parse, compute


def _tool_ir_measures() -> tuple[Callable[[Path, Path], Any], Callable[[Any], dict[str, float]]]:
    import ir_measures
    from ir_measures.util import QrelsConverter, RunConverter

    measures = {ir_measures.parse_measure(m): m for m in METRICS}

    def parse(qrels: Path, run: Path) -> Any:
        return (
            QrelsConverter(ir_measures.read_trec_qrels(str(qrels))).as_dict_of_dict(),
            RunConverter(ir_measures.read_trec_run(str(run))).as_dict_of_dict(),
        )

    def compute(parsed: Any) -> dict[str, float]:
        out = ir_measures.calc_aggregate(list(measures), parsed[0], parsed[1])
        return {measures[m]: float(v) for m, v in out.items()}

    return parse, compute


def child(
    tool: str, qrels: Path, run: Path, reps: int, warm_qrels: Path, warm_run: Path
) -> dict[str, Any]:
    import warnings

    warnings.simplefilter("ignore")  # numba's unsafe-cast notices from ranx
    t0 = time.perf_counter()
    parse, compute = globals()[f"_tool_{tool}"]()
    import_s = time.perf_counter() - t0
    compute(parse(warm_qrels, warm_run))  # lazy imports (pyarrow.csv), numba's first compile
    # One full untimed run on the real files, in a fresh allocator state: its peak memory is
    # reported, and it warms what a second use would find warm (numba specialises ranx's kernels
    # on the id width of the data; the OS caches the files for every tool alike).
    gc.collect()
    base, _ = _mem_mb()
    _reset_peak()
    t0 = time.perf_counter()
    compute(parse(qrels, run))
    first_s = time.perf_counter() - t0
    peak_mb = _mem_mb()[1] - base
    gc.collect()
    rows: list[tuple[float, float]] = []
    cpu: list[float] = []  # process CPU time (every thread) of each timed run
    means: dict[str, float] = {}
    for _ in range(reps):
        c0 = time.process_time()
        t0 = time.perf_counter()
        parsed = parse(qrels, run)
        t1 = time.perf_counter()
        means = compute(parsed)
        t2 = time.perf_counter()
        cpu.append(time.process_time() - c0)
        rows.append((t1 - t0, t2 - t1))
        del parsed
        gc.collect()
        if tool not in ("floor", "ragmeter") and t2 - t0 > SLOW_S:
            break
    extra: dict[str, float] = {}
    if tool == "ragmeter":  # RR without cutoff, to check pytrec_eval's recip_rank (untimed)
        from ragmeter.io.trec import read_qrels, read_run
        from ragmeter.metrics._engine import evaluate

        extra = evaluate(read_qrels(qrels), read_run(run), ["RR"]).aggregate
    return {
        "tool": tool,
        "parse": [r[0] for r in rows],
        "compute": [r[1] for r in rows],
        "total": [r[0] + r[1] for r in rows],
        "cpu": cpu,
        "means": {**means, **extra},
        "import_s": import_s,
        "first_s": first_s,
        "peak_mb": peak_mb,
    }


# == whole processes: the command a user types, interleaved with the floor and the peers ========
#: the whole-process rows, in the order each round runs them
WHOLE = ("floor", "evaluate()", "ragmeter eval", "ragmeter eval --no-store", "pytrec_eval")
#: each row's process, timed against this one
WHOLE_BASE = "ragmeter eval"


def once(tool: str, qrels: Path, run: Path) -> dict[str, float]:
    """A ``--once`` child: ``tool`` from files to means once, in a fresh process (the floor:
    pyarrow reads the columns; ``evaluate()``: ``ragmeter.evaluate`` on the two paths)."""
    if tool == "evaluate()":
        import ragmeter

        return ragmeter.evaluate(qrels, run, list(METRICS)).aggregate
    parse, compute = globals()[f"_tool_{tool}"]()
    return compute(parse(qrels, run))


def _whole_command(name: str, files: Any, folder: Path) -> list[str]:
    me = [sys.executable, __file__, "--once"]
    if name in ("floor", "evaluate()", "pytrec_eval"):
        return [*me, name, str(files.qrels), str(files.run)]
    cmd = [sys.executable, "-m", "ragmeter", "eval", str(files.qrels), str(files.run)]
    cmd += ["-m", ",".join(METRICS)]
    return cmd + (["--no-store"] if name.endswith("--no-store") else [])


#: a small launcher that runs the command as its own child and prints that child's ``wait4``
#: usage: Linux carries a process's peak RSS across fork and exec, so a command forked straight
#: from this benchmark (which may hold a GB of generated data) would report at least this
#: benchmark's RSS as its own peak; forked from the launcher (a few MB) it reports its own
_LAUNCHER = """
import json, os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the command's output is not measured
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, u = os.wait4(pid, 0)
wall = time.perf_counter() - t0
print(json.dumps([os.waitstatus_to_exitcode(status), wall, u.ru_utime + u.ru_stime, u.ru_maxrss]))
"""


def _timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one child process, from its own ``wait4`` usage, taken
    by a small launcher (``_LAUNCHER``) that forks it (its output is discarded; stderr is kept
    for an error)."""
    import tempfile

    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        launcher = [sys.executable, "-c", _LAUNCHER, *cmd]
        proc = subprocess.run(launcher, cwd=cwd, env=env, stdout=out, stderr=err, check=False)
        out.seek(0)
        lines = out.read().decode().strip().splitlines()
        code, wall, cpu, maxrss = json.loads(lines[-1]) if lines else (proc.returncode, 0, 0, 0)
        if proc.returncode != 0 or code != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{err.read().decode()[-3000:]}")
    return float(wall), float(cpu), maxrss / 1024.0


def whole_rounds(files: Any, rounds: int, names: tuple[str, ...] = WHOLE) -> dict[str, Any]:
    """Each of ``names`` as a whole process, ``rounds`` times, interleaved: every round runs
    each once, in a fresh temporary folder (the default store goes there, new each time)."""
    import os
    import shutil
    import tempfile

    env = {k: v for k, v in os.environ.items() if k not in ("RAGMETER_DATABASE_URL",)}
    env.pop("RAGMETER_ARTIFACTS", None)
    out: dict[str, Any] = {n: {"wall": [], "cpu": [], "peak": []} for n in names}
    loads = []
    for _ in range(rounds):
        loads.append(os.getloadavg()[0])
        for name in names:
            folder = Path(tempfile.mkdtemp(prefix="bench-whole-"))
            try:
                wall, cpu, peak = _timed(_whole_command(name, files, folder), folder, env)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            for key, v in (("wall", wall), ("cpu", cpu), ("peak", peak)):
                out[name][key].append(v)
    out["_load"] = f"{min(loads):.1f}-{max(loads):.1f}"
    return out


def _whole_table(label: str, nq: int, depth: int, res: dict[str, Any]) -> list[str]:
    names = [n for n in WHOLE if n in res]
    rounds = len(res[WHOLE_BASE]["cpu"])
    lines = [
        (
            f"#### Whole processes at {label}: {nq:,} x {depth:,} ({rounds} interleaved rounds; "
            f"load {res['_load']})"
        ),
        "",
        f"| process | wall (s) | CPU (s) | peak RSS (MiB) | wall / `{WHOLE_BASE}` "
        f"| CPU / `{WHOLE_BASE}` |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for n in names:
        r = res[n]
        wall = _median([a / b for a, b in zip(r["wall"], res[WHOLE_BASE]["wall"], strict=True)])
        cpu = _median([a / b for a, b in zip(r["cpu"], res[WHOLE_BASE]["cpu"], strict=True)])
        shown = {
            "floor": "floor (pyarrow.csv reads the 3 columns)",
            "evaluate()": "`ragmeter.evaluate()` in a process",
            "ragmeter eval": "`ragmeter eval` as typed (table + recording)",
            "ragmeter eval --no-store": "`ragmeter eval --no-store`",
            "pytrec_eval": "pytrec_eval (its own parsing)",
        }[n]
        lines.append(
            f"| {shown} | {_median(r['wall']):.2f} | {_median(r['cpu']):.2f} | "
            f"{max(r['peak']):,.0f} | {wall:.2f}x | {cpu:.2f}x |"
        )
    lines.append("")
    if "evaluate()" in res:
        ev = res["evaluate()"]["cpu"]
        cmd = _median([a / b for a, b in zip(res[WHOLE_BASE]["cpu"], ev, strict=True)])
        lines.append(
            f"- `{WHOLE_BASE}` as typed: {cmd:.2f}x `evaluate()`'s CPU (target <= 1.2x): "
            f"{'met' if cmd <= 1.2 else 'MISSED'}"
        )
        if "ragmeter eval --no-store" in res:
            rec = [
                (a - b) / c
                for a, b, c in zip(
                    res[WHOLE_BASE]["cpu"], res["ragmeter eval --no-store"]["cpu"], ev, strict=True
                )
            ]
            share = _median(rec)
            lines.append(
                f"- recording into the store: {100 * share:.0f}% of `evaluate()`'s CPU (the "
                f"default's CPU minus `--no-store`'s per round; target <= 15%): "
                f"{'met' if share <= 0.15 else 'MISSED'}"
            )
    if "pytrec_eval" in res:
        for key, what in (("wall", "wall"), ("cpu", "CPU")):
            x = _median(
                [a / b for a, b in zip(res["pytrec_eval"][key], res[WHOLE_BASE][key], strict=True)]
            )
            lines.append(f"- pytrec_eval / `{WHOLE_BASE}` in {what}: {x:.2f}x (target >= 5x)")
    lines.append("")
    return lines


# == parent side ===============================================================================
def _run_child(tool: str, files: Any, warm: Any, reps: int, timeout: float) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        tool,
        str(files.qrels),
        str(files.run),
        str(reps),
        str(warm.qrels),
        str(warm.run),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{tool} failed on {files.run.name}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _check_agreement(results: dict[str, dict[str, Any]], label: str, shape: str = "strict") -> None:
    ours = results["ragmeter"]["means"]
    peers = tuple(t for t in results if t not in ("ragmeter", "floor"))
    for tool in agreeing_peers(shape, peers):
        res = results[tool]
        if tool in ("ragmeter", "floor"):
            continue
        for name, value in res["means"].items():
            if abs(value - ours[name]) > AGREE:
                raise AssertionError(
                    f"{label}: {tool} {name} = {value!r}, ragmeter {ours[name]!r} "
                    f"(differ by more than {AGREE})"
                )


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def _ratio(
    results: dict[str, dict[str, Any]], tool: str, key: str, over: str = "ragmeter"
) -> float:
    """Median over rounds of ``tool``'s time / ``over``'s time in the same round (rounds paired
    in order; the machine is shared, so per-round ratios drift less than ratios of medians)."""
    a, b = results[tool][key], results[over][key]
    n = min(len(a), len(b))
    return _median([a[i] / b[i] for i in range(n)])


def _table(label: str, nq: int, depth: int, results: dict[str, dict[str, Any]]) -> list[str]:
    col_mb = results["floor"]["means"]["_columnar_bytes"] / 2**20
    lines = [
        (
            f"### {label}: {nq:,} queries x {depth:,} items ({nq * depth:,} run rows; "
            f"run's columnar size {col_mb:,.0f} MiB; load {results['_load']})"
        ),
        "",
        (
            "| tool | parse (s) | compute (s) | total (s) | CPU (s) | total / ragmeter "
            "| CPU / ragmeter | runs | first run (s) | import (s) | peak memory (MiB) |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for tool in TOOLS:
        r = results.get(tool)
        if r is None:
            continue
        tot = _median(r["total"])
        peak = r["peak_mb"]
        compute = "—" if tool == "floor" else f"{_median(r['compute']):.3f}"
        name = (
            "floor: pyarrow.csv reads the run's and qrels' 3 columns" if tool == "floor" else tool
        )
        lines.append(
            f"| {name} | {_median(r['parse']):.3f} | {compute} | {tot:.3f} | "
            f"{_median(r['cpu']):.3f} | {_ratio(results, tool, 'total'):.2f}x | "
            f"{_ratio(results, tool, 'cpu'):.2f}x | {len(r['total'])} | {r['first_s']:.2f} | "
            f"{r['import_s']:.2f} | {peak:,.0f} |"
        )
    lines.append("")
    return lines


def _targets(results: dict[str, dict[str, Any]], shape: str = "strict") -> list[str]:
    rm = results["ragmeter"]
    out = []
    if "pytrec_eval" in results:
        wall = _ratio(results, "pytrec_eval", "total")
        cpu = _ratio(results, "pytrec_eval", "cpu")
        out.append(
            f"- vs pytrec_eval, files to means: {wall:.1f}x faster in wall time, {cpu:.1f}x in "
            f"CPU time (target >= 5x): {'met' if min(wall, cpu) >= 5 else 'MISSED'}"
        )
    wall = _ratio(results, "ragmeter", "total", over="floor")
    cpu = _ratio(results, "ragmeter", "cpu", over="floor")
    out.append(
        f"- vs the read floor: {wall:.2f}x in wall time, {cpu:.2f}x in CPU time (target <= "
        f"2x): {'met' if max(wall, cpu) <= 2 else 'MISSED'}"
    )
    col_mb = results["floor"]["means"]["_columnar_bytes"] / 2**20
    peak = rm["peak_mb"]
    out.append(
        f"- peak memory {peak:,.0f} MiB = {peak / col_mb:.2f}x the run's columnar size "
        f"(target <= 2x): {'met' if peak <= 2 * col_mb else 'MISSED'}"
    )
    peers = [t for t in results if t not in ("ragmeter", "floor") and not t.startswith("_")]
    peers = list(agreeing_peers(shape, tuple(peers)))
    out.append(f"- means identical to 1e-9 with {', '.join(peers) or 'no peer'}: checked")
    return out


def _curve(all_results: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """Time per query at 10 items per query, 10k -> 1M queries (median of rounds)."""
    labels = [c for c in CURVE if c in all_results]
    if len(labels) < 2:
        return []
    tools = [t for t in ("floor", "ragmeter", "pytrec_eval") if t in all_results[labels[0]]]
    head = " | ".join(f"{SIZES[c][0]:,} queries" for c in labels)
    lines = [
        "### Time per query at 10 items per query (wall / CPU, microseconds per query)",
        "",
        f"| tool | {head} | CPU growth per query, first to last |",
        "|---|" + "---:|" * (len(labels) + 1),
    ]
    for tool in tools:
        cells, cpus = [], []
        for c in labels:
            r = all_results[c][tool]
            nq = SIZES[c][0]
            wall, cpu = _median(r["total"]) / nq * 1e6, _median(r["cpu"]) / nq * 1e6
            cpus.append(cpu)
            cells.append(f"{wall:.2f} / {cpu:.2f}")
        lines.append(f"| {tool} | {' | '.join(cells)} | {cpus[-1] / cpus[0]:.2f}x |")
    lines.append("")
    return lines


def write_section(text: str, path: Path = DOCS) -> None:
    """Replace (or append) this benchmark's section of docs/benchmarks.md, keeping the others."""
    body = (
        path.read_text()
        if path.exists()
        else "# Benchmarks\n\nEach section is written by the benchmark it names.\n"
    )
    start = body.find(SECTION)
    if start < 0:
        body = body.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n"
    else:
        nxt = body.find("\n## ", start + len(SECTION))
        old = body[start : nxt if nxt >= 0 else len(body)]
        at = old.find(ANALYSIS)  # the hand-written analysis stays below the new figures
        kept = "\n" + old[at:].rstrip("\n") + "\n" if at >= 0 else ""
        body = body[:start] + text.rstrip("\n") + "\n" + kept + (body[nxt:] if nxt >= 0 else "")
    path.write_text(body)


def _machine() -> str:
    import os

    return (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for dist in ("ragmeter", "numpy", "pyarrow", "pytrec-eval-terrier", "ranx", "ir-measures"):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            out.append(f"{dist} (not installed)")
    return ", ".join(out)


def _load() -> str:
    import os

    return f"{os.getloadavg()[0]:.1f}"


def _shape_runs(
    args: argparse.Namespace,
    shape: str,
    tools: list[str],
    whole: list[str],
    warm: Any,
    titled: bool,
) -> list[str]:
    """Every size of one score shape: its tables, targets, whole-process rounds and curve."""
    lines = [f"### Scores of shape `{shape}`: {SHAPES[shape].about}", ""] if titled else []
    all_results: dict[str, dict[str, dict[str, Any]]] = {}
    for label in args.sizes.split(","):
        nq, depth = SIZES[label]
        t0 = time.perf_counter()
        files = bench_files(nq, depth, seed=args.seed, shape=shape)
        print(
            f"[{label}] data ready in {time.perf_counter() - t0:.1f} s: {files.run}",
            file=sys.stderr,
        )
        results: dict[str, dict[str, Any]] = {"_load": _load()}  # type: ignore[dict-item]
        for tool in tools:
            t0 = time.perf_counter()
            results[tool] = _run_child(tool, files, warm, args.reps, args.timeout)
            print(
                f"[{label}] {tool}: total {_median(results[tool]['total']):.3f} s "
                f"(wall {time.perf_counter() - t0:.1f} s)",
                file=sys.stderr,
            )
        load = results.pop("_load")
        _check_agreement(results, label, shape)
        results["_load"] = load  # type: ignore[assignment]
        lines += _table(label if not titled else f"{label}, {shape}", nq, depth, results)
        if label in TARGETS:
            met = _targets(results, shape)
            lines += [f"Targets at {nq:,} x {depth:,} (issues 15 and 28):", "", *met, ""]
        all_results[label] = results
        if label in whole:
            t0 = time.perf_counter()
            names = tuple(n for n in WHOLE if n != "pytrec_eval" or "pytrec_eval" in tools)
            shown = label if not titled else f"{label}, {shape}"
            lines += _whole_table(shown, nq, depth, whole_rounds(files, args.whole_rounds, names))
            print(f"[{label}] whole processes: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return lines + _curve(all_results)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1k,10k,100k", help=f"comma list of {', '.join(SIZES)}")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per tool and size")
    ap.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md")
    ap.add_argument(
        "--shape",
        default="strict",
        help="comma list of the scores' shapes (_gen.SHAPES: "
        f"{', '.join(SHAPES)}): strict has no ties; the others tie as real runs",
    )
    ap.add_argument(
        "--whole",
        default=None,
        help="sizes (among --sizes) to time as whole processes (the command a user types, "
        "interleaved with the floor, evaluate() and pytrec_eval); default: all; '' for none",
    )
    ap.add_argument("--whole-rounds", type=int, default=3, help="interleaved whole-process rounds")
    args = ap.parse_args(argv)
    shapes = [x for x in args.shape.split(",") if x]
    unknown = [x for x in shapes if x not in SHAPES]
    if unknown or not shapes:
        ap.error(f"--shape: unknown {', '.join(unknown) or '(none)'}; one of {', '.join(SHAPES)}")
    whole = [w for w in (args.sizes if args.whole is None else args.whole).split(",") if w]
    tools = [t for t in TOOLS if t in args.tools.split(",")]
    for needed in ("floor", "ragmeter"):
        if needed not in tools:
            tools.insert(0 if needed == "floor" else 1, needed)
    warm = bench_files(50, 20, seed=args.seed + 1)
    lines = [
        SECTION,
        "",
        (
            f"`python benchmarks/bench_metrics.py` on {_machine()}; {time.strftime('%Y-%m-%d')}. "
            f"Measures: {', '.join(METRICS)} (pytrec_eval: RR without cutoff; trec_eval has no "
            f"RR@k). Times are medians of {args.reps} timed runs after import, a tiny warm-up and "
            f"one untimed full run ('first run': numba loads ragmeter's compiled kernels from its "
            "cache and compiles ranx's for the data then); "
            "CPU: the process's CPU time over all its threads; ratios are medians of per-round "
            "ratios; the 1-minute load average is given per shape; "
            f"a peer whose timed run takes over {SLOW_S:.0f} s is timed once (see 'runs'). Peak "
            "memory: growth of the process's peak RSS during the first run over its RSS just "
            "before it (after import and the tiny warm-up; for ranx it includes numba compiling "
            "for the data). Every agreeing tool's means equal ragmeter's to 1e-9 (checked while "
            "running). "
            f"Data: `benchmarks/_gen.py` (seed {args.seed}; "
            + "; ".join(f"shape `{x}`: {SHAPES[x].about}" for x in shapes)
            + "; every query has a relevant item and 3 unretrieved judged items)"
            + (
                "; on scores with ties only pytrec_eval, which breaks ties as trec_eval and "
                "ragmeter do, must give ragmeter's means."
                if any(SHAPES[x].ties for x in shapes)
                else "."
            )
        ),
        "",
    ]
    load_start = _load()
    for shape in shapes:
        lines += _shape_runs(args, shape, tools, whole, warm, titled=len(shapes) > 1)
    lines += [
        (
            f"Versions: {_versions()}. Load average (1 min) at start / end: {load_start} / "
            f"{_load()} (the machine is shared; ratios within one run are the comparable part)."
        ),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_docs:
        write_section(text)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--once":
        _, _, tool, q, r = sys.argv
        print(json.dumps(once(tool, Path(q), Path(r))))
    elif len(sys.argv) > 1 and sys.argv[1] == "--child":
        _, _, tool, q, r, reps, wq, wr = sys.argv
        print(json.dumps(child(tool, Path(q), Path(r), int(reps), Path(wq), Path(wr))))
    else:
        sys.exit(main())
