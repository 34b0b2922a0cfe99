"""The causal table: what each question's answer does when its context is swapped.

The retrieval-by-answer table (:mod:`._table`) is observational: it sees whether the labelled
evidence reached the prompt and whether the answer was right, and *infers* the failing link.
Context ablations make it causal: the same generator answers each question again with the oracle
context (the labelled spans, extended to the baseline's token budget), with no context, and with
the labelled spans plus the retrieved passages that hold no evidence (distractors). Per
answerable question, with outcome = "answer correct" of the answer check under each source:

=====================  ===================================================================
cause                  rule (checked in this order)
=====================  ===================================================================
unknown                the retrieved outcome is unknown (no answer, a failed generation)
memory                 right with the retrieved context and right with no context
working                right with the retrieved context (no-context run absent or wrong)
unknown                wrong with retrieved, the oracle outcome missing or unknown
generation_failure     wrong with retrieved and wrong even with the oracle context
noise_sensitive        wrong with retrieved, right with the oracle, wrong with distractors
retrieval_failure      wrong with retrieved, right with the oracle (distractors absent or right)
=====================  ===================================================================

Unanswerable questions are reported apart (``unanswerable``), as are the ``unknown`` ones: neither
is counted in the five causes. These causes are *proven* (the context was the only change); the
observational cells are *inferred*. The ceiling is the paired difference oracle - retrieved on
answer correctness over the answerable questions whose two outcomes are known: what a perfect
retriever would buy at this budget, with its bootstrap interval.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import InputError, UsageError
from ..paired import Comparison, compare
from ._table import CELLS, OTHER

#: the five causes, in the order tables list them
CAUSES = ("working", "memory", "retrieval_failure", "generation_failure", "noise_sensitive")
#: reported apart, never in the counts of :data:`CAUSES`
APART = ("unanswerable", "unknown")
#: the context sources a table can hold (``ragmeter.generation.CONTEXT_SOURCES``), retrieved first
SOURCES = ("retrieved", "oracle", "none", "oracle+distractors")
#: the proven bad causes, in the order a tie between them is broken
_BAD_ORDER = ("retrieval_failure", "generation_failure", "noise_sensitive")
#: the outcome the ceiling compares (the answer check's correctness)
OUTCOME = "answer correct"


@dataclass(frozen=True)
class CauseInfo:
    """How a cause reads in tables: its title, the rule that proves it, what to do about it."""

    key: str
    title: str
    rule: str
    reading: str
    bad: bool


CAUSE_INFO: Mapping[str, CauseInfo] = {
    c.key: c
    for c in (
        CauseInfo(
            "working",
            "working",
            "right with the retrieved context",
            "keep as regression cases",
            False,
        ),
        CauseInfo(
            "memory",
            "answered from memory",
            "right with the retrieved context and right with no context",
            "the model knows it without the documents: do not credit retrieval; fragile when "
            "the fact changes",
            False,
        ),
        CauseInfo(
            "retrieval_failure",
            "proven retrieval failure",
            "wrong with the retrieved context, right with the oracle context",
            "the generator answers once the evidence is in the prompt: fix retrieval",
            True,
        ),
        CauseInfo(
            "generation_failure",
            "proven generation failure",
            "wrong even with the oracle context",
            "better retrieval cannot help: fix the prompt, the context assembly or the model",
            True,
        ),
        CauseInfo(
            "noise_sensitive",
            "noise-sensitive",
            "right with the oracle context, wrong once the retrieved non-evidence passages "
            "are added",
            "the distractors throw it off: raise context precision (a reranker, or a smaller "
            "k at the same budget)",
            True,
        ),
        CauseInfo(
            "unanswerable",
            "unanswerable",
            "the golden set marks the question unanswerable",
            "no oracle context exists; see abstention",
            False,
        ),
        CauseInfo(
            "unknown",
            "unknown",
            "an outcome the rule needs is missing (no answer, failed generation, no oracle "
            "passage)",
            "not counted: re-run the missing answers",
            False,
        ),
    )
}


@dataclass(frozen=True)
class CausalQuestion:
    """One question: its outcome per context source, its cause and its observational cell."""

    id: str
    outcomes: Mapping[str, bool | None]  # source -> answer correct (None: unknown/failed)
    cause: str  # one of CAUSES + APART
    observed: str | None = None  # the retrieval-by-answer cell of the baseline, if known

    @property
    def proven(self) -> bool:
        """The cause is one of the five (not reported apart)."""
        return self.cause in CAUSES


@dataclass(frozen=True)
class CausalTable:
    """Per-question causes from context ablations, their counts and the oracle ceiling."""

    sources: tuple[str, ...]  # the sources that were run, retrieved first
    questions: tuple[CausalQuestion, ...]
    #: oracle vs retrieved on answer correctness (answerable questions with both outcomes
    #: known); None without an oracle run or such questions
    ceiling: Comparison | None = None

    @property
    def n(self) -> int:
        """Every question, those reported apart included."""
        return len(self.questions)

    @property
    def n_counted(self) -> int:
        """The questions in the five causes (unanswerable and unknown left out)."""
        return sum(q.cause in CAUSES for q in self.questions)

    def count(self, cause: str) -> int:
        _check_cause(cause)
        return sum(q.cause == cause for q in self.questions)

    def ids(self, cause: str) -> list[str]:
        _check_cause(cause)
        return [q.id for q in self.questions if q.cause == cause]

    def counts(self) -> dict[str, int]:
        """Every category (causes, then those apart) -> its count; they sum to :attr:`n`."""
        out = dict.fromkeys((*CAUSES, *APART), 0)
        for q in self.questions:
            out[q.cause] += 1
        return out

    def cross(self) -> dict[str, dict[str, int]]:
        """Observational cell -> cause -> count, over the questions whose cell is known: how
        the inferred reading of each cell held up once the context was swapped."""
        order = [c.key for c in (*CELLS, *OTHER)]
        seen = {q.observed for q in self.questions if q.observed is not None}
        keys = [k for k in order if k in seen] + sorted(seen - set(order))
        out = {k: dict.fromkeys((*CAUSES, *APART), 0) for k in keys}
        for q in self.questions:
            if q.observed is not None:
                out[q.observed][q.cause] += 1
        return out

    def largest_proven_bad(self) -> str | None:
        """The proven bad cause with the most questions (ties in the order retrieval failure,
        generation failure, noise-sensitive); None when all three are empty."""
        counts = self.counts()
        best = max(_BAD_ORDER, key=lambda k: (counts[k], -_BAD_ORDER.index(k)))
        return best if counts[best] else None

    def ceiling_dict(self) -> dict[str, Any] | None:
        """The ceiling's headline: mean oracle - retrieved, its interval, fixed and broken."""
        c = self.ceiling
        if c is None:
            return None
        return {
            "n": c.n,
            "retrieved_right": int((c.baseline_values == 1).sum()),
            "oracle_right": int((c.candidate_values == 1).sum()),
            "mean": c.mean_delta,
            "interval": list(c.ci),
            "confidence": c.confidence,
            "fixed": c.fixed,
            "broken": c.broken,
            "verdict": c.verdict,
            "method": c.method_line,
        }

    def to_dict(self) -> dict[str, Any]:
        counts = self.counts()
        return {
            "sources": list(self.sources),
            "n": self.n,
            "n_counted": self.n_counted,
            "counts": counts,
            "causes": [
                {
                    "cause": k,
                    "title": CAUSE_INFO[k].title,
                    "rule": CAUSE_INFO[k].rule,
                    "reading": CAUSE_INFO[k].reading,
                    "bad": CAUSE_INFO[k].bad,
                    "proven": k in CAUSES,
                    "count": counts[k],
                    "ids": self.ids(k),
                }
                for k in (*CAUSES, *APART)
            ],
            "largest_proven_bad": self.largest_proven_bad(),
            "cross": self.cross(),
            "ceiling": None
            if self.ceiling is None
            else {**(self.ceiling_dict() or {}), "comparison": self.ceiling.to_dict()},
            "questions": [
                {"id": q.id, "outcomes": dict(q.outcomes), "cause": q.cause, "observed": q.observed}
                for q in self.questions
            ],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, source: str | None = None) -> CausalTable:
        """Rebuild from :meth:`to_dict` output (also after a JSON round trip): the questions and
        the ceiling's comparison are read back, the counts and the cross table recomputed."""

        def bad(field: str, why: str) -> InputError:
            return InputError(f"not a causal table: {why}", path=source, field=field)

        if not isinstance(d, Mapping):
            raise bad("", "expected an object")
        sources = d.get("sources")
        if not isinstance(sources, list) or not all(s in SOURCES for s in sources):
            raise bad("sources", f"must be a list of {', '.join(SOURCES)}")
        rows = d.get("questions")
        if not isinstance(rows, list):
            raise bad("questions", "must be a list")
        questions = []
        for i, r in enumerate(rows):
            at = f"questions[{i}]"
            if not isinstance(r, Mapping) or not isinstance(r.get("id"), str):
                raise bad(f"{at}.id", "each question needs a string id")
            if r.get("cause") not in (*CAUSES, *APART):
                raise bad(f"{at}.cause", f"must be one of {', '.join((*CAUSES, *APART))}")
            outs = r.get("outcomes")
            if not isinstance(outs, Mapping) or not all(
                k in SOURCES and (v is None or isinstance(v, bool)) for k, v in outs.items()
            ):
                raise bad(f"{at}.outcomes", "must map a source to true, false or null")
            obs = r.get("observed")
            if obs is not None and not isinstance(obs, str):
                raise bad(f"{at}.observed", "must be a cell key or null")
            questions.append(CausalQuestion(r["id"], dict(outs), r["cause"], obs))
        ceiling = None
        raw = d.get("ceiling")
        if raw is not None:
            if not isinstance(raw, Mapping) or not isinstance(raw.get("comparison"), Mapping):
                raise bad("ceiling.comparison", "must hold the paired comparison's record")
            ceiling = Comparison.from_dict(raw["comparison"], source=source)
        return cls(tuple(sources), tuple(questions), ceiling)


