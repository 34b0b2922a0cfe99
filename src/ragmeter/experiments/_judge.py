"""The ``[judge]`` table of an experiment file: the model judge every variant's answers are
scored by, besides the deterministic checks.

::

    [judge]
    kind = "openai"                       # or "fake" (rule-based, offline; not evidence)
    base_url = "http://127.0.0.1:8000/v1"
    model = "qwen2.5-7b-instruct"
    api_key_env = "JUDGE_API_KEY"         # the NAME of the variable; never the key itself
    metrics = ["faithfulness"]            # + context_relevance, answer_relevance, correctness
    timeout = 60                          # seconds per request attempt
    retries = 3
    concurrency = 4
    prompt = "judge-prompts"              # optional: a folder of <metric>.v1.txt prompts
    repeat = 1                            # judgements per answer (repeat r >= 1: seed = r)

The judge is experiment-wide, never a variant setting: answers judged by two judges (or two
judge prompts) do not compare, so a variant that sets ``judge`` is refused. The judge is built
the way ``ragmeter answers check --judge`` builds it (:mod:`ragmeter.answers.judges._build`);
its replies are cached under ``judge/`` in the experiment's cache folder (``--no-cache``: none
read or written). A failed judgement is counted as failed, never as a pass, and never stops
the run.

What the judge cost is reported per variant (``usage_reading`` and ``usage_between`` of
:mod:`ragmeter.answers.judges._usage`, which ``answers check`` uses too): one judge object
serves every variant and its counters only grow, so each variant's figures are what the
counters gained while that variant's answers were judged. A re-run served from the cache
therefore reports its cache hits and 0 requests, never the first run's tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import RagmeterError

if TYPE_CHECKING:  # pragma: no cover
    from ..answers.judges import JudgeOptions

#: the folder under the experiment's cache root that holds the judge's replies
JUDGE_CACHE = "judge"


class _Reports(Protocol):
    def add(self, message: str, field: str) -> None: ...


@dataclass(frozen=True)
class JudgeSettings:
    """A checked ``[judge]`` table: how the judge is built (the same options ``ragmeter answers
    check --judge`` builds it from), which metrics it scores and the prompt folder (resolved
    against the experiment file's folder)."""

    options: JudgeOptions
    metrics: tuple[str, ...] = ("faithfulness",)
    prompt: Path | None = None
    #: judgements per answer (``repeat``): repeat r >= 1 sends ``seed = r`` (its replies
    #: cached apart); repeat 0 is the judge as without repeats
    repeat: int = 1

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: what each variant's config record carries (no key: only its
        variable's name)."""
        o = self.options
        return {
            "kind": o.kind,
            "metrics": list(self.metrics),
            "base_url": o.base_url,
            "model": o.model,
            "api_key_env": o.api_key_env,
            "timeout": o.timeout,
            "retries": o.retries,
            "concurrency": o.concurrency,
            "prompt": None if self.prompt is None else str(self.prompt),
            **({} if self.repeat == 1 else {"repeat": self.repeat}),
        }

    def build(self, cache_root: Path | None, repeat: int = 0) -> Any:
        """The judge (replies cached in ``cache_root/judge``; None caches nothing). Repeat
        ``repeat`` >= 1 sends ``seed = repeat`` with every request: the cache key holds the
        request's parameters, so each repeat's replies are cached apart and repeat 0 keeps the
        key it had before repeats existed."""
        from ..answers.judges import make_judge

        return make_judge(
            self.options,
            cache_dir=None if cache_root is None else cache_root / JUDGE_CACHE,
            names=("judge.kind", "judge.base_url", "judge.model"),
            params={"seed": repeat} if repeat else None,
        )


def read_judge(table: Any, base: Path, ck: _Reports) -> JudgeSettings | None:
    """The validated ``[judge]`` model as settings; the rules that join its keys (a kind, an
    openai judge's URL and model, a prompt folder holding every metric's prompt) go to ``ck``."""
    if table is None:
        return None
    if table.kind is None:
        ck.add('the judge needs a kind: "openai" or "fake"', "judge.kind")
        return None
    if table.kind == "openai":
        for name in ("base_url", "model"):
            if getattr(table, name) is None:
                ck.add(f"an openai judge needs '{name}'", f"judge.{name}")
    else:
        for name in ("base_url", "model", "api_key_env"):
            if getattr(table, name) is not None:
                ck.add(
                    f"'{name}' applies to an openai judge, not a {table.kind} one", f"judge.{name}"
                )
    prompt = None if table.prompt is None else base / table.prompt
    if prompt is not None:
        from ..answers.judged import prompt_tasks
        from ..answers.judges import load_prompt

        for metric in table.metrics:
            for task in prompt_tasks(metric):  # a claim metric reads two prompts
                try:
                    load_prompt(task, folder=prompt)
                except RagmeterError as exc:
                    ck.add(f"judge prompt for {metric}: {exc}", "judge.prompt")
    from ..answers.judges import JudgeOptions

    options = JudgeOptions(
        kind=table.kind,
        base_url=table.base_url,
        model=table.model,
        api_key_env=table.api_key_env,
        timeout=float(table.timeout),
        retries=table.retries,
        concurrency=table.concurrency,
        price_prompt=table.price_per_1k_prompt,
        price_completion=table.price_per_1k_completion,
    )
    return JudgeSettings(options, tuple(table.metrics), prompt, table.repeat)
