"""The lab page's model (``/lab``, see :mod:`.views.lab`): choose a retrieval method, a
chunking and a cutoff k (or token budget); see recall@k, MRR, nDCG@k and all-evidence recall
overall and per question, which questions gained and lost against a baseline, and each
question's ranked list with its labelled evidence marked. Every choice is in the URL.

The numbers come from :mod:`._recompute` (the CLI's own scoring functions on the stored ranked
lists). Pure functions of a store (no FastAPI), so the report builds the same page without HTTP.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, MutableMapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from .._errors import NotFoundError, RagmeterError, UsageError
from . import _lab_csv as lab_csv
from ._context import settings_of
from ._prepared import prepared_run
from ._ranked_list import question_list
from ._views import (
    BaselineChoice,
    EffectiveK,
    LabPage,
    MetricCard,
    Movement,
    NotRun,
    QuestionModel,
    QuestionRow,
    RunList,
    RunView,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..metrics import Metric
    from ..store import RunRecord, Store
    from ._prepared import PreparedRun
    from ._recompute import PromptCutoff, RunScores

#: questions per page of the per-question table
PER_PAGE = 50
SORTS = {
    "change": "biggest change first",
    "lost": "biggest loss first",
    "gained": "biggest gain first",
    "worst": "lowest value first",
    "id": "question id",
}
SHOWS = {
    "all": "all questions",
    "gained": "gained",
    "lost": "lost",
    "fixed": "fixed (0 → 1)",
    "broken": "broken (1 → 0)",
    "missed": "value 0",
}
#: ranked chunks shown before "show all" (the prompt and a few below it are always shown)
SHOWN_DEPTH = 10


# -- which run the controls pick -------------------------------------------------------------
def method_of(run: RunRecord) -> str:
    """A run's retrieval method as the controls name it: its label (``bm25 > e5@20``)."""
    return str(run.label or run.name)


def chunking_of(run: RunRecord) -> str:
    """A run's chunking as the controls name it: the chunker, else the chunk file's name."""
    s = settings_of(run)
    if s.get("chunker"):
        return str(s["chunker"])
    if s.get("chunks"):
        return Path(str(s["chunks"])).name
    return "imported spans"


def _shown_runs(store: Store) -> list[RunRecord]:
    return [r for r in store.runs() if r.status == "finished" and r.has_ranked]


def _pick(
    runs: list[RunRecord],
    *,
    run: int | None,
    experiment: str | None,
    method: str | None,
    chunking: str | None,
) -> tuple[str | None, str | None, str | None, RunRecord | None]:
    """(experiment, method, chunking, the chosen run or None when that combination has no run)."""
    if run is not None:
        chosen = next((r for r in runs if r.id == run), None)
        if chosen is None:
            raise NotFoundError(f"there is no finished run {run} with stored ranked lists")
        return chosen.experiment, method_of(chosen), chunking_of(chosen), chosen
    names = list(dict.fromkeys(r.experiment for r in runs))
    if not names:
        return None, None, None, None
    if experiment not in names:
        experiment = names[0]
    mine = [r for r in runs if r.experiment == experiment]
    base = next((r for r in mine if r.is_baseline), mine[-1])
    methods = {method_of(r) for r in mine}
    chunkings = {chunking_of(r) for r in mine}
    if method not in methods and chunking not in chunkings:
        # first open (or another experiment chosen): its newest variant, so that the page opens
        # against the baseline (gained and lost shown at once); the baseline when it is alone
        first = next((r for r in mine if r.id != base.id), base)
        return experiment, method_of(first), chunking_of(first), first
    method = method if method in methods else method_of(base)
    chunking = chunking if chunking in chunkings else chunking_of(base)
    chosen = next(
        (r for r in mine if method_of(r) == method and chunking_of(r) == chunking), None
    )  # runs come newest first: the newest run of that combination
    return experiment, method, chunking, chosen