def _check_cause(cause: str) -> None:
    if cause not in CAUSE_INFO:
        raise UsageError(f"unknown cause '{cause}'; choose from {', '.join(CAUSE_INFO)}")


def _cause(outcome: Mapping[str, bool | None], ran: Collection[str]) -> str:
    """The rule of the module docstring for one answerable question."""
    got = outcome.get("retrieved")
    if got is None:
        return "unknown"
    if got:
        return "memory" if "none" in ran and outcome.get("none") is True else "working"
    oracle = outcome.get("oracle")
    if oracle is None:
        return "unknown"
    if not oracle:
        return "generation_failure"
    if "oracle+distractors" in ran and outcome.get("oracle+distractors") is False:
        return "noise_sensitive"
    return "retrieval_failure"


def causal_table(
    outcomes: Mapping[str, Mapping[str, bool | None]],
    *,
    unanswerable: Collection[str] = (),
    observed: Mapping[str, str] | None = None,
    no_oracle_passage: Collection[str] = (),
    seed: int = 0,
    n_resamples: int = 5000,
) -> CausalTable:
    """The causal table from answer correctness per context source.

    ``outcomes``: source (``retrieved``, ``oracle``, ``none``, ``oracle+distractors``) ->
    {question id: answer correct, None when unknown}; it needs ``retrieved`` and at least one
    other source. ``unanswerable``: question ids reported apart. ``observed``: question id ->
    its cell in the baseline's retrieval-by-answer table (for :meth:`CausalTable.cross`).
    ``no_oracle_passage``: answerable questions that got no oracle passage (no labelled span):
    their oracle and distractor outcomes are answers with an empty context, not evidence, so
    they are read as unknown. ``seed`` and ``n_resamples`` drive the ceiling's bootstrap.
    """
    unknown_sources = [s for s in outcomes if s not in SOURCES]
    if unknown_sources:
        raise UsageError(
            f"unknown context source(s) {', '.join(map(repr, unknown_sources))}; the sources "
            f"are {', '.join(SOURCES)}"
        )
    if "retrieved" not in outcomes:
        raise UsageError(
            "the causal table needs the baseline's answers with the retrieved context "
            "(source 'retrieved'); got only " + (", ".join(outcomes) or "nothing")
        )
    if len(outcomes) < 2:
        raise UsageError(
            "the causal table needs at least one ablation besides the retrieved context: run "
            "a variant with context.source = 'oracle' (also 'none', 'oracle+distractors')"
        )
    for src, per in outcomes.items():
        wrong = [q for q, v in per.items() if v is not None and not isinstance(v, bool)]
        if wrong:
            shown = ", ".join(f"{q} ({per[q]!r})" for q in wrong[:5])
            raise UsageError(
                f"answer outcomes under source '{src}' must be true, false or None; got {shown}"
            )
    sources = tuple(s for s in SOURCES if s in outcomes)
    apart = set(unanswerable)
    blank = set(no_oracle_passage)
    obs = observed or {}
    qids = sorted({q for per in outcomes.values() for q in per} | apart)
    questions: list[CausalQuestion] = []
    for q in qids:
        got = {s: outcomes[s].get(q) for s in sources}
        if q in apart:
            cause = "unanswerable"
        else:
            read = dict(got)
            if q in blank:
                read["oracle"] = read["oracle+distractors"] = None
            cause = _cause(read, sources)
        questions.append(CausalQuestion(q, got, cause, obs.get(q)))
    ceiling = None
    if "oracle" in outcomes:
        both = [
            q
            for q in questions
            if q.cause != "unanswerable"
            and q.id not in blank
            and q.outcomes.get("retrieved") is not None
            and q.outcomes.get("oracle") is not None
        ]
        if both:
            ceiling = compare(
                {q.id: float(bool(q.outcomes["retrieved"])) for q in both},
                {q.id: float(bool(q.outcomes["oracle"])) for q in both},
                outcome=OUTCOME,
                seed=seed,
                n_resamples=n_resamples,
                names=("retrieved", "oracle"),
            )
    return CausalTable(sources, tuple(questions), ceiling)
