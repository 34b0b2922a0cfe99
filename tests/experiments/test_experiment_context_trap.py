"""k against budget: a variant raising k to 8 under ``budget = 1200`` on the fare-rules example.

The prompt holds the top k (k wins over the budget; the budget is the second metric cutoff), so
the variant's generator receives 2,159 tokens of context against the baseline's 1,087 and R@k
reads 0.920 against 0.793. ``ragmeter run`` records the measured context in each evaluation and
warns per variant; ``compare`` and ``gate`` list it under "not a fair test" (``--strict``
refuses); evaluations without the figure (written before ragmeter kept it) are not checked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _experiment_files import fare_rules_experiment, k_against_budget_text
from typer.testing import CliRunner

from ragmeter.cli import app

TRAP = (
    "changing k (4 -> 8): the candidate's generator receives 2,159 tokens of context against "
    "the baseline's 1,087 (+98.6%, more than 10% apart): a larger k is more text, not better "
    'retrieval (the trap "changing k between experiments")'
)


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def flat(text: str) -> str:
    """Rich wraps stderr at the terminal's width: one space per run of white space."""
    return " ".join(text.split())


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("k-against-budget")
    exp = fare_rules_experiment(
        folder, k_against_budget_text(), cache=("chunkings", "bm25", "runs")
    )
    url = f"sqlite:///{folder / 'store.db'}"
    table = invoke("run", exp, "--db", url)
    assert table.exit_code == 0, table.output
    as_json = invoke("run", exp, "--no-store", "-f", "json")
    assert as_json.exit_code == 0, as_json.output
    return {
        "folder": folder,
        "exp": exp,
        "url": url,
        "table": table,
        "json": json.loads(as_json.stdout),
    }


def test_run_warns_per_variant_and_records_the_measured_context(recorded: dict[str, Any]) -> None:
    assert f"warning (k = 8): {TRAP}" in flat(recorded["table"].stderr)
    assert "warning (baseline)" not in flat(recorded["table"].stderr)
    got = recorded["json"]
    base, k8 = got["variants"]
    assert (round(base["context_tokens"]), round(k8["context_tokens"])) == (1087, 2159)
    assert (round(base["metrics"]["R@4"], 3), round(k8["metrics"]["R@8"], 3)) == (0.793, 0.920)
    assert base["metrics"]["R@budget=1200"] == k8["metrics"]["R@budget=1200"]  # the same text
    assert base["warnings"] == [] and k8["warnings"][0].startswith(TRAP)
    assert any(w.startswith(f"variant 'k = 8': {TRAP}") for w in got["warnings"])
    runs = recorded["folder"] / "runs" / "k-against-budget"
    for name, tokens in (("baseline", base["context_tokens"]), ("k-8", k8["context_tokens"])):
        ev = json.loads((runs / name / "evaluation.json").read_text(encoding="utf-8"))
        assert ev["config"]["context_tokens"] == tokens
    config = json.loads((runs / "k-8" / "config.json").read_text(encoding="utf-8"))
    assert config["warnings"] == k8["warnings"]


def test_compare_lists_it_and_strict_refuses(recorded: dict[str, Any]) -> None:
    url, runs = recorded["url"], recorded["folder"] / "runs" / "k-against-budget"
    stored = ("1", "2", "--db", url)
    files = (runs / "baseline" / "evaluation.json", runs / "k-8" / "evaluation.json", "--no-store",
             "--no-ledger")  # fmt: skip
    for pair in (stored, files):
        r = invoke("compare", *pair, "-m", "R@budget=1200", "-f", "json")
        assert r.exit_code == 0, r.output
        fairness = json.loads(r.stdout)["fairness"]
        assert fairness[0].startswith(TRAP)
        assert f"warning: not a fair test: {TRAP}" in flat(r.stderr)
        strict = invoke("compare", *pair, "-m", "R@budget=1200", "--strict")
        assert strict.exit_code == 2
        assert f"not a fair test: {TRAP}" in flat(strict.output)


def test_gate_reports_it(recorded: dict[str, Any]) -> None:
    md = recorded["folder"] / "gate.md"
    r = invoke("gate", "1", "2", "--db", recorded["url"], "-m", "R@budget=1200",
               "--max-broken", "0", "--markdown", md)  # fmt: skip
    assert r.exit_code == 0, r.output  # nothing broke at the budget: it passes, flagged
    assert f"warning: not a fair test: {TRAP}" in flat(r.stderr)
    assert f"> warning: not a fair test: {TRAP}" in md.read_text(encoding="utf-8")
    js = invoke("gate", "1", "2", "--db", recorded["url"], "-m", "R@budget=1200",
                "--max-broken", "0", "-f", "json")  # fmt: skip
    assert js.exit_code == 0, js.output
    assert json.loads(js.stdout)["comparison"]["fairness"][0].startswith(TRAP)


def test_evaluations_without_the_figure_are_read_and_not_checked(
    recorded: dict[str, Any], tmp_path: Path
) -> None:
    """An evaluation.json written before ragmeter kept the measured context in it."""
    old = []
    for name in ("baseline", "k-8"):
        path = recorded["folder"] / "runs" / "k-against-budget" / name / "evaluation.json"
        ev = json.loads(path.read_text(encoding="utf-8"))
        del ev["config"]["context_tokens"]
        old.append(tmp_path / f"{name}.json")
        old[-1].write_text(json.dumps(ev), encoding="utf-8")
    r = invoke("compare", *old, "--no-store", "--no-ledger", "-m", "R@budget=1200", "--strict",
               "-f", "json")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["fairness"] == []
