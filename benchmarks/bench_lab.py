"""The lab's interactive paths on a synthetic experiment: recomputing metrics at a new k or
budget from the stored ranked lists, and the /lab page at a new k (through the ASGI app).

    .venv/bin/python benchmarks/bench_lab.py --questions 1000
    .venv/bin/python benchmarks/bench_lab.py --questions 10000 --page
    .venv/bin/python benchmarks/bench_lab.py --fare-rules

Synthetic data (seeded): 2,000 documents of 200 words, 5 chunks each (10,000 chunks), N
questions with 1-3 graded evidence spans, an imported run of depth 50 per question. Targets
(issue 13): recompute under 200 ms for 1,000 questions; the page for 10,000 questions under 1 s.
Medians of 5; the machine is shared, so read the medians, not single figures.

``--fare-rules`` (issue 28): the store ``ragmeter demo --lab`` records (the demo's own code, on
a copy of examples/fare-rules in a temporary folder), plus what a user adds next on it (a
stored comparison, a judge validation, an evidence queue and an answers queue), then every page
of the lab (:data:`PAGES`, one entry per GET route the app registers; a test keeps it whole),
each in a fresh process as a user first opens it after ``ragmeter lab`` started: CPU
(``time.process_time``) and wall of the first request, and the median CPU of 5 more; then
``ragmeter report`` of the experiment as a whole process (CPU of the child from
``resource.getrusage(RUSAGE_CHILDREN)``, median of 3). Target: under 1 s of CPU each. The timed
processes read and write their compiled modules under the temporary folder (as an installed
wheel has them), PYTHONDONTWRITEBYTECODE or not; ``--no-bytecode`` leaves the environment as
it is, where every process compiles each module it imports.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

WORDS = "fare change fee refund basic standard flex seat bag child infant award miles rule".split()


def build(root: Path, n: int) -> Path:
    rng = random.Random(0)
    docs, chunks = [], []
    for d in range(2000):
        text = " ".join(rng.choice(WORDS) for _ in range(200))
        docs.append({"id": f"d{d}", "text": text})
        step = len(text) // 5
        for c in range(5):
            a, b = c * step, (c + 1) * step if c < 4 else len(text)
            chunks.append(
                {
                    "id": f"d{d}#{a}-{b}",
                    "doc": f"d{d}",
                    "start": a,
                    "end": b,
                    "text": text[a:b],
                    "n_tokens": (b - a) // 4,
                }
            )
    golden, run = [], []
    for i in range(n):
        qid = f"q{i:05d}"
        evs = []
        for d in rng.sample(range(2000), rng.choice([1, 1, 2, 3])):
            a = rng.randrange(0, 700)
            evs.append(
                {
                    "doc": f"d{d}",
                    "start": a,
                    "end": a + rng.randrange(20, 200),
                    "grade": 1 + (a % 2),
                }
            )
        golden.append({"id": qid, "question": f"question {i}?", "evidence": evs})
        ids = rng.sample(range(len(chunks)), 50)
        first = evs[0]
        rel = [
            j
            for j, c in enumerate(chunks)
            if c["doc"] == first["doc"] and c["start"] <= first["start"] < c["end"]
        ]
        if rel and rel[0] not in ids:
            ids[rng.randrange(0, 20)] = rel[0]
        run.extend(
            json.dumps({"qid": qid, "chunk": chunks[j]["id"], "score": 50 - r + 0.5})
            for r, j in enumerate(ids)
        )

    def lines(rows: list) -> str:
        return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)

    (root / "corpus.jsonl").write_text(lines(docs))
    (root / "chunks.jsonl").write_text(lines(chunks))
    (root / "golden.jsonl").write_text(lines(golden))
    (root / "run.jsonl").write_text(lines(run))
    path = root / "experiment.toml"
    path.write_text(
        'name = "synthetic"\ngolden = "golden.jsonl"\ncorpus = "corpus.jsonl"\noutput = "runs"\n'
        'k = 4\nbudget = 1200\nmetrics = ["R", "AllR", "RR", "nDCG"]\n\n[baseline]\n'
        'name = "synthetic"\nchunks = "chunks.jsonl"\nrun = "run.jsonl"\n'
    )
    return path


def median_ms(fn, rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


#: Every page of the lab a user can open: each GET route ``create_app`` registers (its path as
#: FastAPI keeps it) -> the URLs timed on the fare-rules store, ``{name}`` filled in by
#: :func:`build_fare_rules` (run ids by variant, the baseline's answer set, the stored
#: comparison and judge validation, a question, its document, the queues' first items).
#: tests/lab/test_bench_lab_pages.py fails when a route is missing here or one here is gone.
PAGES: dict[str, tuple[str, ...]] = {
    "/": ("/",),
    "/lab": (
        "/lab",
        "/lab?run={reranker}&k=12",
        "/lab?run={smaller}&cut=budget&budget=900",
    ),
    "/lab/questions.csv": ("/lab/questions.csv?run={baseline}",),
    "/lab/question": ("/lab/question?run={reranker}&qid={qid}&baseline={baseline}",),
    "/compare": ("/compare", "/compare?base={baseline}&cand={reranker}&metric=AllR@4"),
    "/comparisons/{comparison_id}": ("/comparisons/{comparison}",),
    "/sweeps": ("/sweeps", "/sweeps?runs={baseline},{hybrid},{reranker}&metric=R"),
    "/diagnosis": (
        "/diagnosis",
        "/diagnosis?answers={answers}",
        "/diagnosis?answers={answers}&run={baseline}&large_k=20",
    ),
    "/question": ("/question?golden={golden}&qid={qid}",),
    "/judges": ("/judges",),
    "/judges/{vid}": ("/judges/{judge}",),
    "/slider": ("/slider?k=5",),
    "/jobs": ("/jobs", "/jobs?run={baseline}"),
    "/jobs/{job_id}": ("/jobs/none",),  # no job is started here: the page of an unknown one
    "/label": ("/label",),
    "/label/{queue}": ("/label/evidence",),
    "/label/{queue}/item/{item_id}": ("/label/evidence/item/{evidence_item}",),
    "/label/{queue}/search": ("/label/evidence/search?q=change+fee",),
    "/label/{queue}/doc/{doc_id:path}": ("/label/evidence/doc/{doc}",),
    "/label/{queue}/agreement": ("/label/evidence/agreement",),
    "/label/{queue}/disagreement/{item_id}": ("/label/evidence/disagreement/{evidence_item}",),
    "/review": ("/review",),
    "/review/{queue}": ("/review/answers",),
    "/review/{queue}/item/{item_id}": ("/review/answers/item/{answers_item}",),
    "/golden/diff": ("/golden/diff",),
    "/trace": ("/trace?q={qid}&run={reranker}&answers={answers}",),
    # the demo records no run made with repeat = N: the page says so about the baseline
    "/repeats": ("/repeats?run={baseline}",),
    "/login": ("/login",),
}


def lab_pages(app: Any) -> set[str]:
    """The paths of the GET routes ``app`` (the lab) registers, static files left out. FastAPI
    0.165 keeps each included router whole (``original_router``, under its ``prefix``); older
    ones copy its routes into the app's."""
    from starlette.routing import Route

    def walk(routes: list[Any], prefix: str) -> set[str]:
        found: set[str] = set()
        for r in routes:
            inner = getattr(r, "original_router", None)
            if inner is not None:
                more = getattr(getattr(r, "include_context", None), "prefix", "") or ""
                found |= walk(inner.routes, prefix + more)
            elif isinstance(r, Route) and "GET" in (r.methods or ()):
                found.add(prefix + r.path)
        return found

    return walk(list(app.routes), "")