def cutoff_of(
    cut: str | None, k: int | None, budget: int | None, run: RunRecord | None
) -> PromptCutoff:
    from ._recompute import PromptCutoff

    s: Mapping[str, Any] = settings_of(run) if run is not None else {}
    if cut == "budget" or (cut is None and k is None and budget is not None):
        b = budget or s.get("budget")
        if not b:
            raise UsageError("give a token budget (or cut at k)")
        return PromptCutoff(budget=int(b))
    if k is not None:
        return PromptCutoff(k=int(k))
    return PromptCutoff.of_settings(s) if cut != "k" else PromptCutoff(k=int(s.get("k") or 4))


def experiment_headline(runs: list[RunRecord]) -> Metric | None:
    """The headline metric ``ragmeter run`` recorded with the experiment's baseline run (else
    its newest run); None when none was recorded."""
    from ..metrics import parse
    from ._data_experiments import declared_headline

    ordered = [r for r in runs if r.is_baseline] + [r for r in runs if not r.is_baseline]
    for r in ordered:
        found = declared_headline(r.config if isinstance(r.config, Mapping) else None)
        if found is not None:
            try:
                return parse(found)
            except RagmeterError:
                return None
    return None


# -- the page model --------------------------------------------------------------------------
def metric_choices() -> list[tuple[str, str]]:
    """The metrics the lab's table and cards offer: (key, label), the headroom last."""
    from ._recompute import HEADROOM, LABELS, METRICS

    return [(key, LABELS[key]) for key in (*METRICS, HEADROOM)]


def empty_page() -> LabPage:
    """``lab.html`` with nothing chosen (the page a bad request's message is shown on)."""
    return LabPage(
        experiments=[],
        methods=[],
        chunkings=[],
        baselines=[],
        params=dict.fromkeys(
            ("experiment", "method", "chunking", "cut", "k", "budget", "baseline", "metric")
        ),
        form_k=4,
        form_budget=1200,
        cutoff=None,
        metric="R",
        metrics=metric_choices(),
        sorts=SORTS,
        shows=SHOWS,
        run=None,
        base_run=None,
    )


