"""Document-level experiments: a BEIR folder run with ``ragmeter run`` alone (``beir = ...``,
``chunker = "document"``, ``level = "document"``) scores as trec_eval scores the document run."""

from __future__ import annotations

import json
import re
import shutil
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter import ValidationError, evaluate
from ragmeter.cli import app
from ragmeter.experiments import load_experiment, run_experiment
from ragmeter.retrieval import BM25Retriever

FIXTURE = Path(__file__).parents[1] / "fixtures" / "data" / "beir"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "beir-scifact" / "experiment.toml"

EXPERIMENT = """\
name = "tiny BEIR"
beir = "beir"
level = "document"
output = "out"
k = 2
headroom_k = 3
metrics = ["nDCG", "R", "RR"]

[baseline]
chunker = "document"
retriever = "bm25"
depth = 4

[[variant]]
name = "windows"
chunker = "tokens:3:0"
"""


def _qrels_from_tsv(path: Path) -> dict[str, dict[str, int]]:
    """The BEIR qrels file read independently of ragmeter's loader."""
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        out.setdefault(qid, {})[doc] = int(score)
    return out


def _beir_texts(folder: Path) -> tuple[list[str], list[str], dict[str, str]]:
    """Document ids, BEIR's title + " " + text, and the query texts."""
    ids, texts = [], []
    for line in (folder / "corpus.jsonl").read_text().splitlines():
        d = json.loads(line)
        ids.append(d["_id"])
        texts.append(f"{d['title']} {d['text']}" if d["title"] else d["text"])
    queries = {
        json.loads(x)["_id"]: json.loads(x)["text"]
        for x in (folder / "queries.jsonl").read_text().splitlines()
    }
    return ids, texts, queries


@pytest.fixture
def beir_experiment(tmp_path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "beir")
    path = tmp_path / "experiment.toml"
    path.write_text(EXPERIMENT)
    return path


