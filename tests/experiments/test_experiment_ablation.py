"""Context ablations in experiment files: ``context.source`` = "oracle", "none" or
"oracle+distractors" as one change against the retrieved baseline.

The run half runs ``examples/fare-rules/ablation.toml`` (a copy: the run writes beside the file)
offline, with the extractive stand-in generator and the fake judge, twice: the second run must
make no generator call. Every variant's written files must be readable by the answer commands
(context ids resolvable in its chunks.jsonl, the same counts from ``ragmeter answers check``).
The file half checks the rules: the source is validated, needs a generator and span labels, is
refused in the baseline, and is its own named change (``context.source``).
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
from _experiment_files import FARE_RULES, fare_rules_experiment
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import RagmeterWarning, ValidationError, load_golden
from ragmeter.cli import app
from ragmeter.experiments import effective_changes, load_experiment, run_experiment
from ragmeter.generation import CONTEXT_SOURCES
from ragmeter.paired import changes

EXAMPLE = FARE_RULES / "ablation.toml"
GOLDEN = FARE_RULES / "golden.jsonl"
CORPUS = FARE_RULES / "corpus.jsonl"
#: variant name -> its output folder (the slug of the name) and source
VARIANTS = {
    "retrieved": ("retrieved", "retrieved"),
    "oracle": ("oracle", "oracle"),
    "none": ("none", "none"),
    "oracle+distractors": ("oracle-distractors", "oracle+distractors"),
}


def _run(path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RagmeterWarning)  # the example warns about nothing
        return run_experiment(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Any]:
    """The example run twice in a copy of its folder: (path, first result, second result).
    The chunking and the BM25 run come from the example's cache; answers are made here."""
    root = tmp_path_factory.mktemp("ablation")
    path = fare_rules_experiment(
        root,
        EXAMPLE.read_text(encoding="utf-8"),
        trees=("generators",),
        cache=["chunkings", "runs", "bm25"],
    )
    return path, _run(path), _run(path)


def _answers(r: Any) -> dict[str, Any]:
    return {v.name: v.answers for v in r.variants}


def _folder(path: Path, variant: str) -> Path:
    return path.parent / "runs" / "ablation" / VARIANTS[variant][0]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- the run ---------------------------------------------------------------------------------
def test_the_example_reruns_from_the_caches_with_no_model_call(runs) -> None:
    path, first, second = runs
    assert [v.name for v in first.variants] == list(VARIANTS)
    assert sum(a.model_calls for a in _answers(first).values()) > 0
    for name, a in _answers(second).items():
        assert a.model_calls == 0 and a.cache_hits == len(a.records), name
        assert a.usage() == {}, name  # nothing made, nothing spent
        # the fake judge is rule-based: it calls no model and counts nothing
        assert a.judge is not None and "FAKE JUDGE" in a.judge and a.judge_usage is None
        assert all(g["cached"] for g in _jsonl(_folder(path, name) / "generations.jsonl"))
    # the cached re-run gives the same answers, checks and judgements
    for (name, a), b in zip(_answers(first).items(), _answers(second).values(), strict=True):
        assert a.records == b.records, name
        assert a.report.summary() == b.report.summary(), name
        assert a.judgements() == b.judgements(), name


def test_each_variant_reads_its_source_and_is_one_change(runs) -> None:
    _, first, _ = runs
    for v in first.variants:
        assert v.answers.source == VARIANTS[v.name][1]
        assert v.changes == (() if v.is_baseline else ("context.source",))
    assert first.experiment.warnings == ()


def test_the_written_files_resolve_and_reproduce_the_counts(runs) -> None:
    """answers.jsonl's context ids are chunks of the variant's chunks.jsonl, answer_check.json
    records the source and the questions without an oracle passage, and ``ragmeter answers
    check`` on the written files gives the run's correctness counts."""
    path, first, _ = runs
    golden = load_golden(GOLDEN)
    unlabelled = [q.id for q in golden.questions if not q.evidence]
    assert unlabelled  # the example has unanswerable questions
    for name, a in _answers(first).items():
        folder = _folder(path, name)
        chunks = {c["id"]: c for c in _jsonl(folder / "chunks.jsonl")}
        records = _jsonl(folder / "answers.jsonl")
        for rec in records:
            assert set(rec["context"]) <= set(chunks), (name, rec["id"])
        check = json.loads((folder / "answer_check.json").read_text(encoding="utf-8"))
        assert check["context"]["source"] == VARIANTS[name][1]
        oracle = VARIANTS[name][1].startswith("oracle")
        assert check["no_oracle_passage"] == (unlabelled if oracle else [])
        res = CliRunner().invoke(
            app,
            [
                "answers",
                "check",
                str(folder / "answers.jsonl"),
                "--golden",
                str(path.parent / "golden.jsonl"),
                "--corpus",
                str(path.parent / "corpus.jsonl"),
                "--chunks",
                str(folder / "chunks.jsonl"),
                "--format",
                "json",
            ],
        )
        assert res.exit_code == 0, res.output
        summary = json.loads(res.stdout)["summary"]
        # correctness is the deterministic check's; "ok" also reads the run's judge
        for key in ("n_scored", "correct", "cites_outside_context"):
            assert summary[key] == a.report.summary()[key], (name, key)


