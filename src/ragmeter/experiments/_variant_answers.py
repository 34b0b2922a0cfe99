"""One generating variant's answers and everything measured on them (:class:`VariantAnswers`):
the answer records and generations, the answer check, the retrieval-by-answer table, the paired
comparison with the baseline, the evidence positions, the generation's and the judge's usage,
and the result's JSON form (``answer_check.json``, the variant's ``answers`` in the run's
output). :class:`._generate.Answering` makes it; nothing here calls a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._answer_files import ANSWERS_FILE, CHUNKS_FILE, GENERATIONS_FILE, JUDGE_FILE
from ._generation_usage import generation_usage

if TYPE_CHECKING:  # pragma: no cover
    from ..answers.paired import AnswerComparison
    from ..answers.report import AnswerReport
    from ..diagnosis import PositionReport, RetrievalAnswerTable
    from ..generation import AssembledContext, Generation
    from ._repeats import Repeats

__all__ = ["SHOWN_ERRORS", "VariantAnswers"]

#: errors listed by name in results and output (the count covers all of them)
SHOWN_ERRORS = 5


@dataclass(frozen=True)
class VariantAnswers:
    """One variant's generated answers and everything measured on them."""

    variant: str
    generator: str  # e.g. "python mypkg.rag:answer"
    fingerprint: str
    prompt: Mapping[str, str]  # PromptTemplate.to_dict(): id, name, version, hash
    context: Mapping[str, Any]  # the ContextSpec as a dict
    params: Mapping[str, Any]
    records: tuple[Mapping[str, Any], ...]  # the lines of answers.jsonl
    generations: tuple[Generation, ...]
    report: AnswerReport
    table: RetrievalAnswerTable
    #: the paired comparison with the baseline's answers (None for the baseline)
    comparison: AnswerComparison | None = None
    #: answer outcomes by evidence position (when the experiment varies the context order)
    position: PositionReport | None = None
    seconds: float = 0.0  # wall time of the generation step
    folder: Path | None = None
    #: the assembled contexts by question id (not serialised: the records hold their text)
    contexts: Mapping[str, AssembledContext] = field(default_factory=dict, repr=False)
    #: passages cited by number or id that the context does not hold, per question
    unknown_citations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: the judge's label (None when the experiment has no [judge])
    judge: str | None = None
    #: what judging this variant's answers cost: the judge's counters' gain over this
    #: variant (HTTP requests, cache hits, retries, failures, prompt and completion tokens,
    #: cost or None without prices, replies of unknown usage: ``answers check``'s
    #: ``judge_usage``); None without a judge or for one that counts nothing (the fake judge)
    judge_usage: Mapping[str, Any] | None = None
    #: under an oracle source, the questions given no oracle passage (no labelled span:
    #: unanswerable, or not labelled), reported apart; empty for the other sources
    no_oracle_passage: tuple[str, ...] = ()
    #: the judge metrics the experiment asked for (each is reported, judged or not)
    judge_metrics: tuple[str, ...] = ()
    #: the verdicts of every repeat and what moves between them (an experiment's ``repeat``
    #: over 1); None when answered once, and then absent from :meth:`to_dict`
    repeats: Repeats | None = None
    #: the chat messages each question's answer was asked with (the prompt as sent), by
    #: question id (not serialised: the store keeps them with each answer)
    messages: Mapping[str, tuple[Mapping[str, str], ...]] = field(default_factory=dict, repr=False)

    @property
    def source(self) -> str:
        """The context source: "retrieved", "oracle", "none" or "oracle+distractors"."""
        return str(self.context.get("source", "retrieved"))

    def judged(self) -> dict[str, dict[str, Any]]:
        """Per judge metric: answers judged, failed judgements and the mean score of the
        judgements that succeeded (a failed one counts as failed, never as a pass); answers
        not judged (a failed generation: no answer to judge) are counted apart."""
        out: dict[str, dict[str, Any]] = {}
        for name, s in (self.report.summary().get("judged") or {}).items():
            out[name] = {
                "n": s["n"],
                "failed": s["failed"],
                "mean": s["mean"],
                "not_judged": len(self.report.checks) - s["n"],
            }
        for name in self.judge_metrics:  # asked for, and no answer had its inputs (no context)
            if name not in out:
                out[name] = {"n": 0, "failed": 0, "mean": None, "not_judged": len(self.records)}
        return out

    def context_tokens(self) -> float:
        """Mean passage tokens of the contexts the generator was given (0.0 without any)."""
        n = [c.n_tokens for c in self.contexts.values()]
        return sum(n) / len(n) if n else 0.0

    @property
    def errors(self) -> dict[str, str]:
        """Question id -> the generator's error, for the questions it failed on."""
        return {g.question_id: g.error for g in self.generations if g.error is not None}

    @property
    def model_calls(self) -> int:
        """Answers that reached the model in this run (0 on a fully cached re-run)."""
        return sum(1 for g in self.generations if not g.cached)

    @property
    def cache_hits(self) -> int:
        return sum(1 for g in self.generations if g.cached)

    def usage(self) -> dict[str, Any]:
        """Tokens, cost and attempts summed over the answers made in this run (cache hits cost
        nothing), by the judge usage's rule (:func:`._generation_usage.generation_usage`): an
        answer made without token counts (a python generator measures none; a server may send
        no ``usage``) adds no token and no cost and is counted in ``unknown_usage``, so the sums
        are a floor; when no answer had counts, the tokens (and the cost, with prices) are None,
        never a 0 nobody measured. A failed answer is an error, not an unknown usage."""
        return generation_usage(self.generations)

    def seconds_per_answer(self) -> float | None:
        """Mean model time of the answers made in this run (None when all came from the cache)."""
        made = [g.seconds for g in self.generations if not g.cached and g.error is None]
        return sum(made) / len(made) if made else None

    def summary(self) -> dict[str, Any]:
        """The answer columns of the experiment's answers table (one row per variant)."""
        s = self.report.summary()
        comp = None if self.comparison is None else self.comparison.comparison
        errors = self.errors
        return {
            "variant": self.variant,
            "generator": self.generator,
            "prompt": self.prompt.get("id"),
            "order": self.context.get("order"),
            "source": self.source,
            "answers": len(self.records),
            "correct": s["correct"],
            "correct_rate": s["correct_rate"],
            "ok": s["ok"],
            "ok_known": s["ok_known"],
            "ok_rate": s["ok_rate"],
            "correct_support_unknown": s["correct_support_unknown"],
            "abstained": sum(c.abstained for c in self.report.checks),
            "cites_outside_context": s["cites_outside_context"],
            "unknown_citations": sum(len(v) for v in self.unknown_citations.values()),
            "errors": len(errors),
            "model_calls": self.model_calls,
            "cache_hits": self.cache_hits,
            "seconds_per_answer": self.seconds_per_answer(),
            **self._judge_columns(),
            "vs_baseline_n": None if comp is None else comp.n,
            "delta_ok": None if comp is None else comp.mean_delta,
            "ci_low": None if comp is None else comp.ci[0],
            "ci_high": None if comp is None else comp.ci[1],
            "fixed": None if comp is None else comp.fixed,
            "broken": None if comp is None else comp.broken,
            "sign_p": None if comp is None else comp.sign_test_p,
            "verdict": None if comp is None else comp.verdict,
            **self._repeat_columns(),
        }

    def _repeat_columns(self) -> dict[str, Any]:
        """``repeats``, ``flaky`` and, against the baseline, the difference's range over the
        repeats and the fixed / broken in every repeat (only with repeats)."""
        if self.repeats is None:
            return {}
        r = self.repeats
        noise = r.vs_baseline
        lo_hi = None if noise is None else noise.delta_range
        return {
            "repeats": r.n,
            "flaky": len(r.flaky()),
            "delta_low": None if lo_hi is None else lo_hi[0],
            "delta_high": None if lo_hi is None else lo_hi[1],
            "stable_fixed": None if noise is None else len(noise.stable.fixed),
            "stable_broken": None if noise is None else len(noise.stable.broken),
            "flaky_movers": None if noise is None else len(noise.flaky_movers),
        }

    def _judge_columns(self) -> dict[str, Any]:
        """``judge``, ``judge_failed`` and ``judge_<metric>`` (the mean score) when judged."""
        if self.judge is None:
            return {}
        judged = self.judged()
        # the repeats' failed judgements count too: a run whose judge failed exits 1
        again = 0 if self.repeats is None else sum(self.repeats.judge_failed[1:])
        return {
            "judge": self.judge,
            "judge_failed": sum(j["failed"] for j in judged.values()) + again,
            **{f"judge_{name}": j["mean"] for name, j in judged.items()},
        }

    def to_dict(self) -> dict[str, Any]:
        errors = self.errors
        return {
            "variant": self.variant,
            "generator": self.generator,
            "fingerprint": self.fingerprint,
            "prompt": dict(self.prompt),
            "context": {**self.context, "source": self.source},
            "no_oracle_passage": list(self.no_oracle_passage),
            "params": dict(self.params),
            "summary": self.summary(),
            "check": self.report.summary(),
            "table": self.table.to_dict(),
            "vs_baseline": None if self.comparison is None else self.comparison.to_dict(),
            "position": None if self.position is None else self.position.to_dict(),
            "errors": {"count": len(errors), "first": dict(list(errors.items())[:SHOWN_ERRORS])},
            "unknown_citations": {k: list(v) for k, v in self.unknown_citations.items()},
            "judge": None if self.judge is None else {"label": self.judge, **self.judged()},
            "usage": self.usage(),
            "judge_usage": None if self.judge_usage is None else dict(self.judge_usage),
            "seconds": round(self.seconds, 3),
            **({} if self.repeats is None else {"repeats": self.repeats.to_dict()}),
            "files": None
            if self.folder is None
            else {
                "answers": str(self.folder / ANSWERS_FILE),
                "generations": str(self.folder / GENERATIONS_FILE),
                "chunks": str(self.folder / CHUNKS_FILE),
                **({"judgements": str(self.folder / JUDGE_FILE)} if self.judge else {}),
            },
        }

    def judgements(self) -> list[dict[str, Any]]:
        """Every judged score (one per answer and judge metric), as judgements.jsonl holds
        them and the store keeps them with the run."""
        return [s.to_dict() for c in self.report.checks for s in c.judged.values()]
