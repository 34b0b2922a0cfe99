"""Build a judge from its settings: one construction for ``ragmeter answers check --judge`` and
for the ``[judge]`` table of an experiment file, so both ask the same judge the same way.

The CLI passes option names (``--judge-url``) and the experiment file passes field names
(``judge.base_url``) for its messages; the judge itself is the same object either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from os import PathLike
from typing import Any

from ..._errors import UsageError

#: the judges a configuration may name ("none" only on the command line: no judge)
JUDGE_KINDS = ("fake", "openai")


@dataclass(frozen=True)
class JudgeOptions:
    """Everything a judge is built from (the key is read from ``api_key_env`` at build time)."""

    kind: str
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout: float = 60.0
    retries: int = 3
    concurrency: int = 4
    price_prompt: float | None = None
    price_completion: float | None = None


def make_judge(
    options: JudgeOptions,
    *,
    cache_dir: str | PathLike[str] | None = None,
    names: tuple[str, str, str] = ("--judge", "--judge-url", "--judge-model"),
    params: dict[str, Any] | None = None,
) -> Any:
    """The judge ``options`` describe: :class:`.fake.FakeJudge` or :class:`.openai.OpenAIJudge`
    (replies cached in ``cache_dir``; None caches nothing). ``names`` are how the caller spells
    the kind, base URL and model settings in its errors; ``params`` are sent with every request
    of an openai judge (e.g. a repeat's ``seed``; the fake judge is deterministic and takes
    none). UsageError for a bad configuration."""
    kind_name, url_name, model_name = names
    if options.kind == "fake":
        from .fake import FakeJudge

        return FakeJudge()
    if options.kind == "openai":
        if not options.base_url or not options.model:
            raise UsageError(f"{kind_name} openai needs {url_name} and {model_name}")
        from .openai import OpenAIJudge

        return OpenAIJudge(
            base_url=options.base_url,
            model=options.model,
            api_key_env=options.api_key_env,
            timeout=options.timeout,
            max_retries=options.retries,
            concurrency=options.concurrency,
            cache_dir=cache_dir,
            params=params,
            price_per_1k_prompt=options.price_prompt,
            price_per_1k_completion=options.price_completion,
        )
    raise UsageError(f"{kind_name} must be one of {', '.join(JUDGE_KINDS)}, got '{options.kind}'")
