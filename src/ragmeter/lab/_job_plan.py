"""What a background job from the lab would run: one new variant of a stored experiment.

The page names an experiment (a stored run of it, or its name), a retrieval method and a
chunker (and optionally k or a token budget). The plan is the experiment file's baseline with
exactly those settings changed, validated by the same rules as a ``[[variant]]`` table written
in the file (the variant is added to the file's parsed tables and the whole file is checked
again), so the lab can start nothing that ``ragmeter run`` would refuse; the one-change and
equal-budget warnings ``ragmeter run`` prints are kept for the page to show.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from .._errors import InputError, RagmeterError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ..experiments import Experiment, Settings, Variant
    from ..store import RunRecord, Store


@dataclass(frozen=True)
class JobPlan:
    """The experiment (baseline + the one new variant) a job runs, and what the page says."""

    experiment: Experiment
    variant: Variant
    #: the logical changes against the baseline (``chunking``, ``retriever``, ``k``, ...)
    changes: tuple[str, ...]
    #: what ``ragmeter run`` would warn for this variant (more than one change, budget)
    warnings: tuple[str, ...]
    #: the stored baseline run the new run is compared with (None: none stored)
    baseline_run: int | None


@dataclass(frozen=True)
class Method:
    """A retrieval method an experiment's runs used: a retriever and its reranker."""

    label: str
    retriever: Mapping[str, Any] | None
    reranker: Mapping[str, Any] | None


def experiment_runs(store: Store, *, run: int | None, experiment: str | None) -> list[RunRecord]:
    """The stored runs of the experiment a request names (by one of its runs, or by name)."""
    if run is not None:
        try:
            rec = store.run(int(run))
        except RagmeterError:
            raise UsageError(f"there is no stored run {run}") from None
        experiment = rec.experiment
    if not experiment:
        raise UsageError("name the experiment: one of its runs (run=ID) or its name")
    runs = store.runs(experiment=experiment)
    if not runs:
        raise UsageError(f"there is no stored experiment named {experiment!r}")
    return runs


def experiment_file(runs: Sequence[RunRecord], root: Path) -> Path:
    """The experiment file the runs were made from (as the runs record it, see
    :func:`ragmeter.lab._context.experiment_file_of`), inside the lab's folder ``root``: a job
    re-runs that file, Python generators and pipelines included, so a path read from the store
    that leads anywhere else is refused (:class:`~._paths.OutsideRoot`, naming it), whatever a
    page sent."""
    from ._context import experiment_file_of
    from ._paths import OutsideRoot

    recorded: list[Path] = []
    refused: list[OutsideRoot] = []
    for r in runs:
        try:
            path = experiment_file_of(r, root)
        except OutsideRoot as exc:
            refused.append(exc)
            continue
        if path is not None:
            recorded.append(path)
    for path in recorded:
        if path.is_file():
            return path
    if refused:
        raise refused[0]
    if not recorded:
        raise UsageError(
            f"the runs of {runs[0].experiment!r} were not made from an experiment file "
            "(ragmeter run): the lab can start new runs only for experiments"
        )
    raise InputError(
        "the experiment file these runs recorded is not found from this folder; start the "
        "lab where `ragmeter run` ran",
        path=recorded[0],
    )


def methods(exp: Experiment, runs: Sequence[RunRecord]) -> list[Method]:
    """Every retrieval method of the experiment file's variants and of its stored runs."""
    from ..experiments import Settings

    out: dict[str, Method] = {}
    settings = [v.settings for v in exp.all_variants]
    for r in runs:
        s = r.config.get("settings")
        if isinstance(s, Mapping) and s.get("run") is None and s.get("retriever"):
            settings.append(Settings(retriever=s.get("retriever"), reranker=s.get("reranker")))
    for s in settings:
        if s.run is None and s.retriever is not None:
            label = s.label()
            out.setdefault(label, Method(label, s.retriever, s.reranker))
    return list(out.values())


def chunkers(exp: Experiment, runs: Sequence[RunRecord]) -> list[str]:
    """Every chunker name the experiment's variants and stored runs used."""
    names = [v.settings.chunker for v in exp.all_variants]
    names += [
        r.config.get("settings", {}).get("chunker")
        for r in runs
        if isinstance(r.config.get("settings"), Mapping)
    ]
    return list(dict.fromkeys(n for n in names if isinstance(n, str) and n))


