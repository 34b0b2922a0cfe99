"""Diagnosis: walk the "where to look first" path and name ONE next experiment.

The path (each "no" names one component to change):

1. **Recall high at a large k?** span-level AllR at the headroom cutoff (e.g. AllR@50) >=
   ``headroom_recall`` (0.90). No -> *candidate fix* (the evidence is not even in the pool:
   chunk boundaries, hybrid search, labels).
2. **Recall high at the prompt k?** AllR at the prompt k or budget (or the table's share of
   questions with evidence in context) >= ``prompt_recall`` (0.90, the same bar as step 1:
   "high" means the same at both depths, and a fifth of the questions without their evidence
   in the prompt is not high recall). No -> *ranking fix* (in the pool, not in the prompt:
   reranker, lexical candidates).
3. **Faithful and correct?** share of questions with evidence in context whose answer is correct
   and supported >= ``answer_ok`` (0.80). No -> *generation fix* (context order, prompt,
   abstention). Correct answers whose support is unknown are left out of the share and counted
   in the detail, never taken as supported.
   **Citations inside the prompt context?** answers that cite a passage their prompt never held
   are a pipeline bug or a leak from the model's memory. When there are more of them than in
   the largest bad cell, the failing link is the *pipeline* (the table cannot be trusted until
   answers and run agree); otherwise the step fails and a note says so.
4. **Slices**: stale sources (any faithful-but-wrong answer citing an older or superseded
   document), unanswerable questions (abstention rate >= ``abstention`` (0.80)), and golden
   slices of at least ``min_slice`` (10) questions whose ok-rate is ``slice_gap`` (0.15) or more
   below the overall rate (smaller slices give a direction, not proof, and are only noted).

The failing link is the first failing step; with a retrieval-by-answer table, once any step of
the chain (1-3) fails, the table's largest bad cell names the link ("the
largest bad cell names the next experiment"; ties in chain order: retrieval first). Without a
table or any retrieval number, step 3 cannot separate generation from retrieval and is reported
"unknown"; the slices are still checked, and with nothing failing the advice is to measure
retrieval at the prompt k first. Within
retrieval, step 1 decides candidate vs ranking; when the headroom was not measured the ranking
fix is proposed and the assumption is stated. The experiment names the change, the metric at
the prompt k or budget, the paired comparison to run, and the refutation rule, written before
running it: "abandon if fixed - broken <= 0 or the 95% paired interval includes 0". The path
lists two fixes per retrieval link (ranking: reranker, lexical candidates; candidates: hybrid
search, chunk boundaries): the experiment is the first, and the second is named as the
``alternative``, its own run under the same rule, so that each run still changes one thing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .._errors import UsageError
from .._interval import interval_text
from .._numbers import rate, whole
from ..answers.report import AnswerReport
from ..metrics import Metric, parse
from ._causal import CAUSE_INFO, CausalTable
from ._table import RetrievalAnswerTable


@dataclass(frozen=True)
class Thresholds:
    """What counts as "high" at each step (documented in docs/answers.md)."""

    headroom_recall: float = 0.90
    prompt_recall: float = 0.90  # the same bar as at a large k: "high" means one thing
    answer_ok: float = 0.80
    abstention: float = 0.80
    min_slice: int = 10
    slice_gap: float = 0.15

    def __post_init__(self) -> None:
        # each bar is a rate: a threshold of -1 or 2 (or NaN) would pass or fail every step
        for name in ("headroom_recall", "prompt_recall", "answer_ok", "abstention", "slice_gap"):
            rate(name, getattr(self, name))
        whole("min_slice", self.min_slice, low=1)


@dataclass(frozen=True)
class RecallAt:
    """A mean span-level recall at one cutoff, e.g. ``RecallAt("AllR@3", 0.71, 70)`` (a metric
    string is parsed: ``metric`` is always a :class:`~ragmeter.metrics.Metric`)."""

    metric: Metric
    value: float
    n: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "metric", parse(self.metric))


@dataclass(frozen=True)
class Step:
    """One question of the path and its answer on the data at hand."""

    key: str
    question: str
    status: str  # "pass" | "fail" | "unknown"
    value: float | None
    threshold: float | None
    detail: str
    #: "proven" (read from a context ablation: the context was the only change), "inferred"
    #: (read from observation: recall, the retrieval-by-answer table, the answer checks), or
    #: None when nothing was measured
    basis: str | None = None


@dataclass(frozen=True)
class NextExperiment:
    """ONE next experiment and the rule that would refute it, fixed before running it."""

    link: str
    change: str
    metric: str
    comparison: str
    refutation: str
    assumption: str | None = None
    #: the other fix the path lists for this link: its own run (one change per run), never
    #: folded into this one
    alternative: str | None = None


@dataclass(frozen=True)
class Diagnosis:
    steps: tuple[Step, ...]
    failing_link: str | None
    experiment: NextExperiment
    table: RetrievalAnswerTable | None = None
    notes: tuple[str, ...] = ()
    thresholds: Thresholds = field(default_factory=Thresholds)
    #: the context ablations' causal table, when given
    causal: CausalTable | None = None
    #: what named the failing link: "proven" (the causal table's largest proven bad cause),
    #: "inferred" (the path and the retrieval-by-answer table), None when no link fails
    basis: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "failing_link": self.failing_link,
            "basis": self.basis,
            "steps": [asdict(s) for s in self.steps],
            "experiment": asdict(self.experiment),
            "table": self.table.to_dict() if self.table else None,
            "notes": list(self.notes),
            "thresholds": asdict(self.thresholds),
            "causal": self.causal.to_dict() if self.causal else None,
        }


def _step(
    key: str,
    question: str,
    value: float | None,
    threshold: float,
    what: str,
    higher_ok: bool = True,
) -> Step:
    if value is None:
        return Step(key, question, "unknown", None, threshold, f"{what}: not measured")
    ok = value >= threshold if higher_ok else value <= threshold
    return Step(
        key,
        question,
        "pass" if ok else "fail",
        value,
        threshold,
        f"{what} = {value:.3f} ({'>=' if ok else '<'} {threshold:.2f})",
    )


def diagnose(
    *,
    table: RetrievalAnswerTable | None = None,
    prompt_recall: RecallAt | None = None,
    headroom_recall: RecallAt | None = None,
    report: AnswerReport | None = None,
    golden_version: str | None = None,
    split: str = "tune",
    thresholds: Thresholds | None = None,
    causal: CausalTable | None = None,
    metrics: Sequence[Metric | str] | None = None,
) -> Diagnosis:
    """Walk the path with whatever is given (see module docstring).

    ``causal``: the context ablations' :class:`~ragmeter.diagnosis.CausalTable`; its proven
    causes are added as steps and, when the chain fails (or nothing observational was
    measured), its largest proven bad cause names the link instead of the table's largest bad
    cell (``basis`` "proven"). ``metrics``: the metrics the experiment measured; a next
    experiment named from proven causes names only these (and answer correctness, which the
    ablations measured); without it, only the recall metrics given count as measured.
    """
    t = thresholds or Thresholds()
    if (
        table is None
        and prompt_recall is None
        and headroom_recall is None
        and report is None
        and causal is None
    ):
        raise UsageError(
            "diagnose needs at least one of: a retrieval-by-answer table, a recall "
            "at the prompt k, a recall at a large k, an answers report, or a causal table"
        )
    version = golden_version or (report.golden_version if report else None) or "<version>"
    on = f"golden {version} {split} split"
    prompt_m = prompt_recall.metric if prompt_recall else None
    big_m = headroom_recall.metric if headroom_recall else Metric("AllR", _HEADROOM_K)
    # "AllR@k" stands for the prompt's cutoff until recall at it is measured
    k_metric = str(prompt_m) if prompt_m is not None else "AllR@k"
    big_metric = str(big_m)
    notes: list[str] = []

    s1 = _step(
        "headroom",
        "Recall high at a large k?",
        headroom_recall.value if headroom_recall else None,
        t.headroom_recall,
        str(headroom_recall.metric) if headroom_recall else "recall at a large k",
    )
    pr_val: float | None
    if prompt_recall is not None:
        pr_val, pr_what = prompt_recall.value, str(prompt_recall.metric)
    elif table is not None:
        ev = (
            table.count("working")
            + table.count("generation_failure")
            + table.count("support_unknown")
        )
        # an answer citing outside its context left the evidence rows: not in the share
        placed = table.n - table.count("cites_outside_context")
        pr_val = ev / placed if placed else None
        pr_what = "share of questions with evidence in the prompt context"
    else:
        pr_val, pr_what = None, "recall at the prompt k"
    s2 = _step("prompt_k", "Recall high at the prompt k?", pr_val, t.prompt_recall, pr_what)
    if table is not None:
        ev = table.count("working") + table.count("generation_failure")
        gen_val = table.count("working") / ev if ev else None
        gen_what = "answer correct and supported, given evidence in context"
    elif report is not None:
        gen_val = report.summary()["ok_rate"]
        gen_what = "answer correct and supported (all scored questions)"
    else:
        gen_val, gen_what = None, "answer correct and supported"
    s3 = _step("generation", "Faithful and correct?", gen_val, t.answer_ok, gen_what)
    unknown = (
        table.count("support_unknown")
        if table is not None
        else report.summary()["correct_support_unknown"]
        if report is not None
        else 0
    )
    if unknown:
        s3 = Step(
            s3.key,
            s3.question,
            s3.status,
            s3.value,
            s3.threshold,
            s3.detail + f"; {unknown} correct with support unknown, not counted",
        )
    s_cite, outside = _citations_step(table, report)
    blind = table is None and s1.status == "unknown" and s2.status == "unknown"
    if blind and s3.status == "fail":
        # without evidence-in-context, a wrong answer may be a retrieval or a generation failure
        s3 = Step(
            s3.key,
            s3.question,
            "unknown",
            s3.value,
            s3.threshold,
            s3.detail + "; retrieval not measured, so retrieval and generation failures "
            "cannot be told apart",
        )
    slice_steps, slice_fail = _slices(report, t)
    steps = tuple(
        replace(s, basis=None if s.status == "unknown" else "inferred")
        for s in (s1, s2, s3, *((s_cite,) if s_cite else ()), *slice_steps)
    )
    proven = causal.largest_proven_bad() if causal is not None else None
    if causal is not None:
        steps += tuple(_causal_steps(causal))
    chain = (s1, s2, s3)
    # proven causes name the link once the observed chain fails, or when nothing observational
    # tells whether it does; a chain that passes every bar keeps its verdict (noted below)
    use_proven = proven is not None and (
        any(s.status == "fail" for s in chain) or all(s.status == "unknown" for s in chain)
    )

    retrieval_fails = s1.status == "fail" or s2.status == "fail"
    link: str | None
    worst_bad = table.count(table.largest_bad.key) if table is not None and table.largest_bad else 0
    if outside:
        notes.append(
            f"{outside} answer(s) cite a passage outside their prompt context: check "
            "that the answers and the retrieval run belong together before trusting "
            "the table"
        )
    if outside and outside > worst_bad:
        link = "pipeline"
    elif use_proven and causal is not None and proven is not None:
        link = _PROVEN_LINK[proven]
        notes.append(_proven_note(causal, proven, table))
    elif (retrieval_fails or s3.status == "fail") and table is not None and table.largest_bad:
        # "the largest bad cell names the next experiment": once the chain fails anywhere, the
        # table (per question, both links at once) picks the link, not the first step to fail
        lb = table.largest_bad.key
        link = "generation" if lb == "generation_failure" else "retrieval"
        notes.append(_path_and_table(s1, s2, s3, table, link))
    elif retrieval_fails:
        link = "retrieval"
    elif s3.status == "fail":
        link = "generation"
    elif slice_fail is not None:
        link = slice_fail
    else:
        link = None
    basis = None if link is None else "proven" if use_proven and link != "pipeline" else "inferred"
    if causal is not None:
        notes.extend(_causal_notes(causal, proven, use_proven))
    if table is not None and table.largest_bad is not None:
        cell = table.largest_bad
        ties = "".join(
            f" (tied with {c.title}: ties go down the chain)" for c in table.tied_with_largest
        )
        notes.append(
            f"largest bad cell: {cell.title} ({table.count(cell.key)} of {table.n})"
            f"{ties}: {cell.reading}"
        )
        if table.count("from_memory"):
            notes.append(
                f"{table.count('from_memory')} answered from memory: do not credit "
                "retrieval for them"
            )

    measured = _measured(metrics, prompt_recall, headroom_recall)
    if basis == "proven" and causal is not None:
        link, exp = _proven_experiment(
            causal, link or "", s1, prompt_m, big_m, measured, report, on
        )
    elif link == "pipeline":
        exp = NextExperiment(
            "pipeline",
            "log the exact prompt context (chunk ids in order) with every answer, regenerate the "
            "answers from the run being diagnosed, and check them again",
            "answers citing a passage outside their context (target 0), then the table",
            f"the same questions on {on}, answers and run from one pipeline execution",
            "abandon the pipeline-bug reading if the logged contexts still miss the cited "
            "passages: then the model cites from memory, a generation fix (cite only the "
            "numbered passages given)",
        )
    elif link == "retrieval":
        if s1.status == "fail":
            link = "retrieval (candidates)"
            exp = NextExperiment(
                "candidates",
                "add lexical candidates: hybrid BM25 + dense retrieval, everything else unchanged",
                f"{big_metric} (pool) and {k_metric} (prompt)",
                f"{k_metric} paired per question on {on}, same context budget",
                _refute(k_metric),
                alternative="move the chunk boundaries (size or overlap, same context budget), "
                "as its own run with the same metric, comparison and rule",
            )
        else:
            link = "retrieval (ranking)"
            ranking, unranked = _ranking(prompt_m, measured)
            exp = NextExperiment(
                "ranking",
                f"add a reranker over {_pool(big_m)}, everything else unchanged",
                _join(ranking, k_metric),
                f"{k_metric} paired per question on {on}, same context budget",
                _refute(k_metric),
                _join_notes(
                    None
                    if s1.status == "pass"
                    else f"recall at a large k was not measured; if {big_metric} is also low, "
                    "the candidate fix (hybrid search, chunk boundaries) comes first",
                    unranked,
                ),
                alternative="fuse lexical and dense candidates (hybrid search), as its own run "
                "with the same metric, comparison and rule",
            )
    elif link == "generation":
        exp = _generation_experiment(report, on)
    elif link == "stale sources":
        docs = sorted(
            {
                c["doc"]
                for f in (report.faithful_but_wrong if report else ())
                for c in f.cited
                if f.stale
            }
        )
        exp = NextExperiment(
            "corpus",
            "retire or mark superseded the stale documents "
            f"({_some(docs) or 'cited by faithful-but-wrong answers'}) and "
            "filter retrieval by effective_date",
            "answer correct and supported (ragmeter answers check)",
            f"answer outcomes paired per question on {on}",
            _refute("answer correct and supported"),
        )
    elif link == "unanswerable":
        exp = NextExperiment(
            "abstention",
            "add an abstain rule to the prompt: answer only when a passage states "
            "it, otherwise say it is not in the documents",
            "abstention rate on unanswerable and false-abstention rate on answerable",
            f"answer outcomes paired per question on {on} (all questions, so "
            "false abstentions count as broken)",
            _refute("answer correct and supported"),
        )
    elif link is not None and link.startswith("slice:"):
        name = link.split(":", 1)[1]
        exp = NextExperiment(
            link,
            f"one change aimed at slice '{name}' (e.g. lexical candidates for "
            "exact identifiers), everything else unchanged",
            f"{k_metric} and answer correct and supported on slice '{name}'",
            f"paired per question on {on}, reported overall and on '{name}'",
            _refute(k_metric) + "; also abandon if the other slices lose",
        )
    elif any(s.status == "unknown" for s in (s1, s2, s3)) and table is None:
        exp = NextExperiment(
            "unknown",
            "none yet: first score retrieval at the prompt k (span-level "
            "AllR@k on the run that fed these answers); the path cannot be walked "
            "without it",
            f"{k_metric} and {big_metric}",
            f"none until measured on {on}",
            "not applicable: this is a measurement, not a change",
        )
    else:
        exp = NextExperiment(
            "none",
            "no failing link at these thresholds: keep these questions as "
            "regression cases and grow the golden set from live traffic",
            k_metric,
            f"gate future changes paired on {on}",
            "a change ships only if fixed - broken > 0 and the interval excludes 0",
        )
    return Diagnosis(steps, link, exp, table, tuple(notes), t, causal, basis)


#: the link each proven bad cause names
_PROVEN_LINK = {
    "retrieval_failure": "retrieval",
    "generation_failure": "generation",
    "noise_sensitive": "context precision",
}
#: fewer counted questions than this: the causal counts give a direction, not proof
_FEW = 10
_CORRECT = "answer correct"


def _causal_steps(c: CausalTable) -> list[Step]:
    """The proven causes as steps of the path (basis "proven"); a cause whose ablation was not
    run is left out."""
    n = c.n_counted
    asked = []
    if "oracle" in c.sources:
        asked.append(
            (
                "proven_retrieval",
                "As good with the retrieved context as with the oracle?",
                "retrieval_failure",
            )
        )
        asked.append(("proven_generation", "Right with the oracle context?", "generation_failure"))
        if "oracle+distractors" in c.sources:
            asked.append(
                ("proven_noise", "Unmoved by distractors next to the evidence?", "noise_sensitive")
            )
    steps = []
    for key, question, cause in asked:
        info, k = CAUSE_INFO[cause], c.count(cause)
        if not n:
            steps.append(
                Step(key, question, "unknown", None, 0.0, "no question with known outcomes")
            )
            continue
        detail = f"{k} of {n} questions: {info.title} ({info.rule})"
        if cause == "retrieval_failure" and c.ceiling is not None:
            detail += "; " + _ceiling_text(c)
        steps.append(
            Step(key, question, "fail" if k else "pass", k / n, 0.0, detail, basis="proven")
        )
    return steps


def _ceiling_text(c: CausalTable) -> str:
    d = c.ceiling_dict()
    if d is None:
        return "no oracle ceiling (no question with both outcomes known)"
    lo, hi = d["interval"]
    return (
        f"oracle ceiling {d['mean']:+.3f} {_CORRECT} ({d['confidence']:.0%} interval "
        f"{interval_text(lo, hi)}, {d['fixed']} fixed, {d['broken']} broken, n={d['n']})"
    )


def _proven_note(c: CausalTable, proven: str, table: RetrievalAnswerTable | None) -> str:
    info = CAUSE_INFO[proven]
    link = _PROVEN_LINK[proven]
    note = (
        f"the ablations prove the largest bad cause: {info.title} ({c.count(proven)} of "
        f"{c.n_counted}); it names the link: {link}"
    )
    if table is not None and table.largest_bad is not None:
        inferred = "generation" if table.largest_bad.key == "generation_failure" else "retrieval"
        if inferred != link:
            note += (
                f" (the retrieval-by-answer table infers {table.largest_bad.title}: the proven "
                "cause is preferred)"
            )
    return note


def _causal_notes(c: CausalTable, proven: str | None, used: bool) -> list[str]:
    notes = []
    if c.ceiling is not None:
        notes.append(_ceiling_text(c) + ": the most a perfect retriever would buy at this budget")
    if "none" in c.sources and c.count("memory"):
        notes.append(
            f"{c.count('memory')} answered from memory (right with no context at all): proven; "
            "do not credit retrieval for them"
        )
    if c.count("unknown"):
        notes.append(
            f"{c.count('unknown')} question(s) lack an outcome the causal rule needs: left out "
            "of the proven counts"
        )
    if c.n_counted < _FEW:
        notes.append(f"only {c.n_counted} question(s) in the causal counts: a direction, not proof")
    if proven is not None and not used:
        notes.append(
            f"{c.count(proven)} {CAUSE_INFO[proven].title}(s), but the path passes every bar "
            "at these thresholds: kept as cases, not named as the failing link"
        )
    return notes


def _measured(
    metrics: Sequence[Metric | str] | None,
    prompt_recall: RecallAt | None,
    headroom_recall: RecallAt | None,
) -> tuple[Metric, ...]:
    """The metrics the experiment has: those given, else the recall metrics measured."""
    if metrics is not None:
        return tuple(parse(m) for m in metrics)
    return tuple(r.metric for r in (prompt_recall, headroom_recall) if r is not None)


def _has(m: Metric | str | None, measured: Sequence[Metric]) -> str | None:
    """``m``'s string when the experiment measured it (a metric given without a cutoff stands
    for every cutoff of that metric), else None."""
    if m is None:
        return None
    try:
        want = parse(m)
    except UsageError:
        return None
    for x in measured:
        # a bare metric stands for its own options only: "nDCG" is not nDCG(gain=exp)@4
        if x == want or (x.k is None and x.budget is None and x.stem == want.stem):
            return str(want)
    return None


def _join(*names: str | None) -> str:
    return " and ".join(n for n in names if n)


def _join_notes(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None


def _ranking(prompt: Metric | None, measured: Sequence[Metric]) -> tuple[str | None, str | None]:
    """(the ranking metric the experiment measured at the prompt's rank cutoff, with the gain
    it measured, e.g. ``nDCG@4``; else None and a note saying how to add it). nDCG has no token
    budget form: at a budget it is read only where the experiment fixed a rank cutoff."""
    k = prompt.k if prompt is not None else None
    for x in measured:
        bare = x.k is None and x.budget is None
        if k is not None and x.name == _RANKING and (x.k == k or bare):
            return str(x.at(k)), None
    if prompt is not None and prompt.budget is not None:
        return None, (
            f"{_RANKING} (the ranking inside the prompt) has a rank cutoff, not a token budget: "
            f'to watch it, add "{_RANKING}@K" (K: the passages the budget admits) to the '
            "experiment file's metrics = [...] line"
        )
    want = f"{_RANKING}@{k if k is not None else 'k'}"
    return None, (
        f"{want} (linear), the ranking inside the prompt, is not among the metrics this "
        f'diagnosis reads: to watch it, add "{_RANKING}" to the experiment file\'s metrics = '
        "[...] line"
    )


def _proven_experiment(
    c: CausalTable,
    link: str,
    s1: Step,
    prompt_m: Metric | None,
    big_m: Metric,
    measured: Sequence[Metric],
    report: AnswerReport | None,
    on: str,
) -> tuple[str, NextExperiment]:
    """The next experiment for a link named by a proven cause: the same changes as the
    inferred path, measured only on metrics the experiment has and on answer correctness."""
    k_m = _has(prompt_m, measured)
    primary = k_m or _CORRECT
    ceiling = _ceiling_text(c) if c.ceiling is not None else None
    if link == "retrieval":
        if s1.status == "fail":
            return "retrieval (candidates)", NextExperiment(
                "candidates",
                "add lexical candidates: hybrid BM25 + dense retrieval, everything else unchanged",
                _join(_has(big_m, measured), k_m, _CORRECT),
                f"{primary} paired per question on {on}, same context budget",
                _refute(primary),
                ceiling and f"{ceiling}: the most this change can buy",
                alternative="move the chunk boundaries (size or overlap, same context budget), "
                "as its own run with the same metric, comparison and rule",
            )
        unmeasured = (
            None
            if s1.status == "pass"
            else "recall at a large k was not measured; if the evidence is not in the candidate "
            "pool either, the candidate fix (hybrid search, chunk boundaries) comes first"
        )
        ranking, unranked = _ranking(prompt_m, measured)
        return "retrieval (ranking)", NextExperiment(
            "ranking",
            f"add a reranker over {_pool(big_m)}, everything else unchanged",
            _join(ranking, k_m, _CORRECT),
            f"{primary} paired per question on {on}, same context budget",
            _refute(primary),
            _join_notes(
                unmeasured, ceiling and f"{ceiling}: the most a better ranking can buy", unranked
            ),
            alternative="fuse lexical and dense candidates (hybrid search), as its own run "
            "with the same metric, comparison and rule",
        )
    if link == "generation":
        exp = _generation_experiment(report, on)
        if exp.change == _REORDER:
            # wrong even with the evidence handed over: the order of the retrieved passages is
            # not what failed, so the first change is the prompt, the second the model
            exp = replace(exp, change=_QUOTE_PROMPT)
        return "generation", replace(
            exp,
            alternative="a stronger generator (another model), as its own run with the same "
            "metric, comparison and rule",
            metric=f"{_CORRECT} with the oracle context ({c.count('generation_failure')} proven "
            "generation failures) and with the retrieved context",
            comparison=f"{_CORRECT} paired per question on {on}, under the oracle context and "
            "under the retrieved one, same retrieval and budget",
            refutation=_refute(_CORRECT),
        )
    p_at = _has(Metric("P", prompt_m.k) if prompt_m is not None and prompt_m.k else None, measured)
    if p_at is None:
        p_at = next((str(x) for x in measured if x.name == "P" and str(x) != x.name), None)
    return "context precision", NextExperiment(
        "context precision",
        f"add a reranker over {_pool(big_m)} to keep passages without evidence out of the "
        "prompt, everything else unchanged",
        _join(p_at, k_m, _CORRECT),
        f"{_CORRECT} paired per question on {on}, same context budget (the "
        f"{c.count('noise_sensitive')} noise-sensitive questions should be fixed, no other "
        "broken)",
        _refute(_CORRECT),
        None
        if p_at is not None
        else 'context precision (P at the prompt k) is not measured: add "P" to the '
        "experiment's metrics to watch it",
        alternative="a smaller k at the same token budget (fewer passages without evidence), "
        "as its own run with the same metric, comparison and rule",
    )


def _path_and_table(s1: Step, s2: Step, s3: Step, table: RetrievalAnswerTable, link: str) -> str:
    """One sentence joining the path's first "no" and the table's largest bad cell."""
    failing = [s for s in (s1, s2, s3) if s.status == "fail"]
    first = failing[0] if failing else s3
    first_link = "generation" if first is s3 else "retrieval"
    then = "".join(f", then at '{s.question}'" for s in failing[1:])
    lb = table.largest_bad
    cell = f"{lb.title}, {table.count(lb.key)}" if lb is not None else "none"
    same = ", as the path does" if first_link == link else ""
    return (
        f"the path fails first at '{first.question}' ({first_link}){then}; the largest bad "
        f"cell ({cell}) names the link: {link}{same}"
    )


def _citations_step(
    table: RetrievalAnswerTable | None, report: AnswerReport | None
) -> tuple[Step | None, int]:
    """Do answers cite only what their prompt held? (None when no context was known.)"""
    n = table.count("cites_outside_context") if table is not None else 0
    known = n > 0  # a table of plain verdicts says nothing when its count is 0
    if report is not None and report.summary()["context_known"]:
        # every answer counts here, unanswerable questions included (the table has none)
        known, n = True, max(n, report.summary()["cites_outside_context"])
    if not known:
        return None, 0
    detail = (
        f"{n} answer(s) cite a passage outside their prompt context (a pipeline bug or a "
        "leak from the model's memory; never counted as supported)"
    )
    return Step(
        "citations",
        "Citations inside the prompt context?",
        "fail" if n else "pass",
        float(n),
        0.0,
        detail,
    ), n


#: the large k recall is read at when the diagnosis is given none
_HEADROOM_K = 50
#: the ranking metric the reranker experiment reports at the prompt's cutoff, at the gain the
#: experiment measured it with
_RANKING = "nDCG"


def _pool(headroom: Metric) -> str:
    """The candidates a reranker would reorder: those within the headroom cutoff."""
    if headroom.budget is not None:
        return f"the candidates within a {headroom.budget}-token budget"
    return f"the top {headroom.k if headroom.k is not None else _HEADROOM_K} candidates"


def _refute(metric: str) -> str:
    return (
        f"abandon if fixed - broken <= 0 on {metric} or the 95% paired bootstrap interval "
        "of the difference includes 0"
    )


#: the generation change when nothing in the failures points elsewhere
_REORDER = "reorder the context: best-ranked passage first, duplicates removed, same budget"
#: the generation change when answers go unsupported (or fail with the evidence handed over)
_QUOTE_PROMPT = (
    "prompt: answer only from the passages and quote the sentence you rely on, with its citation"
)


def _generation_experiment(report: AnswerReport | None, on: str) -> NextExperiment:
    """Pick the generation change from what the failures look like."""
    change = _REORDER
    if report is not None:
        bad = [c for c in report.checks if c.answerable and c.ok is False]
        false_abst = sum(c.abstained for c in bad)
        unsupported = sum(c.supported is False for c in bad)
        if bad and false_abst >= max(unsupported, 1) and false_abst * 2 >= len(bad):
            change = "relax the abstention rule in the prompt (it abstains on answerable questions)"
        elif bad and unsupported * 2 >= len(bad):
            change = _QUOTE_PROMPT
    return NextExperiment(
        "generation",
        change,
        "answer correct and supported on questions with evidence in the prompt context",
        f"answer outcomes paired per question on {on}, same retrieval and budget",
        _refute("answer correct and supported"),
    )


def _slices(report: AnswerReport | None, t: Thresholds) -> tuple[list[Step], str | None]:
    if report is None:
        return [], None
    steps: list[Step] = []
    first: str | None = None
    stale = [f for f in report.faithful_but_wrong if f.stale]
    fbw = len(report.faithful_but_wrong)
    steps.append(
        Step(
            "stale",
            "Stale sources? (faithful but wrong)",
            "fail" if stale else "pass",
            float(fbw),
            0.0,
            f"{fbw} faithful-but-wrong answer(s), {len(stale)} citing an older or "
            "superseded document",
        )
    )
    if stale:
        first = "stale sources"
    ab = report.abstention
    if ab.n_unanswerable:
        s = _step(
            "unanswerable",
            "Abstains on unanswerable questions?",
            ab.abstention_rate,
            t.abstention,
            f"abstention rate on {ab.n_unanswerable} unanswerable",
        )
        steps.append(s)
        if s.status == "fail" and first is None:
            first = "unanswerable"
    overall = report.summary()["ok_rate"]
    for name, row in report.by_slice().items():
        if name in ("answerable", "unanswerable") or row["ok_rate"] is None or overall is None:
            continue
        gap = overall - row["ok_rate"]
        if gap < t.slice_gap:
            continue
        small = row["n"] < t.min_slice
        steps.append(
            Step(
                f"slice:{name}",
                f"Slice '{name}' as good as the rest?",
                "unknown" if small else "fail",
                row["ok_rate"],
                overall - t.slice_gap,
                f"ok rate {row['ok_rate']:.2f} vs {overall:.2f} overall on "
                f"{row['n']} questions"
                + (" (under the slice minimum: a direction, not proof)" if small else ""),
            )
        )
        if not small and first is None:
            first = f"slice:{name}"
    return steps, first


def recall_from_evaluation(evaluation: Any, metric: Metric | str) -> RecallAt:
    """Mean of ``metric`` in an :class:`~ragmeter.metrics._evaluation.Evaluation`."""
    m = parse(metric)
    col = evaluation.column(m)
    return RecallAt(m, sum(col.values()) / len(col) if col else 0.0, len(col))


def evidence_from_evaluation(evaluation: Any, metric: Metric | str) -> Mapping[str, bool]:
    """Per question: the binary ``metric`` (e.g. ``AllR@3``) equals 1 -> evidence in context."""
    return {q: v >= 1.0 - 1e-9 for q, v in evaluation.column(metric).items()}


def pick_recall(
    evaluations: Sequence[Any], metric: str | Metric | None = None, which: str = "prompt"
) -> tuple[Any, Metric] | None:
    """The evaluation and recall metric for the prompt k (the smallest rank cutoff) or the
    headroom check (the largest), unless ``metric`` names it: ``AllR`` when the evaluations
    carry it, else ``R``. None when nothing fits (or only one cutoff exists, for headroom)."""
    if metric is not None:
        m = parse(metric)
        for e in evaluations:
            if m in e.metrics:
                return e, m
        raise UsageError(f"no evaluation carries {m}")
    found = [(e, m) for e in evaluations for m in e.metrics if m.name in ("AllR", "R") and m.k]
    if not found:
        return None
    found.sort(key=lambda em: (em[1].name != "AllR", em[1].k))
    same = [x for x in found if x[1].name == found[0][1].name]
    e, m = same[0] if which == "prompt" else same[-1]
    if which == "headroom" and m == same[0][1]:
        return None
    return e, m


def _some(ids: list[str], limit: int = 5) -> str:
    """The first ``limit`` ids, and how many more there are (a cut list always says so)."""
    more = len(ids) - limit
    return ", ".join(ids[:limit]) + (f" and {more} more" if more > 0 else "")
