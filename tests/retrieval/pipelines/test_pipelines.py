"""The user's own pipeline as a plain function: spans or chunk ids, scored exactly like ragmeter's
retrievers; errors recorded per question; every output problem named; the experiment file's
``retriever = {kind = "python", target = ...}``; the CLI's errors column and notes."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from _experiment_files import QUESTIONS, TEXTS, toy_corpus, toy_experiment, toy_golden
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import UsageError, ValidationError
from ragmeter.chunking import chunk_corpus
from ragmeter.cli import app
from ragmeter.data import Corpus, Document, GoldenSet
from ragmeter.experiments import load_experiment, run_experiment
from ragmeter.io import Run
from ragmeter.labels import evaluate_spans
from ragmeter.retrieval import BM25Retriever, read_byo_run
from ragmeter.retrieval.pipelines import CallablePipeline, load_target, run_pipeline

METRICS = ["R@1", "R@3", "Hit@3", "RR@10", "AllR@5", "R@budget=30", "RR@budget=40"]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return toy_corpus()


@pytest.fixture(scope="module")
def golden(corpus) -> GoldenSet:
    return toy_golden(corpus, grade=2)


@pytest.fixture(scope="module")
def chunking(corpus):
    return chunk_corpus(corpus, "tokens:12:0")


@pytest.fixture(scope="module")
def bm25_lists(chunking, golden) -> dict[str, list[str]]:
    """BM25's ranked chunk ids per question (best first)."""
    r = BM25Retriever(stemmer=None, stopwords=None)
    r.fit(chunking.ids, chunking.text)
    run = r.search([q.question for q in golden], 8, qids=[q.id for q in golden])
    from ragmeter.retrieval._protocol import ranked_lists

    return {q: [c for c, _ in pairs] for q, pairs in ranked_lists(run).items()}


def _chunk_run(lists: dict[str, list[str]]) -> Run:
    import pyarrow as pa

    rows = [(q, c, -float(r)) for q, cs in lists.items() for r, c in enumerate(cs, 1)]
    return Run(
        qid=pa.array([r[0] for r in rows], type=pa.string()),
        doc=pa.array([r[1] for r in rows], type=pa.string()),
        score=np.array([r[2] for r in rows]),
        name="chunks",
    )


# -- the scores equal ragmeter's own scoring -------------------------------------------------


def test_spans_from_a_function_score_exactly_as_the_same_chunks_of_a_retriever(
    corpus, golden, chunking, bm25_lists
) -> None:
    """A function that returns BM25's chunks as (doc, start, end, score) spans scores, question
    by question, exactly as BM25's chunk run on the chunking."""
    by_question = {q.question: q.id for q in golden}

    def retrieve(question: str) -> list[tuple[str, int, int, float]]:
        ids = bm25_lists.get(by_question[question], [])
        out = []
        for rank, cid in enumerate(ids):
            c = chunking.get(cid)
            out.append((c.doc, c.start, c.end, 10.0 - rank))
        return out

    piped = run_pipeline(retrieve, golden, corpus)
    assert piped.shape == "spans" and piped.errors == () and piped.notes == ()
    ours = evaluate_spans(golden, chunking, _chunk_run(bm25_lists), METRICS)
    theirs = piped.evaluate(golden, METRICS)
    assert ours.query_ids == theirs.query_ids
    assert np.array_equal(ours.values, theirs.values)
    assert ours.aggregate["R@3"] > 0.5  # not two empty runs agreeing
    # scores strictly decrease down each list: the run keeps them
    assert sorted(set(piped.run.score.tolist()), reverse=True)[0] == 10.0


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_ranking_of_spans_scores_as_the_same_ranking_of_chunk_ids(
    data, corpus, golden, chunking
) -> None:
    """Over random rankings (random chunks, random order, random depth): the pipeline's spans
    and the same chunk ids ranked the same way give identical values on every metric."""
    ids = chunking.ids
    lists = {
        q.id: data.draw(st.lists(st.sampled_from(ids), unique=True, max_size=10), label=q.id)
        for q in golden
    }
    text_of = {q.id: q.question for q in golden}
    qid_of = {v: k for k, v in text_of.items()}

    def retrieve(question: str) -> list[tuple[str, int, int]]:
        spans = []
        for cid in lists[qid_of[question]]:
            c = chunking.get(cid)
            spans.append((c.doc, c.start, c.end))
        return spans

    if not any(lists.values()):
        return  # an empty run is refused by both sides alike
    piped = run_pipeline(retrieve, golden, corpus)
    ours = evaluate_spans(golden, chunking, _chunk_run(lists), METRICS)
    theirs = piped.evaluate(golden, METRICS)
    assert np.array_equal(ours.values, theirs.values)


