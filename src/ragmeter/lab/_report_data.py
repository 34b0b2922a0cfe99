"""The report's sections as plain dicts, built from a :class:`~ragmeter.store.Store` without
HTTP: which runs (selectors), each run's lab at its own k (stored means, per-question values,
ranked lists with the labelled evidence marked), each run against the baseline, a sweep, the
diagnosis and the newest judge validation. Every number is the stored one or computed by the
same view-model function the lab's page uses (and so by the same library call the command line
makes: ``ragmeter runs show``, ``compare``, ``sweep``, ``diagnose``, ``judge validate``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import NotFoundError, RagmeterError, UsageError

#: questions whose ranked lists a run section embeds; beyond it the report says how many it left
#: out (the per-question table still lists every question)
MAX_RANKED_QUESTIONS = 200
#: passages shown per ranked list (at least the prompt's and one past the cutoff)
SHOWN_ITEMS = 6


# -- which runs ---------------------------------------------------------------------------------
def resolve_runs(store: Any, selectors: Sequence[str]) -> list[Any]:
    """The finished runs ``selectors`` name, baseline first, without repeats.

    A selector is a stored run id (``12``, ``run:12``) or an experiment name (every finished run
    of it, its baseline first). The first run named is the report's baseline.
    """
    if not selectors:
        raise UsageError("name at least one stored run (12, run:12) or experiment")
    out: list[Any] = []
    seen: set[int] = set()
    everything = None
    for spec in selectors:
        text = str(spec).strip()
        rid = text[4:] if text.startswith("run:") else text
        if rid.isascii() and rid.isdigit():
            run = store.run(int(rid))
            if run.status != "finished":
                raise UsageError(f"run {run.id} is {run.status}: a report shows finished runs only")
            found = [run]
        else:
            if everything is None:
                everything = store.runs(status="finished")
            found = [r for r in everything if r.experiment == text]
            if not found:
                names = sorted({r.experiment for r in everything})
                hint = f" (stored experiments: {', '.join(names[:10])})" if names else ""
                raise NotFoundError(
                    f"'{text}' is neither a stored run id nor an experiment with finished "
                    f"runs{hint}"
                )
            # oldest first, the experiment's newest baseline in front
            found = sorted(found, key=lambda r: r.id)
            bases = [r for r in found if r.is_baseline]
            if bases:
                found = [bases[-1], *[r for r in found if r is not bases[-1]]]
        for r in found:
            if r.id not in seen:
                seen.add(r.id)
                out.append(r)
    return out


# -- the lab at a run's k -----------------------------------------------------------------------
def run_section(store: Any, run: Any, cache: dict[Any, Any], anchors: Any) -> dict[str, Any]:
    """One run at its own prompt cutoff, as the lab page shows it (the lab's own recomputation
    from the stored ranked lists: the numbers ``ragmeter eval`` prints at that cutoff): metric
    cards, the per-question values, each question's ranked list with the evidence marked."""
    from ._context import settings_of
    from ._prepared import prepared_run
    from ._ranked_list import question_list
    from ._recompute import HEADROOM, LABELS, METRICS, Cutoff, scores

    prepared = prepared_run(store, run.id, cache)
    cutoff = Cutoff.of_settings(settings_of(run))
    sc = scores(prepared, cutoff)
    keys = [k for k in (*METRICS, HEADROOM) if k in sc.names]
    cards = [
        {"key": k, "label": LABELS.get(k, k), "metric": sc.names[k], "value": sc.means.get(k),
         "headroom": k == HEADROOM, "unavailable": sc.unavailable.get(k)}
        for k in keys
    ]  # fmt: skip
    questions = []
    for i, qid in enumerate(sc.qids):
        row: dict[str, Any] = {
            "id": qid,
            "anchor": anchors(run.id, qid),
            "values": {k: sc.value(k, qid) for k in keys},
            "list": None,
        }
        q = prepared.ctx.golden.by_id.get(qid)
        row["question"] = q.question if q is not None else None
        if i < MAX_RANKED_QUESTIONS:
            row["list"] = question_list(prepared, cutoff, qid, limit=SHOWN_ITEMS)
        questions.append(row)
    return {
        "id": run.id,
        "anchor": f"run-{run.id}",
        "name": run.name,
        "experiment": run.experiment,
        "is_baseline": run.is_baseline,
        "golden_version": run.golden_version,
        "cutoff": cutoff.label,
        "cards": cards,
        "metric_keys": keys,
        "names": dict(sc.names),
        "questions": questions,
        "left_out": max(0, len(questions) - MAX_RANKED_QUESTIONS),
        "problem": prepared.problem,
        "n_questions": len(questions),
    }


