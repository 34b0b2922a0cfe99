"""DataFrame forms of an experiment, a comparison and a sweep: the same numbers as their
``--format csv`` rows, and MissingExtraError naming the ``pandas`` extra without pandas."""

from __future__ import annotations

import builtins
import csv
import io
import warnings

import numpy as np
import pytest
from _experiment_files import toy_experiment

from ragmeter import MissingExtraError
from ragmeter.paired import Sweep

pd = pytest.importorskip("pandas")  # justified: DataFrames are the optional [pandas] extra

TOML = (
    'name = "frames"\ngolden = "golden.jsonl"\ncorpus = "corpus.jsonl"\n'
    'output = "out"\nk = 2\nheadroom_k = 8\nmetrics = ["R", "RR"]\n'
    '[baseline]\nchunker = "tokens:20:0"\nretriever = "bm25"\ndepth = 10\n'
    '[[variant]]\nname = "smaller chunks"\nchunker = "tokens:10:0"\n'
)


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory):
    from ragmeter.experiments import run_experiment

    folder = tmp_path_factory.mktemp("frames")
    toy_experiment(folder, TOML)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_experiment(folder / "experiment.toml", use_cache=False)


def test_experiment_frame_is_the_csv_rows(result) -> None:
    frame = result.to_frame()
    assert list(frame.index) == ["baseline", "smaller chunks"]
    assert frame.index.name == "variant"
    rows = result.table_rows()  # what --format csv prints (rounded to 4 digits)
    assert list(frame.columns) == [c for c in rows[0] if c != "variant"]
    for row in rows:
        for col, value in row.items():
            if col == "variant":
                continue
            got = frame.loc[row["variant"], col]
            if isinstance(value, float):
                assert round(float(got), 4) == value
            elif value is None:
                assert got is None or pd.isna(got)
            else:
                assert got == value


def test_comparison_frame_rows_per_question(result) -> None:
    from ragmeter import compare

    base, cand = result.variants[0].evaluation, result.variants[1].evaluation
    metric = str(base.metrics[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # two chunkings at one k: the fairness note is expected
        c = compare(base, cand, metric=metric, n_resamples=200, seed=1)
    frame = c.to_frame()
    assert frame.index.name == "query"
    assert list(frame.columns) == ["baseline", "candidate", "delta"]
    assert list(frame.index) == list(c.query_ids)
    np.testing.assert_allclose(frame["baseline"], c.baseline_values)
    np.testing.assert_allclose(frame["delta"], c.candidate_values - c.baseline_values)
    assert frame["delta"].mean() == pytest.approx(c.mean_delta)


def test_sweep_frame_runs_by_cutoffs() -> None:
    from ragmeter.metrics import Metric

    s = Sweep(
        Metric("R", 1),
        "k",
        (1, 2, 5),
        ("bm25", "dense"),
        np.array([[0.25, 0.5, 0.75], [0.5, 0.5, 1.0]]),
    )
    frame = s.to_frame()
    assert frame.index.name == "run" and frame.columns.name == "k"
    assert frame.loc["dense", 5] == 1.0 and frame.loc["bm25", 2] == 0.5
    # the long form equals the CSV rows of ragmeter sweep: (run, cutoff, value)
    long = frame.stack()
    assert [(r, k, v) for (r, k), v in long.items()] == [
        ("bm25", 1, 0.25), ("bm25", 2, 0.5), ("bm25", 5, 0.75),
        ("dense", 1, 0.5), ("dense", 2, 0.5), ("dense", 5, 1.0),
    ]  # fmt: skip


def test_without_pandas_the_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    real = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("no pandas")
        return real(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "pandas", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_pandas)
    s = Sweep.__new__(Sweep)
    with pytest.raises(MissingExtraError, match=r"pip install 'ragmeter\[pandas\]'"):
        s.to_frame()


def test_run_csv_matches_frame_columns(result, capsys: pytest.CaptureFixture[str]) -> None:
    from ragmeter.cli._common import Format
    from ragmeter.cli._run import _output

    _output(result, Format.csv)
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["variant"] for r in rows] == list(result.to_frame().index)
