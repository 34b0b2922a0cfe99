"""``run_experiment`` hooks for recording a run variant by variant: a loaded ``Experiment`` in
place of the path, ``on_variant_start`` before and ``on_variant`` right after each variant."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from _experiment_files import toy_experiment
from test_experiment_run import EXPERIMENT

from ragmeter.experiments import (
    Experiment,
    VariantResult,
    config_record_of,
    load_experiment,
    run_experiment,
    slug,
)

#: the toy experiment with BM25 variants only (no encoder: fast, no model download)
BM25_ONLY = EXPERIMENT.split('[[variant]]\nname = "dense"')[0] + (
    '[[variant]]\nname = "deeper"\ndepth = 20\n\n[[variant]]\nname = "k3"\nk = 3\n'
)
NAMES = ["baseline", "smaller chunks", "deeper", "k3"]


@pytest.fixture
def experiment(tmp_path) -> Path:
    return toy_experiment(tmp_path, BM25_ONLY)


def quiet(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_experiment(path, **kwargs)


def test_on_variant_sees_each_finished_variant_in_order(experiment) -> None:
    seen: list[tuple[str, str]] = []
    results: list[VariantResult] = []

    def on_start(variant, golden_version) -> None:
        seen.append(("start", variant.name))
        assert golden_version is not None and golden_version.startswith("g-")

    def on_variant(result: VariantResult) -> None:
        seen.append(("done", result.name))
        results.append(result)
        # complete when reported: scored, and its files already written
        assert result.evaluation.n_queries == 5
        folder = experiment.parent / "out" / slug(result.name)
        assert (folder / "evaluation.json").is_file() and (folder / "config.json").is_file()
        # the store records the mapping config.json holds
        written = json.loads((folder / "config.json").read_text())
        assert config_record_of(load_experiment(experiment, warn=False), result) == written
        # ... and the next variant has not started
        later = [slug(n) for n in NAMES[NAMES.index(result.name) + 1 :]]
        assert not any((experiment.parent / "out" / f).exists() for f in later)

    result = quiet(experiment, on_variant=on_variant, on_variant_start=on_start)
    assert [v.name for v in result.variants] == NAMES
    assert seen == [(kind, n) for n in NAMES for kind in ("start", "done")]
    assert results == list(result.variants)
    assert [r.evaluation for r in results] == [v.evaluation for v in result.variants]
    assert results[0].is_baseline and not any(r.is_baseline for r in results[1:])


def test_an_exception_from_the_callback_stops_the_run(experiment) -> None:
    calls: list[str] = []

    class Stop(Exception):
        pass

    def on_variant(result: VariantResult) -> None:
        calls.append(result.name)
        if len(calls) == 2:
            raise Stop(result.name)

    with pytest.raises(Stop, match="smaller chunks"):
        quiet(experiment, on_variant=on_variant)
    assert calls == ["baseline", "smaller chunks"]
    out = experiment.parent / "out"
    assert not (out / "deeper").exists() and not (out / "summary.json").exists()


def test_a_loaded_experiment_runs_as_its_file(experiment) -> None:
    exp = load_experiment(experiment, warn=False)
    assert isinstance(exp, Experiment)
    quiet(experiment, write=False)  # warm the cache, so both runs below read it alike
    from_path = quiet(experiment, write=False)
    from_exp = quiet(exp, write=False)
    assert from_exp.experiment is exp
    assert from_exp.golden_version == from_path.golden_version
    assert from_exp.table_rows() == from_path.table_rows()
    for a, b in zip(from_path.variants, from_exp.variants, strict=True):
        assert (a.name, a.label, a.changes, a.settings) == (b.name, b.label, b.changes, b.settings)
        assert a.evaluation.per_query == b.evaluation.per_query
        assert a.evaluation.aggregate == b.evaluation.aggregate
        assert a.chunk_evaluation.aggregate == b.chunk_evaluation.aggregate
        assert a.ranked_table().equals(b.ranked_table())
        assert a.context_tokens == b.context_tokens
    summary = {k: v for k, v in from_exp.to_dict().items() if k != "seconds"}
    expected = {k: v for k, v in from_path.to_dict().items() if k != "seconds"}
    for d in (summary, expected):
        for v in d["variants"]:
            v.pop("timings")
    assert summary == expected


def test_context_tokens_are_those_of_the_top_k_or_the_budget(experiment) -> None:
    """Mean over questions of the tokens of the first k ranked chunks (or of the chunks that
    fit the budget), computed here one question at a time."""
    from ragmeter.labels import assemble

    # no top-level k: the baseline and "deeper" fill the 40-token budget, the others take k
    experiment.write_text(BM25_ONLY.replace("k = 2\n", "").replace(', "nDCG"', ""))
    result = quiet(experiment, write=False)
    assert [v.settings.k for v in result.variants] == [None, 4, None, 3]
    for v in result.variants:
        table = v.ranked_table().to_pylist()
        per_q: dict[str, list[int]] = {}
        for row in table:
            chunk = v.chunks.get(row["item"])
            per_q.setdefault(row["qid"], []).append(chunk.n_tokens)
        s = v.settings
        if s.k is not None:
            want = [sum(t[: s.k]) for t in per_q.values()]
        else:
            want = [sum(t[: assemble(t, s.budget)]) for t in per_q.values()]
        assert v.context_tokens == pytest.approx(sum(want) / len(want), rel=1e-15)
