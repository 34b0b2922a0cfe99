"""The experiment file's shape as pydantic models, and one validation that reports every problem.

Each table is a model with ``extra="forbid"`` and strict types; a field says what a valid value
is (``must("a positive integer")``), so its error reads ``'k' must be a positive integer, got
0``. Chunker names and metric names are checked by their own grammars (``make_chunker``,
``metrics.parse``); retriever and reranker tables by the spec models of
:mod:`ragmeter.retrieval._spec_schema`. Rules that join tables (inheritance from the baseline,
depth against ``headroom_k``, one name per variant) stay in :mod:`._config`, which needs the
valid part of a file that has errors: :func:`validate` drops each key that failed and validates
again, so the rules run on valid values and no mistake is reported twice.

Imported by :func:`ragmeter.experiments.load_experiment` when it runs, not by ``import ragmeter``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator
from pydantic import ValidationError as PydanticError

from .._errors import RagmeterError
from ..chunking import make_chunker
from ..io._schema_problems import Keys, Positive, must, rule, schema_errors
from ..metrics import Metric, parse
from ..retrieval._spec_schema import Reranker, Retriever, unknown_option


def _chunker(name: str) -> str:
    try:
        make_chunker(name)
    except RagmeterError as exc:  # the grammar's message lists the valid forms
        raise rule(str(exc)) from None
    return name


def _metric(value: Any) -> Metric:
    try:
        return parse(str(value))
    except RagmeterError as exc:  # the grammar's message names the valid choices
        raise rule(f"metric {value!r}: {exc}") from None


def _headline_text(value: Any) -> Any:
    if not isinstance(value, str):
        raise rule(
            "'headline' must be one metric name, e.g. \"AllR\" (at the prompt's budget, else "
            'its k) or "AllR@budget=1200"'
        )
    return value


def _metric_list(value: Any) -> Any:
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, list) or not value:
        raise rule('\'metrics\' must be a list of metric names, e.g. ["R", "RR", "nDCG"]')
    return value


def _is_table(message: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not isinstance(value, dict):
            raise rule(message)
        return value

    return check


def _is_list(value: Any) -> Any:
    if not isinstance(value, list):
        raise rule("variants are [[variant]] tables")
    return value


Text = Annotated[str, must("a string")]
Name = Annotated[str, Field(pattern=r"\S"), must("a name that labels its runs and folder")]
RelativePath = Annotated[str, Field(pattern=r"\S"), must("a path relative to the experiment file")]
ChunkFile = Annotated[
    str, Field(pattern=r"\S"), must("the path of a chunk file (.parquet or .jsonl)")
]
RunFile = Annotated[str, Field(pattern=r"\S"), must("the path of a JSONL run to import")]
BeirFolder = Annotated[
    str,
    Field(pattern=r"\S"),
    must("the path of a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)"),
]
Split = Annotated[str, Field(pattern=r"\S"), must('a qrels split name such as "test"')]
Chunker = Annotated[str, must('a chunker name such as "tokens:300:0"'), AfterValidator(_chunker)]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


#: the generator kinds of ``[generator]`` (:func:`ragmeter.generation.make_generator`)
GENERATOR_KINDS = ("openai", "local", "python")
#: the context orders (:data:`ragmeter.generation._assemble.ORDERS`)
ORDERS = ("rank", "reverse", "sandwich")
Order = Annotated[Literal["rank", "reverse", "sandwich"], must("one of rank, reverse, sandwich")]
PromptName = Annotated[
    str,
    Field(pattern=r"\S"),
    must('a shipped prompt id such as "answer-v1" or the path of a .txt prompt file'),
]


#: the most repeats an experiment may ask for (``repeat`` of [generator] and [judge])
MAX_REPEAT = 100
Repeat = Annotated[int, Field(ge=1, le=MAX_REPEAT), must(f"a whole number from 1 to {MAX_REPEAT}")]


class GeneratorTable(BaseModel):
    """``[generator]`` (and a variant's ``generator = {...}``): the backend, the prompt and the
    sampling parameters. The backend's own options (``base_url``, ``model``, ``gguf``,
    ``target``, ...) are kept as written and checked by the generator factory."""

    model_config = ConfigDict(extra="allow", strict=True)

    kind: (
        Annotated[Literal["openai", "local", "python"], must("one of openai, local, python")] | None
    ) = None
    prompt: PromptName | None = None
    temperature: Annotated[float, Field(ge=0, le=2), must("a number from 0 to 2")] | None = None
    seed: Annotated[int, must("an integer")] | None = None
    max_tokens: Positive | None = None
    #: answers per question (seed + r for repeat r): experiment-wide, top-level only
    repeat: Repeat | None = None


#: the context sources (:data:`ragmeter.generation.CONTEXT_SOURCES`): what the prompt's
#: passages are; every source but "retrieved" is an ablation against the retrieved baseline
SOURCES = ("retrieved", "oracle", "none", "oracle+distractors")
Source = Annotated[
    Literal["retrieved", "oracle", "none", "oracle+distractors"],
    must("one of retrieved, oracle, none, oracle+distractors"),
]


class ContextTable(_Table):
    """``context = {source, order, dedupe, headers}``: what the prompt's passages are (the
    retrieved ones, or an ablation: the labelled evidence, nothing, the evidence among
    retrieved distractors) and how they become its context (k and budget stay where they are:
    the prompt k / budget of the metrics)."""

    source: Source | None = None
    order: Order | None = None
    dedupe: Annotated[bool, must("true or false")] | None = None
    headers: Annotated[bool, must("true or false")] | None = None


GeneratorT = Annotated[
    GeneratorTable, BeforeValidator(_is_table("'generator' must be a table (kind = ...)"))
]
ContextT = Annotated[
    ContextTable,
    BeforeValidator(_is_table("'context' must be a table, e.g. {order = \"sandwich\"}")),
]


#: the judge kinds of ``[judge]`` (:func:`ragmeter.answers.judges._build.make_judge`)
JUDGE_KINDS = ("openai", "fake")
#: the answer-level judge metrics an experiment may ask for (pairwise needs two answers)
JUDGE_METRIC_NAMES = (
    *("faithfulness", "context_relevance", "answer_relevance", "correctness"),
    # the claim-level metrics (ragmeter.answers.claims); "claims" names all five
    *("claim_faithfulness", "hallucination", "claim_precision", "claim_recall"),
    *("context_utilisation", "claims"),
)
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


def _env_name(value: str) -> str:
    """A variable's name, never a key: a name has no '-' and does not mix lower case and
    digits at a key's length (``sk_live_4f9a...`` is refused, ``OPENAI_API_KEY`` is not)."""
    import re

    key_like = value.lower().startswith(("sk-", "sk_", "bearer")) or (
        len(value) >= 24 and any(c.islower() for c in value) and any(c.isdigit() for c in value)
    )
    if key_like or not re.match(_ENV_NAME, value):
        raise rule(
            "'api_key_env' must be the NAME of an environment variable (letters, digits, _), "
            "e.g. OPENAI_API_KEY, never the key itself"
        )
    return value


