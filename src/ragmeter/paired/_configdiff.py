"""One change per run: which settings differ between two runs, and whether the test is fair.

Configs are the ``Evaluation.config`` mappings the runs carry. Nested mappings are flattened to
dotted keys (``{"retriever": {"k1": 1.2}}`` -> ``retriever.k1``). Top-level bookkeeping keys in
:data:`BOOKKEEPING` (the run's name, paths, timestamps) and measurements under a part
in :data:`MEASURED` (the effective k the span evaluator records) are not settings and are
ignored. Every other key present in either config with different values is a difference.

Unfair comparisons (a warning, or an error with ``strict``):
- a different context budget: a differing key whose last part is in :data:`BUDGET_KEYS`;
- a different effective k: a differing key whose last part is in :data:`K_KEYS`, unless the
  metric is at a token budget (there the number of chunks that fit differs by design);
- a different chunking compared at a rank cutoff: with chunks of different sizes the same k puts
  a different number of tokens in the prompt, so compare at a token budget (``R@budget=1200``).
  A differing key whose last part is in :data:`CHUNKING_KEYS` triggers it when the metric has a
  rank cutoff rather than a budget.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..metrics import Metric

#: Keys that describe the record, not the experiment ("chunks" is the chunk file's path; the
#: setting is "chunking", its name).
BOOKKEEPING = frozenset({"run", "run_name", "name", "path", "output", "created", "created_at",
                         "timestamp", "time", "elapsed_s", "duration_s", "host", "chunks"})
#: Keys (at any depth) that hold measurements of the run or a list of what was scored, not
#: settings: the span evaluator's effective k per budget follows from the chunking.
MEASURED = frozenset({"effective_k", "n_spans", "budgets"})
BUDGET_KEYS = frozenset({"budget", "context_budget", "token_budget", "context_tokens"})
K_KEYS = frozenset({"k", "prompt_k", "top_k", "effective_k"})
CHUNKING_KEYS = frozenset({"chunking", "chunker", "chunk_size", "chunk_tokens"})

_MISSING = "<unset>"
#: Metrics the span evaluator computes at a token budget.
_BUDGET_METRICS = ("R", "Hit", "AllR", "RR")


@dataclass(frozen=True)
class SettingDiff:
    """One setting that differs between the baseline and candidate configs."""

    key: str
    baseline: Any
    candidate: Any

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "baseline": self.baseline, "candidate": self.candidate}

    def __str__(self) -> str:
        return f"{self.key}: {_show(self.baseline)} -> {_show(self.candidate)}"


def _show(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings to dotted keys; other values (lists included) are kept whole."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _leaf(key: str) -> str:
    return key.rsplit(".", 1)[-1].lower()


def is_setting(key: str) -> bool:
    """False for bookkeeping and measured keys (see the module docstring)."""
    parts = key.lower().split(".")
    top_bookkeeping = len(parts) == 1 and parts[0] in BOOKKEEPING  # "retriever.name" is a setting
    return not top_bookkeeping and not MEASURED.intersection(parts)


def config_diff(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> list[SettingDiff]:
    """Every setting that differs, sorted by key; a key absent on one side shows as ``<unset>``."""
    a, b = flatten(baseline), flatten(candidate)
    diffs = []
    for key in sorted(set(a) | set(b)):
        if not is_setting(key):
            continue
        va, vb = a.get(key, _MISSING), b.get(key, _MISSING)
        if va != vb:
            diffs.append(SettingDiff(key, va, vb))
    return diffs


def fairness_problems(diffs: list[SettingDiff], metric: Metric | None) -> list[str]:
    """Why the comparison is not a fair test (empty when it is)."""
    problems = []
    # At a token budget the effective k differs by design (that is what a budget means).
    at_budget = metric is not None and metric.budget is not None
    for d in diffs:
        leaf = _leaf(d.key)
        if leaf in BUDGET_KEYS:
            problems.append(f"the runs use different context budgets ({d}); compare at one budget")
        elif leaf in K_KEYS and not at_budget:
            problems.append(f"the runs use a different effective k ({d}); fix k to what the "
                            "generator receives")
        elif leaf in CHUNKING_KEYS and metric is not None and metric.budget is None:
            hint = f", e.g. {metric.name}@budget=1200" if metric.name in _BUDGET_METRICS else ""
            problems.append(f"the runs use different chunkings ({d}) at a rank cutoff, so the "
                            f"prompt holds different amounts of text; compare at a token budget{hint}")
    return problems
