"""Confirm the chosen variant once on the held-out split: ``ragmeter confirm``.

The design source keeps a held-out slice: variants are tried and chosen on the tuning questions,
and the one chosen is then compared with the baseline, once, on questions that played no part in
the choice. :func:`confirm` does that step for a variant of an experiment file:

1. the experiment's baseline and the chosen variant are run (from the cache ``ragmeter run``
   left; no output file is written) and compared question by question on the experiment's
   headline metric (``headline =`` in its file, else its default; ``metric=`` overrides), on
   the held-out questions only: fixed, broken, the paired interval, the sign test, with the
   same code and seed as ``ragmeter compare`` (its ``split heldout`` row);
2. the confirmation is recorded in the selection ledger (the store's, or a JSONL file) as an
   entry of ``"kind": "confirm"`` with the golden-set version, the split, the variant id and its
   settings, and the result (:meth:`ragmeter.paired.Ledger.record_confirmation`);
3. a variant already confirmed on that version's held-out split is not confirmed again: the
   recorded result is returned (``already``); and once two different variants have been
   confirmed there, the split is no longer held out (a choice was made on it) and every
   confirmation on it says so (:attr:`Confirmation.warning`).

A variant holds up on the held-out split under the diagnosis's rule as written: fixed - broken
> 0 (for a metric that is not 0/1: a positive mean difference) and a paired interval that
excludes 0.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import InputError, RagmeterWarning, UsageError
from .._interval import interval_text
from .compare import CompareOptions

if TYPE_CHECKING:  # pragma: no cover
    from ..experiments import Experiment, ExperimentResult, Variant
    from ..metrics import Evaluation, Metric
    from ..paired import Comparison, Ledger

__all__ = [
    "HELDOUT",
    "ConfirmResult",
    "Confirmation",
    "confirm",
    "confirm_in_result",
    "find_variant",
    "headline_metric",
]

#: the golden set's held-out split
HELDOUT = "heldout"


@dataclass(frozen=True)
class ConfirmResult:
    """The paired result on the held-out split: measured now, or as the ledger recorded it."""

    n: int
    baseline_mean: float | None
    candidate_mean: float | None
    mean_delta: float | None
    ci: tuple[float, float] | None
    #: None for a metric that is not 0/1
    fixed: int | None
    broken: int | None
    sign_test_p: float | None

    @property
    def held(self) -> bool:
        """The rule as written: fixed - broken > 0 (else a positive mean difference) and an
        interval that excludes 0."""
        if self.ci is None or self.mean_delta is None:
            return False
        net_up = (
            self.fixed - self.broken > 0
            if self.fixed is not None and self.broken is not None
            else self.mean_delta > 0
        )
        lo, hi = self.ci
        return net_up and not (lo <= 0 <= hi)

    @property
    def interval(self) -> str:
        return "-" if self.ci is None else interval_text(*self.ci)

    def counts(self) -> str:
        """'4 fixed, 0 broken' (or the mean difference for a metric that is not 0/1)."""
        if self.fixed is not None and self.broken is not None:
            return f"{self.fixed} fixed, {self.broken} broken"
        return "mean difference " + ("-" if self.mean_delta is None else f"{self.mean_delta:+.3f}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "baseline_mean": self.baseline_mean,
            "candidate_mean": self.candidate_mean,
            "mean_delta": self.mean_delta,
            "ci": None if self.ci is None else list(self.ci),
            "fixed": self.fixed,
            "broken": self.broken,
            "sign_test_p": self.sign_test_p,
        }

    @classmethod
    def from_entry(cls, e: Mapping[str, Any]) -> ConfirmResult:
        """The result a ledger entry recorded (a key it lacks reads as unknown)."""
        ci = e.get("ci")
        return cls(
            n=int(e.get("n") or 0),
            baseline_mean=_num(e.get("baseline_mean")),
            candidate_mean=_num(e.get("candidate_mean")),
            mean_delta=_num(e.get("mean_delta")),
            ci=(float(ci[0]), float(ci[1]))
            if isinstance(ci, list | tuple) and len(ci) == 2 and None not in ci
            else None,
            fixed=None if e.get("fixed") is None else int(e["fixed"]),
            broken=None if e.get("broken") is None else int(e["broken"]),
            sign_test_p=_num(e.get("sign_test_p")),
        )


def _num(x: Any) -> float | None:
    return None if x is None else float(x)


@dataclass(frozen=True)
class Confirmation:
    """One variant confirmed against the baseline on the held-out split."""

    experiment: Path
    baseline: str
    variant: str
    #: the variant's ledger id (name plus a fingerprint of its settings)
    variant_id: str
    metric: str
    split: str
    golden_version: str | None
    #: the held-out questions with a value on the metric (questions without evidence are not
    #: scored), of ``n_split`` in the split
    n_split: int
    #: what is shown: measured now, or (``already``) as recorded the first time
    result: ConfirmResult
    #: the comparison made now, on every question (its ``split heldout`` row is ``measured``)
    comparison: Comparison
    measured: ConfirmResult
    fixed_ids: tuple[str, ...]
    broken_ids: tuple[str, ...]
    #: the ledger entry: written now, or the earlier one (``already``); None: recorded nowhere
    entry: Mapping[str, Any] | None
    #: this variant was confirmed on this version's split before: nothing recorded anew
    already: bool
    #: the distinct variants confirmed on this version's split, oldest first (this one included
    #: once recorded)
    confirmed_on_split: tuple[str, ...]

    @property
    def recorded(self) -> bool:
        return self.entry is not None

    @property
    def others(self) -> tuple[str, ...]:
        """The other variants confirmed on this split."""
        return tuple(v for v in self.confirmed_on_split if v != self.variant_id)

    @property
    def after_another(self) -> bool:
        """A different variant was confirmed on this split before this one was: this
        confirmation was made on a split that was no longer held out."""
        mine = self.confirmed_on_split
        return self.variant_id in mine and mine.index(self.variant_id) > 0

    @property
    def warning(self) -> str | None:
        """The loud line once more than one variant was confirmed on this split."""
        n = len(self.confirmed_on_split)
        if n < 2:
            return None
        return (
            f"the {self.split} split is no longer held out: {n} variants confirmed on it "
            f"(golden set version {self.golden_version or '(none)'}: "
            f"{', '.join(self.confirmed_on_split)}); a variant chosen after looking at it is "
            "flattered as on the tuning questions: label fresh held-out questions (a new golden "
            "set version) for the next confirmation"
        )

    @property
    def status(self) -> str:
        """``confirmed``, ``not confirmed`` (the rule refutes it on the split) or ``held-out
        split spent`` (it holds up, but another variant had been confirmed there first)."""
        if not self.result.held:
            return "not confirmed"
        return "held-out split spent" if self.after_another else "confirmed"

    @property
    def exit_code(self) -> int:
        """0 confirmed; 1 not confirmed, or confirmed on a split that was no longer held out."""
        return 0 if self.status == "confirmed" else 1

    def sentence(self) -> str:
        """The verdict in one sentence."""
        r = self.result
        on = f"on the {self.split} split ({r.n} questions, {self.metric})"
        if r.held:
            verdict = (
                f"{self.variant} holds up {on}: {r.counts()}, interval {r.interval} excludes 0"
            )
        else:
            verdict = f"{self.variant} does not hold up {on}: {r.counts()}, interval {r.interval}"
        if self.status == "held-out split spent":
            verdict += (
                f"; but {', '.join(self.others)} had been confirmed on this split first, so this "
                "is not a confirmation on held-out questions"
            )
        return verdict + "."

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiment": str(self.experiment),
            "baseline": self.baseline,
            "variant": self.variant,
            "variant_id": self.variant_id,
            "metric": self.metric,
            "split": self.split,
            "golden_version": self.golden_version,
            "n_split": self.n_split,
            "status": self.status,
            "exit_code": self.exit_code,
            "already_confirmed": self.already,
            "recorded": self.recorded,
            "result": self.result.to_dict(),
            "measured_now": self.measured.to_dict(),
            "fixed_ids": list(self.fixed_ids),
            "broken_ids": list(self.broken_ids),
            "variants_confirmed_on_split": list(self.confirmed_on_split),
            "held_out_spent": len(self.confirmed_on_split) > 1,
            "warning": self.warning,
            "sentence": self.sentence(),
            "entry": None if self.entry is None else dict(self.entry),
        }


# -- checks before anything runs -------------------------------------------------------------
def find_variant(exp: Experiment, name: str) -> Variant:
    """The variant ``name`` of ``exp``; a UsageError naming the file (and the baseline's line)
    for the baseline or a name the file does not declare."""
    names = [v.name for v in exp.variants]
    if name == exp.baseline.name:
        at = _line_of(exp.path, r"^\s*\[\s*baseline\s*\]")
        where = f"{exp.path}:{at}" if at else str(exp.path)
        raise UsageError(
            f"'{name}' is the baseline of {where} ([baseline]): a confirmation compares one of "
            f"its variants against it; --variant one of: {', '.join(names) or '(none declared)'}"
        )
    for v in exp.variants:
        if v.name == name:
            return v
    raise UsageError(
        f"{exp.path} has no variant '{name}'; its variants ([[variant]] name): "
        f"{', '.join(names) or '(none declared)'}"
    )


def _line_of(path: Path, pattern: str) -> int | None:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    return next((i for i, t in enumerate(lines, 1) if re.match(pattern, t)), None)


def check_heldout(exp: Experiment, split: str = HELDOUT) -> int:
    """The number of questions of the experiment's golden set in ``split``, read from the file
    before anything runs; an InputError naming the golden file and its ``split`` field when
    there are none (a file the reader cannot read is left to the run, which reports every
    problem)."""
    if exp.beir is not None:
        raise InputError(
            f"a BEIR golden set has no '{split}' split: confirming needs questions marked "
            f'"split": "{split}" in a ragmeter golden set (docs/formats.md)',
            path=exp.beir,
        )
    from ..io import iter_jsonl

    n = total = 0
    try:
        for _, q in iter_jsonl(exp.golden, what="questions"):
            total += 1
            n += q.get("split") == split
    except (InputError, OSError):
        return -1  # the run reads it and says what is wrong
    if n == 0:
        raise InputError(
            f"no question is in the '{split}' split (all {total} are 'tune'), so nothing is held "
            f'out to confirm on: mark about a fifth of the questions "split": "{split}" before '
            "any variant is chosen (docs/formats.md)",
            path=exp.golden,
            field="split",
        )
    return n


def headline_metric(
    exp: Experiment, base: Evaluation, cand: Evaluation, metric: str | None = None
) -> Metric:
    """``metric`` when given (both sides must carry it), else the experiment's headline
    (``Experiment.headline_metric``: declared in its file, else its default) when both sides
    carry it; otherwise AllR at the baseline's prompt k, else at its token budget, else the
    first metric both sides carry at the prompt k or budget (not the headline: the
    confirmation's metric says which it is)."""
    from ..metrics import Metric, parse

    shared = [m for m in base.metrics if m in cand.metrics]
    listed = ", ".join(map(str, shared)) or "(none)"
    if metric is not None:
        m = parse(metric)
        if m not in shared:
            raise UsageError(f"--metric {m} is not scored on both runs; both carry: {listed}")
        return m
    head = exp.headline_metric
    if head is not None and head in shared:
        return head
    s = exp.baseline.settings
    options = ([Metric("AllR", s.k)] if s.k is not None else []) + (
        [Metric("AllR", budget=s.budget)] if s.budget is not None else []
    )
    for m in options:
        if m in shared:
            return m
    at_prompt = [
        m
        for m in shared
        if (s.k is not None and m.k == s.k) or (s.budget is not None and m.budget == s.budget)
    ]
    if at_prompt:
        return at_prompt[0]
    raise UsageError(
        f"the baseline and the variant share no metric at the prompt k or budget; --metric one "
        f"of: {listed}"
    )


# -- the step --------------------------------------------------------------------------------
def confirm_in_result(
    result: ExperimentResult,
    variant: str,
    *,
    metric: str | None = None,
    ledger: Ledger | None = None,
    options: CompareOptions | None = None,
    split: str = HELDOUT,
) -> Confirmation:
    """Confirm ``variant`` of an experiment already run (``result`` holds its baseline and the
    variant) on ``split``; record it in ``ledger`` (None: recorded nowhere, as the demo shows
    it)."""
    from ..paired import Ledger as LedgerFile
    from ..paired import compare, config_settings

    exp = result.experiment
    find_variant(exp, variant)
    opts = options or CompareOptions()
    base, cand = result.baseline.evaluation, result.variant(variant).evaluation
    m = headline_metric(exp, base, cand, metric)
    n_split = sum(s == split for s in base.splits.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagmeterWarning)  # the split's row is what is read
        c = compare(
            base,
            cand,
            m,
            n_resamples=opts.n_resamples,
            seed=opts.seed,
            confidence=opts.confidence,
            intersect=opts.intersect,
        )
    if split not in c.splits:
        why = (
            f"the golden set marks none '{split}'"
            if n_split == 0
            else f"none of its {n_split} '{split}' questions is scored at {m} (no evidence)"
        )
        raise InputError(
            f"nothing to confirm on: {why}", path=exp.beir or exp.golden, field="split"
        )
    s = c.splits[split].stats
    measured = ConfirmResult(
        n=s.n,
        baseline_mean=s.baseline_mean,
        candidate_mean=s.candidate_mean,
        mean_delta=s.mean_delta,
        ci=(float(s.ci[0]), float(s.ci[1])),
        fixed=s.fixed,
        broken=s.broken,
        sign_test_p=s.sign_test_p,
    )
    on_split = {q for q, sp in base.splits.items() if sp == split}
    fixed_ids = tuple(q for q in c.fixed_ids or () if q in on_split)
    broken_ids = tuple(q for q in c.broken_ids or () if q in on_split)
    vid = LedgerFile.variant_id(c.candidate, cand.config)
    me = _variant_key(c.candidate, config_settings(cand.config))
    entry: Mapping[str, Any] | None = None
    already = False
    confirmed: Sequence[Mapping[str, Any]] = ()
    if ledger is not None:
        earlier = ledger.confirmations(c.golden_version, split)
        mine = [e for e in earlier if _entry_key(e) == me]
        if mine:
            entry, already = mine[0], True
        else:
            entry = ledger.record_confirmation(
                golden_version=c.golden_version,
                split=split,
                metric=str(m),
                baseline=c.baseline,
                candidate=c.candidate,
                baseline_config=base.config,
                candidate_config=cand.config,
                result=measured.to_dict(),
            )
            earlier = [*earlier, entry]
        confirmed = earlier
    shown = ConfirmResult.from_entry(entry) if already and entry is not None else measured
    return Confirmation(
        experiment=Path(exp.path),
        baseline=result.baseline.name,
        variant=variant,
        variant_id=vid,
        metric=str(entry.get("metric", m)) if already and entry is not None else str(m),
        split=split,
        golden_version=c.golden_version,
        n_split=n_split,
        result=shown,
        comparison=c,
        measured=measured,
        fixed_ids=fixed_ids,
        broken_ids=broken_ids,
        entry=entry,
        already=already,
        confirmed_on_split=_distinct(confirmed, me, vid),
    )


def _variant_key(name: str, settings: Mapping[str, Any]) -> str:
    """A variant's identity across invocations: its name and settings, without the experiment
    file's path (the same file named from another folder is the same variant)."""
    import json

    kept = {k: v for k, v in settings.items() if k != "experiment"}
    return json.dumps([name, kept], sort_keys=True, default=str)


def _entry_key(e: Mapping[str, Any]) -> str:
    """:func:`_variant_key` of a confirmation entry (its candidate id when it has no config)."""
    config = e.get("config")
    if not isinstance(config, Mapping):
        return str(e.get("candidate"))
    return _variant_key(str(e.get("candidate", "")).rsplit("#", 1)[0], config)


def _distinct(entries: Sequence[Mapping[str, Any]], me: str, vid: str) -> tuple[str, ...]:
    """The distinct variants confirmed, oldest first, as variant ids (this one as ``vid``)."""
    out: dict[str, str] = {}
    for e in entries:
        k = _entry_key(e)
        out.setdefault(k, vid if k == me else str(e.get("candidate")))
    return tuple(out.values())


def confirm(
    path: str | Path,
    variant: str,
    *,
    ledger: Ledger | Path | None,
    metric: str | None = None,
    options: CompareOptions | None = None,
    cache_dir: Path | None = None,
    use_cache: bool = True,
    allow_outside: bool = False,
    console: Any = None,
) -> Confirmation:
    """Run the baseline and ``variant`` of the experiment file at ``path`` (the cache answers
    what ``ragmeter run`` computed; no output file is written), compare them on the held-out
    split and record the confirmation in ``ledger`` (a :class:`~ragmeter.paired.Ledger`, the
    store's included, or a JSONL path; None: recorded nowhere). Every check that needs no run
    (the variant, the split) is made before anything runs."""
    from ..experiments import load_experiment, run_experiment
    from ..paired import Ledger as LedgerFile

    exp = load_experiment(Path(path), warn=False, allow_outside=allow_outside)
    chosen = find_variant(exp, variant)
    check_heldout(exp)
    book = LedgerFile(ledger) if isinstance(ledger, Path) else ledger
    if book is not None:
        book.entries()  # a damaged ledger is said before the run, naming its line
    result = run_experiment(
        replace(exp, variants=(chosen,)),
        write=False,
        cache_dir=cache_dir,
        use_cache=use_cache,
        console=console,
    )
    return confirm_in_result(result, variant, metric=metric, ledger=book, options=options)