def cli(*args: Any) -> str:
    """A ragmeter command, in this process (as tests/_lab_store.py runs them); its stdout."""
    from typer.testing import CliRunner

    from ragmeter.cli import app

    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exit_code != 0:
        raise SystemExit(f"ragmeter {' '.join(map(str, args))} failed:\n{result.output}")
    return str(result.stdout)


def build_fare_rules(tmp: Path) -> tuple[Path, str, dict[str, str]]:
    """The store ``ragmeter demo --lab`` records (the demo's own code, on a copy of the example
    under ``tmp``), plus a stored comparison, a judge validation, an evidence queue and an answers
    queue; returns the lab's folder, the store URL and the values :data:`PAGES` names."""
    import io
    import shutil

    from rich.console import Console

    from ragmeter import Store
    from ragmeter.cli._demo._chain_section import (
        ANSWER_VARIANTS,
        answers_section,
        experiment_section,
    )
    from ragmeter.cli._demo._example import checkout_example
    from ragmeter.cli._demo._lab_section import demo_store_path, record_demo

    source = checkout_example()
    if source is None:
        raise SystemExit("run from a checkout: examples/fare-rules was not found")
    root = tmp / "fare-rules"  # the example's caches (chunkings, indexes, embeddings) come along
    shutil.copytree(source, root)
    quiet = Console(file=io.StringIO(), width=160)
    result = experiment_section(quiet, root, None)
    answers = answers_section(quiet, root, result)
    path = demo_store_path(result, None)
    url = f"sqlite:///{path}"
    record_demo(path, result, answers, ANSWER_VARIANTS).close()
    with Store.open(url) as store:
        runs = {r.name: r.id for r in store.runs()}
        sets = {a.name: a.id for a in store.answer_sets()}
    ids = {"baseline": runs["baseline"], "reranker": runs["reranker"]}
    out = cli(
        "compare", ids["baseline"], ids["reranker"], "-m", "AllR@4", "--db", url, "-f", "json"
    )
    judged = tmp / "judged.json"
    example = [root / "answers" / "baseline.jsonl", "--golden", root / "golden.jsonl",
               "--corpus", root / "corpus.jsonl"]  # fmt: skip
    fake = ["--judge", "fake", "--judge-metrics", "correctness", "-f", "json", "--no-store"]
    judged.write_text(cli("answers", "check", *example, *fake))
    cli("judge", "validate", "--human", root / "judge" / "human-correctness.jsonl",
        "--judge", judged, "--db", url)  # fmt: skip
    cli("label", "create", "evidence", "-c", root / "corpus.jsonl", "--golden",
        root / "golden.jsonl", "--db", url)  # fmt: skip
    cli("label", "create", "answers", "--kind", "answers", "-c", root / "corpus.jsonl",
        "-q", root / "golden.jsonl", "--answers", root / "answers" / "baseline.jsonl",
        "--db", url)  # fmt: skip
    with Store.open(url) as store:
        golden = store.golden_versions()[0].version
        first = next(q for q in store.golden(golden) if q.evidence)
        qid = first.id
        values = {
            "baseline": runs["baseline"],
            "smaller": runs["smaller chunks"],
            "hybrid": runs["hybrid"],
            "reranker": runs["reranker"],
            "answers": sets["baseline"],
            "comparison": json.loads(out[out.index("{") :]).get("id") or store.comparisons()[0].id,
            "judge": store.judge_validations()[0].id,
            "golden": golden,
            "qid": qid,
            "doc": first.evidence[0].doc,
            "evidence_item": store.items("evidence")[0].id,
            "answers_item": store.items("answers")[0].id,
        }
    return root, url, {k: str(v) for k, v in values.items()}


