"""Check one variant's answers against the golden set: correctness, abstention, deterministic
faithfulness, optional judge metrics, and the faithful-but-wrong list.

Per question:
- ``correct``: abstention verdict first (:mod:`.abstention`), else the combined correctness rule
  (:mod:`.correctness`); None when an answerable question has no reference answer.
- ``supported``: False when the deterministic check (:mod:`.faithfulness`) or the judge's
  faithfulness label says unsupported, or a citation lies outside the prompt context; True when
  either found support and none found a failure; None (unknown) when nothing could be checked.
  A failed judgement counts as neither.
- ``ok`` (answer correct and supported, the column of the retrieval-by-answer table): True when
  correct and ``supported is True``; False when not correct or ``supported is False``; None when
  ``correct`` is None or the answer is correct but its support is unknown ("correct, support
  unknown": reported with its count, never counted as supported). An abstention claims nothing,
  so its ``ok`` is its ``correct``.
- the prompt context is the answer's ``context``, else ``contexts[id]`` (from the retrieval run
  being diagnosed, :func:`ragmeter.answers.contexts.prompt_contexts`); ``context_from`` says
  which ("answer", "run" or None).
- faithful but wrong: answered, ``supported is True`` and ``correct is False`` — a corpus problem
  (e.g. a stale policy), listed with the cited documents' ``effective_date``/``version``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

from .._errors import UsageError, ValidationError
from ..data import golden_version_of
from ._passages import PassageIndex
from ._schema import AnswerSet, is_abstention, looks_abstained
from .abstention import AbstentionSummary, abstention_verdict, summarize_abstention
from .correctness import CORRECT_RULE, Correctness, score_correctness
from .faithfulness import Faithfulness, _Finder, check_faithfulness
from .judged import (
    CLAIM_METRICS,
    JudgedScore,
    expand_metrics,
    gaps_of,
    get_metric,
    judge_metric,
    missing_error,
    missing_inputs,
    require_one_config,
)
from .judges._prompts import load_prompt
from .judges._protocol import Judge

#: metadata keys shown for cited documents of faithful-but-wrong answers
DOC_FIELDS = ("effective_date", "version", "superseded_by", "status")


@dataclass(frozen=True)
class AnswerCheck:
    """Every verdict on one answer."""

    id: str
    answerable: bool
    abstained: bool
    abstained_from: str  # "field" or "text"
    correct: bool | None
    reason: str
    correctness: Correctness | None
    faithfulness: Faithfulness
    judged: Mapping[str, JudgedScore] = field(default_factory=dict)
    slices: tuple[str, ...] = ()
    split: str = "tune"
    cited_docs: tuple[str, ...] = ()
    context_from: str | None = None  # "answer", "run" or None (no prompt context known)

    @property
    def supported(self) -> bool | None:
        det = self.faithfulness.supported
        js = self.judged.get("faithfulness")
        jud = None if js is None or not js.ok else js.label == "supported"
        if det is False or jud is False:
            return False
        if det or jud:
            return True
        return None

    @property
    def ok(self) -> bool | None:
        """Answer correct and supported (see module docstring)."""
        if self.correct is None:
            return None
        if self.abstained or not self.correct:
            return self.correct
        return self.supported  # None: correct, support unknown

    @property
    def support_unknown(self) -> bool:
        """Correct, answered, and nothing could establish or refute its support."""
        return self.correct is True and not self.abstained and self.supported is None

    @property
    def cites_outside_context(self) -> bool:
        return bool(self.faithfulness.outside_context)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "answerable": self.answerable,
            "abstained": self.abstained,
            "abstained_from": self.abstained_from,
            "correct": self.correct,
            "reason": self.reason,
            "supported": self.supported,
            "ok": self.ok,
            "correctness": self.correctness.to_dict() if self.correctness else None,
            "faithfulness": self.faithfulness.to_dict(),
            "judged": {k: v.to_dict() for k, v in self.judged.items()},
            "slices": list(self.slices),
            "split": self.split,
            "cited_docs": list(self.cited_docs),
            "context_from": self.context_from,
            "support_unknown": self.support_unknown,
            "cites_outside_context": self.cites_outside_context,
        }


@dataclass(frozen=True)
class FaithfulButWrong:
    """An answer its context supports that is still wrong: look at the corpus."""

    id: str
    question: str
    answer: str
    reference: str | None
    reason: str
    cited: tuple[Mapping[str, Any], ...]  # {"doc", effective_date?, version?, ...}
    evidence: tuple[Mapping[str, Any], ...]  # the golden evidence documents, same fields
    stale: bool  # a cited document is older than (or a different version of) the evidence

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "answer": self.answer,
            "reference": self.reference,
            "reason": self.reason,
            "cited": [dict(c) for c in self.cited],
            "evidence": [dict(e) for e in self.evidence],
            "stale": self.stale,
        }


@dataclass(frozen=True)
class AnswerReport:
    """The checks of one answers file against one golden set."""

    variant: str
    golden_version: str | None
    checks: tuple[AnswerCheck, ...]
    missing: tuple[str, ...]  # golden questions without an answer
    faithful_but_wrong: tuple[FaithfulButWrong, ...]
    judge: str | None = None  # judge label when judge metrics were run

    @property
    def by_id(self) -> dict[str, AnswerCheck]:
        return {c.id: c for c in self.checks}

    def answer_ok(self) -> dict[str, bool | None]:
        """Per answerable question: answer correct and supported (the table's column; None
        when not scored or correct with unknown support)."""
        return {c.id: c.ok for c in self.checks if c.answerable}

    def answer_correct(self) -> dict[str, bool | None]:
        """Per answerable question: the combined correctness verdict."""
        return {c.id: c.correct for c in self.checks if c.answerable}

    def cites_outside(self) -> dict[str, bool]:
        """Per answerable question: does the answer cite a passage outside its prompt context."""
        return {c.id: c.cites_outside_context for c in self.checks if c.answerable}

    @property
    def abstention(self) -> AbstentionSummary:
        return summarize_abstention((c.answerable, c.abstained) for c in self.checks)

    def summary(self) -> dict[str, Any]:
        cs = self.checks
        scored = [c for c in cs if c.correct is not None]
        answered = [c.correctness for c in cs if c.correctness is not None]
        quotes = [q for c in cs for q in c.faithfulness.quotes]
        values = [v for c in cs for v in c.faithfulness.values]
        vm = [c.value_match for c in answered if c.value_match is not None]
        known = [c for c in scored if c.ok is not None]
        out: dict[str, Any] = {
            "variant": self.variant,
            "golden_version": self.golden_version,
            "n_answers": len(cs),
            "n_missing": len(self.missing),
            "n_scored": len(scored),
            "correct": sum(bool(c.correct) for c in scored),
            "correct_rate": _rate(sum(bool(c.correct) for c in scored), len(scored)),
            # correct and supported, over the answers whose verdict is known: a correct answer
            # with unknown support is counted apart, never as supported (nor as wrong)
            "ok": sum(c.ok is True for c in known),
            "ok_known": len(known),
            "ok_rate": _rate(sum(c.ok is True for c in known), len(known)),
            "correct_support_unknown": sum(c.support_unknown for c in scored),
            "exact_rate": _rate(sum(c.exact for c in answered), len(answered)),
            "mean_f1": _mean([c.f1 for c in answered]),
            "value_match_rate": _rate(sum(vm), len(vm)),
            "quotes_checked": len(quotes),
            "quotes_failed": sum(not q.ok for q in quotes),
            "values_checked": len(values),
            "values_failed": sum(not v.ok for v in values),
            "supported": sum(c.supported is True for c in cs),
            "unsupported": sum(c.supported is False for c in cs),
            # an abstention claims nothing: its support is not "unknown", it does not apply
            "support_unknown": sum(c.supported is None and not c.abstained for c in cs),
            "cites_outside_context": sum(c.cites_outside_context for c in cs),
            "context_known": sum(c.faithfulness.context_known for c in cs),
            "faithful_but_wrong": len(self.faithful_but_wrong),
            "abstention": self.abstention.to_dict(),
            "rule": CORRECT_RULE,
        }
        judged: dict[str, list[JudgedScore]] = {}
        for c in cs:
            for name, s in c.judged.items():
                judged.setdefault(name, []).append(s)
        if judged:
            out["judge"] = self.judge
            out["judged"] = {
                name: {
                    "n": len(v),
                    "failed": sum(not s.ok for s in v),
                    "mean": _mean([s.score for s in v if s.ok and s.score is not None]),
                    "prompt": dict(v[0].prompt),
                    # claim metrics: the mean is over the answers with claims; abstentions and
                    # empty answers have none (counted apart), failures are listed by id
                    **(
                        {
                            "scored": sum(s.ok and s.score is not None for s in v),
                            "no_claims": sum(s.ok and s.score is None for s in v),
                            "failed_ids": [s.id for s in v if not s.ok],
                        }
                        if name in CLAIM_METRICS
                        else {}
                    ),
                }
                for name, v in judged.items()
            }
        return out

    def by_slice(self) -> dict[str, dict[str, Any]]:
        """Correct and ok rates per golden slice, plus "answerable"/"unanswerable"."""
        groups: dict[str, list[AnswerCheck]] = {}
        for c in self.checks:
            names = [*c.slices, "answerable" if c.answerable else "unanswerable"]
            for s in dict.fromkeys(names):  # a golden slice may already be named "unanswerable"
                groups.setdefault(s, []).append(c)
        out = {}
        for name in sorted(groups):
            g = [c for c in groups[name] if c.correct is not None]
            known = [c for c in g if c.ok is not None]
            out[name] = {
                "n": len(g),
                "correct_rate": _rate(sum(bool(c.correct) for c in g), len(g)),
                "ok_rate": _rate(sum(c.ok is True for c in known), len(known)),
                "support_unknown": len(g) - len(known),
            }
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "slices": self.by_slice(),
            "faithful_but_wrong": [f.to_dict() for f in self.faithful_but_wrong],
            "missing": list(self.missing),
            "answers": [c.to_dict() for c in self.checks],
        }

    def csv_rows(self) -> tuple[list[str], list[list[object]]]:
        """The header and one row per answer (``ragmeter answers check --format csv``)."""
        header = [
            *("variant", "id", "answerable", "abstained", "correct", "supported", "ok"),
            *("exact", "f1", "value_match", "quotes_failed", "reason"),
        ]
        rows: list[list[object]] = []
        for c in self.checks:
            cr = c.correctness
            rows.append(
                [
                    *(self.variant, c.id, c.answerable, c.abstained, c.correct, c.supported, c.ok),
                    *((cr.exact, f"{cr.f1:.4f}", cr.value_match) if cr else ("", "", "")),
                    len(c.faithfulness.failed_quotes),
                    c.reason,
                ]
            )
        return header, rows


def _rate(k: int, n: int) -> float | None:
    return k / n if n else None


def _mean(xs: Sequence[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def _doc_fields(index: PassageIndex, doc_id: str) -> dict[str, Any]:
    meta = index.metadata(doc_id)
    return {"doc": doc_id, **{k: meta[k] for k in DOC_FIELDS if k in meta}}


def _is_stale(cited: Sequence[Mapping[str, Any]], evidence: Sequence[Mapping[str, Any]]) -> bool:
    ev_docs = {e["doc"] for e in evidence}
    ev_dates = [str(e["effective_date"]) for e in evidence if "effective_date" in e]
    for c in cited:
        if c["doc"] in ev_docs:
            continue
        if "superseded_by" in c or str(c.get("status", "")).lower() in (
            "superseded",
            "stale",
            "expired",
            "archived",
        ):
            return True
        if ev_dates and "effective_date" in c and str(c["effective_date"]) < max(ev_dates):
            return True
        if any(
            "version" in e and "version" in c and e["version"] != c["version"] for e in evidence
        ):
            return True
    return False


def check_answers(
    answers: AnswerSet,
    golden: Any,
    *,
    corpus: Any = None,
    chunks: Any = None,
    judge: Judge | None = None,
    judge_metrics: Sequence[str] = (),
    contexts: Mapping[str, Sequence[str]] | None = None,
    judge_prompts: str | PathLike[str] | None = None,
    judge_skip_missing: bool = False,
) -> AnswerReport:
    """Check ``answers`` against ``golden`` (a GoldenSet or anything with ``.questions``).

    ``corpus`` resolves document citations and supplies ``effective_date``/``version``;
    ``chunks`` resolves chunk citations and the ``context`` ids. ``contexts`` (``{qid: chunk
    ids}``, e.g. :func:`ragmeter.answers.contexts.prompt_contexts` of the run being diagnosed)
    is the prompt context of every answer that carries no ``context`` of its own: citations are
    checked against it and judges read it. Judge metrics run only when both ``judge`` and
    ``judge_metrics`` are given (``claims`` or the five claim metrics of :mod:`.claims` among
    them: scored together, several calls per answer, the evidence text read from the golden
    question's spans); ``judge_prompts`` is a folder of ``<metric>.v1.txt`` prompts
    replacing the shipped ones (``claims.v1.txt`` and ``claim_support.v1.txt`` for the claim
    metrics). A judge metric refuses answers that lack one of its inputs
    unless ``judge_skip_missing`` (an experiment's failed generations: empty answers, already
    counted as failed): those answers are then not judged on that metric.
    """
    from .contexts import require_chunks_for

    require_chunks_for(contexts, chunks)
    questions = {q.id: q for q in golden.questions}
    unknown = [a.id for a in answers.answers if a.id not in questions]
    if unknown:
        raise UsageError(
            f"{answers.path or answers.variant}: {len(unknown)} answer id(s) are not "
            f"golden questions: {', '.join(unknown[:5])}"
        )
    index = PassageIndex(corpus, chunks)
    problems = index.check(answers)
    if problems:
        raise ValidationError(problems, what=answers.path or answers.variant)
    if judge_metrics and judge is None:
        raise UsageError(
            f"judge metrics {', '.join(judge_metrics)} need a judge: pass one "
            "explicitly (FakeJudge() for a demo, OpenAIJudge(...) for a model)"
        )
    finder = _Finder(index)
    ctx_of = _contexts(answers, contexts)
    judged = (
        _run_judges(
            answers,
            questions,
            index,
            judge,
            judge_metrics,
            ctx_of,
            prompts=judge_prompts,
            skip_missing=judge_skip_missing,
        )
        if judge_metrics
        else {}
    )

    checks, fbw = [], []
    for a in answers.answers:
        q = questions[a.id]
        abstained = is_abstention(a)
        verdict, reason = abstention_verdict(q.answerable, abstained)
        corr = None
        if not abstained and q.answer is not None:
            corr = score_correctness(a.answer, q.answer)
        if verdict is None:
            if corr is None:
                reason = "no reference answer in the golden set"
            else:
                verdict, reason = corr.correct, corr.reason
        cited_docs = tuple(dict.fromkeys(index.cited(c).doc or "" for c in a.citations))
        check = AnswerCheck(
            a.id,
            q.answerable,
            abstained,
            "field" if a.abstained is not None else "text",
            verdict,
            reason,
            corr,
            check_faithfulness(a, index, finder, ctx_of.get(a.id)),
            judged.get(a.id, {}),
            tuple(q.slices),
            q.split,
            tuple(d for d in cited_docs if d),
            "answer" if a.context is not None else ("run" if a.id in ctx_of else None),
        )
        checks.append(check)
        if not abstained and q.answerable and check.supported is True and check.correct is False:
            cited = tuple(_doc_fields(index, d) for d in check.cited_docs)
            evidence = tuple(
                _doc_fields(index, d) for d in dict.fromkeys(e.doc for e in q.evidence)
            )
            fbw.append(
                FaithfulButWrong(
                    a.id,
                    q.question,
                    a.answer,
                    q.answer,
                    reason,
                    cited,
                    evidence,
                    _is_stale(cited, evidence),
                )
            )
    missing = tuple(qid for qid in questions if qid not in answers.by_id)
    return AnswerReport(
        answers.variant,
        golden_version_of(golden),
        tuple(checks),
        missing,
        tuple(fbw),
        judge.info.label if (judge is not None and judge_metrics) else None,
    )


def _contexts(
    answers: AnswerSet, contexts: Mapping[str, Sequence[str]] | None
) -> dict[str, Sequence[str]]:
    """Each answer's prompt context: its own ``context``, else the run's (absent: unknown)."""
    out: dict[str, Sequence[str]] = {}
    for a in answers.answers:
        if a.context is not None:
            out[a.id] = a.context
        elif contexts is not None and a.id in contexts:
            out[a.id] = contexts[a.id]
    return out


def _run_judges(
    answers: AnswerSet,
    questions: Mapping[str, Any],
    index: PassageIndex,
    judge: Judge | None,
    metrics: Sequence[str],
    contexts: Mapping[str, Sequence[str]],
    *,
    prompts: str | PathLike[str] | None = None,
    skip_missing: bool = False,
) -> dict[str, dict[str, JudgedScore]]:
    items = []
    for a in answers.answers:
        q = questions[a.id]
        ctx = index.context(contexts.get(a.id) or [])
        items.append(
            {
                "id": a.id,
                "question": q.question,
                "answer": a.answer,
                "reference": q.answer,
                "context": "\n\n".join(f"[{i + 1}] {p.text}" for i, p in enumerate(ctx))
                if ctx
                else None,
            }
        )
    out: dict[str, dict[str, JudgedScore]] = {}
    all_scores: list[JudgedScore] = []
    metrics = expand_metrics(metrics)
    claim_metrics = [m for m in metrics if m in CLAIM_METRICS]
    if claim_metrics:
        all_scores += _run_claims(
            answers, questions, index, judge, claim_metrics, items, prompts, skip_missing
        )
    for name in (m for m in metrics if m not in CLAIM_METRICS):
        metric = get_metric(name)
        # an unanswerable question has no reference by design: not a missing input
        use = [
            it for it in items if "reference" not in metric.inputs or questions[it["id"]].answerable
        ]
        if skip_missing:
            use = [it for it in use if not missing_inputs(metric, [it])]
        prompt = None if prompts is None else load_prompt(name, folder=prompts)
        scores = judge_metric(judge, metric, use, prompt=prompt)  # type: ignore[arg-type]
        all_scores += scores
    for s in all_scores:
        out.setdefault(s.id, {})[s.metric] = s
    require_one_config(all_scores)
    return out


def _evidence_text(q: Any, index: PassageIndex) -> str | None:
    """The text of the question's labelled spans, in order, each once (None when unlabelled or
    a span's document is unknown and the span carries no text)."""
    texts = []
    for e in q.evidence:
        text = e.text
        if text is None:
            doc = index.docs.get(e.doc)
            if doc is None:
                return None
            text = doc.text[e.start : e.end]
        texts.append(text)
    joined = "\n\n".join(dict.fromkeys(t.strip() for t in texts if t.strip()))
    return joined or None


def _run_claims(
    answers: AnswerSet,
    questions: Mapping[str, Any],
    index: PassageIndex,
    judge: Judge | None,
    metrics: Sequence[str],
    items: Sequence[Mapping[str, Any]],
    prompts: str | PathLike[str] | None,
    skip_missing: bool,
) -> list[JudgedScore]:
    """The claim-level metrics (:mod:`.claims`): abstentions and empty answers have no claims;
    a question lacking an input a metric needs is refused (naming the input and the ids), or
    left out of that metric with ``skip_missing``; an unanswerable question is never scored on
    the metrics that need a reference or span labels."""
    from .claims import CLAIM_INPUTS, claim_prompts, judge_claims

    if judge is None:
        raise UsageError("claim metrics need a judge")
    by_answer = answers.by_id
    rich = []
    for it in items:
        q = questions[it["id"]]
        abstained = is_abstention(by_answer[it["id"]])
        rich.append(
            {
                **it,
                "abstained": abstained,
                "evidence": _evidence_text(q, index) if q.answerable else None,
                "answerable": q.answerable,
            }
        )
    if "context_utilisation" in metrics and all(it["evidence"] is None for it in rich):
        raise UsageError(
            "judge metric context_utilisation needs span labels (the golden questions' "
            "evidence spans); no answered question has any"
        )
    per_item: dict[str, list[str]] = {str(it["id"]): [] for it in rich}
    for m in metrics:
        need = CLAIM_INPUTS[m]
        use = [it for it in rich if it["answerable"] or not ({"reference", "evidence"} & set(need))]
        answered = [it for it in use if not it["abstained"] and (it.get("answer") or "").strip()]
        gaps = gaps_of(need, answered)
        if gaps and not skip_missing:
            raise missing_error(m, need, gaps)
        lacking = {i for ids in gaps.values() for i in ids}
        for it in use:
            if it["id"] not in lacking:
                per_item[str(it["id"])].append(m)
    chosen = [{**it, "metrics": per_item[str(it["id"])]} for it in rich if per_item[str(it["id"])]]
    return judge_claims(judge, metrics, chosen, prompts=claim_prompts(prompts))


__all__ = ["AnswerCheck", "AnswerReport", "FaithfulButWrong", "check_answers", "looks_abstained"]
