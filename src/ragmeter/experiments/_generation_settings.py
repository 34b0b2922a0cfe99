"""The generation settings of an experiment file: the ``[generator]`` table, ``prompt``,
``order`` and ``context``, at the top level, in ``[baseline]`` and in each variant.

Kept apart from :mod:`._config` (which joins every table of the file) because their rules are
their own: a variant's generator table of the same kind is merged over the inherited one (so
``generator = {temperature = 0.7}`` changes only the temperature) while one of another kind
replaces it; the prompt may be set once, in the table or beside it; the order once, as
``order`` or ``context.order``; generation settings without a generator are an error (a
context source other than "retrieved" says so at ``context.source``); and a generating variant
gets the prompt, context and sampling defaults filled in (``source = "retrieved"``, the default,
is left out of its settings). Problems go to the caller's checker (``ck.add(message, field)``),
with the field they belong to.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ._config import Settings


class _Reports(Protocol):
    def add(self, message: str, field: str) -> None: ...


#: the context assembly when a generator is set and the file says nothing
DEFAULT_CONTEXT = {"order": "rank", "dedupe": True, "headers": True}
#: the sampling parameters when a generator is set and the file says nothing (temperature 0 and
#: a fixed seed: a re-run gives the same answers where the backend allows it)
DEFAULT_SAMPLING = {"temperature": 0.0, "seed": 0, "max_tokens": 256}
DEFAULT_PROMPT = "answer-v1"
#: the context source of every variant that sets none (``context.source``): the passages the
#: variant retrieved; the others (oracle, none, oracle+distractors) are ablations of it
RETRIEVED = "retrieved"


def top_generation(top: Settings, f: Any, data: dict[str, Any], ck: _Reports) -> Settings:
    """The top-level ``[generator]`` and ``context`` as the settings every variant inherits."""
    raw: dict[str, Any] = {}
    fields: set[str] = set()
    for key in ("generator", "context"):
        value = getattr(f, key)
        if value is not None:
            raw[key] = _table_dict(value)
            fields.add(key)
    if not fields:
        return top
    return replace(top, **generation_updates(top, raw, fields, "", ck))


def _table_dict(model: Any) -> dict[str, Any]:
    """A validated generator/context table as written (only the keys set, extras kept)."""
    out = {k: getattr(model, k) for k in model.model_fields_set}
    out.update(model.model_extra or {})
    return out


def generation_updates(
    inherit: Settings, raw: dict[str, Any], fields: set[str], where: str, ck: _Reports
) -> dict[str, Any]:
    """The generation settings a table sets over ``inherit``: a ``generator`` table of the
    same kind (or naming none) is merged over the inherited one, e.g. ``generator =
    {temperature = 0.7}``; one of another kind replaces it. ``prompt`` (also inside the
    generator table), ``order`` and ``context`` replace what they name."""
    at = f"{where}." if where else ""
    out: dict[str, Any] = {}
    if "generator" in fields:
        table = raw["generator"]
        if not isinstance(table, dict):  # the validated model (a variant's table)
            table = _table_dict(table)
        table = dict(table)
        if "prompt" in table:
            out["prompt"] = table.pop("prompt")
        if table.pop("repeat", None) is not None and where:
            ck.add(
                "repeat is experiment-wide (every variant's answers are repeated alike, so "
                "that they compare repeat by repeat): set it in the top-level [generator]",
                f"{at}generator.repeat",
            )
        old = inherit.generator
        if old is None and not where.startswith("variant"):
            out["generator"] = table
        elif old is None:
            ck.add(
                "the baseline has no generator: set [generator] at the top level so that "
                "every variant's answers compare with the baseline's",
                f"{at}generator",
            )
        elif "kind" in table and table["kind"] != old.get("kind"):
            out["generator"] = table  # another backend: nothing of the old one applies
        else:
            out["generator"] = {**old, **table}
    if "prompt" in fields:
        if "prompt" in out:
            ck.add("set the prompt once (here or inside the generator table)", f"{at}prompt")
        out["prompt"] = raw["prompt"]
    context = dict(inherit.context or {})
    if "context" in fields:
        table = raw["context"]
        context.update(table if isinstance(table, dict) else _table_dict(table))
    if "order" in fields:
        if "context" in fields and "order" in (raw["context"] or {}):
            ck.add("set the order once (order = ... or context.order)", f"{at}order")
        context["order"] = raw["order"]
    if {"context", "order"} & fields:
        out["context"] = context
    return out


def with_generation_defaults(
    s: Settings,
    where: str,
    ck: _Reports,
    *,
    check: str | None = None,
    context_at: str | None = None,
) -> Settings:
    """Fill the prompt, context and sampling defaults of a generating variant; report
    generation settings given without a generator. ``check`` (the table the generator is
    written in, "" for the top level) runs the backend's own checks on it; ``context_at`` is
    where the context was written when not in this table ("" for the top level)."""
    at = f"{where}." if where else ""
    if s.generator is None:
        context = dict(s.context or {})
        source = context.pop("source", None)
        cat = at if context_at is None else f"{context_at}." if context_at else ""
        if source is not None and source != RETRIEVED:
            ck.add(
                f'context.source = "{source}" changes what the generator reads, so it needs '
                'a generator: add a [generator] table (kind = "openai", "local" or "python")',
                f"{cat}context.source",
            )
        for key, value in (("prompt", s.prompt), ("context", context or None)):
            if value is not None:
                ck.add(
                    f"'{key}' needs a generator: add a [generator] table (kind = \"openai\", "
                    '"local" or "python")',
                    f"{cat if key == 'context' else at}{key}",
                )
        return replace(s, prompt=None, context=None)
    table = f"{check}.generator" if check else "generator"
    if check is None:
        pass
    elif "kind" not in s.generator:
        ck.add('the generator needs a kind: "openai", "local" or "python"', f"{table}.kind")
    else:
        from ..generation import parse_generator

        try:  # the backend's own options (base_url, gguf, target, ...), one problem per table
            parse_generator(s.generator, table=table)
        except InputError as exc:
            ck.add(exc.message, exc.field or table)
    context = {**DEFAULT_CONTEXT, **(s.context or {})}
    if context.get("source") == RETRIEVED:
        # the default, kept out of the settings: a variant that writes it changes nothing, and
        # a retrieved config keeps the shape it had before sources existed
        del context["source"]
    return replace(
        s,
        generator={**DEFAULT_SAMPLING, **s.generator},
        prompt=s.prompt or DEFAULT_PROMPT,
        context=context,
    )


def source_rules(
    data: dict[str, Any], checked: list[tuple[str, Settings]], *, document: bool, ck: _Reports
) -> None:
    """A context source other than "retrieved" is an ablation of the retrieved baseline: the
    baseline itself reads what it retrieved, and the oracle sources need span labels (a
    document-level or BEIR experiment has none). Each problem is reported where the source is
    written (a source without a generator is reported by the generation settings)."""

    def written(table: Any) -> bool:
        return (
            isinstance(table, dict)
            and isinstance(table.get("context"), dict)
            and ("source" in table["context"])
        )

    for where, s in checked:
        if s.generator is None or s.source == RETRIEVED:
            continue
        if where == "baseline":
            field = "context.source" if written(data) else "baseline.context.source"
            ck.add(
                f'the baseline must read the passages it retrieved (source = "{s.source}" '
                "here): an ablation is a [[variant]] with context = "
                f'{{source = "{s.source}"}}, compared with the retrieved baseline',
                field,
            )
            continue
        index = int(where[len("variant[") : -1]) - 1
        if document and written(data["variant"][index]):
            ck.add(
                f'context.source = "{s.source}" needs span labels (the evidence\'s character '
                "offsets), and a document-level or BEIR experiment has none: run the "
                'ablation on a golden set with spans, at level = "span"',
                f"{where}.context.source",
            )