def _judge_metrics(value: Any) -> Any:
    value = [value] if isinstance(value, str) else value
    names = ", ".join(JUDGE_METRIC_NAMES)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise rule(f"'metrics' must be a list of judge metrics from {names}")
    bad = [v for v in value if v not in JUDGE_METRIC_NAMES]
    if bad:
        raise rule(f"unknown judge metric '{bad[0]}'; the judge may score {names}")
    if len(set(value)) != len(value):
        raise rule("'metrics' names a judge metric twice")
    return value


class JudgeTable(_Table):
    """``[judge]``: the model judge every variant's answers are scored by (experiment-wide:
    scores from two judges do not compare). The key is read from the variable ``api_key_env``
    names, never from the file."""

    kind: Annotated[Literal["openai", "fake"], must("one of openai, fake")] | None = None
    base_url: Annotated[str, Field(pattern=r"\S"), must("an http(s) URL")] | None = None
    model: Annotated[str, Field(pattern=r"\S"), must("a model name")] | None = None
    api_key_env: Annotated[str, must("a string"), AfterValidator(_env_name)] | None = None
    metrics: Annotated[list[str], BeforeValidator(_judge_metrics)] = ["faithfulness"]
    timeout: Annotated[float, Field(gt=0, le=3600), must("seconds over 0, at most 3600")] = 60.0
    retries: Annotated[int, Field(ge=0, le=20), must("a whole number from 0 to 20")] = 3
    concurrency: Annotated[int, Field(ge=1, le=256), must("a whole number from 1 to 256")] = 4
    #: judgements per answer (repeat r >= 1 sends seed r)
    repeat: Repeat = 1
    prompt: RelativePath | None = None
    price_per_1k_prompt: Annotated[float, Field(ge=0), must("a number >= 0")] | None = None
    price_per_1k_completion: Annotated[float, Field(ge=0), must("a number >= 0")] | None = None


class SettingsTable(_Table):
    """``[baseline]`` and each ``[[variant]]``: a name and what the variant runs."""

    name: Name | None = None
    description: Text | None = None
    chunker: Chunker | None = None
    chunks: ChunkFile | None = None
    retriever: Retriever | None = None
    reranker: Reranker = None
    run: RunFile | None = None
    depth: Positive | None = None
    k: Positive | None = None
    budget: Positive | None = None
    generator: GeneratorT | None = None
    prompt: PromptName | None = None
    order: Order | None = None
    context: ContextT | None = None


Table = Annotated[SettingsTable, BeforeValidator(_is_table("each [[variant]] must be a table"))]


