"""The retriever and reranker spec grammar of :mod:`._specs` as pydantic models.

One model per ``kind`` (``extra="forbid"``, strict types: ``true`` is not a number), named by
its entry in :mod:`._kinds` and joined from the registry in discriminated unions on ``kind``; a
shorthand name (``"bm25"``, ``"e5"``) is expanded to its table before the union picks a model.
The experiment file embeds :data:`Retriever` and :data:`Reranker` in its own schema, so one
validation reports every problem of a file. Imported on first validation, never by
``import ragmeter``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, model_validator
from pydantic import ValidationError as PydanticError

from .._errors import Problem
from ..io._schema_problems import Keys, Positive, field_name, must, rule, schema_errors
from ._kinds import FIRST_STAGE, KINDS, MODELS, PIPELINES, RERANKERS, Kind, shorthands

Number = Annotated[int | float, must("int or float")]
Text = Annotated[str, must("a string")]
Share = Annotated[int | float, Field(ge=0, le=1), must("a number between 0 and 1")]
Language = Annotated[str | Literal[False], must("a language name or false")]
ModelName = Annotated[Literal["minilm", "e5", "st"], must(f"one of {', '.join(MODELS)}")]
#: embedding threads (minilm, e5): a whole number >= 1 or "auto" (ragmeter.retrieval._threads)
Threads = Annotated[
    Annotated[int, Field(ge=1)] | Literal["auto"], must("a whole number >= 1 or 'auto'")
]
#: index each chunk with its document's title (true), without it (false); absent: the chunker's
#: convention (``document`` joins titles, windows do not); see ragmeter.chunking.index_texts
Title = Annotated[bool, must("true or false")]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class BM25Spec(_Spec):
    kind: Literal["bm25"]
    k1: Number | None = None
    b: Share | None = None
    method: Text | None = None
    stemmer: Language | None = None
    stopwords: Language | None = None
    title: Title | None = None


class _EncoderSpec(_Spec):
    """Options shared by the dense retriever and the bi-encoder reranker."""

    model: ModelName | None = None
    path: Text | None = None
    max_length: Positive | None = None
    batch_size: Positive | None = None
    query_prefix: Text | None = None
    passage_prefix: Text | None = None
    threads: Threads | None = None

    @model_validator(mode="after")
    def _path_is_for_st(self) -> _EncoderSpec:
        model = self.model or KINDS[self.kind].defaults["model"]  # type: ignore[attr-defined]
        if model == "st" and self.path is None:
            raise rule("model 'st' needs path = the sentence-transformers model folder", "path")
        if model == "st" and self.threads is not None:
            raise rule("threads is for the minilm and e5 models, not 'st'", "threads")
        if model != "st" and self.path is not None:
            raise rule(f"path is only for model 'st', not '{model}'", "path")
        return self


class DenseSpec(_EncoderSpec):
    kind: Literal["dense"]
    title: Title | None = None


class BiEncoderSpec(_EncoderSpec):
    kind: Literal["bi-encoder"]
    top: Positive | None = None


class CrossEncoderSpec(_Spec):
    kind: Literal["cross-encoder"]
    path: Text | None = None
    top: Positive | None = None
    batch_size: Positive | None = None

    @model_validator(mode="after")
    def _needs_path(self) -> CrossEncoderSpec:
        if self.path is None:
            raise rule("a cross-encoder needs path = a local CrossEncoder model folder", "path")
        return self


def _two(value: Any) -> Any:
    if not isinstance(value, list) or len(value) != 2:
        raise rule('\'of\' must list exactly two retrievers, e.g. of = ["bm25", "dense"]')
    return value


class HybridSpec(_Spec):
    kind: Literal["hybrid"]
    fusion: Annotated[Literal["rrf", "weighted"], must("'rrf' or 'weighted'")] | None = None
    k: Number | None = None
    weight: Share | None = None
    pool: Positive | None = None
    of: Annotated[list[FirstStage], BeforeValidator(_two)] | None = None
    title: Title | None = None

    @model_validator(mode="after")
    def _title_on_the_hybrid(self) -> HybridSpec:
        # both retrievers are fitted on the same texts: one title setting, the hybrid's
        if any(getattr(spec, "title", None) is not None for spec in self.of or ()):
            raise rule(
                "set title on the hybrid table, not on the retrievers it fuses (both index "
                "the same texts)",
                "of",
            )
        return self


Target = Annotated[
    str,
    Field(pattern=r"^\S.*:[A-Za-z_][A-Za-z0-9_.]*$"),
    must('"module:name" such as "mypkg.rag:retrieve", or "file.py:name"'),
]
OnError = Annotated[Literal["record", "raise"], must("'record' or 'raise'")]
#: seconds one call of the pipeline may take (0: no limit; absent: 300, pipelines._calls)
Timeout = Annotated[
    int | float, Field(ge=0, le=86_400, allow_inf_nan=False), must("seconds from 0 to 86400")
]


class _PipelineSpec(_Spec):
    """The user's own pipeline (:mod:`ragmeter.retrieval.pipelines`), imported from ``target``."""

    kind: str
    target: Target | None = None
    on_error: OnError | None = None
    timeout: Timeout | None = None

    @model_validator(mode="after")
    def _needs_target(self) -> _PipelineSpec:
        if self.target is None:
            what = "retrieve" if self.kind == "python" else "make_retriever"
            raise rule(f'a {self.kind} retriever needs target = "mypkg.rag:{what}"', "target")
        return self


