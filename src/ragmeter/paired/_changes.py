"""What counts as one change between two runs, and whether they share a context budget.

This is the one rule that ``ragmeter run`` (its one-change warnings), ``compare``, ``gate`` and
the ledger all ask, so the same pair of runs never gets two different verdicts.

It works on config mappings: the ``config`` an :class:`~ragmeter.metrics._evaluation.Evaluation`
carries (``ragmeter run`` writes the span evaluator's keys plus a ``settings`` table) or an
experiment variant's settings converted by :func:`ragmeter.experiments._config.settings_config`.

The rule:

1. The raw differences are :func:`~ragmeter.paired._configdiff.config_diff` (bookkeeping and
   measured keys left out).
2. Each differing key belongs to one *setting*: a key with a part ``reranker`` is the reranker; a
   part ``retriever``, the retriever; a part in ``chunking``/``chunker``/``chunks``/
   ``chunk_size``/``chunk_tokens``, the chunking; a last part ``k``/``prompt_k``/``top_k``, the
   prompt k; ``budget``/``context_budget``/``token_budget``, the budget; any other key is its own
   setting, named by the key without a ``settings.``/``resolved.`` prefix (so ``depth`` and
   ``settings.depth`` are one setting). The same setting recorded under two keys counts once.
   Generation settings: a key with a part ``generator`` (backend, model, temperature, seed,
   max tokens) is the generator; a part ``prompt`` (not ``prompt_k``), the prompt; under a part
   ``context``, the last part ``order`` (or a key ``order``/``context_order``) is the context
   order, the last part ``source`` (or a key ``context_source``) the context source
   (``context.source``: the retrieved passages, or an ablation such as the labelled evidence),
   and any other key (``dedupe``, ``headers``) the context assembly, ``context``. So a variant
   that only reorders the same passages is the one change ``order``, and one that only gives
   the model the labelled evidence instead is the one change ``context.source``.
3. An imported run (a ``run`` key, or a retriever recorded as ``imported ...``) replaces the
   retriever and reranker: the three are one change, ``run``. The user's own pipeline (a
   retriever of kind ``python``, ``langchain`` or ``llamaindex``, recorded as such or as
   ``kind(target)``) on either side replaces chunking, retrieval and reranking: they are one
   change, ``pipeline``.
4. A chunking change with the prompt k scaled so that the context budget stays within 10% of the
   baseline's is one change, the chunking at an equal budget: k joins the chunking change.

The context budget of a config (:func:`context_budget`) is the explicit budget if one is set,
else ``k x chunk size`` for size-named chunkers (``tokens:N:overlap``, ``recursive:N:overlap``,
``sections:N``), else the measured context tokens if recorded. Two budgets are equal when the
candidate's is within 10% of the baseline's (:func:`same_budget`).

The budget a config *claims* is not always what the generator receives: with both ``k`` and
``budget`` set, the prompt holds the top k (k wins; the budget is a second metric cutoff,
``R@budget=1200``), so raising k to 8 under ``budget = 1200`` doubles the context while both
runs claim 1,200 tokens. :func:`context_trap` compares the *measured* mean context tokens
(``context_tokens``, recorded by ``ragmeter run``) instead: beyond 10% apart, when k or the
budget changed or both runs claim the same budget, the comparison is the RAG evaluation
lesson's trap "changing k between experiments" (recall rises because more text was returned).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..metrics import REGISTRY, Metric
from ._configdiff import SettingDiff, config_diff, flatten, is_setting
from ._record import Record

#: Candidate budgets within this share of the baseline's count as the same budget.
BUDGET_TOLERANCE = 0.10
BUDGET_KEYS = frozenset({"budget", "context_budget", "token_budget"})
K_KEYS = frozenset({"k", "prompt_k", "top_k"})
CHUNKING_PARTS = frozenset({"chunking", "chunker", "chunks", "chunk_size", "chunk_tokens"})
#: Generation settings (rule 2): the generator table, the prompt, the context assembly.
GENERATOR_PART = "generator"
PROMPT_PART = "prompt"
CONTEXT_PART = "context"
#: The change of the context source (retrieved passages or an ablation: rule 2).
CONTEXT_SOURCE = "context.source"
#: Measured context tokens (the mean the generator receives); a fallback budget, not a setting.
MEASURED_CONTEXT = "context_tokens"
#: Wrappers around settings: ``settings.depth`` is the same setting as ``depth``.
WRAPPERS = ("settings.", "resolved.", "config.")

_SIZE_RE = re.compile(r"^(?:tokens|recursive|sections):(\d+)")


def chunk_size(chunker: str | None) -> int | None:
    """The token size in a chunker name (``tokens:300:50`` -> 300), None when it has none."""
    if not isinstance(chunker, str):
        return None
    m = _SIZE_RE.match(chunker)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Change:
    """One logical change between two runs, with the raw setting differences it groups."""

    name: str
    diffs: tuple[SettingDiff, ...]
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "settings": [d.key for d in self.diffs],
            "diffs": [d.to_dict() for d in self.diffs],
            "note": self.note,
        }

    @classmethod
    def from_dict(
        cls, d: Mapping[str, Any], *, source: str | None = None, field: str | None = None
    ) -> Change:
        """Rebuild from :meth:`to_dict` output (``settings`` is derived from ``diffs`` and not
        read); a bad record raises an ``InputError`` naming the field."""
        r = Record(d, what="change", at=field, source=source)
        at = r.name("diffs")
        diffs = tuple(
            SettingDiff.from_dict(x, source=source, field=f"{at}[{i}]")
            for i, x in enumerate(r.items("diffs"))
        )
        return cls(name=r.text("name"), diffs=diffs, note=r.text("note", ""))

    def __str__(self) -> str:
        own = [d for d in self.diffs if _setting(d.key) == self.name] or list(self.diffs)
        pairs = list(dict.fromkeys((_show(d.baseline), _show(d.candidate)) for d in own))
        if len(pairs) == 1:
            text = f"{self.name}: {pairs[0][0]} -> {pairs[0][1]}"
        else:
            text = f"{self.name} ({'; '.join(str(d) for d in own)})"
        return text + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class Budget:
    """A run's context budget in tokens and where it was read from."""

    tokens: float
    source: str  # "budget setting", "k x chunk size" or "measured"

    def __str__(self) -> str:
        return f"{self.tokens:g}"