def test_ragmeter_run_matches_evaluate_on_the_document_run(beir_experiment) -> None:
    res = CliRunner().invoke(app, ["run", str(beir_experiment), "--format", "json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["level"] == "document"
    base = summary["variants"][0]

    # the document run BEIR evaluates: BM25 over title + text, one item per document
    ids, texts, queries = _beir_texts(beir_experiment.parent / "beir")
    qrels = _qrels_from_tsv(beir_experiment.parent / "beir" / "qrels" / "test.tsv")
    judged = [q for q in queries if any(g > 0 for g in qrels.get(q, {}).values())]
    assert judged == ["1", "2", "3"]
    r = BM25Retriever()
    r.fit(ids, texts)
    doc_run = r.search([queries[q] for q in judged], 4, qids=judged)
    expected = evaluate(qrels, doc_run, ["nDCG@2", "R@2", "RR@2", "R@3"])
    assert base["metrics"] == pytest.approx(expected.aggregate, abs=1e-12)
    assert expected.n_queries == 3  # query 5 (judged only 0) is in neither

    out = beir_experiment.parent / "out" / "baseline"
    ev = json.loads((out / "evaluation.json").read_text())
    assert ev["config"]["level"] == "document" and ev["config"]["chunking"] == "document"
    assert json.loads((out / "config.json").read_text())["level"] == "document"
    # the rolled-up run names documents; the chunk run keeps chunk ids over the text offsets
    assert (out / "document_run.trec").read_text().split("\n")[0].split()[:3] == ["1", "Q0", "d1"]
    assert re.match(r"1 Q0 d1#0-40 1 ", (out / "run.trec").read_text())


def test_titles_are_searchable_and_windows_roll_up_to_documents(tmp_path) -> None:
    """A query whose only match is a title word finds the document through the document chunker
    (title + text indexed) but not through token windows (chunk text only)."""
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        '{"_id": "x", "title": "Zebrafish", "text": "Fins regrow after injury in adults."}\n'
        '{"_id": "y", "title": "", "text": "Regrow fins quickly. Adults regrow fins."}\n'
    )
    (folder / "queries.jsonl").write_text(
        '{"_id": "q", "text": "zebrafish"}\n{"_id": "r", "text": "regrow fins adults"}\n'
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq\tx\t1\nr\ty\t2\nr\tx\t1\n"
    )
    path = tmp_path / "experiment.toml"
    path.write_text('tokenizer = "regex-words"\n' + EXPERIMENT.replace("tokens:3:0", "tokens:2:0"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_experiment(path, write=False)
    base, windows = result.variants
    assert base.evaluation.column("RR@2") == {"q": 1.0, "r": 1.0}
    # "zebrafish" is only in x's title: the windows (text only) never retrieve x
    assert windows.evaluation.column("RR@2")["q"] == 0.0
    # x and y have 4 two-token windows each ("fins ." is one). For r, two windows of y rank 1
    # and 2 and x's best window ranks 3: rolled up, y is 1st and x 2nd, so both relevant
    # documents are within k = 2 (counting chunks, x would be out)
    assert windows.chunking["n_chunks"] == 8 and windows.chunking["n_docs"] == 2
    assert [d.split("#")[0] for d in windows.run.doc.to_pylist()[:3]] == ["y", "y", "x"]
    assert windows.evaluation.column("R@2")["r"] == 1.0
    assert windows.evaluation.column("RR@2")["r"] == 1.0
    assert windows.evaluation.config["level"] == "document"


def test_document_level_table_and_comparison_use_every_metric_at_k(beir_experiment) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_experiment(beir_experiment, write=False)
    rows = result.table_rows()
    assert [r["level"] for r in rows] == ["document", "document"]
    assert {"nDCG@2", "R@2", "RR@2"} <= set(rows[0])
    assert result.to_dict()["vs_baseline"][0]["metric"] == "nDCG@2"
    assert result.baseline.chunk_evaluation is None


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        ('level = "pages"\n', "level", "'level' must be one of span, document"),
        ('metrics = ["AllR"]\n', "metrics", "AllR needs span labels"),
        ('metrics = ["R@budget=100"]\n', "metrics", "a token budget applies to span metrics"),
        ('golden = "g.jsonl"\n', "golden", "'golden' and 'beir' are exclusive"),
    ],
)
def test_bad_document_settings_name_their_field(tmp_path, extra, field, message) -> None:
    text = EXPERIMENT.replace('metrics = ["nDCG", "R", "RR"]\n', "")
    if extra.startswith("level"):
        text = text.replace('level = "document"\n', "")
    path = tmp_path / "e.toml"
    path.write_text(extra + text)
    with pytest.raises(ValidationError) as info:
        load_experiment(path, warn=False)
    problems = [p for p in info.value.problems if p.field == field]
    assert problems and message in problems[0].message, info.value.problems
    assert problems[0].line == 1


def test_document_level_needs_the_prompt_k(tmp_path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(EXPERIMENT.replace("k = 2\n", "budget = 300\n"))
    with pytest.raises(ValidationError) as info:
        load_experiment(path, warn=False)
    assert any("every metric is scored at the prompt k" in p.message for p in info.value.problems)


def test_beir_split_needs_a_beir_folder(tmp_path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(
        EXPERIMENT.replace(
            'beir = "beir"\n', 'golden = "g.jsonl"\ncorpus = "c.jsonl"\nbeir_split = "dev"\n'
        )
    )
    with pytest.raises(ValidationError) as info:
        load_experiment(path, warn=False)
    assert [p.field for p in info.value.problems] == ["beir_split"]


def test_the_beir_folder_and_split_resolve_against_the_file(beir_experiment) -> None:
    exp = load_experiment(beir_experiment, warn=False)
    folder = beir_experiment.parent / "beir"
    assert exp.beir == folder and exp.beir_split == "test" and exp.level == "document"
    assert exp.golden == folder / "qrels" / "test.tsv"
    assert exp.corpus == folder / "corpus.jsonl"
    # document level: no budget columns, metrics at k only
    assert [str(m) for m in exp.prompt_metrics(exp.baseline.settings)] == ["nDCG@2", "R@2", "RR@2"]


def _scifact_sample(scifact: Path, folder: Path, n_queries: int = 40) -> None:
    """A BEIR folder cut from SciFact's test split: its first ``n_queries`` judged queries, their
    relevant documents and every tenth other document (about 560), lines copied as they are."""
    rows = [x.split("\t") for x in (scifact / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    qids = set(list(dict.fromkeys(r[0] for r in rows))[:n_queries])
    relevant = {r[1] for r in rows if r[0] in qids}
    corpus = (scifact / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    queries = (scifact / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(x + "\n" for i, x in enumerate(corpus) if i % 10 == 0 or _id(x) in relevant),
        encoding="utf-8",
    )
    (folder / "queries.jsonl").write_text(
        "".join(x + "\n" for x in queries if _id(x) in qids), encoding="utf-8"
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join("\t".join(r) + "\n" for r in rows if r[0] in qids)
    )


def _id(line: str) -> str:
    return str(json.loads(line)["_id"])


def _example_on(beir: Path, tmp_path: Path) -> Path:
    """The shipped example experiment, its ``beir`` pointed at ``beir``."""
    text, n = re.subn(r'(?m)^beir = "[^"]*"', f'beir = "{beir.as_posix()}"', EXAMPLE.read_text())
    assert n == 1
    path = tmp_path / "experiment.toml"
    path.write_text(text)
    return path


@pytest.mark.data
def test_the_example_experiment_scores_as_bm25_on_scifact_documents(data_root, tmp_path) -> None:
    """The shipped example experiment on a sample of SciFact (40 test queries, about 560
    documents): each variant scores per query exactly as BM25 over title + text, ranked by
    ragmeter's retriever outside the runner (stemmed, then unstemmed) and evaluated on the BEIR
    qrels. The full collection's published figures are the slow test below."""
    sample = tmp_path / "beir"
    _scifact_sample(data_root / "beir-scifact", sample)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_experiment(_example_on(sample, tmp_path), cache_dir=tmp_path / "cache")
    ids, texts, queries = _beir_texts(sample)
    qrels = _qrels_from_tsv(sample / "qrels" / "test.tsv")
    assert len(queries) == 40 and 500 < len(ids) < 600
    base, no_stem = result.variants
    assert base.chunking["n_chunks"] == len(ids) and base.evaluation.n_queries == 40
    for variant, stemmer in ((base, "english"), (no_stem, None)):
        r = BM25Retriever(stemmer=stemmer)
        r.fit(ids, texts)
        doc_run = r.search(list(queries.values()), 100, qids=list(queries))
        metrics = sorted(variant.evaluation.aggregate)
        assert metrics == ["R@10", "R@100", "RR@10", "nDCG@10"]
        expected = evaluate(qrels, doc_run, metrics)
        for m in metrics:
            assert variant.evaluation.column(m) == pytest.approx(expected.column(m), abs=1e-12), m
    assert base.value("nDCG@10") != no_stem.value("nDCG@10")  # the variant's stemmer is used
    assert json.loads((tmp_path / "runs" / "summary.json").read_text())["level"] == "document"


@pytest.mark.data
@pytest.mark.slow
def test_scifact_bm25_document_level_through_the_example_experiment(data_root, tmp_path) -> None:
    """The shipped example experiment on SciFact (test split, 300 queries): BM25 over title +
    text, nDCG@10 as the README reports it (BEIR publishes 0.665 for Elasticsearch BM25).
    Slow (about 15 s of CPU: 5,183 documents chunked and indexed twice); the sampled test above
    checks the same runner against BM25 directly, and tests/retrieval/test_real_retrieval.py
    checks BM25 on the whole collection against BEIR's figure in the everyday suite."""
    path = _example_on(data_root / "beir-scifact", tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_experiment(path, cache_dir=tmp_path / "cache")
    base, no_stem = result.variants
    assert base.evaluation.n_queries == 300
    assert base.chunking["n_chunks"] == 5183
    assert round(base.value("nDCG@10"), 3) == 0.679
    assert round(no_stem.value("nDCG@10"), 3) == 0.663
    assert json.loads((tmp_path / "runs" / "summary.json").read_text())["level"] == "document"


@pytest.mark.data
@pytest.mark.slow
def test_scifact_readme_figures_through_ragmeter_run(data_root, tmp_path) -> None:
    """The README's SciFact nDCG@10 figures come out of ``ragmeter run`` on the shipped
    examples/beir-scifact/minilm.toml: BM25 0.679, MiniLM 0.647 (both over title + text), and
    0.667 for BM25 with ``title = false`` (what ``ragmeter run`` gave when it dropped titles).
    MiniLM encodes 5,183 abstracts (about 4.5 min on 2 cores cold); embeddings are kept in
    $RAGMETER_TEST_CACHE when set, as tests/retrieval/test_real_retrieval.py does."""
    import os

    text = (EXAMPLE.parent / "minilm.toml").read_text()
    text, n = re.subn(
        r'(?m)^beir = "[^"]*"', f'beir = "{(data_root / "beir-scifact").as_posix()}"', text
    )
    assert n == 1
    path = tmp_path / "minilm.toml"
    path.write_text(text)
    cache = os.environ.get("RAGMETER_TEST_CACHE") or str(tmp_path / "cache")
    args = ["run", str(path), "--format", "json", "--no-store", "--cache-dir", cache]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["level"] == "document"
    got = {v["name"]: v for v in summary["variants"]}
    assert list(got) == ["bm25", "bm25 no titles", "minilm"]
    ndcg = {name: round(v["metrics"]["nDCG@10"], 3) for name, v in got.items()}
    assert ndcg == {"bm25": 0.679, "bm25 no titles": 0.667, "minilm": 0.647}
    for folder in ("bm25", "bm25-no-titles", "minilm"):
        ev = json.loads((tmp_path / "runs" / folder / "evaluation.json").read_text())
        assert ev["n_queries"] == 300 and ev["config"]["level"] == "document"


def test_the_docs_show_the_shipped_example_experiment() -> None:
    """docs/retrieval.md quotes examples/beir-scifact/experiment.toml (below its comment header)
    verbatim, and the example loads as a document-level BEIR experiment."""
    docs = (EXAMPLE.parents[2] / "docs" / "retrieval.md").read_text(encoding="utf-8")
    body = EXAMPLE.read_text(encoding="utf-8").split('\nname = "', 1)[1]
    assert f'```toml\nname = "{body}```' in docs
    exp = load_experiment(EXAMPLE, warn=False)
    assert exp.level == "document" and exp.baseline.settings.chunker == "document"
    assert exp.beir is not None and exp.beir.name == "beir-scifact"


def test_the_printed_table_rounds_once(beir_experiment, monkeypatch) -> None:
    """0.66253 prints as 0.663: the rich table formats exact values, not the 4-digit JSON ones
    (rounding twice printed SciFact's no-stemming nDCG@10, 0.66253, as 0.662)."""
    from rich.console import Console

    from ragmeter.cli._render_experiment import render_experiment
    from ragmeter.experiments import VariantResult

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_experiment(beir_experiment, write=False)
    monkeypatch.setattr(VariantResult, "value", lambda self, metric: 0.66253)
    console = Console(width=120, record=True)
    for renderable in render_experiment(result):
        console.print(renderable)
    text = console.export_text()
    assert text.count("0.663") == 8 and "0.662" not in text  # 2 variants x 4 columns
    assert result.table_rows()[0]["nDCG@2"] == 0.6625  # JSON/CSV keep 4 digits
