"""Answers: check answer sets (correctness, abstention, faithfulness, optional model judges),
compare two answer variants, place answers by where their evidence sat in the prompt, validate
a judge against human labels, and record answer sets and judge validations in the store.

``ragmeter answers check|compare|position``, ``ragmeter judge validate``, ``ragmeter diagnose``
and the lab's diagnosis and judge views call these; they only parse their input and render.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:
    from ..answers import AnswerReport, AnswerSet, JudgeValidation
    from ..answers.judge_validation import JudgeLabel
    from ..answers.judges import Judge, JudgePlan
    from ..answers.paired import AnswerComparison
    from ..chunking import Chunking
    from ..data import Corpus, GoldenSet
    from ..diagnosis import PositionReport
    from ..store import Store

__all__ = [
    "FAKE_JUDGE_NOTE",
    "AnswerInputs",
    "AnswersChecked",
    "CheckRequest",
    "CheckedAnswers",
    "JudgeSettings",
    "ValidatedJudge",
    "answer_positions",
    "check_answer_sets",
    "check_answers",
    "compare_answer_files",
    "judge_name",
    "judge_usage",
    "load_answer_sets",
    "load_inputs",
    "make_judge",
    "plan_check",
    "plan_judge_calls",
    "prompt_text",
    "record_answer_sets",
    "record_judge_validation",
    "run_contexts",
    "stored_answer_set",
    "validate_judge_files",
]


@dataclass(frozen=True)
class AnswerInputs:
    """The golden set answers are checked against, with the corpus (doc citations, effective
    dates) and the chunking (chunk citations, contexts) when given."""

    golden: GoldenSet
    corpus: Corpus | None
    chunking: Chunking | None


def load_inputs(golden: Path, corpus: Path | None, chunks: Path | None) -> AnswerInputs:
    """Read the golden set (against the corpus when given) and the chunking."""
    from ..data import load_corpus, load_golden

    corp = load_corpus(corpus) if corpus is not None else None
    gold = load_golden(golden, corp)
    chk = None
    if chunks is not None:
        from ..chunking import load_chunking

        chk = load_chunking(chunks, corpus=corp)
    return AnswerInputs(gold, corp, chk)


# -- check ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JudgeSettings:
    """A model judge as the ``--judge*`` options (or an experiment's ``[judge]`` table) name
    it: ``kind`` none, fake or openai; the key is read from ``key_env`` when it is built."""

    kind: str
    url: str | None = None
    model: str | None = None
    key_env: str | None = None
    cache: Path | None = None
    timeout: float = 60.0
    retries: int = 3
    concurrency: int = 4
    price_prompt: float | None = None
    price_completion: float | None = None


def make_judge(settings: JudgeSettings) -> Judge | None:
    """The judge ``settings`` describe (replies cached under ``settings.cache``); None for
    ``none``. UsageError for an unknown kind or an incomplete configuration."""
    from ..answers.judges import JUDGE_KINDS, JudgeOptions
    from ..answers.judges import make_judge as build

    if settings.kind == "none":
        return None
    if settings.kind not in JUDGE_KINDS:
        raise UsageError(f"--judge must be none, fake or openai, got '{settings.kind}'")
    options = JudgeOptions(
        settings.kind,
        settings.url,
        settings.model,
        settings.key_env,
        settings.timeout,
        settings.retries,
        settings.concurrency,
        settings.price_prompt,
        settings.price_completion,
    )
    judge: Judge = build(options, cache_dir=settings.cache)
    return judge


def run_contexts(
    run: Path | None, chunking: Chunking | None, k: int | None, budget: int | None
) -> dict[str, tuple[str, ...]] | None:
    """The prompt context ``run`` cut at ``k`` or ``budget`` gave each question (for answers
    that carry no ``context``); None without a run."""
    if run is None:
        if k is not None or budget is not None:
            raise UsageError("--k and --budget cut a retrieval run: pass --run too")
        return None
    if chunking is None:
        raise UsageError("--run needs --chunks: the run ranks chunk ids")
    from ..answers.contexts import prompt_contexts

    return prompt_contexts(str(run), chunking, k=k, budget=budget)


def load_answer_sets(paths: Sequence[Path], golden: GoldenSet) -> list[AnswerSet]:
    """Each answers file as an answer set, its ids checked against ``golden``."""
    from ..answers import load_answers

    return [load_answers(p, golden=golden) for p in paths]


@dataclass(frozen=True)
class CheckedAnswers:
    """One answer set, its report, and what judging it spent (None for a judge that counts
    no usage)."""

    answers: AnswerSet
    report: AnswerReport
    usage: dict[str, Any] | None

    @property
    def failed(self) -> int:
        """How many judgements of this set failed (recorded as failed, never as passes)."""
        return sum(1 for c in self.report.checks for s in c.judged.values() if not s.ok)


def check_answer_sets(
    sets: Sequence[AnswerSet],
    inputs: AnswerInputs,
    *,
    judge: Judge | None = None,
    judge_metrics: Sequence[str] = (),
    contexts: Mapping[str, Sequence[str]] | None = None,
    judge_prompts: Path | None = None,
) -> list[CheckedAnswers]:
    """Score each set: correctness, abstention, quote/value faithfulness, faithful-but-wrong,
    and the judge's metrics. One judge serves every set: each set's usage is what judging its
    answers added."""
    from ..answers.judges import usage_between, usage_reading

    out = []
    for s in sets:
        before = usage_reading(judge)
        report = _check(s, inputs, judge, judge_metrics, contexts, judge_prompts)
        out.append(CheckedAnswers(s, report, usage_between(before, usage_reading(judge))))
    return out


def _check(
    answers: AnswerSet,
    inputs: AnswerInputs,
    judge: Judge | None,
    judge_metrics: Sequence[str],
    contexts: Mapping[str, Sequence[str]] | None,
    judge_prompts: Path | None,
) -> AnswerReport:
    """:func:`ragmeter.answers.check_answers` on one set with ``inputs``: the check and the
    dry run's planned check are one call."""
    from ..answers import check_answers

    return check_answers(
        answers,
        inputs.golden,
        corpus=inputs.corpus,
        chunks=inputs.chunking,
        judge=judge,
        judge_metrics=list(judge_metrics),
        contexts=contexts,
        judge_prompts=judge_prompts,
    )


def judge_usage(judge: Judge | None) -> dict[str, Any] | None:
    """The judge's usage counters now (None for a judge that counts none)."""
    from ..answers.judges import usage_reading

    return usage_reading(judge)


def plan_judge_calls(
    sets: Sequence[AnswerSet],
    inputs: AnswerInputs,
    *,
    judge: Judge | None,
    judge_metrics: Sequence[str],
    contexts: Mapping[str, Sequence[str]] | None,
    judge_prompts: Path | None,
) -> JudgePlan:
    """The check run with a judge that records its requests and sends none
    (:class:`ragmeter.answers.judges.PlanningJudge`): what the judge would be asked, how many
    replies the cache holds, estimated tokens and cost."""
    from ..answers.judges import PlanningJudge

    if judge is None or not judge_metrics:
        raise UsageError("--dry-run counts a judge's calls: give --judge fake or --judge openai")
    planner = PlanningJudge(judge)
    for s in sets:
        _check(s, inputs, planner, judge_metrics, contexts, judge_prompts)
    return planner.plan


@dataclass(frozen=True)
class CheckRequest:
    """What ``ragmeter answers check`` is asked: the answers files, the golden set (with the
    corpus and chunking when given), the retrieval ``run`` cut at ``k`` or ``budget`` that built
    the prompts of answers without a ``context``, and the judge with its comma-separated
    ``judge_metrics`` (unused for ``--judge none``)."""

    answers: Sequence[Path]
    golden: Path
    corpus: Path | None = None
    chunks: Path | None = None
    run: Path | None = None
    k: int | None = None
    budget: int | None = None
    judge: JudgeSettings = JudgeSettings("none")
    judge_metrics: str = "faithfulness"
    judge_prompts: Path | None = None


#: said (on stderr) whenever the fake judge is built: its scores are not evidence
FAKE_JUDGE_NOTE = "FAKE JUDGE: rule-based stand-in, not a model; its scores are not evidence"


@dataclass(frozen=True)
class AnswersChecked:
    """The checked answer sets of a :class:`CheckRequest`, with what recording them needs (the
    prompt contexts cut from the run, the golden set) and whether the judge priced its work."""

    checked: list[CheckedAnswers]
    contexts: dict[str, tuple[str, ...]] | None
    golden: GoldenSet
    priced: bool

    @property
    def failed(self) -> int:
        """Judgements that failed over every set (recorded as failed, never as passes)."""
        return sum(c.failed for c in self.checked)

    def to_dicts(self) -> list[dict[str, Any]]:
        """Each set's report, with its ``judge_usage`` when the judge counts its work."""
        out = []
        for c in self.checked:
            d = c.report.to_dict()
            if c.usage is not None:
                d["judge_usage"] = c.usage
            out.append(d)
        return out


@dataclass(frozen=True)
class _Prepared:
    inputs: AnswerInputs
    judge: Judge | None
    metrics: list[str]
    contexts: dict[str, tuple[str, ...]] | None
    sets: list[AnswerSet]


def _prepare(request: CheckRequest, warn: Callable[[str], object] | None) -> _Prepared:
    inputs = load_inputs(request.golden, request.corpus, request.chunks)
    if request.judge.kind == "fake" and warn is not None:
        warn(FAKE_JUDGE_NOTE)
    judge = make_judge(request.judge)
    metrics = (
        [m.strip() for m in request.judge_metrics.split(",") if m.strip()]
        if judge is not None
        else []
    )
    contexts = run_contexts(request.run, inputs.chunking, request.k, request.budget)
    sets = load_answer_sets(request.answers, inputs.golden)
    return _Prepared(inputs, judge, metrics, contexts, sets)


def check_answers(
    request: CheckRequest, *, warn: Callable[[str], object] | None = None
) -> AnswersChecked:
    """``ragmeter answers check``: read the inputs, build the judge (``warn`` is told when it is
    the fake one), cut the run's prompt contexts and check every answers file."""
    p = _prepare(request, warn)
    checked = check_answer_sets(
        p.sets,
        p.inputs,
        judge=p.judge,
        judge_metrics=p.metrics,
        contexts=p.contexts,
        judge_prompts=request.judge_prompts,
    )
    priced = (judge_usage(p.judge) or {}).get("cost") is not None
    return AnswersChecked(checked, p.contexts, p.inputs.golden, priced)


def plan_check(request: CheckRequest, *, warn: Callable[[str], object] | None = None) -> JudgePlan:
    """``ragmeter answers check --dry-run``: :func:`check_answers`'s judge calls counted, none
    sent (:func:`plan_judge_calls`)."""
    p = _prepare(request, warn)
    return plan_judge_calls(
        p.sets,
        p.inputs,
        judge=p.judge,
        judge_metrics=p.metrics,
        contexts=p.contexts,
        judge_prompts=request.judge_prompts,
    )


def record_answer_sets(
    store: Store,
    checked: Sequence[CheckedAnswers],
    contexts: Mapping[str, Sequence[str]] | None,
    golden: GoldenSet,
) -> list[int]:
    """Record each checked set with the context each answer was given (its own ``context``,
    else the prompt context ``contexts`` cut for it) and its report; their ids."""
    from ..data import golden_version_of

    version = golden_version_of(golden)
    ids = []
    for c in checked:
        rows = []
        for a in c.answers.answers:
            row = a.model_dump(mode="json", exclude_none=True)
            if a.context is None and contexts is not None and a.id in contexts:
                row["context"] = list(contexts[a.id])
            rows.append(row)
        ids.append(
            store.record_answers(
                name=c.answers.variant,
                answers=rows,
                report=c.report.to_dict(),
                golden_version=version,
                source=c.answers.path,
            )
        )
    return ids


#: what the store keeps with a generated answer beyond the answers format (see below)
STORE_ONLY = ("judged", "generation")


def stored_answer_set(stored: Mapping[str, Any]) -> AnswerSet:
    """A stored answer set (its ``answers`` records, ``name`` and ``source``) as an answer set.
    ``ragmeter run`` stores the judge's verdicts with each answer (``judged``) and how it was
    made (``generation``: the prompt as sent, usage, time), which the answers format has no
    field for: they are the store's, left out here (a check made of the set judges again, or
    not, as its caller asks)."""
    from ..answers import Answer, AnswerSet

    return AnswerSet(
        tuple(
            Answer.model_validate({k: v for k, v in a.items() if k not in STORE_ONLY})
            for a in stored["answers"]
        ),
        str(stored["name"]),
        stored.get("source"),
    )


# -- compare and position ---------------------------------------------------------------------
def compare_answer_files(
    baseline: Path,
    candidate: Path,
    inputs: AnswerInputs,
    *,
    split: str | None = None,
    seed: int = 0,
) -> AnswerComparison:
    """Paired comparison of two answer files (the same questions) on "answer correct and
    supported"."""
    from ..answers import check_answers, compare_answers, load_answers, require_same_questions

    gold, corp, chk = inputs.golden, inputs.corpus, inputs.chunking
    a, b = load_answers(baseline, golden=gold), load_answers(candidate, golden=gold)
    require_same_questions(a, b)
    ra = check_answers(a, gold, corpus=corp, chunks=chk)
    rb = check_answers(b, gold, corpus=corp, chunks=chk)
    return compare_answers(ra, rb, split=split, seed=seed)


def answer_positions(
    *,
    golden: Path,
    answers: Path,
    chunks: Path,
    corpus: Path | None = None,
    run: Path | None = None,
    k: int | None = None,
    budget: int | None = None,
    evidence: str = "first",
    cover: float = 0.5,
) -> PositionReport:
    """Answer outcomes by where the evidence sits in the prompt context (first, middle, last):
    the contexts ``run`` cut at ``k`` or ``budget`` built, else the answers' own context ids.
    The arguments are checked before any file is read. Bins under ``diagnosis.MIN_BIN`` known
    verdicts give a direction, not proof (the report's notes then hold ``SMALL_BIN_NOTE``)."""
    from ..answers import check_answers, load_answers
    from ..diagnosis import EVIDENCE_CHOICES, contexts_run, lost_in_the_middle

    if k is not None and budget is not None:
        raise UsageError("give the prompt's --k or its --budget, not both")
    if run is not None and k is None and budget is None:
        raise UsageError("give the prompt's --k or its --budget (exactly one) with --run")
    if evidence not in EVIDENCE_CHOICES:
        raise UsageError(f"--evidence must be first or best, got '{evidence}'")
    inputs = load_inputs(golden, corpus, chunks)
    gold, chk = inputs.golden, inputs.chunking
    ans = load_answers(answers, golden=gold)
    contexts = None
    source: str | dict[str, dict[str, float]]
    if run is not None:
        from ..answers.contexts import prompt_contexts

        source = str(run)
        # the same prompt contexts the positions come from: a citation outside them is
        # unsupported (an answer's own `context` still wins)
        contexts = prompt_contexts(source, chk, k=k, budget=budget)
    else:
        source = contexts_run(ans)
        if not source:
            raise UsageError(
                f"{answers} carries no 'context' chunk ids: give the --run that "
                "built the prompts and its --k or --budget"
            )
    report = check_answers(ans, gold, corpus=inputs.corpus, chunks=chk, contexts=contexts)
    rep = lost_in_the_middle(
        gold, chk, source, report, k=k, budget=budget, evidence=evidence, cover=cover
    )
    if run is None and k is None and budget is None:
        rep = replace(rep, context="the answers' context ids")
    return rep


# -- judge validation -------------------------------------------------------------------------
@dataclass(frozen=True)
class ValidatedJudge:
    """A judge's labels checked against the human ones: the labels, the human label of each
    question, the judge info the labels carry, and the validation."""

    labels: list[JudgeLabel]
    humans: dict[str, str]
    info: dict[str, Any]
    validation: JudgeValidation


def validate_judge_files(
    human: Path, judged: Path, *, metric: str | None = None, variant: str | None = None
) -> ValidatedJudge:
    """Agreement per class, confusion matrix, Cohen's kappa, order flips, repeat variance and
    the disagreements of the judge labels in ``judged`` (JSON Lines, or the JSON of ``answers
    check --format json``: ``metric`` / ``variant`` pick one when it holds several) against the
    human labels in ``human``."""
    from ..answers import validate_judge
    from ..answers.judge_validation import load_human_labels, load_judge_labels

    labels, info = load_judge_labels(judged, metric=metric, variant=variant)
    humans = load_human_labels(human)
    return ValidatedJudge(labels, humans, info, validate_judge(humans, labels, judge=info))


def prompt_text(prompt: Mapping[str, Any] | None) -> str | None:
    """The text of the prompt the judge labels name: a shipped prompt whose sha256 matches is
    kept whole; any other is kept as its id and sha256 (the text is not in the labels file)."""
    if not prompt:
        return None
    pid, sha = str(prompt.get("id") or ""), str(prompt.get("sha256") or "")
    if pid:
        import hashlib
        from importlib import resources

        res = resources.files("ragmeter.answers.judges").joinpath("prompts", f"{pid}.txt")
        if res.is_file():
            text = res.read_text(encoding="utf-8")
            if hashlib.sha256(text.encode("utf-8")).hexdigest() == sha:
                return text
    return json.dumps(dict(prompt), sort_keys=True, ensure_ascii=False)


def judge_name(judge: Mapping[str, Any] | None) -> str:
    """The judge the labels name, as its label (``name model``), else its JSON."""
    if not judge:
        return "unknown judge (the labels name none)"
    from ..answers.judges import JudgeInfo

    try:
        return JudgeInfo.from_dict(judge).label
    except (KeyError, TypeError, ValueError):
        return json.dumps(dict(judge), sort_keys=True, ensure_ascii=False)


def record_judge_validation(store: Store, validated: ValidatedJudge, source: Path) -> int:
    """Record the judge labels with the human label of each question, the judge that produced
    them, the prompt text and the validation report; its id."""
    rows = [
        {
            "id": x.id,
            "label": x.label,
            "human": validated.humans.get(x.id),
            "run": x.run,
            "order": x.order,
            "score": x.score,
        }
        for x in validated.labels
    ]
    return store.record_judge_validation(
        judge=judge_name(validated.info.get("judge")),
        labels=rows,
        report=validated.validation.to_dict(),
        prompt=prompt_text(validated.info.get("prompt")),
        source=str(source),
    )
