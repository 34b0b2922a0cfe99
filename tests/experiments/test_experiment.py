"""Experiment files: TOML loading, validation with file/line/field, one-change and budget
warnings."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from ragmeter import InputError, RagmeterWarning, ValidationError
from ragmeter.experiments import effective_changes, load_experiment
from ragmeter.experiments._config import chunk_size
from ragmeter.metrics import parse

HEAD = """\
name = "toy"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
k = 4
budget = 1200
headroom_k = 20
metrics = ["R", "RR", "nDCG"]

[baseline]
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "experiment.toml"
    p.write_text(text, encoding="utf-8")
    return p


def load_quiet(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_experiment(path)


def test_a_variant_inherits_everything_it_does_not_change(tmp_path) -> None:
    exp = load_quiet(
        write(
            tmp_path,
            HEAD
            + """
[[variant]]
name = "hybrid"
retriever = "hybrid"

[[variant]]
name = "rerank"
reranker = { kind = "bi-encoder", model = "e5", top = 30 }
""",
        )
    )
    assert exp.golden == tmp_path / "golden.jsonl" and exp.output == tmp_path / "runs"
    base, hybrid, rerank = exp.all_variants
    assert base.is_baseline and base.settings.k == 4 and base.settings.budget == 1200
    assert hybrid.settings.chunker == "tokens:300:0" and hybrid.settings.depth == 50
    assert hybrid.settings.retriever["kind"] == "hybrid" and hybrid.changes == ("retriever",)
    assert rerank.changes == ("reranker",) and rerank.settings.reranker["top"] == 30
    assert rerank.settings.label() == "bm25 > e5@30"
    assert exp.warnings == ()
    assert exp.prompt_metrics(base.settings) == tuple(
        parse(m) for m in ("R@4", "R@budget=1200", "RR@4", "RR@budget=1200", "nDCG@4")
    )
    assert str(exp.headroom_metric()) == "R@20"


def test_smaller_chunks_at_equal_budget_is_one_change(tmp_path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exp = load_experiment(
            write(
                tmp_path,
                HEAD
                + """
[[variant]]
name = "smaller chunks"
chunker = "tokens:100:0"
k = 12
""",
            )
        )
    v = exp.variants[0]
    assert v.changes == ("chunker", "k")
    assert effective_changes(exp.baseline.settings, v.settings) == ("chunking",)
    assert v.settings.nominal_budget == 1200


def test_warns_when_a_variant_changes_two_things(tmp_path) -> None:
    path = write(
        tmp_path,
        HEAD
        + """
[[variant]]
name = "two at once"
retriever = "dense"
reranker = "e5"
""",
    )
    with pytest.warns(RagmeterWarning, match="changes 2 things \\(reranker, retriever\\)"):
        exp = load_experiment(path)
    assert len(exp.warnings) == 1


def test_warns_when_variants_differ_in_context_budget(tmp_path) -> None:
    text = (
        HEAD.replace("budget = 1200\n", "")
        + """
[[variant]]
name = "bigger chunks"
chunker = "tokens:900:0"

[[variant]]
name = "more passages"
k = 8

[[variant]]
name = "sentences"
chunker = "sentences:3"
"""
    )
    with pytest.warns(RagmeterWarning) as record:
        exp = load_experiment(write(tmp_path, text))
    msgs = [str(w.message) for w in record]
    assert any(
        "'bigger chunks' has a context budget of 3600 tokens against the baseline's 1200" in m
        for m in msgs
    )
    assert any("'more passages' has a context budget of 2400" in m for m in msgs)
    assert any("'sentences' may differ from the baseline in context budget" in m for m in msgs)
    assert len(exp.warnings) == 3


def test_warns_when_a_variant_changes_nothing(tmp_path) -> None:
    with pytest.warns(RagmeterWarning, match="changes nothing"):
        load_experiment(
            write(tmp_path, HEAD + '\n[[variant]]\nname = "same"\nretriever = "bm25"\n')
        )


def test_every_problem_is_reported_with_file_line_and_field(tmp_path) -> None:
    path = write(
        tmp_path,
        """\
golden = "golden.jsonl"
k = 0
metrics = ["R", "Recal"]
colour = "blue"

[baseline]
chunker = "tokens:300:0"
retriever = { kind = "bm25", k1 = "high" }

[[variant]]
name = "bad reranker"
reranker = { kind = "cross-encoder" }

[[variant]]
name = "bad depth"
depth = 10
""",
    )
    with pytest.raises(ValidationError) as info:
        load_experiment(path)
    problems = {p.field: p for p in info.value.problems}
    assert problems["corpus"].message.startswith("'corpus' is required")
    assert problems["k"].line == 2
    assert "Recal" in problems["metrics"].message and problems["metrics"].line == 3
    assert problems["colour"].line == 4
    assert problems["baseline.retriever.k1"].line == 8
    assert problems["variant[1].reranker.path"].line == 12
    assert "below headroom_k 50" in problems["variant[2].depth"].message
    assert problems["variant[2].depth"].line == 16
    assert all(p.path == str(path) for p in info.value.problems)
    assert str(path) in str(info.value)


def test_toml_syntax_errors_name_the_line(tmp_path) -> None:
    path = write(tmp_path, 'name = "x"\ngolden = \n')
    with pytest.raises(InputError) as info:
        load_experiment(path)
    assert info.value.line == 2 and "not valid TOML" in str(info.value)


def test_missing_file_is_an_input_error(tmp_path) -> None:
    with pytest.raises(InputError, match="not found"):
        load_experiment(tmp_path / "nope.toml")


def test_rank_only_metrics_need_a_prompt_k(tmp_path) -> None:
    text = HEAD.replace("k = 4\n", "")
    with pytest.raises(ValidationError, match="nDCG are scored at the prompt k"):
        load_experiment(write(tmp_path, text))
    exp = load_quiet(write(tmp_path, text.replace('"nDCG"', '"nDCG@10"')))
    assert str(exp.prompt_metrics(exp.baseline.settings)[-1]) == "nDCG@10"


def test_imported_runs_and_chunk_files_are_paths(tmp_path) -> None:
    exp = load_quiet(
        write(
            tmp_path,
            HEAD
            + """
[[variant]]
name = "production"
run = "prod/run.jsonl"
""",
        )
    )
    v = exp.variants[0]
    assert v.settings.run == tmp_path / "prod" / "run.jsonl"
    assert v.settings.retriever is None and v.settings.label() == "imported run.jsonl"
    assert effective_changes(exp.baseline.settings, v.settings) == ("run",)


def test_duplicate_variant_names_are_rejected(tmp_path) -> None:
    with pytest.raises(ValidationError, match="used twice"):
        load_quiet(write(tmp_path, HEAD + '\n[[variant]]\nname = "baseline"\nk = 5\n'))


def test_chunk_size_reads_size_named_chunkers() -> None:
    assert chunk_size("tokens:300:50") == 300
    assert chunk_size("recursive:512:64") == 512
    assert chunk_size("sections:400") == 400
    assert chunk_size("sentences:3") is None and chunk_size(None) is None


def test_the_fare_rules_experiment_is_one_change_per_variant_at_equal_budget(
    fare_rules_dir,
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no multi-change or budget warning
        exp = load_experiment(fare_rules_dir / "experiment.toml")
    assert [v.name for v in exp.all_variants] == [
        "baseline",
        "smaller chunks",
        "hybrid",
        "reranker",
    ]
    assert {v.settings.nominal_budget for v in exp.all_variants} == {1200}
    assert [v.changes for v in exp.variants] == [("chunker", "k"), ("retriever",), ("reranker",)]
    assert exp.golden.is_file() and exp.corpus.is_file()