def fare_rules_urls(values: dict[str, str]) -> list[str]:
    """Every URL of :data:`PAGES` with the store's values filled in, in the table's order."""
    return [u.format(**values) for urls in PAGES.values() for u in urls]


def time_pages(url: str, root: Path, pages: list[str], warm: int = 5) -> None:
    """In this process (a fresh one per page: see main): the lab on ``url``, each of ``pages``
    requested once and ``warm`` more times; one JSON line per page on stdout."""
    from fastapi.testclient import TestClient

    from ragmeter import Store
    from ragmeter.lab import create_app

    with Store.open(url) as store:
        client = TestClient(create_app(store=store, root=root), base_url="http://127.0.0.1")
        for page in pages:
            c, t = time.process_time(), time.perf_counter()
            status = client.get(page, follow_redirects=False).status_code
            cpu, wall = time.process_time() - c, time.perf_counter() - t
            again = []
            for _ in range(warm):
                c = time.process_time()
                client.get(page, follow_redirects=False)
                again.append(time.process_time() - c)
            row = {"page": page, "status": status, "cpu": cpu, "wall": wall,
                   "warm_cpu": statistics.median(again)}  # fmt: skip
            print(json.dumps(row), flush=True)


def time_report(
    url: str, root: Path, selector: str, env: dict[str, str], rounds: int = 3
) -> tuple[float, float]:
    """``ragmeter report SELECTOR`` as a user types it, ``rounds`` times after one untimed
    round (that reads the store and the files once): the medians of the child's CPU seconds
    (user + system) and its wall seconds."""
    exe = Path(sys.executable).with_name("ragmeter")
    cpus, walls = [], []
    for n in range(rounds + 1):
        out = root.parent / f"report-{n}.html"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(
            [str(exe), "report", selector, "-o", str(out), "--db", url, "--root", str(root)],
            cwd=root, env=env, check=True, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if n:
            walls.append(time.perf_counter() - t)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(cpus), statistics.median(walls)


def child_env(tmp: Path, bytecode: bool) -> dict[str, str]:
    """The timed processes' environment. ``bytecode``: Python writes and reads its compiled
    modules under ``tmp`` (as an installed wheel has them) even where PYTHONDONTWRITEBYTECODE
    is set, so a first request is not also the compilation of every module it imports (with
    a prefix, every module's bytecode is looked for there: an untimed round writes it)."""
    env = dict(os.environ)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    return env


def fare_rules(bytecode: bool = True) -> None:
    """The ``--fare-rules`` table (see the module's docstring)."""
    from ragmeter import Store

    with tempfile.TemporaryDirectory() as tmp:
        env = child_env(Path(tmp), bytecode)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            root, url, values = build_fare_rules(Path(tmp))
        print(f"fare-rules store built in {time.perf_counter() - t:.1f} s: {url}", file=sys.stderr)
        print(f"load average {os.getloadavg()[0]:.1f} (1 minute) at the start", file=sys.stderr)
        print("| page (a fresh lab process each) | status | first: CPU | first: wall | "
              "then: CPU (median of 5) |\n|---|---:|---:|---:|---:|")  # fmt: skip
        pages = fare_rules_urls(values)

        def one(page: str) -> dict[str, Any]:
            done = subprocess.run(
                [sys.executable, __file__, "--one-page", page, "--db", url, "--root", str(root)],
                env=env, check=True, capture_output=True, text=True,
            )  # fmt: skip
            return dict(json.loads(done.stdout.strip().splitlines()[-1]))

        if bytecode:  # an untimed round first: it compiles every module a page imports (the
            for page in pages:  # standard library's and site-packages' too: the prefix holds all)
                one(page)
        for page in pages:
            row = one(page)
            print(f"| `{page}` | {row['status']} | {row['cpu'] * 1000:,.0f} ms | "
                  f"{row['wall'] * 1000:,.0f} ms | {row['warm_cpu'] * 1000:,.0f} ms |")  # fmt: skip
        with Store.open(url) as store:
            experiment = store.runs()[0].experiment
        cpu, wall = time_report(url, root, experiment, env)
        print(f"| `ragmeter report` of the experiment (whole process, median of 3) | - | "
              f"{cpu * 1000:,.0f} ms | {wall * 1000:,.0f} ms | - |")  # fmt: skip
        print(f"load average {os.getloadavg()[0]:.1f} (1 minute) at the end", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--page", action="store_true", help="also time the /lab page")
    ap.add_argument(
        "--fare-rules", action="store_true", help="every lab page and the report, fare-rules"
    )
    ap.add_argument(
        "--no-bytecode",
        action="store_true",
        help="with --fare-rules: leave PYTHONDONTWRITEBYTECODE as set (every process then "
        "compiles the modules it imports)",
    )
    # internal: one fresh lab process timing one page (--fare-rules runs it per page)
    ap.add_argument("--one-page", help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if args.one_page:
        return time_pages(args.db, Path(args.root), [args.one_page])
    if args.fare_rules:
        return fare_rules(bytecode=not args.no_bytecode)
    from ragmeter.store._experiment import run_and_record

    from ragmeter import Store
    from ragmeter.lab._prepared import prepared_run
    from ragmeter.lab._recompute import Cutoff, scores

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = build(root, args.questions)
        store = Store.open(f"sqlite:///{root}/s.db")
        run_and_record(store, path, write=False)
        rid = store.runs()[0].id
        cache: dict = {}
        t = time.perf_counter()
        p = prepared_run(store, rid, cache)
        first = (time.perf_counter() - t) * 1000
        print(f"| first load (files, chunking, ranked lists) | {first:.0f} ms |")
        for cut in (Cutoff(k=3), Cutoff(k=10), Cutoff(budget=900)):

            def once(cut: Cutoff = cut) -> None:
                p._scores.clear()
                scores(p, cut)

            label = f"recompute {args.questions:,} questions at {cut.label}"
            print(f"| {label} | {median_ms(once):.0f} ms |")
        if args.page:
            from fastapi.testclient import TestClient

            from ragmeter.lab._app import create_app

            client = TestClient(create_app(store=store), base_url="http://127.0.0.1")
            client.get(f"/lab?run={rid}&k=4")  # loads the experiment once
            ks = iter(range(5, 100))
            ms = median_ms(lambda: client.get(f"/lab?run={rid}&k={next(ks)}"))
            print(f"| /lab page, {args.questions:,} questions, a new k each time | {ms:.0f} ms |")


if __name__ == "__main__":
    main()