def _show(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        return None
    return float(v)


def _setting(key: str) -> str:
    """The setting a flattened config key records (rule 2 of the module docstring)."""
    low = key.lower()
    parts = low.split(".")
    if "reranker" in parts:
        return "reranker"
    if "retriever" in parts:
        return "retriever"
    generation = _generation_setting(parts)
    if generation is not None:
        return generation
    if CHUNKING_PARTS.intersection(parts):
        return "chunking"
    if parts[-1] in K_KEYS:
        return "k"
    if parts[-1] in BUDGET_KEYS:
        return "budget"
    for w in WRAPPERS:
        if low.startswith(w):
            return key[len(w) :]
    return key


def _generation_setting(parts: list[str]) -> str | None:
    """``generator``, ``prompt``, ``order``, ``context.source`` or ``context`` for a generation
    key, else None."""
    if GENERATOR_PART in parts:
        return "generator"
    if PROMPT_PART in parts:
        return "prompt"
    bare = parts[1:] if len(parts) > 1 and parts[0] + "." in WRAPPERS else parts
    if bare in (["order"], ["context_order"]):
        return "order"
    if CONTEXT_PART in parts[:-1] and parts[-1] == "order":
        return "order"
    if bare == ["context_source"] or (CONTEXT_PART in parts[:-1] and parts[-1] == "source"):
        return CONTEXT_SOURCE
    if CONTEXT_PART in parts[:-1] and parts[-1] not in K_KEYS | BUDGET_KEYS:
        return "context"
    return None


def context_budget(config: Mapping[str, Any], *, measured: bool = True) -> Budget | None:
    """The context budget of a config: explicit budget, else k x chunk size, else (unless
    ``measured=False``: the budget the settings claim) the measured context tokens."""
    flat = flatten(config) if measured else flatten(_without_measured(config))
    k = size = tokens = None
    for key, value in flat.items():
        parts = key.lower().split(".")
        if parts[-1] == MEASURED_CONTEXT:
            tokens = tokens or _number(value)
        if not is_setting(key):
            continue
        setting = _setting(key)
        if setting == "budget" and _number(value) is not None:
            return Budget(float(value), "budget setting")
        if setting == "k":
            k = k or _number(value)
        elif setting == "chunking":
            size = size or (
                _number(value) if parts[-1] in ("chunk_size", "chunk_tokens") else chunk_size(value)
            )
    if k is not None and size is not None:
        return Budget(k * size, "k x chunk size")
    if tokens is not None:
        return Budget(tokens, "measured")
    return None


def _without_measured(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` without its measured context tokens (at any depth)."""
    return {
        k: _without_measured(v) if isinstance(v, Mapping) else v
        for k, v in config.items()
        if str(k).lower() != MEASURED_CONTEXT
    }


def measured_context(config: Mapping[str, Any]) -> float | None:
    """The mean context tokens the generator receives, as the run measured and recorded them
    (``context_tokens``, at any depth); None when the config has none (a run recorded before
    ragmeter kept it in the evaluation, an evaluation of a run file) or it is not positive."""
    for key, value in flatten(config).items():
        if key.lower().split(".")[-1] == MEASURED_CONTEXT:
            found = _number(value)
            if found is not None:
                return found
    return None


def context_trap(
    baseline_config: Mapping[str, Any],
    candidate_config: Mapping[str, Any],
    found: list[Change] | None = None,
) -> str | None:
    """The "changing k" warning when the candidate's generator receives a different amount of
    context than the baseline's (None when it does not, or when it cannot be told).

    It compares the measured mean context tokens (:func:`measured_context`). They count when
    they are more than 10% apart (the tolerance of :func:`same_budget`) and either k or the
    budget is the change, or both runs claim the same budget (an explicit ``budget``, or k x
    chunk size); a change of the context source (an ablation: the labelled evidence, or no
    context) changes the context on purpose and is never flagged.
    """
    mb, mc = measured_context(baseline_config), measured_context(candidate_config)
    if mb is None or mc is None or abs(mc - mb) <= BUDGET_TOLERANCE * mb + 1e-9:
        return None
    found = changes(baseline_config, candidate_config) if found is None else found
    names = {c.name: c for c in found}
    if CONTEXT_SOURCE in names:
        return None
    claimed_b = context_budget(baseline_config, measured=False)
    claimed_c = context_budget(candidate_config, measured=False)
    more = mc > mb
    text = "more text, not better retrieval" if more else "less text, not worse retrieval"
    if "k" in names or "budget" in names:
        setting = "k" if "k" in names else "budget"
        what = f"changing {'k' if setting == 'k' else 'the budget'} ("
        what += str(names[setting]).removeprefix(f"{setting}: ") + ")"
        why = f"a {'larger' if more else 'smaller'} {setting} is {text}"
        fix = (
            "fix k to what the generator receives, report a larger k only as headroom, and "
            "compare at one context budget"
        )
    elif same_budget(claimed_b, claimed_c):
        what = f"a different context at one claimed budget ({claimed_b} tokens)"
        why = f"the generators do not receive the budget both claim: {text}"
        fix = "compare at the budget (a metric @budget=N) or set k so that the contexts match"
    else:
        return None
    return (
        f"{what}: the candidate's generator receives {mc:,.0f} tokens of context against the "
        f"baseline's {mb:,.0f} ({(mc - mb) / mb:+.1%}, more than 10% apart): {why} (the trap "
        f'"changing k between experiments"); {fix}'
    )


def _is_pipeline(value: Any) -> bool:
    """A retriever setting naming the user's pipeline: its kind, or its ``kind(target)`` label
    (the pipeline kinds of the registry, :data:`ragmeter.retrieval.KINDS`)."""
    if not isinstance(value, str):
        return False
    from ..retrieval import KINDS

    pipelines = [k.name for k in KINDS.values() if k.role == "pipeline"]
    return value in pipelines or value.startswith(tuple(f"{k}(" for k in pipelines))


def same_budget(baseline: Budget | None, candidate: Budget | None) -> bool | None:
    """True when the candidate's budget is within 10% of the baseline's; None when unknown."""
    if baseline is None or candidate is None:
        return None
    return abs(candidate.tokens - baseline.tokens) <= BUDGET_TOLERANCE * baseline.tokens + 1e-9


def changes(
    baseline_config: Mapping[str, Any], candidate_config: Mapping[str, Any]
) -> list[Change]:
    """Each logical change from baseline to candidate, sorted by name (the module's rule)."""
    groups: dict[str, list[SettingDiff]] = {}
    for d in config_diff(baseline_config, candidate_config):
        groups.setdefault(_setting(d.key), []).append(d)
    notes: dict[str, str] = {}
    imported = "run" in groups or any(
        isinstance(v, str) and v.startswith("imported ")
        for d in groups.get("retriever", ())
        for v in (d.baseline, d.candidate)
    )
    if imported:
        merged = [d for name in ("run", "retriever", "reranker") for d in groups.pop(name, ())]
        groups["run"] = merged
    elif any(
        _is_pipeline(v) for d in groups.get("retriever", ()) for v in (d.baseline, d.candidate)
    ):
        merged = [d for name in ("retriever", "reranker", "chunking") for d in groups.pop(name, ())]
        groups["pipeline"] = merged
    if "chunking" in groups and "k" in groups:
        bb, bc = context_budget(baseline_config), context_budget(candidate_config)
        if bb is not None and bc is not None and same_budget(bb, bc):
            k = groups.pop("k")
            groups["chunking"] += k
            notes["chunking"] = (
                f"k {_show(k[0].baseline)} -> {_show(k[0].candidate)} at an "
                f"equal context budget: {bb} -> {bc} tokens by {bb.source}"
            )
    return [
        Change(name, tuple(sorted(ds, key=lambda d: d.key)), notes.get(name, ""))
        for name, ds in sorted(groups.items())
    ]


def fairness_problems(
    baseline_config: Mapping[str, Any],
    candidate_config: Mapping[str, Any],
    metric: Metric | None,
    found: list[Change] | None = None,
) -> list[str]:
    """Why the comparison is not a fair test (empty when it is).

    - Different context budgets (the candidate's beyond 10% of the baseline's): always when an
      explicit budget setting changed; for budgets derived from k x chunk size or measured,
      only when the metric is not at a token budget (there the metric fixes the budget). An
      explicit budget that changed on one side only is flagged too.
    - The "changing k" trap (:func:`context_trap`): the measured context the generators
      receive is more than 10% apart although k or the budget is the change, or both runs
      claim one budget; whatever the metric (it replaces the budget line above).
    - A different prompt k that is its own change, at a rank cutoff.
    - Different chunkings compared at a rank cutoff: the same k puts a different amount of text
      in the prompt; compare at a token budget.
    """
    found = changes(baseline_config, candidate_config) if found is None else found
    names = {c.name: c for c in found}
    at_budget = metric is not None and metric.budget is not None
    problems = []
    bb, bc = context_budget(baseline_config), context_budget(candidate_config)
    equal = same_budget(bb, bc)
    trap = context_trap(baseline_config, candidate_config, found)
    if trap is not None:  # the measured context says it more exactly than the claimed budgets
        problems.append(trap)
    elif bb is not None and bc is not None and not equal and ("budget" in names or not at_budget):
        how = bb.source if bb.source == bc.source else f"{bb.source} vs {bc.source}"
        problems.append(
            f"the runs use different context budgets ({bb} -> {bc} tokens, {how}; "
            "more than 10% apart); compare at one budget"
        )
    elif "budget" in names and equal is None:
        problems.append(
            f"the runs use different context budgets ({names['budget']}); compare at one budget"
        )
    if "k" in names and not at_budget:
        problems.append(
            f"the runs use a different effective k ({names['k']}); fix k to what "
            "the generator receives"
        )
    if "chunking" in names and metric is not None and metric.budget is None:
        budgeted = metric.name in REGISTRY and REGISTRY[metric.name].budget
        hint = f", e.g. {metric.name}@budget=1200" if budgeted else ""
        problems.append(
            f"the runs use different chunkings ({names['chunking']}) at a rank "
            "cutoff, so the prompt holds different amounts of text; compare at a "
            f"token budget{hint}"
        )
    return problems


def several_note(found: list[Change]) -> str | None:
    """The one-change-per-run warning for ``compare``/``gate`` (None with at most one change)."""
    if len(found) <= 1:
        return None
    return (
        f"{len(found)} changes ({', '.join(c.name for c in found)}): with more than one "
        "change per run the comparison cannot say which change caused the difference"
    )