# -- against the baseline -----------------------------------------------------------------------
def comparison_section(
    store: Any,
    base: Any,
    cand: Any,
    link: Any,
    metric: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The comparison view's model for ``cand`` against ``base`` (``ragmeter compare BASE CAND``
    on the stored evaluations, counted in no ledger; on ``metric`` when given, as ``gate``
    asked, with its ``options``); ``link(run_id, qid)`` gives a question's in-page ``#anchor``
    or None (then it prints as text). Runs that share no k or budget get ``ragmeter run``'s
    note and the comparisons still possible (``pair``) instead of a comparison."""
    from ._data_comparison import NoSharedMetric, live_comparison_context

    out: dict[str, Any] = {
        "base": base.id,
        "cand": cand.id,
        "anchor": f"cmp-{cand.id}",
        "base_name": base.name,
        "cand_name": cand.name,
        "error": None,
        "pair": None,
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = live_comparison_context(store, base.id, cand.id, metric, **(options or {}))
    except NoSharedMetric as exc:
        out["pair"] = exc.choice.to_context()
        return out
    except RagmeterError as exc:  # one pair that cannot be compared is said in its section
        out["error"] = str(exc)
        return out
    for key in ("fixed_ids", "broken_ids", "movers"):
        for q in c.get(key) or ():
            q["url"] = link(cand.id, q["qid"])
    out["c"] = c
    return out


# -- sweep --------------------------------------------------------------------------------------
def sweep_section(store: Any, runs: Sequence[Any], cache: dict[Any, Any]) -> dict[str, Any] | None:
    """The sweeps view's model (``/sweeps?runs=...`` with its defaults: recall over token budgets
    when the runs' chunkings differ, else over k) for the report's runs that have ranked lists
    and share the first such run's golden set: the report and the lab draw the same sweep, and
    both are ``ragmeter sweep``'s numbers."""
    from ._data_sweeps import sweeps_context

    ranked = [r for r in runs if r.has_ranked]
    if not ranked:
        return None
    version = ranked[0].golden_version
    usable = [r for r in ranked if r.golden_version == version]
    other = [r.id for r in ranked if r.golden_version != version]
    out: dict[str, Any] = {"s": None, "error": None, "other_version": other}
    try:
        out["s"] = sweeps_context(store, [r.id for r in usable], metric="R", cache=cache)
    except (UsageError, NotFoundError) as exc:
        try:  # a token budget needs every run's chunking; k does not
            out["s"] = sweeps_context(store, [r.id for r in usable], metric="R", kind="k",
                                      cache=cache)  # fmt: skip
        except (UsageError, NotFoundError):
            out["error"] = str(exc)
    return out


