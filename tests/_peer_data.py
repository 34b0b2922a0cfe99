"""Helpers for trec_eval's reference outputs (``out.*`` files) and its measure names.

trec_eval prints one ``measure<TAB>qid<TAB>value`` line per value (``qid`` is ``all`` for the
summary); values carry 4 decimals. The files live outside the repo, in
``../shared/peer-data/trec_eval`` (override with ``RAGMETER_PEER_DATA``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

#: The folder holding trec_eval's test vectors, or None when it is absent.
_DEFAULT_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "peer-data" / "trec_eval"

SKIP_REASON = (
    "trec_eval's test vectors not found: set RAGMETER_PEER_DATA to the folder holding out.test.aq "
    f"(default {_DEFAULT_DIR})"
)


def peer_data_dir() -> Path | None:
    """``$RAGMETER_PEER_DATA`` or ``<repo>/../shared/peer-data/trec_eval``; None when absent."""
    env = os.environ.get("RAGMETER_PEER_DATA")
    folder = Path(env) if env else _DEFAULT_DIR
    return folder if (folder / "out.test.aq").is_file() else None


@dataclass(frozen=True)
class TrecEvalOutput:
    """``values[measure][qid]`` as printed (a string, so the printed precision is kept)."""

    values: dict[str, dict[str, str]]

    @property
    def measures(self) -> list[str]:
        return list(self.values)

    def num_q(self) -> int:
        """Queries trec_eval averaged over: its ``num_q`` row, else the per-query ids printed."""
        if "num_q" in self.values:
            return int(self.values["num_q"]["all"])
        return len({q for per_q in self.values.values() for q in per_q if q != "all"})

    def per_query(self, measure: str) -> dict[str, float]:
        return {q: float(v) for q, v in self.values[measure].items() if q != "all"}

    def summary(self, measure: str) -> float:
        return float(self.values[measure]["all"])


def read_trec_eval_output(path: Path) -> TrecEvalOutput:
    """Parse a trec_eval output file into ``{measure: {qid: value_text}}`` (file order kept)."""
    values: dict[str, dict[str, str]] = {}
    for line_no, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 3:
            raise ValueError(f"{path}:{line_no}: expected 'measure qid value', got {line!r}")
        measure, qid, value = parts
        values.setdefault(measure, {})[qid] = value
    return TrecEvalOutput(values)


# -- trec_eval measure name -> ragmeter metric string ------------------------------------------
_CUTOFF = {
    "P": "P",
    "recall": "R",
    "success": "Hit",
    "map_cut": "AP",
    "ndcg_cut": "nDCG",
}
_PLAIN = {"recip_rank": "RR", "map": "AP", "Rprec": "Rprec", "ndcg": "nDCG"}
#: measures whose relevance threshold follows trec_eval's ``-l`` (nDCG keeps every grade's gain)
_BINARY = {"P", "R", "Hit", "RR", "AP", "Rprec"}
_CUT_RE = re.compile(r"^(?P<base>P|recall|success|map_cut|ndcg_cut)_(?P<k>\d+)$")
_GAIN_MAP_RE = re.compile(r"^ndcg_(?P<map>\d+=[\d.]+(?:,\d+=[\d.]+)*)$")


def ragmeter_metric(measure: str, rel_level: int = 1) -> str | None:
    """The ragmeter metric string for a trec_eval measure name, or None when not shared.

    ``rel_level`` is trec_eval's ``-l``: binary measures become ``NAME(rel=N)``; nDCG ignores it
    because trec_eval keeps lower grades' gain in nDCG (upstream usnistgov/trec_eval#35).
    """
    name: str | None = None
    k = ""
    opts = ""
    if measure in _PLAIN:
        name = _PLAIN[measure]
    elif m := _CUT_RE.match(measure):
        name, k = _CUTOFF[m["base"]], m["k"]
    elif m := _GAIN_MAP_RE.match(measure):
        name = "nDCG"
        opts = "gains=" + ",".join(p.replace("=", ":") for p in m["map"].split(","))
    if name is None:
        return None
    if rel_level != 1 and name in _BINARY:
        opts = f"rel={rel_level}"
    return name + (f"({opts})" if opts else "") + (f"@{k}" if k else "")
