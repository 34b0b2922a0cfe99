"""Run references: what a user writes to name one side of a comparison, and the one resolver
that reads it.

A run reference is one of

- a stored run: ``12``, ``run:12`` or ``run:12:LEVEL`` (LEVEL: span, chunk, document or eval,
  the evaluation level read from the store);
- an evaluation file: ``PATH`` (``ragmeter eval --per-query --format json`` output, a run's
  ``evaluation.json``) or ``PATH#RUN`` (one run of a file that lists several);
- a run file (TREC or JSONL) scored here against labels (:class:`Scoring`: item qrels, or a
  span-labelled golden set and the chunking the run refers to).

:meth:`RunRef.parse` turns the text into a :class:`RunRef` (a bare number that is also a file
here is refused: the user says which one is meant); :func:`resolve` reads one reference into an
:class:`~ragmeter.metrics.Evaluation`; :func:`load_pair` reads the two sides of a comparison
(scoring run files when labels are given). Every interface that names runs by text (``ragmeter
compare``, ``gate``, ``plan``, the lab's comparison) goes through here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .._errors import UsageError

if TYPE_CHECKING:
    from ..metrics import Evaluation
    from ..store import Store

__all__ = [
    "LoadedPair",
    "RefKind",
    "RunRef",
    "Scoring",
    "load_pair",
    "named_files",
    "resolve",
    "score_run_files",
]

#: what a reference names: a run in the store, an evaluation file, or a run file to score
RefKind = Literal["stored", "evaluation", "run_file"]

_STORED = re.compile(r"run:(\d+)(?::([a-z]+))?")


@dataclass(frozen=True)
class RunRef:
    """One run as the user named it.

    ``text`` is what was written; ``kind`` what it names. A stored run has ``run_id`` (and the
    evaluation ``level`` asked for, None for the run's first); an evaluation file has ``path``
    and, for ``PATH#RUN``, ``run``; a run file has ``path``.
    """

    text: str
    kind: RefKind
    path: Path | None = None
    run: str | None = None
    run_id: int | None = None
    level: str | None = None

    @classmethod
    def parse(cls, text: str) -> RunRef:
        """A stored run (``12``, ``run:12``, ``run:12:chunk``) or an evaluation file (``PATH``,
        ``PATH#RUN``). A bare number that is also a file here, and ``run:`` followed by
        anything but an id (and a level), are refused with a :class:`UsageError`.

        ``ragmeter report``'s selectors (:func:`.report.resolve_runs`) read differently, on
        purpose: they name stored runs or experiments, never files, so a number there is a run
        id and other text an experiment name."""
        m = _STORED.fullmatch(text)
        if m is not None:
            return cls(text, "stored", run_id=int(m[1]), level=m[2])
        if text.isascii() and text.isdigit():
            if Path(text).exists():
                raise UsageError(
                    f"'{text}' is both a stored run id and a file here: write ./{text} for the "
                    f"file or run:{text} for the stored run"
                )
            return cls(text, "stored", run_id=int(text))
        if text.startswith("run:"):
            raise UsageError(
                f"'{text}' is not a stored run: write run:ID or run:ID:LEVEL (LEVEL: span, "
                "chunk, document or eval), e.g. run:12 or run:12:chunk"
            )
        path, sep, run = text.partition("#")
        return cls(text, "evaluation", path=Path(path), run=run if sep else None)

    @classmethod
    def stored(cls, run_id: int, level: str | None = None) -> RunRef:
        """A stored run by its id (the lab's references: ids picked from the store)."""
        text = f"run:{int(run_id)}" + (f":{level}" if level else "")
        return cls(text, "stored", run_id=int(run_id), level=level)

    @classmethod
    def run_file(cls, text: str) -> RunRef:
        """A run file, scored against labels (the text is the path as written)."""
        return cls(text, "run_file", path=Path(text))

    @property
    def stored_id(self) -> int | None:
        """The stored run's id; None for a file."""
        return self.run_id if self.kind == "stored" else None


def named_files(texts: Sequence[str]) -> list[Path]:
    """Every file the references ``texts`` may name (``PATH`` and, for ``PATH#RUN``, ``PATH``),
    before they are parsed: the inputs an output file must never replace."""
    return [*(Path(t) for t in texts), *(Path(t.partition("#")[0]) for t in texts)]


@dataclass(frozen=True)
class Scoring:
    """Labels to score run files against: item ``qrels``, or a span-labelled ``golden`` set
    with the ``chunks`` the runs refer to (once for both runs, or one per run in order) and
    the span share ``cover`` that counts as found."""

    qrels: Path | None = None
    golden: Path | None = None
    chunks: tuple[Path, ...] = ()
    cover: float = 0.5

    @property
    def given(self) -> bool:
        """Labels were given: the references are run files to score."""
        return self.qrels is not None or self.golden is not None or bool(self.chunks)


def resolve(ref: RunRef, store: Store | None = None, metric: str | None = None) -> Evaluation:
    """The evaluation a stored run or an evaluation file holds (a run file needs labels:
    :func:`score_run_files`). A stored run without a store is a :class:`UsageError`. A stored
    run named without a level is read at its first level that computed ``metric`` (an
    experiment keeps nDCG at chunk level beside span-level recall), else at its first."""
    if ref.kind == "stored" and ref.run_id is not None:
        if store is None:
            raise UsageError(f"'{ref.text}' names a stored run: drop --no-store to read it")
        first = store.evaluation(ref.run_id, ref.level)
        if ref.level is not None or metric is None or _computed(first, metric):
            return first
        for level in store.run(ref.run_id).levels[1:]:
            other = store.evaluation(ref.run_id, level)
            if _computed(other, metric):
                return other
        return first  # the first level's error names what it has
    if ref.kind == "evaluation" and ref.path is not None:
        from ..metrics import Evaluation

        return Evaluation.load(ref.path, run=ref.run)
    raise UsageError(f"'{ref.text}' is a run file: give labels to score it")


def _computed(e: Evaluation, metric: str) -> bool:
    from ..metrics import parse

    try:
        return parse(metric) in e.metrics
    except UsageError:
        return False


def score_run_files(refs: Sequence[RunRef], metrics: str, scoring: Scoring) -> list[Evaluation]:
    """Score run files on ``metrics`` against ``scoring``'s labels, one evaluation per run."""
    texts = [r.text for r in refs]
    chunks = list(scoring.chunks)
    if scoring.golden is not None or chunks:
        if scoring.golden is None or not chunks:
            raise UsageError("span-level scoring needs both --golden and --chunks")
        if len(chunks) not in (1, len(texts)):
            raise UsageError(
                "give --chunks once for both runs, or twice (baseline's chunking "
                "first, then the candidate's)"
            )
        from ..labels import evaluate_spans_files

        per_run = chunks * len(texts) if len(chunks) == 1 else chunks
        return [
            evaluate_spans_files(
                [Path(s)], metrics=metrics, golden=scoring.golden, chunks=c, cover=scoring.cover
            )[0]
            for s, c in zip(texts, per_run, strict=True)
        ]
    from ..metrics import evaluate

    qrels = scoring.qrels
    return [
        evaluate(qrels, Path(s), metrics, run_name=s, config={"qrels": str(qrels)}) for s in texts
    ]


@dataclass(frozen=True)
class LoadedPair:
    """The two sides of a comparison, as named and as read."""

    base: RunRef
    cand: RunRef
    baseline: Evaluation
    candidate: Evaluation

    @property
    def stored_ids(self) -> tuple[int | None, int | None]:
        """The stored runs read (None for a side read from a file)."""
        return self.base.stored_id, self.cand.stored_id


def load_pair(
    base: str | RunRef,
    cand: str | RunRef,
    *,
    metric: str | None = None,
    scoring: Scoring | None = None,
    store: Store | None = None,
) -> LoadedPair:
    """Both sides of a comparison: read from evaluation files or the store, or, with labels in
    ``scoring``, scored here from run files on ``metric`` (which is then required)."""
    scoring = scoring or Scoring()
    if scoring.qrels is not None and (scoring.golden is not None or scoring.chunks):
        raise UsageError("give --qrels (item labels) or --golden/--chunks (span labels), not both")
    if scoring.given:
        if metric is None:
            raise UsageError("give --metric to score the runs")
        refs = [r if isinstance(r, RunRef) else RunRef.run_file(r) for r in (base, cand)]
        a, b = score_run_files(refs, metric, scoring)
        return LoadedPair(refs[0], refs[1], a, b)
    sides: list[tuple[RunRef, Evaluation]] = []
    for r in (base, cand):  # the baseline read before the candidate is named
        ref = r if isinstance(r, RunRef) else RunRef.parse(r)
        sides.append((ref, resolve(ref, store, metric)))
    (rb, a), (rc, b) = sides
    return LoadedPair(rb, rc, a, b)