def lab_context(
    store: Store,
    cache: MutableMapping[Any, Any] | None = None,
    *,
    experiment: str | None = None,
    method: str | None = None,
    chunking: str | None = None,
    run: int | None = None,
    cut: str | None = None,
    k: int | None = None,
    budget: int | None = None,
    baseline: str | None = None,
    metric: str | None = None,
    sort: str | None = None,
    show: str | None = None,
    page_no: int = 1,
    inline: bool = False,
    slice: str | None = None,
    search: str | None = None,
    every: bool = False,
) -> LabPage:
    """Everything ``lab.html`` shows (``inline=True`` also puts each shown question's ranked
    list in the page, for the self-contained report). ``slice`` and ``search`` filter the
    per-question table (a golden-set slice; text in the question id or the question);
    ``every=True`` puts every row the filter keeps in the view, not one page (the CSV)."""
    from ._recompute import HEADROOM, METRICS, scores

    runs = _shown_runs(store)
    unshown = None
    if run is not None and not any(r.id == run for r in runs):
        stopped = _unshown_run(store, run)  # a link to a run the lab cannot show
        if stopped is not None:  # its experiment's page instead, saying why
            (unshown, experiment), method, chunking, run = stopped, None, None, None
    experiment, method, chunking, chosen = _pick(
        runs, run=run, experiment=experiment, method=method, chunking=chunking
    )
    mine = [r for r in runs if r.experiment == experiment]
    head = experiment_headline(mine)  # the experiment's headline: the default metric and cut
    if metric not in (*METRICS, HEADROOM):
        metric = head.name if head is not None and head.name in METRICS else "R"
    if head is not None and run is None and cut is None and k is None and budget is None:
        # a run named in the URL keeps its own cutoff; the landing page opens on the headline
        cut, k, budget = ("budget", None, head.budget) if head.budget else (None, head.k, None)
    sort = sort if sort in SORTS else None
    show = show if show in SHOWS else "all"
    cutoff = cutoff_of(
        cut, k, budget, chosen if chosen is not None else (mine[0] if mine else None)
    )
    base_run = _baseline(mine, chosen, baseline)
    params: dict[str, Any] = {
        "experiment": experiment,
        "method": method,
        "chunking": chunking,
        "cut": "k" if cutoff.k is not None else "budget",
        **cutoff.query,
        "baseline": "none" if base_run is None else base_run.id,
        "metric": metric,
        "sort": sort,
        "show": show if show != "all" else None,
        "run": run,
        "slice": slice or None,
        "q": (search or "").strip() or None,
    }
    choices = LabPage(
        experiments=list(dict.fromkeys(r.experiment for r in runs)),
        methods=sorted({method_of(r) for r in mine}),
        chunkings=sorted({chunking_of(r) for r in mine}),
        baselines=[
            BaselineChoice(r.id, f"{r.id} · {r.name} ({method_of(r)}, {chunking_of(r)})")
            for r in mine
        ],
        params=params,
        form_k=cutoff.k or _setting(chosen, "k") or 4,
        form_budget=cutoff.budget or _setting(chosen, "budget") or 1200,
        cutoff=cutoff,
        metric=metric,
        metrics=metric_choices(),
        sorts=SORTS,
        shows=SHOWS,
        run=chosen,
        base_run=base_run,
        unshown=unshown,
    )
    if experiment is None:
        return choices
    if chosen is None:
        not_run = NotRun(
            method=method,
            chunking=chunking,
            experiment=experiment,
            any_run=mine[0].id if mine else None,
            job_problem=_job_problem(mine, cache),
        )
        return replace(choices, not_run=not_run)
    prepared = prepared_run(store, chosen.id, cache)
    notes: list[str] = []
    sc = scores(prepared, cutoff)
    base_sc = None
    if base_run is not None:
        if base_run.golden_version != chosen.golden_version:
            notes.append(
                f"run {base_run.id} was scored on golden set {base_run.golden_version} and run "
                f"{chosen.id} on {chosen.golden_version}: questions and labels differ, so no "
                "question-by-question comparison is made"
            )
        else:
            try:
                base_sc = scores(prepared_run(store, base_run.id, cache), cutoff)
            except RagmeterError as exc:
                notes.append(f"baseline run {base_run.id}: {exc}")
        if (
            base_sc is not None
            and cutoff.k is not None
            and chunking_of(base_run) != chunking_of(chosen)
        ):
            notes.append(
                f"the baseline is chunked {chunking_of(base_run)} and this run {chunking} : at "
                f"the same k = {cutoff.k} they put different amounts of text in the prompt. "
                "Compare chunkings at an equal token budget (cut at: budget)"
            )
    view = _view(
        store, cache, prepared, sc, base_sc, params, metric, sort, show, page_no, inline, every
    )
    return replace(choices, problem=prepared.problem, notes=notes, view=view)


def _unshown_run(store: Store, run_id: int) -> tuple[str, str] | None:
    """(why the stored run ``run_id`` has nothing to show, its experiment), or None when the
    store holds no such run (a 404)."""
    try:
        rec = store.run(run_id)
    except RagmeterError:  # no such run, or a damaged row (listings skip it): a 404
        return None
    why = {
        "interrupted": "was interrupted before it finished",
        "failed": "failed before it finished",
        "running": "is still running",
    }.get(rec.status, "stores no ranked lists (it was recorded from scores alone)")
    said = f" ({rec.message})" if rec.message else ""
    return (
        f"Run {rec.id} · {rec.name} {why}{said}: it has no results to show here. Shown instead: "
        "this experiment's newest finished run; the experiments page lists every run and its "
        "status.",
        rec.experiment,
    )


def _job_problem(runs: list[RunRecord], cache: MutableMapping[Any, Any] | None) -> str | None:
    """Why no job can be started for these runs' experiment (its file lies outside the lab's
    folder, or is gone), said in place of the form; None when one can. The POST checks again."""
    from ._job_plan import experiment_file
    from ._paths import root_of

    if not runs:
        return None
    try:
        experiment_file(runs, root_of(cache))
    except RagmeterError as exc:
        return str(exc).splitlines()[0]
    return None


