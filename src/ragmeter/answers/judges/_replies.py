"""What a judge's reply must be before it counts: the whole reply is one JSON object of the
shape its task asks for, or it is a failure.

Why so strict: a model that refuses ("I can't assess this. Example: {"claims": []}") or wraps
its verdict in prose must not be read as a verdict. Taking the first ``{...}`` out of prose once
scored such a refusal as faithfulness 1.0 and cached it as a success.

The rules, in order (each failure is a ``ValueError`` whose message says what was wrong; the
OpenAI-compatible client retries it and then records a failure, never a pass, never cached):

1. Reply text: the whole text is one JSON value. Allowed around it: whitespace, or exactly one
   Markdown code fence (```` ```json ```` or ```` ``` ```` on its own line, the JSON, then
   ```` ``` ````) and whitespace around the fence. Any other text before or after is refused.
   (The fence is allowed because chat models add it even when asked not to; it carries no
   words that could change the meaning.)
2. JSON: an object; a key repeated in one object, ``NaN`` or ``Infinity`` are refused.
3. Shape, per task (:data:`REPLY_SCHEMAS`; unknown keys such as ``"reason"`` or ``"judge"`` are
   kept and ignored):

   - ``faithfulness``: ``{"claims": [{"claim": str, "supported": true|false}, ...]}`` with at
     least one claim. An empty claim list is a failure: every answer sent to the judge is
     non-empty (an empty answer is refused as a missing input before any call), so a judge that
     lists no claim did not do the task (a refusal often looks exactly like that).
   - ``context_relevance`` / ``answer_relevance``: ``"verdict"`` one of yes, partly, no;
   - ``correctness``: ``"verdict"`` one of correct, incorrect;
   - ``pairwise``: ``"winner"`` one of A, B, tie;
   - ``claims`` (claim extraction): ``{"claims": ["<claim>", ...]}``, at least one non-empty
     string (the text sent is never empty, so an empty list is a failure, as for faithfulness);
   - ``claim_support``: ``{"verdicts": [{"claim": <number>, "supported": true|false}, ...]}``
     with at least one verdict, ``"claim"`` a JSON integer >= 1. That the numbers are exactly
     the claims sent, each once, is checked by :mod:`ragmeter.answers.claims` (it knows how
     many claims it sent).

   Verdict words are compared after trimming spaces and ignoring case; ``"supported"`` must be a
   JSON boolean (``"true"`` as a string is refused); ``"reason"``, when present, is a string.
   A task without a schema (a caller's own prompt) needs only rule 1 and 2.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, field_validator
from pydantic import ValidationError as PydanticError

__all__ = ["REPLY_SCHEMAS", "check_reply", "parse_reply"]

#: one fenced block: opening fence (optionally ``json``) alone on its line, the body, the closing
#: fence alone on its line; only whitespace around it.
_FENCED = re.compile(r"\A\s*```(?:json)?[ \t]*\r?\n(?P<body>.*?)\r?\n[ \t]*```\s*\Z", re.DOTALL)


class _Reply(BaseModel):
    """Fields every reply may carry."""

    model_config = ConfigDict(extra="allow")

    reason: StrictStr | None = None


class _Claim(BaseModel):
    model_config = ConfigDict(extra="allow")

    claim: StrictStr
    supported: StrictBool


class FaithfulnessReply(_Reply):
    """``{"claims": [{"claim": ..., "supported": true|false}, ...]}``, at least one claim."""

    claims: list[_Claim] = Field(min_length=1)


def _one_of(field: str, options: tuple[str, ...]) -> Any:
    """A validator: the field is a string naming one of ``options`` (trimmed, any case)."""
    lowered = {o.lower() for o in options}

    def check(value: Any) -> Any:
        if not isinstance(value, str) or value.strip().lower() not in lowered:
            raise ValueError(f"must be one of {', '.join(options)}, got {json.dumps(value)}")
        return value

    return field_validator(field, mode="before")(check)


class RelevanceReply(_Reply):
    """``{"verdict": "yes"|"partly"|"no"}``."""

    verdict: str
    check_words = _one_of("verdict", ("yes", "partly", "no"))


class CorrectnessReply(_Reply):
    """``{"verdict": "correct"|"incorrect"}``."""

    verdict: str
    check_words = _one_of("verdict", ("correct", "incorrect"))


class PairwiseReply(_Reply):
    """``{"winner": "A"|"B"|"tie"}``."""

    winner: str
    check_words = _one_of("winner", ("A", "B", "tie"))


class ClaimsReply(_Reply):
    """``{"claims": ["<claim>", ...]}``, at least one claim, none empty."""

    claims: list[StrictStr] = Field(min_length=1)

    @field_validator("claims")
    @classmethod
    def _no_empty(cls, value: list[str]) -> list[str]:
        if any(not c.strip() for c in value):
            raise ValueError("a claim is an empty string")
        return value


class _Verdict(BaseModel):
    model_config = ConfigDict(extra="allow")

    claim: StrictInt = Field(ge=1)
    supported: StrictBool


class ClaimSupportReply(_Reply):
    """``{"verdicts": [{"claim": 1, "supported": true|false}, ...]}``, at least one verdict."""

    verdicts: list[_Verdict] = Field(min_length=1)


#: task name -> the schema its reply must fit (rule 3 of the module docstring).
REPLY_SCHEMAS: Mapping[str, type[_Reply]] = {
    "faithfulness": FaithfulnessReply,
    "context_relevance": RelevanceReply,
    "answer_relevance": RelevanceReply,
    "correctness": CorrectnessReply,
    "pairwise": PairwiseReply,
    "claims": ClaimsReply,
    "claim_support": ClaimSupportReply,
}


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"key {json.dumps(key)} appears twice in one object")
            seen.add(key)
    return obj


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _short(text: str, n: int = 60) -> str:
    one = " ".join(text.split())
    return json.dumps(one if len(one) <= n else one[: n - 3] + "...")


def parse_reply(content: str, task: str | None = None) -> dict[str, Any]:
    """The reply's JSON object when the whole reply is one (rules 1-3 of the module docstring).

    Raises ValueError saying what is wrong (prose around the JSON, not an object, a shape that
    does not fit ``task``).
    """
    if not isinstance(content, str):
        raise ValueError("the reply content is not text")
    fenced = _FENCED.match(content)
    text = fenced["body"] if fenced else content
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        stripped = text.strip()
        if stripped[:1] == "{" and exc.msg == "Extra data":
            raise ValueError(
                f"text after the JSON object ({_short(text[exc.pos :])}); the whole reply "
                "must be the JSON object"
            ) from None
        if "{" in stripped and stripped[:1] != "{":
            raise ValueError(
                f"text before the JSON object ({_short(stripped[: stripped.index('{')])}); the "
                "whole reply must be the JSON object"
            ) from None
        raise ValueError(f"the reply is not one JSON object ({exc.msg})") from None
    except RecursionError:
        raise ValueError("the reply's JSON is nested too deeply") from None
    if not isinstance(data, dict):
        raise ValueError(f"the reply is JSON but not an object (a {type(data).__name__})")
    return check_reply(task, data) if task is not None else data


def check_reply(task: str | None, data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` when it fits the schema of ``task`` (rule 3); ValueError naming what does not.

    Used on every parsed reply, whichever judge produced it (a client, the fake judge, a
    caller's own), and on every cached reply before it is reused.
    """
    if not isinstance(data, Mapping):
        raise ValueError("the reply is not a JSON object")
    schema = REPLY_SCHEMAS.get(task or "")
    if schema is None:
        return dict(data)
    try:
        schema.model_validate(dict(data))
    except PydanticError as exc:
        parts = []
        for err in exc.errors()[:3]:
            loc = ".".join(str(p) for p in err.get("loc", ())) or "reply"
            msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
            if err.get("type") == "too_short" and task == "faithfulness" and loc == "claims":
                msg = "lists no claim (an empty claim list for a non-empty answer is a failure)"
            elif err.get("type") == "too_short" and loc in ("claims", "verdicts"):
                msg = f"lists no {loc[:-1]} (an empty list for a non-empty text is a failure)"
            parts.append(f"'{loc}' {msg}")
        raise ValueError(f"the reply does not fit the {task} shape: {'; '.join(parts)}") from None
    return dict(data)
