"""Document titles in what retrievers index: the ``title`` option of ragmeter's retrievers.

docs/formats.md promises a document's title is "indexed by retrievers beside the text". Only the
``document`` chunker did so; with any other chunker ``ragmeter run`` dropped titles (SciFact
BM25 0.667 instead of 0.679). ``title = true`` indexes every chunk as ``title + " " + chunk``,
``title = false`` indexes the chunk text alone (also for the ``document`` chunker), and no
``title`` keeps each chunker's convention (``document`` joins titles, windows do not).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from ragmeter import ValidationError
from ragmeter.chunking import chunk_corpus, index_texts
from ragmeter.data import Document
from ragmeter.experiments import load_experiment, run_experiment, settings_config
from ragmeter.retrieval import describe
from ragmeter.retrieval._specs import normalize_retriever

DOCS = [
    Document(id="a", title="Zebra", text="Herds migrate."),
    Document(id="b", title="Notes", text="A zebra crossing is painted on the old road today."),
    Document(id="c", title=None, text="Coffee beans are roasted."),
    Document(id="d", title="", text="Sleep matters."),
]


# --- the texts ---------------------------------------------------------------------------------
def test_title_true_joins_the_title_to_every_chunk_of_any_chunker() -> None:
    windows = chunk_corpus(DOCS, "tokens:2:0", tokenizer="regex-words")
    texts = index_texts(windows, DOCS, title=True)
    titles = {"a": "Zebra", "b": "Notes"}  # no title, or an empty one: the chunk alone
    assert len(windows) > len(DOCS)  # several chunks per document: each gets the title
    assert texts == [
        f"{titles[d]} {x}" if d in titles else x
        for d, x in zip(windows.doc, windows.text, strict=True)
    ]
    assert texts[0] == "Zebra Herds migrate"  # tokens:2 -> "Herds migrate" (the "." is the 3rd)
    assert windows.text[0] == "Herds migrate"  # the chunk itself (its offsets) is unchanged


def test_title_false_turns_the_document_chunkers_title_off() -> None:
    docs = chunk_corpus(DOCS, "document")
    assert index_texts(docs, DOCS, title=False) == docs.text
    assert index_texts(docs, DOCS)[0] == "Zebra Herds migrate."  # default: the chunker's rule
    windows = chunk_corpus(DOCS, "tokens:2:0")
    assert index_texts(windows, DOCS) == windows.text
    assert index_texts(windows, DOCS, title=None) == windows.text


# --- the spec ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["bm25", "dense", "hybrid"])
@pytest.mark.parametrize("value", [True, False])
def test_the_title_option_is_kept_in_the_normalised_spec(kind: str, value: bool) -> None:
    problems: list = []
    spec = normalize_retriever({"kind": kind, "title": value}, "baseline.retriever", problems)
    assert problems == [] and spec is not None
    assert spec["title"] is value
    plain = normalize_retriever(kind, "baseline.retriever", problems)
    assert plain is not None and "title" not in plain  # absent: the chunker's convention
    assert {k: v for k, v in spec.items() if k != "title"} == plain
    assert describe(spec) == describe(plain)[:-1] + f",title={'on' if value else 'off'})" or (
        describe(spec) == f"{describe(plain)}(title={'on' if value else 'off'})"
    )


def test_the_title_label_in_tables() -> None:
    problems: list = []
    spec = normalize_retriever({"kind": "bm25", "title": False}, "r", problems)
    assert describe(spec) == "bm25(title=off)"
    spec = normalize_retriever({"kind": "bm25", "stemmer": False, "title": True}, "r", problems)
    assert describe(spec) == "bm25(stemmer=off,title=on)"
    spec = normalize_retriever({"kind": "dense", "title": True}, "r", problems)
    assert describe(spec) == "dense(minilm,title=on)"
    spec = normalize_retriever({"kind": "hybrid", "title": False}, "r", problems)
    assert describe(spec) == "hybrid-rrf(bm25+dense(minilm),title=off)"
    assert problems == []


@pytest.mark.parametrize(
    ("value", "field", "says"),
    [
        ({"kind": "bm25", "title": "yes"}, "baseline.retriever.title", "true or false"),
        ({"kind": "dense", "title": 1}, "baseline.retriever.title", "true or false"),
        (
            {"kind": "hybrid", "of": [{"kind": "bm25", "title": True}, "dense"]},
            "baseline.retriever.of",
            "set title on the hybrid table",
        ),
        ({"kind": "python", "target": "m:f", "title": True}, "baseline.retriever.title", "title"),
    ],
)
def test_bad_title_options_are_refused_at_their_field(value, field: str, says: str) -> None:
    problems: list = []
    assert normalize_retriever(value, "baseline.retriever", problems) is None
    assert [p.field for p in problems] == [field], problems
    assert says in problems[0].message


# --- through ragmeter run ---------------------------------------------------------------------
EXPERIMENT = """\
name = "titles"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "runs"
k = 1
headroom_k = 4
metrics = ["R", "RR"]

[baseline]
name = "default"
chunker = "tokens:50:0"
retriever = "bm25"
depth = 4

[[variant]]
name = "titles"
retriever = { kind = "bm25", title = true }
"""


@pytest.fixture
def title_experiment(tmp_path: Path) -> Path:
    with (tmp_path / "corpus.jsonl").open("w") as f:
        for d in DOCS:
            record = {"id": d.id, "text": d.text} | ({"title": d.title} if d.title else {})
            f.write(json.dumps(record) + "\n")
    # "zebra" is in a's title only and in b's text: only the title finds a
    question = {
        "id": "q1",
        "question": "zebra",
        "evidence": [{"doc": "a", "start": 0, "end": 14, "grade": 1}],
    }
    (tmp_path / "golden.jsonl").write_text(json.dumps(question) + "\n")
    path = tmp_path / "experiment.toml"
    path.write_text(EXPERIMENT)
    return path


def test_ragmeter_run_indexes_titles_when_asked(title_experiment: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_experiment(title_experiment, use_cache=False)
    default, titles = result.variants
    # without titles "zebra" matches b's text only: a is not retrieved at all
    assert default.value("R@1") == 0.0 and default.value("R@4") == 0.0
    # with titles a ("Zebra Herds migrate.", 3 words) outranks b (longer, one "zebra")
    assert titles.value("R@1") == 1.0 and titles.value("RR@1") == 1.0
    # the setting is recorded in the variant's config (and so in its config hash)
    config = json.loads((title_experiment.parent / "runs" / "titles" / "config.json").read_text())
    assert config["settings"]["retriever"]["title"] is True
    assert "title" not in settings_config(default.settings)["settings"]["retriever"]
    assert titles.changes == ("retriever",) and titles.label != default.label


def test_a_bad_title_in_an_experiment_names_its_line(title_experiment: Path) -> None:
    title_experiment.write_text(EXPERIMENT.replace("title = true", 'title = "yes"'))
    with pytest.raises(ValidationError) as info:
        load_experiment(title_experiment, warn=False)
    [problem] = info.value.problems
    assert problem.field == "variant[1].retriever.title" and problem.line == 17