def test_the_contexts_are_what_each_source_says(runs) -> None:
    """oracle: passages cover labelled evidence, within the retrieved context's tokens and k;
    none: nothing; oracle+distractors: evidence first, then retrieved passages holding none."""
    path, first, _ = runs
    golden = {q.id: q for q in load_golden(GOLDEN).questions}
    a = _answers(first)
    retrieved = a["retrieved"].contexts
    retrieved_ids = {c["id"] for c in _jsonl(_folder(path, "retrieved") / "chunks.jsonl")}

    def holds_evidence(p: Any, qid: str) -> bool:
        return any(
            e.doc == p.doc and p.start < e.end and e.start < p.end for e in golden[qid].evidence
        )

    for qid, ctx in a["none"].contexts.items():
        assert ctx.passages == () and ctx.text == "", qid
    for qid, ctx in a["oracle"].contexts.items():
        if not golden[qid].evidence:
            assert ctx.passages == (), qid
            continue
        assert 1 <= len(ctx.passages) <= 4, qid
        assert all(holds_evidence(p.passage, qid) for p in ctx.passages), qid
        assert ctx.n_tokens <= retrieved[qid].n_tokens, qid
    for qid, ctx in a["oracle+distractors"].contexts.items():
        if not golden[qid].evidence:
            assert ctx.passages == (), qid
            continue
        flags = [holds_evidence(p.passage, qid) for p in ctx.passages]
        assert flags[0] and flags == sorted(flags, reverse=True), qid  # evidence first
        assert len(ctx.passages) <= 4 and ctx.n_tokens <= retrieved[qid].n_tokens, qid
        distractors = [p.passage for p, f in zip(ctx.passages, flags, strict=True) if not f]
        assert all(p.id in retrieved_ids for p in distractors), qid


def test_with_no_context_the_stand_in_answers_only_the_unanswerable(runs) -> None:
    """The stand-in copies a sentence from a passage: with none it abstains on every question,
    which is right exactly for the unanswerable ones."""
    _, first, _ = runs
    none = _answers(first)["none"]
    unanswerable = sum(not q.answerable for q in load_golden(GOLDEN).questions)
    assert all(c.abstained for c in none.report.checks)
    assert none.report.summary()["correct"] == unanswerable