def test_chunk_ids_are_scored_on_the_given_chunking(corpus, golden, chunking, bm25_lists) -> None:
    text_of = {q.question: q.id for q in golden}
    piped = run_pipeline(
        lambda q: bm25_lists.get(text_of[q], []), golden, corpus, chunking=chunking, depth=3
    )
    assert piped.shape == "chunks" and piped.chunking is chunking
    short = {q: cs[:3] for q, cs in bm25_lists.items()}
    ours = evaluate_spans(golden, chunking, _chunk_run(short), METRICS)
    assert np.array_equal(ours.values, piped.evaluate(golden, METRICS).values)
    assert any("more than depth = 3" in n for n in piped.notes)


def test_the_pipelines_order_is_the_ranking_when_scores_disagree(corpus, golden) -> None:
    """Distances (lower = better) do not reorder the list: the run ranks by the pipeline's
    order, says so, and scores -rank."""
    fees = TEXTS["fees"]
    s = fees.index("75 dollars")

    def retrieve(question: str) -> list[tuple[str, int, int, float]]:
        return [("fees", s, s + 10, 0.1), ("fees", 0, 5, 0.9)]  # best first, as distances

    piped = run_pipeline(retrieve, golden, corpus)
    assert piped.run.score.tolist()[:2] == [-1.0, -2.0]
    assert any("do not strictly decrease" in n for n in piped.notes)
    rr = piped.evaluate(golden, ["RR@10"]).column("RR@10")
    assert rr["q1"] == 1.0  # the span at rank 1 holds q1's answer


def test_repeated_spans_keep_their_first_rank(corpus, golden) -> None:
    def retrieve(question: str) -> list[tuple[str, int, int]]:
        return [("fees", 0, 10), ("refunds", 0, 10), ("fees", 0, 10)]

    piped = run_pipeline(retrieve, golden, corpus)
    assert len(piped.run.qid) == 2 * len(QUESTIONS)
    assert any(f"{len(QUESTIONS)} repeated item(s)" in n for n in piped.notes)


# -- errors are recorded, counted, never hidden ---------------------------------------------


def _flaky(question: str) -> list[tuple[str, int, int]]:
    if "refund" in question:
        raise TimeoutError("the [bold]index[/bold] timed out :smile:")
    return [("fees", 0, 40)]


def test_errors_are_recorded_per_question_and_count_as_retrieving_nothing(corpus, golden) -> None:
    piped = run_pipeline(_flaky, golden, corpus)
    assert [e.qid for e in piped.errors] == ["q2", "q5"]
    e = piped.errors[0]
    assert e.error == "TimeoutError: the [bold]index[/bold] timed out :smile:"
    assert e.where.startswith("test_pipelines.py:") and e.where.endswith("in _flaky")
    assert piped.notes[0].startswith("the pipeline raised an error on 2 of 5 questions")
    ev = piped.evaluate(golden, ["R@3"])
    assert ev.n_queries == 5 and ev.column("R@3")["q2"] == 0.0  # scored, as a miss


def test_on_error_raise_stops_at_the_first_error_naming_the_question(corpus, golden) -> None:
    with pytest.raises(UsageError, match=r"raised on question 'q2': TimeoutError") as info:
        run_pipeline(_flaky, golden, corpus, on_error="raise")
    assert isinstance(info.value.__cause__, TimeoutError)


