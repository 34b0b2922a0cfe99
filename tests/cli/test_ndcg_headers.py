"""Every nDCG header of the CLI's tables says its gain (issue 27, item 3): ``nDCG@3 (linear)``
for the default gain, the canonical ``nDCG(gain=exp)@3`` otherwise, in ``eval``, ``compare``,
``sweep`` (``run``: tests/cli/test_render_experiment.py); CSV headers and JSON keys stay the
canonical strings."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from typer.testing import CliRunner

from ragmeter.cli import app

FIX = Path(__file__).parents[1] / "fixtures" / "toy"
runner = CliRunner()


def cli(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, [*args], env={"COLUMNS": "200"})
    return r.exit_code, r.stdout, r.stderr


def _eval(*args: str) -> tuple[int, str, str]:
    return cli("eval", str(FIX / "qrels.txt"), str(FIX / "baseline.run"), *args)


def test_eval_tables_say_the_gain_and_csv_json_stay_canonical() -> None:
    code, out, err = _eval("-m", "nDCG@3,nDCG(gain=exp)@3,RR@3", "--per-query")
    assert code == 0, err
    assert out.count("nDCG@3 (linear)") == 2  # the summary table and the per-query table
    assert out.count("nDCG(gain=exp)@3") == 2 and "(exp)" not in out
    code, out, _ = _eval("-m", "nDCG@3,nDCG(gain=exp)@3", "--format", "csv")
    assert next(csv.reader(io.StringIO(out)))[-2:] == ["nDCG@3", "nDCG(gain=exp)@3"]
    code, out, _ = _eval("-m", "nDCG@3", "--format", "json")
    assert list(json.loads(out)["aggregate"]) == ["nDCG@3"]


def test_compare_and_sweep_titles_say_the_gain(tmp_path: Path) -> None:
    files = []
    for name in ("baseline", "reranked"):
        code, out, err = cli(
            "eval", str(FIX / "qrels.txt"), str(FIX / f"{name}.run"), "-m", "nDCG@3",
            "--per-query", "--format", "json",
        )  # fmt: skip
        assert code == 0, err
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(out)
    code, out, err = cli("compare", *map(str, files), "-m", "nDCG@3", "--no-store", "--no-ledger")
    assert code == 0, err
    assert "on nDCG@3 (linear)" in out
    code, out, err = cli(
        "compare", *map(str, files), "-m", "nDCG@3", "--no-store", "--no-ledger", "--format", "json"
    )
    assert json.loads(out)["metric"] == "nDCG@3"
    runs = [str(FIX / "baseline.run"), str(FIX / "reranked.run")]
    code, out, err = cli("sweep", *runs, "--qrels", str(FIX / "qrels.txt"), "-m", "nDCG",
                         "--k", "1..3")  # fmt: skip
    assert code == 0, err
    assert "nDCG@k (linear) by k" in out
    code, out, err = cli("sweep", *runs, "--qrels", str(FIX / "qrels.txt"),
                         "-m", "nDCG(gain=exp)", "--k", "1..3")  # fmt: skip
    assert code == 0, err
    assert "nDCG(gain=exp)@k by k" in out