# -- diagnosis ----------------------------------------------------------------------------------
def diagnosis_sections(
    store: Any, runs: Sequence[Any], cache: dict[Any, Any], link: Any
) -> list[dict[str, Any]]:
    """One diagnosis per reported run an answer set is stored for (its newest; the diagnosis
    view's model, ``ragmeter diagnose --answers``: the retrieval-by-answer grid, the steps and
    the next experiment), in the report's run order; the baseline without an answer set gets the
    retrieval steps alone. ``link(run_id, qid)`` is a cell question's in-page ``#anchor`` or
    None (the question then prints as text: no link may leave the file)."""
    from ._data_diagnosis import diagnosis_context, pick_run
    from ._data_stored import answer_sets

    order = {r.id: i for i, r in enumerate(runs)}
    versions = {r.golden_version for r in runs}
    found: dict[int, dict[str, Any]] = {}
    for a in answer_sets(store):  # newest first: the first set found for a run is shown
        if a.get("golden_version") not in versions:
            continue
        try:
            run = pick_run(store, a, None)
        except NotFoundError:  # the run it was checked against was deleted
            continue
        if run is None or run.id not in order or run.id in found:
            continue
        entry: dict[str, Any] = {"run": run.id, "name": run.name, "answers": a,
                                 "pre": f"a{int(a['id'])}-", "d": None, "error": None,
                                 "recall_only": None}  # fmt: skip
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                d = diagnosis_context(store, int(a["id"]), run_id=run.id, cache=cache)
        except (UsageError, NotFoundError) as exc:
            entry["error"] = str(exc)
        else:
            for c in d["cells"].values():
                for q in c["questions"]:
                    q["url"] = link(run.id, q["qid"])
            entry["d"] = d
        found[run.id] = entry
    base = runs[0]
    if base.id not in found:
        steps = recall_diagnosis(store, base)
        if steps is not None:
            found[base.id] = steps
    return [found[rid] for rid in sorted(found, key=order.__getitem__)]


def recall_diagnosis(store: Any, run: Any) -> dict[str, Any] | None:
    """``ragmeter diagnose`` on what the store holds for ``run`` without answers: recall at the
    prompt k and at the headroom k from its stored evaluation (the retrieval steps of the path
    and the one next experiment). The retrieval-by-answer grid needs an answer set."""
    from ..diagnosis._diagnose import diagnose, pick_recall, recall_from_evaluation

    evals = [store.evaluation(run.id, lvl) for lvl in run.levels]
    prompt = pick_recall(evals, None, "prompt")
    if prompt is None:
        return None
    head = pick_recall(evals, None, "headroom")
    if head is None:
        ks = sorted((m for e in evals for m in e.metrics if m.name == "R" and m.k),
                    key=lambda m: m.k)  # fmt: skip
        if len(ks) > 1:
            head = (next(e for e in evals if ks[-1] in e.metrics), ks[-1])
    d = diagnose(
        prompt_recall=recall_from_evaluation(*prompt),
        headroom_recall=recall_from_evaluation(*head) if head else None,
        golden_version=run.golden_version,
    )
    return {"run": run.id, "name": run.name, "answers": None, "recall_only": d, "d": None,
            "error": None}  # fmt: skip


# -- judge validation ---------------------------------------------------------------------------
def judge_section(store: Any, versions: Sequence[str | None]) -> dict[str, Any] | None:
    """The newest stored judge validation that labels questions of the reported golden sets
    (the judge view's model: confusion matrix, kappa, per-class agreement, order flips) and a
    line for each older such one. A validation names no run, so its question ids tell."""
    from ..store._damage import DamagedRowError, skipped
    from ._data_judges import judge_context
    from ._data_stored import judge_validation, judge_validations

    qids: set[str] = set()
    for v in {v for v in versions if v}:
        try:
            qids |= {q.id for q in store.golden(v)}
        except NotFoundError:
            continue
    if not qids:
        return None
    ours: list[dict[str, Any]] = []
    newest: dict[str, Any] | None = None
    for row in judge_validations(store):  # newest first
        try:
            labels = judge_validation(store, int(row["id"]))["labels"]
            if not any(isinstance(x, Mapping) and str(x.get("id")) in qids for x in labels):
                continue
            if newest is None:
                newest = judge_context(store, int(row["id"]))
        except DamagedRowError as exc:  # one damaged validation is left out, as listings do
            skipped(exc)
            continue
        ours.append(row)
    if newest is None:
        return None
    return {"j": newest, "older": ours[1:]}