def test_a_pipeline_that_fails_on_every_question_stops_the_run(corpus, golden) -> None:
    def broken(question: str) -> list[str]:
        raise KeyError("OPENAI_API_KEY")

    with pytest.raises(UsageError, match="raised an error on every one of the 5 questions"):
        run_pipeline(broken, golden, corpus)


def test_keyboard_interrupt_is_not_recorded_as_a_question_error(corpus, golden) -> None:
    def interrupted(question: str) -> list[str]:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_pipeline(interrupted, golden, corpus)


# -- output that breaks the contract: every problem, each naming question and document --------


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ([("nowhere", 0, 5)], "question 'q1': item 1: document 'nowhere' is not in the corpus"),
        ([("fees", 5, 5000)], "span 5-5000 is not inside document 'fees'"),
        ([("fees", 0, 5.5)], "start and end must be integers"),
        ("fees#0-10", "expected a list of hits, got str"),
        ([{"text": "x"}], "a mapping needs the keys doc, start, end"),
        ([("fees", 0, 5, "high")], "score must be a number"),
        ([("fees", 0, 5, float("nan"))], "score must be finite"),
        ([("fees", 0, 5), "fees#0-5"], "item 2 is a chunk id but earlier answers were spans"),
        (["fees#0-5"], "need the chunking they are ids of"),
    ],
)
def test_output_problems_name_the_question_and_stop_the_run(
    corpus, golden, output, message
) -> None:
    with pytest.raises(ValidationError) as info:
        run_pipeline(lambda q: output, golden, corpus)
    text = str(info.value)
    assert message in text
    assert "the output of python(" in text
    # every question's problem is listed, not only the first (the missing chunking once)
    assert len(info.value.problems) == (1 if "chunking they are ids" in message else 5)


def test_unknown_chunk_ids_are_named(corpus, golden, chunking) -> None:
    with pytest.raises(ValidationError, match="chunk 'fees#0-3' is not a chunk of 'tokens:12:0'"):
        run_pipeline(lambda q: ["fees#0-3"], golden, corpus, chunking=chunking)


def test_mappings_are_accepted(corpus, golden, chunking) -> None:
    c = chunking[0]
    spans = run_pipeline(
        lambda q: [{"doc": c.doc, "start": c.start, "end": c.end, "score": 1.5}], golden, corpus
    )
    ids = run_pipeline(lambda q: [{"chunk": c.id}], golden, corpus, chunking=chunking)
    assert spans.run.doc.to_pylist()[0] == ids.run.doc.to_pylist()[0] == c.id
    assert spans.run.score.tolist()[0] == 1.5


def test_bad_arguments_are_usage_errors(corpus, golden) -> None:
    with pytest.raises(UsageError, match="on_error must be"):
        run_pipeline(_flaky, golden, corpus, on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="cannot run int as a pipeline"):
        run_pipeline(3, golden, corpus)
    with pytest.raises(UsageError, match="must be a callable"):
        CallablePipeline("retrieve")  # type: ignore[arg-type]


def test_written_outputs_reimport_as_the_same_run(tmp_path, corpus, golden) -> None:
    piped = run_pipeline(_flaky, golden, corpus)
    retrieved, errors = piped.write(tmp_path)
    again = read_byo_run(retrieved, corpus=corpus)
    assert again.run.doc.to_pylist() == piped.run.doc.to_pylist()
    assert [json.loads(x)["qid"] for x in errors.read_text().splitlines()] == ["q2", "q5"]


# -- targets --------------------------------------------------------------------------------


def test_targets_load_from_a_module_or_a_file_beside_the_experiment(tmp_path) -> None:
    (tmp_path / "helper_g3.py").write_text("VALUE = 41\n")
    (tmp_path / "rag_g3.py").write_text(
        "from helper_g3 import VALUE\n\nclass P:\n    @staticmethod\n"
        "    def retrieve(q):\n        return VALUE + 1\n"
    )
    assert load_target("rag_g3:P.retrieve", tmp_path)("x") == 42
    assert load_target("rag_g3.py:P.retrieve", tmp_path)("x") == 42
    assert str(tmp_path.resolve()) not in __import__("sys").path  # the path is restored


