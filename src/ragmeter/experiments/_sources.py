"""Where an experiment's labels come from and the level it scores them at.

Kept apart from :mod:`ragmeter.experiments._config` (which validates the variants) because it
answers two questions of its own:

- **source**: a golden set and a corpus (``golden = ...``, ``corpus = ...``), or a BEIR folder
  (``beir = "folder"``, ``beir_split = "test"``) read by :func:`ragmeter.data.load_beir`, so a
  BEIR collection runs with ``ragmeter run`` alone, without an import step;
- **level**: ``"span"`` (span metrics on the span labels, nDCG/P/AP on chunk qrels) or
  ``"document"`` (every metric on documents: the chunk ranking rolled up, document qrels).
  Token budgets and AllR exist only on spans, so they are refused at document level.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..metrics import Metric

if TYPE_CHECKING:
    from ._schema import ExperimentFile

#: "span": span metrics on the span labels, rank-only metrics on chunk qrels; "document": every
#: metric on documents (the chunk ranking rolled up, document qrels from the spans).
LEVELS = ("span", "document")
DEFAULT_BEIR_SPLIT = "test"


class _Checker(Protocol):
    def add(self, message: str, field: str) -> None: ...


@dataclass(frozen=True)
class DataFiles:
    """The experiment's labels and corpus: paths resolved against the experiment file."""

    golden: Path
    corpus: Path
    beir: Path | None = None
    beir_split: str = DEFAULT_BEIR_SPLIT


def read_source(f: ExperimentFile, given: set[str], base: Path, ck: _Checker) -> DataFiles:
    """``golden`` + ``corpus``, or ``beir`` (+ ``beir_split``); problems go to ``ck``.

    ``f`` holds the values the schema accepted; ``given`` the keys the file sets (a key given
    with a bad value was reported by the schema and is not reported again as missing)."""
    split = f.beir_split or DEFAULT_BEIR_SPLIT
    if "beir" in given:
        for key in ("golden", "corpus"):
            if key in given:
                ck.add(
                    f"'{key}' and 'beir' are exclusive: a BEIR folder holds both the corpus "
                    "and the labels",
                    key,
                )
        folder = base / (f.beir or ".")
        return DataFiles(folder / "qrels" / f"{split}.tsv", folder / "corpus.jsonl", folder, split)
    if "beir_split" in given:
        ck.add("'beir_split' applies only with beir = \"path/to/folder\"", "beir_split")
    paths = []
    for key in ("golden", "corpus"):
        val = getattr(f, key)
        if val is None and key not in given:
            ck.add(
                f"'{key}' is required: a path relative to the experiment file (or set "
                'beir = "folder" for a BEIR folder)',
                key,
            )
        paths.append(base / (val or "."))
    return DataFiles(paths[0], paths[1])


def read_level(level: str, metrics: tuple[Metric, ...], ck: _Checker) -> str:
    """At ``level = "document"``, metrics that exist only on spans are reported."""
    if level == "document":
        for m in metrics:
            if "rank" not in m.info.levels:
                ck.add(
                    f"metric {m} needs span labels and has no document-level form: drop it "
                    'or use level = "span"',
                    "metrics",
                )
            elif m.budget is not None:
                ck.add(
                    f"metric {m}: a token budget applies to span metrics; level = "
                    '"document" scores documents at a rank cutoff',
                    "metrics",
                )
    return level
