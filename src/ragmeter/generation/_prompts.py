"""Versioned answer prompts: ``prompts/<name>-v<N>.txt``, rendered with ``string.Template``.

File layout (as the judge prompts): ``#`` comment lines at the top (``# inputs: question,
context`` names the placeholders), then a ``### system`` and a ``### user`` section. Placeholders
are ``$question`` and ``$context`` (``$$`` for a literal dollar sign); a placeholder the caller
does not fill is an error, never an empty string. The prompt's name, version and the sha256 of
its file are part of every answer's cache key, so an edited prompt is a different prompt.

The shipped ``answer-v1`` asks for citations by passage number (``[1]``, ``[2, 3]``) and, when
the passages lack the answer, for :data:`ABSTAIN_PHRASE`, a sentence the abstention check
(:func:`ragmeter.answers._schema.looks_abstained`) recognises.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from os import PathLike
from pathlib import Path
from string import Template
from typing import Any

from .._errors import InputError, UsageError
from ._assemble import AssembledContext
from ._protocol import DEFAULT_PARAMS, GenerationRequest

#: The sentence answer-v1 asks for when the passages do not hold the answer.
ABSTAIN_PHRASE = "I cannot find the answer in the provided passages."
#: The prompt used when an experiment names none.
DEFAULT_PROMPT = "answer-v1"

_STEM_RE = re.compile(r"^(?P<name>[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+)*?)-(?P<version>v\d+)$")
_INPUTS = ("question", "context")


@dataclass(frozen=True)
class PromptTemplate:
    """One versioned prompt file: ``name`` (``answer``), ``version`` (``v1``), the file's
    ``text`` and its sha256 ``hash``."""

    name: str
    version: str
    text: str
    hash: str
    system: str = field(repr=False, default="")
    user: str = field(repr=False, default="")

    @property
    def id(self) -> str:
        """``answer-v1``: what an experiment file names."""
        return f"{self.name}-{self.version}"

    @property
    def key(self) -> str:
        """``answer-v1#<sha256>``: the prompt part of the answer cache key."""
        return f"{self.id}#{self.hash}"

    def render(self, *, question: str, context: str) -> list[dict[str, str]]:
        """The chat messages: a system message and a user message with both filled in."""
        values = {"question": str(question), "context": str(context)}
        try:
            return [
                {"role": "system", "content": Template(self.system).substitute(values)},
                {"role": "user", "content": Template(self.user).substitute(values)},
            ]
        except (KeyError, ValueError) as exc:  # checked at load; a defensive last word
            raise UsageError(f"prompt {self.id} cannot be rendered: {exc}") from None

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "version": self.version, "hash": self.hash}

    @classmethod
    def from_text(cls, stem: str, text: str, *, source: str | None = None) -> PromptTemplate:
        """Parse a prompt file's text; ``stem`` is its file name without ``.txt``."""
        where = source or stem
        m = _STEM_RE.match(stem)
        if m is None:
            raise InputError(
                "an answer prompt file is named <name>-v<N>.txt (for example answer-v2.txt)",
                path=where,
            )
        sections: dict[str, list[str]] = {}
        current: str | None = None
        for line in text.splitlines():
            if line.startswith("### "):
                current = line[4:].strip()
                if current in sections:
                    raise InputError(f"the '### {current}' section appears twice", path=where)
                sections[current] = []
            elif current is not None:
                sections[current].append(line)
        if set(sections) != {"system", "user"}:
            raise InputError(
                "an answer prompt file has a '### system' and a '### user' section",
                path=where,
            )
        system = "\n".join(sections["system"]).strip()
        user = "\n".join(sections["user"]).strip()
        for part, body in (("system", system), ("user", user)):
            template = Template(body)
            unknown = sorted(set(template.get_identifiers()) - set(_INPUTS))
            if unknown or not template.is_valid():
                what = (
                    f"unknown placeholder(s) ${', $'.join(unknown)}"
                    if unknown
                    else "a '$' that starts no placeholder (write $$ for a dollar sign)"
                )
                raise InputError(
                    f"{what} in the '### {part}' section; the placeholders are "
                    "$question and $context",
                    path=where,
                )
        placed = set(Template(system).get_identifiers()) | set(Template(user).get_identifiers())
        for needed in _INPUTS:
            if needed not in placed:
                raise InputError(f"the prompt never places ${needed}", path=where)
        return cls(
            m["name"],
            m["version"],
            text,
            hashlib.sha256(text.encode("utf-8")).hexdigest(),
            system,
            user,
        )


def shipped_prompts() -> list[str]:
    """Ids of the prompts that ship with ragmeter (``answer-v1``, ...)."""
    folder = resources.files(__package__).joinpath("prompts")
    return sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".txt"))


def load_prompt(
    name_or_path: str | PathLike[str], *, base_dir: str | PathLike[str] | None = None
) -> PromptTemplate:
    """A shipped prompt by id (``"answer-v1"``) or a prompt file by path (``.txt``; relative
    paths against ``base_dir``, the experiment file's folder)."""
    raw = str(name_or_path)
    looks_like_path = raw.endswith(".txt") or "/" in raw or "\\" in raw
    if looks_like_path:
        path = Path(raw)
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        if not path.is_file():
            raise InputError("prompt file not found", path=path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the prompt file ({exc})", path=path) from None
        return PromptTemplate.from_text(path.stem, text, source=str(path))
    res = resources.files(__package__).joinpath("prompts", f"{raw}.txt")
    if not res.is_file():
        raise UsageError(
            f"no shipped prompt '{raw}' (have: {', '.join(shipped_prompts())}); "
            "or give the path of a .txt prompt file"
        )
    return PromptTemplate.from_text(raw, res.read_text(encoding="utf-8"))


def make_request(
    question_id: str,
    question: str,
    context: AssembledContext,
    prompt: PromptTemplate,
    params: Mapping[str, Any] | None = None,
) -> GenerationRequest:
    """A request: the prompt rendered on this question and context, params over the defaults
    (temperature 0, seed 0, max_tokens 256)."""
    return GenerationRequest(
        question_id,
        question,
        context,
        tuple(prompt.render(question=question, context=context.text)),
        {**DEFAULT_PARAMS, **dict(params or {})},
        prompt.key,
    )
