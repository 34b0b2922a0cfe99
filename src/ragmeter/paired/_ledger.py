"""Selection accounting: a local ledger of every comparison made on each golden-set version.

Each comparison appends one JSON line to the ledger (default ``.ragmeter/ledger.jsonl`` under the
current directory). A line is written with a single ``write`` on a file opened with ``O_APPEND``
(under an exclusive ``flock`` where the platform has one), so concurrent writers never interleave
partial lines. The experiment store of a later release will take over this job; the file format
is plain JSONL so it can be imported there.

A *variant* is a run identity: its name plus a fingerprint of its config (bookkeeping keys
removed), so two runs with one name but different settings count as two variants. The variants
tried on a version are the distinct *candidates* of the comparisons on it: the baseline is what
they are measured against, not one of the options being selected (a promoted winner was counted
when it was a candidate).

Each entry also lists the changes from baseline to candidate (``changes``), decided by
:func:`ragmeter.paired.changes`, the same rule ``run`` and ``compare`` apply.

An entry of ``"kind": "confirm"`` (:meth:`Ledger.record_confirmation`, written by ``ragmeter
confirm``) records the one look a chosen variant gets at the held-out split: its split, the
candidate's settings (``config``) and the paired result there. It is not a selection among
variants, so :meth:`Ledger.summary` does not count it; :meth:`Ledger.confirmations` lists them. An
entry without ``kind`` (every ledger written before confirmations existed) is a comparison.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import InputError
from ..io import append_line, iter_jsonl
from ._changes import changes
from ._configdiff import config_settings

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ._selection import SelectionEstimate

DEFAULT_LEDGER = Path(".ragmeter") / "ledger.jsonl"
#: Ledger key for comparisons of runs that carry no golden-set version.
UNVERSIONED = "<unversioned>"
#: ``kind`` of a confirmation on the held-out split (an entry without ``kind`` is a comparison)
CONFIRM = "confirm"
#: the paired result a confirmation records
CONFIRM_RESULT = (
    "n", "mean_delta", "ci", "fixed", "broken", "sign_test_p", "baseline_mean", "candidate_mean"
)  # fmt: skip


def variant_id(run: str, config: Mapping[str, Any]) -> str:
    """``run`` plus a short fingerprint of its settings, e.g. ``bm25+rerank#3f9a1c2b``.

    The store's ``config_hash`` digests the same settings (:func:`config_settings`) but spells the
    JSON with non-ASCII kept and keeps the whole digest: each is what its existing ledgers and
    databases hold, so the two are not merged."""
    settings = config_settings(config)
    if not settings:
        return run
    blob = json.dumps(settings, sort_keys=True, default=str).encode()
    return f"{run}#{hashlib.sha256(blob).hexdigest()[:8]}"


@dataclass(frozen=True)
class LedgerSummary:
    """What the ledger knows about one golden-set version."""

    golden_version: str
    n_comparisons: int
    variants: tuple[str, ...]

    @property
    def n_variants(self) -> int:
        return len(self.variants)

    def to_dict(self) -> dict[str, Any]:
        return {
            "golden_version": self.golden_version,
            "n_comparisons": self.n_comparisons,
            "n_variants": self.n_variants,
            "variants": list(self.variants),
        }


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (JSON has no NaN; a comparison over
    no questions has no mean), so the ledger stays readable by the one JSON reader."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


class Ledger:
    """An append-only JSONL file counting comparisons per golden-set version."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else Path.cwd() / DEFAULT_LEDGER

    def append(self, entry: Mapping[str, Any]) -> None:
        """Append one entry as a single line, atomically with respect to other writers."""
        append_line(
            self.path,
            json.dumps(
                _finite(dict(entry)),
                sort_keys=True,
                ensure_ascii=False,
                default=str,
                allow_nan=False,
            ),
            what="ledger",
        )

    def record(
        self,
        *,
        golden_version: str | None,
        metric: str,
        baseline: str,
        candidate: str,
        baseline_config: Mapping[str, Any] | None = None,
        candidate_config: Mapping[str, Any] | None = None,
        n: int | None = None,
        mean_delta: float | None = None,
        ci: tuple[float, float] | None = None,
    ) -> dict[str, Any]:
        """Count one comparison; returns the entry written."""
        found = changes(baseline_config or {}, candidate_config or {})
        entry = {
            "time": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "golden_version": golden_version if golden_version is not None else UNVERSIONED,
            "metric": metric,
            "baseline": variant_id(baseline, baseline_config or {}),
            "candidate": variant_id(candidate, candidate_config or {}),
            "changes": [c.name for c in found],
            "n": n,
            "mean_delta": mean_delta,
            "ci": list(ci) if ci is not None else None,
        }
        self.append(entry)
        return entry

    @staticmethod
    def variant_id(run: str, config: Mapping[str, Any]) -> str:
        """The id an entry gives the run ``run`` with ``config`` (name plus a fingerprint of its
        settings, e.g. ``bm25+rerank#3f9a1c2b``)."""
        return variant_id(run, config)

    def record_confirmation(
        self,
        *,
        golden_version: str | None,
        split: str,
        metric: str,
        baseline: str,
        candidate: str,
        baseline_config: Mapping[str, Any] | None = None,
        candidate_config: Mapping[str, Any] | None = None,
        result: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Record that ``candidate`` was confirmed against ``baseline`` on ``split`` (its
        settings under ``config``; ``result``: ``n``, ``mean_delta``, ``ci``, ``fixed``,
        ``broken``, ``sign_test_p``, ``baseline_mean``, ``candidate_mean``, any of them); returns
        the entry written."""
        found = changes(baseline_config or {}, candidate_config or {})
        res = dict(result or {})
        entry = {
            "time": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "kind": CONFIRM,
            "golden_version": golden_version if golden_version is not None else UNVERSIONED,
            "split": split,
            "metric": metric,
            "baseline": variant_id(baseline, baseline_config or {}),
            "candidate": variant_id(candidate, candidate_config or {}),
            "config": config_settings(candidate_config or {}),
            "changes": [c.name for c in found],
            **{k: res.get(k) for k in CONFIRM_RESULT},
        }
        if entry["ci"] is not None:
            entry["ci"] = list(entry["ci"])
        self.append(entry)
        return entry

    def confirmations(
        self, golden_version: str | None, split: str | None = None
    ) -> list[dict[str, Any]]:
        """The confirmations recorded on ``golden_version`` (on ``split`` only, when given),
        oldest first."""
        key = golden_version if golden_version is not None else UNVERSIONED
        return [
            e
            for e in self.entries()
            if e.get("kind") == CONFIRM
            and e.get("golden_version") == key
            and (split is None or e.get("split") == split)
        ]

    def entries(self) -> list[dict[str, Any]]:
        """All entries; a torn last line (a writer killed mid-write) is skipped."""
        if not self.path.exists():
            return []
        out = []
        # Every entry ends with a newline, so a bad last line without one is a torn write; an
        # empty ledger has recorded nothing yet.
        for line, entry in iter_jsonl(self.path, allow_empty=True, torn_tail=True):
            if "golden_version" not in entry:
                raise InputError(
                    "ledger entry lacks 'golden_version'",
                    path=self.path,
                    line=line,
                    field="golden_version",
                )
            out.append(entry)
        return out

    def summary(self, golden_version: str | None) -> LedgerSummary:
        """Comparisons counted and variants tried on one golden-set version (a confirmation on
        the held-out split selects nothing: not counted)."""
        key = golden_version if golden_version is not None else UNVERSIONED
        mine = [
            e
            for e in self.entries()
            if e.get("golden_version") == key and e.get("kind", "compare") != CONFIRM
        ]
        variants = dict.fromkeys(str(e["candidate"]) for e in mine if e.get("candidate"))
        return LedgerSummary(key, len(mine), tuple(variants))

    def selection_estimate(
        self,
        golden_version: str | None,
        baseline: np.ndarray,
        candidate: np.ndarray,
        *,
        n_searches: int = 300,
        seed: int | None = 0,
    ) -> tuple[int, SelectionEstimate | None]:
        """How many variants this ledger has counted on ``golden_version`` and, when more than
        one, the simulated optimism of the best of that many on this question-by-question pair
        (:func:`~ragmeter.paired.optimism_from_pair`): what ``compare`` attaches after counting
        a comparison, and what a page view attaches without counting one."""
        n = self.summary(golden_version).n_variants
        if n <= 1:
            return n, None
        from ._selection import optimism_from_pair

        return n, optimism_from_pair(baseline, candidate, n, n_searches=n_searches, seed=seed)
