"""The tables ``ragmeter run`` prints (:mod:`ragmeter.cli._render_experiment`): every nDCG
header says its gain (issue 27, item 3)."""

from __future__ import annotations

from rich.console import Console


def test_run_tables_say_the_gain(fare_rules_result) -> None:  # type: ignore[no-untyped-def]
    from ragmeter.cli._render_experiment import render_experiment

    console = Console(width=200, record=True)
    for part in render_experiment(fare_rules_result):
        console.print(part)
    text = console.export_text()
    # the variants' k differ (4 and 12): the column is nDCG at each variant's prompt k
    assert "nDCG@k (linear)" in text
    assert "nDCG@" not in text.replace("nDCG@k (linear)", "")  # never without its gain