def _whole(name: str, value: str | int | None) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        raise UsageError(f"{name} must be a whole number, not {str(value)!r}") from None


#: one ``[[variant]]`` table of the experiment file (TOML values: strings, numbers, tables)
VariantTable: TypeAlias = dict[str, object]


def _retriever_table(text: str, known: Sequence[Method], base: Settings) -> VariantTable:
    """The variant keys for the method the page names: a method of the experiment's runs (its
    label), a JSON table, or a shorthand (``bm25``, ``dense``, ``e5``, ``hybrid``)."""
    text = text.strip()
    if not text:
        return {}
    for m in known:
        if m.label == text:
            keys: VariantTable = {"retriever": dict(m.retriever or {})}
            if m.reranker != base.reranker:
                keys["reranker"] = dict(m.reranker) if m.reranker else "none"
            return keys
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"retriever: not a JSON table ({exc.msg})") from None
    else:
        value = text
    keys = {"retriever": value}
    if base.reranker is not None:
        keys["reranker"] = "none"  # a plain retriever spec names no reranker
    return keys


def variant_name(settings: Settings) -> str:
    """A name that says what the variant runs: ``lab: bm25 · tokens:100:0 · k=12``."""
    parts = [settings.label(), settings.chunker or Path(str(settings.chunks)).name]
    if settings.k is not None:
        parts.append(f"k={settings.k}")
    if settings.budget is not None:
        parts.append(f"budget={settings.budget}")
    return "lab: " + " · ".join(parts)


def plan_job(
    store: Store,
    *,
    root: Path,
    run: int | None = None,
    experiment: str | None = None,
    retriever: str = "",
    chunker: str = "",
    k: str | int | None = None,
    budget: str | int | None = None,
) -> JobPlan:
    """Check a job request and build its plan; a bad request raises UsageError/InputError whose
    message the page shows as it is (one line per problem). Only an experiment file inside the
    lab's folder ``root`` is planned (:func:`experiment_file`)."""
    from dataclasses import replace

    from ..experiments import effective_changes, load_experiment
    from ..workflows.experiment import check_variant, variant_warnings

    runs = experiment_runs(store, run=run, experiment=experiment)
    path = experiment_file(runs, root)
    exp = load_experiment(path, warn=False)
    table: VariantTable = {}
    table.update(_retriever_table(retriever, methods(exp, runs), exp.baseline.settings))
    if chunker.strip():
        table["chunker"] = chunker.strip()
    for key, value in (("k", k), ("budget", budget)):
        n = _whole(key, value)
        if n is not None:
            table[key] = n
    if not table:
        raise UsageError("choose a retrieval method, a chunker, k or a budget to change")
    checked = check_variant(path, table)
    variant = replace(checked, name=variant_name(checked.settings))
    settings = variant.settings
    changes = effective_changes(exp.baseline.settings, settings)
    if not changes:
        raise UsageError("this is the baseline's setting: choose something to change")
    _refuse_repeat(runs, settings.to_dict())
    warnings = tuple(_own_warnings(variant_warnings(exp, [variant]), variant.name, changes))
    baselines = [r.id for r in runs if r.is_baseline and r.status == "finished"]
    return JobPlan(
        experiment=replace(exp, variants=(variant,), warnings=warnings),
        variant=variant,
        changes=changes,
        warnings=warnings,
        baseline_run=max(baselines) if baselines else None,
    )


class AlreadyRun(UsageError):
    """The combination is stored already (the page links the run instead of starting it)."""

    def __init__(self, run: RunRecord) -> None:
        self.run_id = run.id
        state = "running" if run.status == "running" else "run"
        super().__init__(f"already {state}: run {run.id} ({run.name}) has these settings")


def _refuse_repeat(runs: Sequence[RunRecord], settings: Mapping[str, Any]) -> None:
    for r in runs:
        if r.status in ("finished", "running") and r.config.get("settings") == dict(settings):
            raise AlreadyRun(r)


def _own_warnings(messages: Sequence[str], name: str, changes: Sequence[str]) -> list[str]:
    """``ragmeter run``'s warnings for the job's variant, worded for its page: the variant is
    "this run", and the count of changes (shown beside them) is not said twice."""
    out = []
    for m in messages:
        if m.startswith(f"variant '{name}' changes {len(changes)} things"):
            continue
        out.append(m.replace(f"variant '{name}' ", "this run ", 1))
    return out