@pytest.mark.parametrize(
    ("target", "files", "message"),
    [
        ("nomodule_g3:f", {}, "no module named 'nomodule_g3'"),
        ("missing.py:f", {}, "no file"),
        ("rag_g3b:nothing", {"rag_g3b.py": "def f(q):\n    return []\n"}, "has no 'nothing'"),
        (
            "rag_g3c:f",
            {"rag_g3c.py": "import not_installed_g3\n"},
            "importing it raised ModuleNotFoundError",
        ),
        ("rag_g3d.py:f", {"rag_g3d.py": "raise RuntimeError('boom')\n"}, "RuntimeError: boom"),
        ("no-colon", {}, "must be 'module:name'"),
    ],
)
def test_target_problems_are_usage_errors(tmp_path, target, files, message) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(UsageError, match=message):
        load_target(target, tmp_path)


# -- the experiment file ---------------------------------------------------------------------

RAG = '''\
def retrieve(question):
    """The team's production retriever (here: the first 60 characters of one document)."""
    if "refund" in question:
        raise TimeoutError("the [bold]index[/bold] timed out :smile:")
    return [("fees", 0, 60, 2.0), ("seats", 0, 38, 1.0)]


def ids(question):
    return [CHUNK]
'''

EXPERIMENT = """\
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "out"
k = 2
budget = 40
headroom_k = 8
metrics = ["R", "RR", "nDCG"]

[baseline]
name = "production"
retriever = {{ kind = "python", target = "rag_exp.py:retrieve"{extra} }}
depth = 10

[[variant]]
name = "bm25"
chunker = "tokens:12:0"
retriever = "bm25"
"""


def _experiment(tmp_path: Path, extra: str = "", rag: str = RAG) -> Path:
    first = chunk_corpus(Corpus([Document(id="fees", text=TEXTS["fees"])]), "tokens:12:0")[0]
    (tmp_path / "rag_exp.py").write_text(f"CHUNK = {first.id!r}\n\n\n" + rag)
    return toy_experiment(tmp_path, EXPERIMENT.format(extra=extra))


def _quiet(path: Path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_experiment(path, **kw)


def test_an_experiment_runs_the_pipeline_in_place_and_records_its_errors(tmp_path) -> None:
    result = _quiet(_experiment(tmp_path))
    prod, bm25 = result.variants
    assert prod.label == "python(rag_exp.py:retrieve)" and prod.chunking["name"] == "spans:python"
    assert [e.qid for e in prod.pipeline_errors] == ["q2", "q5"]
    assert bm25.pipeline_errors is None
    assert prod.notes[0].startswith("the pipeline raised an error on 2 of 5 questions")
    assert not any("no chunk in chunking" in n for n in prod.notes)
    rows = result.table_rows()
    assert [r["errors"] for r in rows] == [2, None]
    # scored on the same labels, question by question: q1's answer is in fees[0:40]
    assert prod.evaluation.column("R@2")["q1"] == 1.0
    assert prod.evaluation.column("R@2")["q2"] == 0.0
    folder = tmp_path / "out" / "production"
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json",
        "errors.jsonl",
        "evaluation.json",
        "retrieved.jsonl",
        "run.trec",
    ]
    config = json.loads((folder / "config.json").read_text())
    assert config["settings"]["retriever"] == {
        "kind": "python",
        "on_error": "record",
        "target": "rag_exp.py:retrieve",
    }
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert len(summary["variants"][0]["pipeline_errors"]) == 2
    assert "pipeline_errors" not in summary["variants"][1]


def test_on_error_raise_in_the_experiment_file(tmp_path) -> None:
    path = _experiment(tmp_path, extra=', on_error = "raise"')
    with pytest.raises(UsageError, match=r"python\(rag_exp.py:retrieve\) raised on question 'q2'"):
        _quiet(path)


