"""Versioned judge prompts: ``prompts/<task>.<version>.txt``, rendered with ``string.Template``.

File layout: ``#`` header lines (task, version, ``# inputs: a, b`` and the reply shape), then a
``### system`` section and a ``### user`` section. Placeholders are ``$name``; a placeholder the
caller does not fill is an error, never an empty string. Every judged score records the prompt's
id (``faithfulness.v1``) and the sha256 of the file, so an edited prompt is a different prompt.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from os import PathLike
from pathlib import Path
from string import Template
from typing import Any

from ..._errors import InputError, UsageError

_NAME_RE = re.compile(r"^(?P<task>[a-z_]+)\.(?P<version>v\d+)\.txt$")


@dataclass(frozen=True)
class Prompt:
    """One versioned prompt file."""

    task: str
    version: str
    sha256: str
    inputs: tuple[str, ...]
    system: str
    user: str

    @property
    def id(self) -> str:
        return f"{self.task}.{self.version}"

    def render(self, values: Mapping[str, Any]) -> tuple[dict[str, str], ...]:
        """Chat messages with every ``$input`` filled (UsageError naming a missing one)."""
        missing = [name for name in self.inputs if name not in values]
        if missing:
            raise UsageError(f"prompt {self.id} needs {', '.join(missing)}")
        vals = {k: str(v) for k, v in values.items()}
        return (
            {"role": "system", "content": Template(self.system).substitute(vals)},
            {"role": "user", "content": Template(self.user).substitute(vals)},
        )

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "version": self.version, "sha256": self.sha256}

    @classmethod
    def from_text(cls, name: str, text: str, *, source: str | None = None) -> Prompt:
        m = _NAME_RE.match(name)
        if m is None:
            raise InputError("a prompt file is named <task>.v<N>.txt", path=source or name)
        inputs: tuple[str, ...] = ()
        sections: dict[str, list[str]] = {}
        current: str | None = None
        for line in text.splitlines():
            if current is None and line.startswith("# inputs:"):
                inputs = tuple(x.strip() for x in line.split(":", 1)[1].split(",") if x.strip())
            elif line.startswith("### "):
                current = line[4:].strip()
                sections[current] = []
            elif current is not None:
                sections[current].append(line)
        if set(sections) != {"system", "user"}:
            raise InputError(
                "a prompt file has a '### system' and a '### user' section", path=source or name
            )
        return cls(
            m["task"],
            m["version"],
            hashlib.sha256(text.encode("utf-8")).hexdigest(),
            inputs,
            "\n".join(sections["system"]).strip(),
            "\n".join(sections["user"]).strip(),
        )


def load_prompt(
    task: str, version: str = "v1", *, folder: str | PathLike[str] | None = None
) -> Prompt:
    """The shipped prompt ``<task>.<version>.txt`` (or one from ``folder``)."""
    name = f"{task}.{version}.txt"
    if folder is not None:
        path = Path(folder) / name
        if not path.is_file():
            raise InputError("prompt file not found", path=path)
        return Prompt.from_text(name, path.read_text(encoding="utf-8"), source=str(path))
    res = resources.files(__package__).joinpath("prompts", name)
    if not res.is_file():
        have = sorted(
            p.name
            for p in resources.files(__package__).joinpath("prompts").iterdir()
            if p.name.endswith(".txt")
        )
        raise UsageError(f"no shipped prompt '{name}' (have: {', '.join(have)})")
    return Prompt.from_text(name, res.read_text(encoding="utf-8"))
