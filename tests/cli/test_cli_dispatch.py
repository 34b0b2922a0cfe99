"""The CLI reads files through the library: the same file gives the same result on both sides.

Regression: ``ragmeter eval qrels.txt RUN.JSONL`` read the run as TREC text (the command checked
the extension case-sensitively) while ``ragmeter.evaluate`` on the same files read JSON Lines;
``--duplicates error`` was ignored for JSON Lines runs; ``ragmeter sweep`` with span labels read
``RUN.JSONL`` as TREC text too.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ragmeter
from ragmeter.cli import app

FIX = Path(__file__).parents[1] / "fixtures" / "toy"
runner = CliRunner()
M = "R@3,P@3,RR@3,nDCG(gain=exp)@3,AP"


def cli(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, [*args], env={"COLUMNS": "200"})
    return r.exit_code, r.stdout, r.stderr


def _trec_rows(path: Path) -> list[list[str]]:
    return [ln.split() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def run_as_jsonl(trec: Path, out: Path) -> Path:
    """The TREC run written as JSON Lines, one object per line, in the file's order."""
    lines = [
        json.dumps({"qid": q, "doc": d, "score": float(s)}) for q, _, d, _, s, _ in _trec_rows(trec)
    ]
    data = ("\n".join(lines) + "\n").encode()
    out.write_bytes(gzip.compress(data, mtime=0) if out.name.lower().endswith(".gz") else data)
    return out


def qrels_as_jsonl(trec: Path, out: Path) -> Path:
    out.write_text(
        "".join(
            json.dumps({"qid": q, "doc": d, "rel": int(g)}) + "\n"
            for q, _, d, g in _trec_rows(trec)
        ),
        encoding="utf-8",
    )
    return out


def _aggregate(*args: str) -> dict[str, float]:
    code, out, err = cli("eval", *args, "-m", M, "--format", "json")
    assert code == 0, err
    return json.loads(out)["aggregate"]


@pytest.mark.parametrize("run_name", ["RUN.JSONL", "Run.Jsonl", "run.jsonl", "RUN.JSONL.GZ"])
def test_eval_reads_a_jsonl_run_whatever_the_case_of_its_extension(
    tmp_path: Path, run_name: str
) -> None:
    run = run_as_jsonl(FIX / "baseline.run", tmp_path / run_name)
    got = _aggregate(str(FIX / "qrels.txt"), str(run))
    library = ragmeter.evaluate(FIX / "qrels.txt", run, M).aggregate
    from_trec = _aggregate(str(FIX / "qrels.txt"), str(FIX / "baseline.run"))
    assert got == library == from_trec
    # by hand: first relevant passage at ranks 2, -, 1, 1, 6, 3 in the six questions, so
    # RR@3 = (1/2 + 0 + 1 + 1 + 0 + 1/3) / 6 = 0.4722
    assert round(got["RR@3"], 4) == 0.4722


def test_eval_reads_upper_case_jsonl_qrels(tmp_path: Path) -> None:
    qrels = qrels_as_jsonl(FIX / "qrels.txt", tmp_path / "QRELS.JSONL")
    got = _aggregate(str(qrels), str(FIX / "reranked.run"))
    assert got == _aggregate(str(FIX / "qrels.txt"), str(FIX / "reranked.run"))
    assert got == ragmeter.evaluate(qrels, FIX / "reranked.run", M).aggregate


def test_eval_duplicates_error_applies_to_jsonl_runs(tmp_path: Path) -> None:
    run = tmp_path / "dup.jsonl"
    run.write_text(
        '{"qid": "change_fee", "doc": "change-fee/rel0", "score": 2}\n'
        '{"qid": "change_fee", "doc": "change-fee/rel0", "score": 1}\n',
        encoding="utf-8",
    )
    code, _, err = cli(
        "eval", str(FIX / "qrels.txt"), str(run), "-m", "RR@3", "--duplicates", "error"
    )
    assert code == 2 and str(run) in err.replace("\n", "") and "Traceback" not in err


def test_span_sweep_reads_upper_case_jsonl_runs(tmp_path: Path) -> None:
    from test_sweep import budget_scenario

    from ragmeter.data.golden import write_golden

    golden, runs = budget_scenario()
    gp = write_golden(golden, tmp_path / "golden.jsonl")
    outs = []
    for ext in (".run", ".JSONL"):
        args, chunk_args = ["sweep"], []
        for name, (chunking, run) in runs.items():
            cp = chunking.save(tmp_path / f"{name}.chunks.jsonl")
            rp = tmp_path / ext.strip(".") / f"{name}{ext}"
            rp.parent.mkdir(exist_ok=True)
            if ext == ".run":
                rp.write_text(
                    "".join(
                        f"{q} Q0 {d} {i + 1} {s} {name}\n"
                        for q, docs in run.items()
                        for i, (d, s) in enumerate(docs.items())
                    )
                )
            else:
                rp.write_text(
                    "".join(
                        json.dumps({"qid": q, "doc": d, "score": s}) + "\n"
                        for q, docs in run.items()
                        for d, s in docs.items()
                    )
                )
            args.append(str(rp))
            chunk_args += ["--chunks", str(cp)]
        code, out, err = cli(
            *args,
            "--golden",
            str(gp),
            *chunk_args,
            "-m",
            "R",
            "--budget",
            "100..1200:300",
            "--format",
            "json",
        )
        assert code == 0, err
        outs.append(json.loads(out))
    assert outs[0] == outs[1]
    # S fits 1, 4, 7, 10 chunks at these budgets; L 0, 1, 2, 3 (see test_sweep.budget_scenario)
    assert "S from budget = 700" in outs[1][0]["summary"]