def _setting(run: RunRecord | None, key: str) -> int | None:
    value = settings_of(run).get(key) if run is not None else None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _baseline(
    mine: list[RunRecord], chosen: RunRecord | None, baseline: str | None
) -> RunRecord | None:
    if baseline == "none":
        return None
    if baseline:
        try:
            wanted = int(baseline)
        except ValueError:
            raise UsageError(f"baseline must be a run id or 'none', got {baseline!r}") from None
        found = next((r for r in mine if r.id == wanted), None)
        if found is None:
            raise NotFoundError(f"run {wanted} is no finished run of this experiment")
        return found
    if chosen is None:
        return None
    return next((r for r in mine if r.is_baseline and r.id != chosen.id), None)


def natural_key(qid: str) -> tuple[tuple[int, int, str], ...]:
    """A question id's place in natural order: its runs of digits compared as numbers, the
    rest as text ("q2" < "q10"; "9" < "10" < "100"), then the id itself (a total order)."""
    parts = re.split(r"(\d+)", qid)
    key = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p)
    return (*key, (-1, 0, qid))  # a prefix first ("q2" < "q2b"), ties by text


def lab_url(params: Mapping[str, Any], **changes: Any) -> str:
    merged = {**params, **changes}
    return "/lab?" + urlencode({k: v for k, v in merged.items() if v is not None and v != ""})


def question_url(
    run_id: int, qid: str, cutoff: PromptCutoff, base_id: int | None, **more: Any
) -> str:
    q: dict[str, Any] = {"run": run_id, "qid": qid, **cutoff.query}
    if base_id is not None:
        q["baseline"] = base_id
    q.update({k: v for k, v in more.items() if v})
    return "/lab/question?" + urlencode(q)