def test_chunk_ids_from_a_pipeline_need_a_chunking(tmp_path) -> None:
    path = _experiment(tmp_path)
    path.write_text(path.read_text().replace("rag_exp.py:retrieve", "rag_exp.py:ids"))
    with pytest.raises(ValidationError, match="set chunker or chunks for this variant"):
        _quiet(path)
    text = path.read_text().replace("depth = 10\n", 'depth = 10\nchunker = "tokens:12:0"\n', 1)
    path.write_text(text)
    result = _quiet(path)
    assert result.baseline.run.doc.to_pylist()[0].startswith("fees#0-")
    assert result.baseline.chunking["name"] == "tokens:12:0"


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (
            ("depth = 10\n", 'depth = 10\nreranker = "e5"\n'),
            "baseline.reranker",
            "a reranker applies to ragmeter's own retrievers",
        ),
        (
            ('chunker = "tokens:12:0"\n', ""),
            "variant[1].chunker",
            "retriever bm25 needs a chunking",
        ),
        (
            ('target = "rag_exp.py:retrieve"', 'target = "rag_exp"'),
            "baseline.retriever.target",
            "'target' must be \"module:name\"",
        ),
        (
            ('kind = "python", target = "rag_exp.py:retrieve"', 'kind = "langchain"'),
            "baseline.retriever.target",
            'a langchain retriever needs target = "mypkg.rag:make_retriever"',
        ),
        (
            ('retriever = "bm25"', 'retriever = {kind = "hybrid", of = ["bm25", "python"]}'),
            "variant[1].retriever.of[1]",
            "unknown name 'python'",
        ),
    ],
)
def test_experiment_file_rules_for_pipelines(tmp_path, edit, field, message) -> None:
    path = _experiment(tmp_path)
    path.write_text(path.read_text().replace(*edit))
    with pytest.raises(ValidationError) as info:
        load_experiment(path, warn=False)
    assert any(p.field == field and message in p.message for p in info.value.problems), [
        str(p) for p in info.value.problems
    ]


def test_a_variant_swapping_in_a_pipeline_drops_the_baselines_reranker(tmp_path) -> None:
    path = _experiment(tmp_path)
    path.write_text(
        'golden = "golden.jsonl"\ncorpus = "corpus.jsonl"\nk = 2\nheadroom_k = 8\n'
        '[baseline]\nchunker = "tokens:12:0"\nretriever = "bm25"\nreranker = "minilm"\n'
        'depth = 10\n[[variant]]\nname = "production"\n'
        'retriever = { kind = "python", target = "rag_exp.py:retrieve" }\n'
    )
    exp = load_experiment(path, warn=False)
    assert exp.baseline.settings.reranker is not None
    assert exp.variants[0].settings.reranker is None
    assert exp.variants[0].settings.label() == "python(rag_exp.py:retrieve)"


def test_cli_shows_the_errors_column_and_prints_user_text_literally(tmp_path) -> None:
    path = _experiment(tmp_path)
    res = CliRunner().invoke(
        app, ["run", str(path), "--no-store"], env={"COLUMNS": "120"}, catch_exceptions=False
    )
    assert res.exit_code == 0, res.output
    assert "errors" in res.stdout
    line = next(x for x in res.stdout.splitlines() if "production" in x)
    assert line.rstrip(" │").endswith("2")
    # the error message and the target are printed as written, not as markup or emoji
    assert "[bold]index[/bold] timed out :smile:" in " ".join(res.stderr.split())


def test_cli_output_problems_exit_2_with_the_question_and_document(tmp_path) -> None:
    bad = RAG.replace('("seats", 0, 38, 1.0)', '("gone", 0, 38, 1.0)')
    path = _experiment(tmp_path, rag=bad)
    res = CliRunner().invoke(app, ["run", str(path), "--no-store"], env={"COLUMNS": "120"})
    assert res.exit_code == 2
    assert "question 'q1': item 2: document 'gone' is not in the corpus" in " ".join(
        res.stderr.split()
    )


def test_a_missing_target_module_exits_2(tmp_path) -> None:
    path = _experiment(tmp_path)
    path.write_text(path.read_text().replace("rag_exp.py:retrieve", "not_there_g3:retrieve"))
    res = CliRunner().invoke(app, ["run", str(path), "--no-store"])
    assert res.exit_code == 2
    assert "no module named 'not_there_g3'" in res.stderr
