"""Which settings differ between two runs, key by key (the raw differences).

Configs are the ``Evaluation.config`` mappings the runs carry. Nested mappings are flattened to
dotted keys (``{"retriever": {"k1": 1.2}}`` -> ``retriever.k1``). Top-level bookkeeping keys in
:data:`BOOKKEEPING` (the run's name, paths, timestamps) and measurements under a part
in :data:`MEASURED` (the effective k the span evaluator records, the measured context tokens)
or :data:`EXECUTION` (an encoder's threads: speed, not numbers) are not settings and are
ignored. Every other key present in either config with different values is a difference.

Which differences make one change, and whether the test is fair, is decided in ``_changes``
(one rule for ``run``, ``compare``, ``gate`` and the ledger).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._record import Record

#: Keys that describe the record, not the experiment ("chunks" is the chunk file's path; the
#: setting is "chunking", its name).
BOOKKEEPING = frozenset(
    {
        "run",
        "run_name",
        "name",
        "path",
        "output",
        "created",
        "created_at",
        "timestamp",
        "time",
        "elapsed_s",
        "duration_s",
        "host",
        "chunks",
    }
)
#: Keys (at any depth) that hold measurements of the run or a list of what was scored, not
#: settings: the span evaluator's effective k per budget follows from the chunking.
MEASURED = frozenset({"effective_k", "n_spans", "budgets", "context_tokens"})
#: Keys (at any depth) that change how fast a run goes, never its numbers: an encoder's threads
#: give the same vectors bit for bit (tests/retrieval/test_threads.py), so they are not a change.
EXECUTION = frozenset({"threads"})

_MISSING = "<unset>"


@dataclass(frozen=True)
class SettingDiff:
    """One setting that differs between the baseline and candidate configs."""

    key: str
    baseline: Any
    candidate: Any

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "baseline": self.baseline, "candidate": self.candidate}

    @classmethod
    def from_dict(
        cls, d: Mapping[str, Any], *, source: str | None = None, field: str | None = None
    ) -> SettingDiff:
        """Rebuild from :meth:`to_dict` output (the two values are kept as they are); a bad
        record raises an ``InputError`` naming the field."""
        r = Record(d, what="setting difference", at=field, source=source)
        return cls(key=r.text("key"), baseline=r.raw("baseline"), candidate=r.raw("candidate"))

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


def is_setting(key: str) -> bool:
    """False for bookkeeping and measured keys (see the module docstring)."""
    parts = key.lower().split(".")
    top_bookkeeping = len(parts) == 1 and parts[0] in BOOKKEEPING  # "retriever.name" is a setting
    return not top_bookkeeping and not (MEASURED | EXECUTION).intersection(parts)


def config_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a config, flattened to dotted keys, bookkeeping and measured keys left
    out: what a variant's fingerprint (the ledger's ``variant_id``, the store's config hash)
    is taken over."""
    return {k: v for k, v in flatten(config).items() if is_setting(k)}


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