def _view(
    store: Store,
    cache: MutableMapping[Any, Any] | None,
    prepared: PreparedRun,
    sc: RunScores,
    base_sc: RunScores | None,
    params: dict[str, Any],
    metric: str,
    sort: str | None,
    show: str,
    page_no: int,
    inline: bool,
    every: bool = False,
) -> RunView:
    import numpy as np

    from ._recompute import HEADROOM, LABELS, METRICS, movements

    run = prepared.ctx.run
    moved = movements(base_sc, sc) if base_sc is not None else None
    cards: list[MetricCard] = []
    for key in (*METRICS, HEADROOM):
        base_mean = base_sc.means[key] if base_sc is not None else None
        mean = sc.means[key]
        cards.append(
            MetricCard(
                key=key,
                name=sc.names[key],
                label=LABELS[key],
                value=mean,
                base=base_mean,
                delta=None if mean is None or base_mean is None else mean - base_mean,
                unavailable=sc.unavailable.get(key) if mean is None else None,
                headroom=key == HEADROOM,
            )
        )
    # -- the per-question table: order, filter, one page ------------------------------------
    values = sc.values[metric]
    n = len(sc.qids)
    delta = np.full(n, np.nan)
    marks: dict[str, list[str]] = {}
    summary: list[Movement] = []
    if moved is not None:
        m = moved[metric]
        at = {q: i for i, q in enumerate(sc.qids)}
        idx = np.array([at[q] for q in m.qids], dtype=np.int64)
        if len(idx):
            delta[idx] = m.delta
        for key, mv in moved.items():
            summary.append(
                Movement(
                    key=key,
                    name=mv.metric,
                    gained=len(mv.gained),
                    lost=len(mv.lost),
                    fixed=None if mv.fixed is None else len(mv.fixed),
                    broken=None if mv.broken is None else len(mv.broken),
                    mean_delta=mv.mean_delta,
                    url={s: lab_url(params, metric=key, show=s, page=None) for s in SHOWS},
                )
            )
        for q in m.gained:
            marks.setdefault(q, []).append("gained")
        for q in m.lost:
            marks.setdefault(q, []).append("lost")
        for q in m.fixed or ():
            marks.setdefault(q, []).append("fixed")
        for q in m.broken or ():
            marks.setdefault(q, []).append("broken")
    keep = np.ones(n, dtype=bool)
    if show in ("gained", "lost", "fixed", "broken"):
        keep = np.array([show in marks.get(q, ()) for q in sc.qids], dtype=bool)
    elif show == "missed":
        keep = values == 0
    golden = prepared.ctx.golden
    asked_of = [golden.by_id.get(q) for q in sc.qids]
    slices_of = [tuple(a.slices) if a is not None else () for a in asked_of]
    all_slices = sorted({s for ss in slices_of for s in ss})
    chosen_slice = params.get("slice")
    if chosen_slice:
        keep &= np.array([chosen_slice in ss for ss in slices_of], dtype=bool)
    search = str(params.get("q") or "")
    if search:
        needle = search.casefold()
        keep &= np.array(
            [
                needle in q.casefold() or (a is not None and needle in a.question.casefold())
                for q, a in zip(sc.qids, asked_of, strict=True)
            ],
            dtype=bool,
        )
    # question ids in natural order ("q2" before "q10", numeric ids by number): the id sort,
    # and the tie-break of every other sort
    natural = np.empty(n, dtype=np.int64)
    natural[sorted(range(n), key=lambda i: natural_key(sc.qids[i]))] = np.arange(n)
    order = np.flatnonzero(keep)
    order = order[np.argsort(natural[order], kind="stable")]
    if moved is None and sort in ("change", "lost", "gained"):
        sort = None
    sort = sort or ("change" if moved is not None else "id")
    if sort in ("change", "lost", "gained"):
        d = np.nan_to_num(delta[order], nan=0.0)
        # the comparison's movers order: largest change first (losses before equal gains)
        key_d = {"change": -np.abs(d) + d * 1e-9, "lost": d, "gained": -d}[sort]
        order = order[np.lexsort((natural[order], key_d))]
    elif sort == "worst":
        v = values[order]
        order = order[np.lexsort((natural[order], np.where(np.isnan(v), 2.0, v)))]
    total = len(order)
    pages = max(1, -(-total // PER_PAGE))
    page_no = min(max(1, page_no), pages)
    shown = order if every else order[(page_no - 1) * PER_PAGE : page_no * PER_PAGE]
    base_id = None if base_sc is None else base_sc.run_id
    rows: list[QuestionRow] = []
    for i in shown.tolist():
        qid = sc.qids[i]
        asked = golden.by_id.get(qid)
        detail = None
        if inline:
            detail = question_model(store, cache, run.id, qid, sc.cutoff, base_id, full=False)
        rows.append(
            QuestionRow(
                qid=qid,
                question=asked.question if asked is not None else "",
                values={key: _num(sc.values[key][i]) for key in (*METRICS, HEADROOM)},
                base=None if base_sc is None else base_sc.value(metric, qid),
                delta=None if np.isnan(delta[i]) else float(delta[i]),
                marks=marks.get(qid, []),
                url=question_url(run.id, qid, sc.cutoff, base_id),
                detail=detail,
                slices=slices_of[i],
            )
        )
    keys = (*METRICS, HEADROOM)
    compared = moved is not None
    rows = [
        replace(
            r,
            csv=lab_csv.fields(
                r.qid,
                r.question,
                r.slices,
                r.values,
                keys,
                compared=compared,
                base=r.base,
                delta=r.delta,
                marks=r.marks,
            ),
        )
        for r in rows
    ]
    eff = sc.effective_k
    return RunView(
        run=run,
        method=method_of(run),
        chunking=chunking_of(run),
        names=sc.names,
        cards=cards,
        summary=summary,
        rows=rows,
        total=total,
        n_questions=n,
        no_relevant=len(sc.no_relevant_ids),
        missing=len(sc.missing_ids),
        page=page_no,
        pages=pages,
        first=(page_no - 1) * PER_PAGE + 1 if total else 0,
        last=min(page_no * PER_PAGE, total),
        prev_url=lab_url(params, page=page_no - 1) if page_no > 1 else None,
        next_url=lab_url(params, page=page_no + 1) if page_no < pages else None,
        sort=sort,
        sort_url={s: lab_url(params, sort=s, page=None) for s in SORTS},
        show_url={s: lab_url(params, show=s, page=None) for s in SHOWS},
        show=show,
        compared=moved is not None,
        effective_k=None
        if eff is None or not len(eff)
        else EffectiveK(min=int(eff.min()), median=float(np.median(eff)), max=int(eff.max())),
        unavailable_budget=prepared.unavailable.get("budget"),
        slices=all_slices,
        slice=chosen_slice or None,
        search=search,
        chart=None
        if moved is None
        else _change_chart(sc, base_sc, metric, delta, marks, order, params, asked_of),
        csv_head=lab_csv.head(sc.names, keys, metric, compared=compared),
        csv_url=lab_url(params, page=None).replace("/lab?", "/lab/questions.csv?", 1),
    )


def _change_chart(
    sc: RunScores,
    base_sc: RunScores | None,
    metric: str,
    delta: Any,
    marks: Mapping[str, list[str]],
    order: Any,
    params: dict[str, Any],
    asked_of: list[Any],
) -> dict[str, Any] | None:
    """The sorted bars of every question the table's filter keeps that moved against the
    baseline (largest gain first); each bar links to its row (the table's page holding it)."""
    from ..metrics import metric_label
    from ._charts import change_bars_spec

    points: list[dict[str, Any]] = []
    unchanged = 0
    for at, i in enumerate(order.tolist()):
        d = delta[i]
        if d != d or abs(d) < 1e-12:  # NaN or no change
            unchanged += 1
            continue
        qid = sc.qids[i]
        m = marks.get(qid, [])
        move = next((x for x in ("fixed", "broken") if x in m), "gained" if d > 0 else "lost")
        page = at // PER_PAGE + 1
        points.append(
            {
                "qid": qid,
                "question": "" if asked_of[i] is None else str(asked_of[i].question),
                "base": None if base_sc is None else base_sc.value(metric, qid),
                "value": _num(sc.values[metric][i]),
                "delta": float(d),
                "move": move,
                "url": lab_url(params, page=page if page > 1 else None)
                + "#q="
                + quote(qid, safe=""),
            }
        )
    if not points:
        return None
    points.sort(key=lambda p: (-p["delta"], p["qid"]))
    return change_bars_spec(points, label=metric_label(sc.names[metric]), unchanged=unchanged)


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


# -- one question's ranked list(s) -----------------------------------------------------------
def question_model(
    store: Store,
    cache: MutableMapping[Any, Any] | None,
    run_id: int,
    qid: str,
    cutoff: PromptCutoff,
    base_id: int | None,
    *,
    full: bool,
) -> QuestionModel:
    from ._recompute import HEADROOM, METRICS

    limit = None if full else SHOWN_DEPTH
    lists = [question_list(prepared_run(store, run_id, cache), cutoff, qid, limit=limit)]
    if base_id is not None and base_id != run_id:
        base = prepared_run(store, base_id, cache)
        if base.ctx.golden.by_id.get(qid) is not None:
            lists.append(question_list(base, cutoff, qid, limit=limit))
    runs = {r: store.run(r) for r in {x.run_id for x in lists}}
    return QuestionModel(
        qid=qid,
        main=lists[0],
        lists=[
            RunList(
                list=x,
                run=runs[x.run_id],
                method=method_of(runs[x.run_id]),
                chunking=chunking_of(runs[x.run_id]),
                baseline=i > 0,
            )
            for i, x in enumerate(lists)
        ],
        all_url=None
        if full or all(len(x.items) == x.depth for x in lists)
        else question_url(run_id, qid, cutoff, base_id, all=1),
        keys=(*METRICS, HEADROOM),
    )