def test_ragmeter_run_prints_the_ablations_as_one_change_each(runs, tmp_path) -> None:
    path, _, _ = runs
    copy = tmp_path / "copy"
    shutil.copytree(path.parent, copy)
    res = CliRunner().invoke(app, ["run", str(copy / path.name), "--no-store"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "context.source" in text and "changes 2 things" not in text
    assert "oracle context" in text and "none context" in text
    assert "every answer from the cache" in text


# --- the file's rules ------------------------------------------------------------------------
HEAD = f"""
golden = "{GOLDEN}"
corpus = "{CORPUS}"
k = 4
headroom_k = 20
"""
GENERATOR = """
[generator]
kind = "python"
target = "generators.extractive:answer"
"""
BASE = """
[baseline]
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50
"""


def _load(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "e.toml"
    path.write_text(text)
    return load_experiment(path)


def _problems(tmp_path: Path, text: str) -> list[tuple[str | None, int | None, str]]:
    with pytest.raises(ValidationError) as e:
        _load(tmp_path, text)
    return [(p.field, p.line, p.message) for p in e.value.problems]


def _variant(body: str) -> str:
    return f'\n[[variant]]\nname = "v"\n{body}\n'


@pytest.mark.parametrize("source", ["oracle", "none", "oracle+distractors"])
def test_a_source_alone_is_one_change_at_the_same_budget(tmp_path, source) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", RagmeterWarning)
        exp = _load(
            tmp_path, HEAD + GENERATOR + BASE + _variant(f'context = {{source = "{source}"}}')
        )
    (v,) = exp.variants
    assert exp.warnings == () and v.settings.source == source
    assert v.settings.context_spec().source == source
    assert effective_changes(exp.baseline.settings, v.settings) == ("context.source",)


def test_the_source_and_the_order_are_two_changes(tmp_path) -> None:
    with pytest.warns(RagmeterWarning, match=r"changes 2 things \(context.source, order\)"):
        exp = _load(
            tmp_path,
            HEAD + GENERATOR + BASE + _variant('context = {source = "oracle", order = "reverse"}'),
        )
    assert len(exp.warnings) == 1


def test_writing_the_retrieved_source_changes_nothing(tmp_path) -> None:
    with pytest.warns(RagmeterWarning, match="changes nothing"):
        exp = _load(
            tmp_path, HEAD + GENERATOR + BASE + _variant('context = {source = "retrieved"}')
        )
    assert exp.variants[0].settings.context == exp.baseline.settings.context
    assert "source" not in (exp.baseline.settings.context or {})


def test_the_one_change_rule_names_the_source_in_any_config() -> None:
    base = {"settings": {"k": 4, "context": {"order": "rank"}}}
    oracle = {"settings": {"k": 4, "context": {"order": "rank", "source": "oracle"}}}
    assert [c.name for c in changes(base, oracle)] == ["context.source"]
    assert [
        c.name for c in changes({"context_source": "retrieved"}, {"context_source": "none"})
    ] == ["context.source"]
    both = {"settings": {"k": 4, "context": {"order": "reverse", "source": "oracle"}}}
    assert [c.name for c in changes(base, both)] == ["context.source", "order"]


_CONTEXTS = st.fixed_dictionaries(
    {
        "order": st.sampled_from(["rank", "reverse", "sandwich"]),
        "dedupe": st.booleans(),
        "headers": st.booleans(),
    },
    optional={"source": st.sampled_from(CONTEXT_SOURCES[1:])},
)


@given(_CONTEXTS, _CONTEXTS)
def test_each_context_setting_is_its_own_named_change(a, b) -> None:
    """Over any two contexts: the source is ``context.source``, the order ``order``, dedupe and
    headers ``context``, each counted once however many keys differ."""
    expect = set()
    if a.get("source") != b.get("source"):
        expect.add("context.source")
    if a["order"] != b["order"]:
        expect.add("order")
    if (a["dedupe"], a["headers"]) != (b["dedupe"], b["headers"]):
        expect.add("context")
    found = changes({"settings": {"k": 4, "context": a}}, {"settings": {"k": 4, "context": b}})
    assert [c.name for c in found] == sorted(expect)


def test_an_unknown_source_is_refused_with_its_line_and_field(tmp_path) -> None:
    text = HEAD + GENERATOR + BASE + _variant('context = {source = "orcale"}')
    [(field, line, message)] = _problems(tmp_path, text)
    assert field == "variant[1].context.source"
    assert line == text.splitlines().index('context = {source = "orcale"}') + 1
    # the file's sources are the ones the generation package builds
    assert f"one of {', '.join(CONTEXT_SOURCES)}" in message and "orcale" in message


def test_a_source_needs_a_generator(tmp_path) -> None:
    text = HEAD + BASE + _variant('context = {source = "oracle"}')
    [(field, line, message)] = _problems(tmp_path, text)
    assert field == "variant[1].context.source"
    assert line == text.splitlines().index('context = {source = "oracle"}') + 1
    assert "needs a generator" in message and "[generator]" in message
    # written at the top level, it is reported there
    text = HEAD + 'context = {source = "none"}\n' + BASE
    [(field, line, message)] = _problems(tmp_path, text)
    assert field == "context.source" and "needs a generator" in message
    assert line == text.splitlines().index('context = {source = "none"}') + 1


def test_the_baseline_reads_what_it_retrieved(tmp_path) -> None:
    text = HEAD + GENERATOR + BASE + 'context = {source = "oracle"}\n'
    [(field, line, message)] = _problems(tmp_path, text)
    assert field == "baseline.context.source"
    assert line == text.splitlines().index('context = {source = "oracle"}') + 1
    assert "baseline must read the passages it retrieved" in message and "[[variant]]" in message


def test_a_source_needs_span_labels(tmp_path) -> None:
    text = (
        HEAD.replace("k = 4", 'k = 4\nlevel = "document"\nmetrics = ["R"]')
        + GENERATOR
        + BASE
        + _variant('context = {source = "oracle+distractors"}')
    )
    [(field, line, message)] = _problems(tmp_path, text)
    assert field == "variant[1].context.source"
    assert line == text.splitlines().index('context = {source = "oracle+distractors"}') + 1
    assert "needs span labels" in message and "document-level or BEIR" in message


def test_a_source_on_a_beir_folder_is_refused(tmp_path) -> None:
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "data" / "beir", tmp_path / "beir")
    text = (
        'beir = "beir"\nk = 2\nheadroom_k = 3\nmetrics = ["R"]\n'
        + GENERATOR
        + '\n[baseline]\nchunker = "document"\nretriever = "bm25"\ndepth = 4\n'
        + _variant('context = {source = "oracle"}')
    )
    found = _problems(tmp_path, text)
    assert any(
        f == "variant[1].context.source" and "needs span labels" in m for f, _, m in found
    ), found


def test_the_cli_reports_a_bad_source_with_file_line_and_field(tmp_path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(HEAD + BASE + _variant('context = {source = "oracle"}'))
    res = CliRunner().invoke(app, ["run", str(path), "--no-store"])
    assert res.exit_code == 2
    out = " ".join(res.output.split())
    assert f"{path}:" in out and "variant[1].context.source" in out
    assert "Traceback" not in res.output