class PythonSpec(_PipelineSpec):
    kind: Literal["python"]


class LangChainSpec(_PipelineSpec):
    kind: Literal["langchain"]
    doc_key: Text | None = None


class LlamaIndexSpec(_PipelineSpec):
    kind: Literal["llamaindex"]


def _table(kinds: Mapping[str, Kind[object]], value: Any) -> Any:
    """A shorthand name as its table; a table whose ``kind`` the union can dispatch on."""
    names = shorthands(kinds)
    if isinstance(value, str):
        if value not in names:
            raise rule(
                f"unknown name '{value}'; use one of {', '.join(names)} or a table "
                f"with kind = {' | '.join(repr(k) for k in kinds)}"
            )
        return dict(names[value])
    if not isinstance(value, dict):
        raise rule(f"expected a name or a table, got {type(value).__name__}")
    if value.get("kind") not in kinds:
        raise rule(f"kind must be one of {', '.join(kinds)}, got {value.get('kind')!r}", "kind")
    return value


def _first_stage_table(value: Any) -> Any:
    return _table(FIRST_STAGE, value)


def _retriever_table(value: Any) -> Any:
    return _table({**FIRST_STAGE, **PIPELINES}, value)


def _reranker_table(value: Any) -> Any:
    if value is False or value == "none":
        return None
    return _table(RERANKERS, value)


def _models(kinds: Mapping[str, Kind[object]]) -> tuple[type[_Spec], ...]:
    """The settings models of ``kinds``, each checked to be a spec model of its kind."""
    out = []
    for kind in kinds.values():
        model = globals().get(kind.settings)
        if (
            not isinstance(model, type)
            or not issubclass(model, _Spec)
            or model.model_fields["kind"].annotation != Literal[kind.name]
        ):  # pragma: no cover - a registry mistake (tests/retrieval/test_retriever_kinds.py)
            raise TypeError(f"{kind.settings} is not the settings model of kind {kind.name!r}")
        out.append(model)
    return tuple(out)


if TYPE_CHECKING:  # the unions are built from the registry; statically, any spec model
    FirstStage = _Spec
    Retriever = _Spec
    Reranker = _Spec | None
else:
    #: ragmeter's own retrievers (what a hybrid fuses)
    FirstStage = Annotated[
        Union[_models(FIRST_STAGE)],  # noqa: UP007 - a union of a tuple built at run time
        Field(discriminator="kind"),
        BeforeValidator(_first_stage_table),
    ]
    #: a retriever of an experiment: one of ragmeter's or the user's own pipeline
    Retriever = Annotated[
        Union[_models({**FIRST_STAGE, **PIPELINES})],  # noqa: UP007
        Field(discriminator="kind"),
        BeforeValidator(_retriever_table),
    ]
    Reranker = Annotated[
        Union[(*_models(RERANKERS), None)],
        Field(discriminator="kind"),
        BeforeValidator(_reranker_table),
    ]
HybridSpec.model_rebuild()

SPECS: dict[str, type[_Spec]] = dict(zip(KINDS, _models(KINDS), strict=True))
RETRIEVER: TypeAdapter[Any] = TypeAdapter(Retriever)
RERANKER: TypeAdapter[Any] = TypeAdapter(Reranker)


def unknown_option(table: dict[str, Any], keys: Keys) -> str:
    """The message for a key a spec table does not know, listing the options of its kind."""
    kind = str(table.get("kind"))
    options = sorted(set(SPECS[kind].model_fields) - {"kind"}) if kind in SPECS else []
    return f"unknown option '{keys[-1]}' for kind '{kind}'; options: {', '.join(options)}"


def spec_problems(
    adapter: TypeAdapter[Any], value: Any, field: str, path: str | None
) -> list[Problem]:
    """Every problem of one spec, each at ``field`` plus the sub-key it is about."""
    try:
        adapter.validate_python(value)
    except PydanticError as exc:
        return [
            Problem(message, path, None, field_name(field, keys))
            for keys, message in schema_errors(exc, value, unknown_option)
        ]
    return []
