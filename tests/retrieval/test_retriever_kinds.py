"""The registry of retriever and reranker kinds (ragmeter.retrieval._kinds): every kind builds from
its defaults, its settings model is its own, and the messages list every kind it holds."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from ragmeter._errors import Problem
from ragmeter.retrieval import (
    KINDS,
    EncoderPool,
    Retriever,
    build_reranked,
    build_retriever,
    describe,
)
from ragmeter.retrieval._kinds import FIRST_STAGE, PIPELINES, RERANKERS, Build
from ragmeter.retrieval._progress import SILENT
from ragmeter.retrieval._spec_schema import SPECS
from ragmeter.retrieval._specs import normalize_reranker, normalize_retriever
from ragmeter.retrieval.pipelines import Pipeline
from ragmeter.retrieval.rerank import RerankRetriever

REPO = Path(__file__).resolve().parents[2]

#: the options a kind has no default for (everything else comes from its registry entry)
REQUIRED: dict[str, dict[str, Any]] = {
    "python": {"target": "rag.py:retrieve"},
    "langchain": {"target": "rag.py:make_langchain"},
    "llamaindex": {"target": "rag.py:make_llamaindex"},
    "cross-encoder": {"path": "models/my-ce"},
}
RAG = """
class _LangChain:
    def invoke(self, question):
        return []


class _LlamaIndex:
    def retrieve(self, question):
        return []


def retrieve(question):
    return []


def make_langchain():
    return _LangChain()


def make_llamaindex():
    return _LlamaIndex()
"""


def _spec(name: str) -> dict[str, Any]:
    problems: list[Problem] = []
    table = {"kind": name, **REQUIRED.get(name, {})}
    normalize = normalize_reranker if KINDS[name].role == "reranker" else normalize_retriever
    spec = normalize(table, "retriever", problems)
    assert problems == [] and spec is not None
    return spec


def test_the_registry_holds_every_role_once() -> None:
    assert list(KINDS) == [*FIRST_STAGE, *PIPELINES, *RERANKERS]
    assert {k.role for k in FIRST_STAGE.values()} == {"first-stage"}
    assert {k.role for k in PIPELINES.values()} == {"pipeline"}
    assert {k.role for k in RERANKERS.values()} == {"reranker"}
    assert all(name == kind.name for name, kind in KINDS.items())


@pytest.mark.parametrize("name", list(KINDS))
def test_each_kind_has_its_own_settings_model(name: str) -> None:
    kind = KINDS[name]
    model = SPECS[name]
    assert model.__name__ == kind.settings
    assert model.model_fields["kind"].annotation.__args__ == (name,)  # type: ignore[union-attr]
    # every default is an option of the model, and the defaults validate
    assert set(kind.defaults) <= set(model.model_fields) - {"kind"}
    assert kind.description and kind.label(_spec(name))


@pytest.mark.parametrize("name", list(KINDS))
def test_each_kind_builds_from_its_defaults(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = _spec(name)
    role = KINDS[name].role
    if role == "first-stage":
        built: object = build_retriever(spec)
        assert isinstance(built, Retriever)
    elif role == "reranker":
        (tmp_path / "models" / "my-ce").mkdir(parents=True)  # the cross-encoder's folder
        first = build_retriever(_spec("bm25"))
        built = build_reranked(first, spec, pool=EncoderPool(tmp_path))
        assert isinstance(built, RerankRetriever) and built.top == spec["top"]
    else:
        monkeypatch.delenv("NLTK_DATA", raising=False)
        (tmp_path / "rag.py").write_text(RAG, encoding="utf-8")
        built = KINDS[name].build(spec, Build(None, EncoderPool(tmp_path), SILENT))
        assert isinstance(built, Pipeline)
    assert describe(spec) == KINDS[name].label(spec)


def test_each_shorthand_is_a_valid_table_of_its_kind() -> None:
    for kind in KINDS.values():
        for short, table in kind.shorthands.items():
            problems: list[Problem] = []
            normalize = normalize_reranker if kind.role == "reranker" else normalize_retriever
            spec = normalize(short, "retriever", problems)
            assert problems == [] and spec is not None and spec["kind"] == kind.name
            assert table["kind"] == kind.name


def test_the_extras_are_the_packages_extras() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    extras = set(pyproject["project"]["optional-dependencies"])
    for kind in KINDS.values():
        assert set(kind.extras) <= extras, kind.name


def test_the_messages_list_every_kind_of_the_registry() -> None:
    problems: list[Problem] = []
    assert normalize_retriever({"kind": "nope"}, "retriever", problems) is None
    assert normalize_retriever("nope", "retriever", problems) is None
    assert normalize_reranker({"kind": "nope"}, "reranker", problems) is None
    kind_msg, name_msg, reranker_msg = (p.message for p in problems)
    retrievers = [*FIRST_STAGE, *PIPELINES]
    assert f"kind must be one of {', '.join(retrievers)}, got 'nope'" in kind_msg
    assert " | ".join(repr(k) for k in retrievers) in name_msg
    for kind in FIRST_STAGE.values():
        assert all(short in name_msg for short in kind.shorthands)
    assert f"kind must be one of {', '.join(RERANKERS)}, got 'nope'" in reranker_msg