class ExperimentFile(_Table):
    """The top level of an experiment file (see :mod:`._config` for the meaning of each key)."""

    name: Text | None = None
    description: Text | None = None
    golden: RelativePath | None = None
    corpus: RelativePath | None = None
    beir: BeirFolder | None = None
    beir_split: Split | None = None
    level: Annotated[Literal["span", "document"], must("one of span, document")] = "span"
    output: Text = "runs"
    cache: Text | None = None
    tokenizer: Text | None = None
    run_format: Annotated[Literal["trec", "parquet"], must("one of trec, parquet")] = "trec"
    metrics: (
        Annotated[list[Annotated[Metric, PlainValidator(_metric)]], BeforeValidator(_metric_list)]
        | None
    ) = None
    #: the one metric every comparison of this experiment is read on (see ``_config``)
    headline: Annotated[Metric, PlainValidator(_metric), BeforeValidator(_headline_text)] | None = (
        None
    )
    k: Positive | None = None
    budget: Positive | None = None
    headroom_k: Positive = 50
    cover: Annotated[float, Field(gt=0, le=1), must("a number in (0, 1]")] = 0.5
    generator: GeneratorT | None = None
    context: ContextT | None = None
    judge: (
        Annotated[JudgeTable, BeforeValidator(_is_table("'judge' must be a table (kind = ...)"))]
        | None
    ) = None
    baseline: (
        Annotated[
            SettingsTable,
            BeforeValidator(
                _is_table("a [baseline] table is required (chunker, retriever, depth, ...)")
            ),
        ]
        | None
    ) = None
    variant: Annotated[list[Table], BeforeValidator(_is_list)] = []


def _unknown(table: dict[str, Any], keys: Keys) -> str:
    if "retriever" in keys[:-1] or "reranker" in keys[:-1]:
        return unknown_option(table, keys)
    if len(keys) == 1:
        return f"unknown key '{keys[0]}'; keys: {', '.join(sorted(ExperimentFile.model_fields))}"
    if keys[-1] == "judge":  # in [baseline] or a [[variant]]
        return (
            "the judge is experiment-wide: set [judge] at the top level; a variant cannot "
            "change it (scores from two judges or judge prompts do not compare)"
        )
    if "judge" in keys[:-1]:
        if keys[-1] == "api_key":
            return (
                "never write an API key into the experiment file; set api_key_env to the "
                "name of the environment variable that holds it"
            )
        return (
            f"unknown judge setting '{keys[-1]}'; [judge] may set: "
            f"{', '.join(JudgeTable.model_fields)}"
        )
    if "context" in keys[:-1]:
        hint = (
            " (k and budget are set at the top level, in [baseline] or in a variant: the "
            "context is cut at the prompt k / budget the metrics are reported at)"
            if keys[-1] in ("k", "budget")
            else ""
        )
        return (
            f"unknown context setting '{keys[-1]}'; context may set: "
            f"{', '.join(ContextTable.model_fields)}{hint}"
        )
    settings = [k for k in SettingsTable.model_fields if k not in ("name", "description")]
    return f"unknown key '{keys[-1]}'; a variant may set: {', '.join(settings)}"


def validate(
    data: dict[str, Any], report: Callable[[Keys, str], None]
) -> tuple[ExperimentFile, dict[str, Any], set[int]]:
    """The file's valid part as a model, the input it was read from (each failing key dropped)
    and the indices of [[variant]] entries that are not tables; every problem goes to
    ``report(keys, message)``."""
    data = copy.deepcopy(data)
    broken: set[int] = set()
    for _ in range(3):  # a dropped key can only reveal a rule of a table it sat in
        try:
            return ExperimentFile.model_validate(data), data, broken
        except PydanticError as exc:
            errors = schema_errors(exc, data, _unknown)
        for keys, message in errors:
            report(keys, message)
        bad_metrics = {k[1] for k, _ in errors if k[0] == "metrics" and len(k) > 1}
        for keys, _ in errors:
            _drop(data, keys, broken)
        if bad_metrics and isinstance(data.get("metrics"), list):
            kept = [m for i, m in enumerate(data["metrics"]) if i not in bad_metrics]
            if kept:
                data["metrics"] = kept
            else:  # every name was wrong: the default metrics stand in for the rules
                del data["metrics"]
    raise RuntimeError("unreachable: every failing key was dropped")  # pragma: no cover


def _drop(data: dict[str, Any], keys: Keys, broken: set[int]) -> None:
    """Remove the setting ``keys`` points into, so the next validation passes without it."""
    head = keys[0] if keys else None
    if head == "metrics" and len(keys) > 1:
        return  # items are dropped together (indices would shift)
    table: Any = data
    if head == "baseline" and len(keys) > 1 and isinstance(data.get("baseline"), dict):
        table, keys = data["baseline"], keys[1:]
    elif head == "variant" and len(keys) > 1 and isinstance(data.get("variant"), list):
        index = int(keys[1])
        if len(keys) == 2 or not isinstance(data["variant"][index], dict):
            data["variant"][index] = {}
            broken.add(index)
            return
        table, keys = data["variant"][index], keys[2:]
    nested = len(keys) > 1 and keys[0] in ("generator", "context", "judge")
    if nested and isinstance(table.get(keys[0]), dict):
        table, keys = table[keys[0]], keys[1:]  # drop the bad option, keep the table
    if keys:
        table.pop(keys[0], None)
