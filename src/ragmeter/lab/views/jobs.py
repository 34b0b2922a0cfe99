"""Jobs: start a method x chunking combination not yet run, and watch it run.

``GET /jobs?run=ID`` (or ``?experiment=NAME``) shows the form for that experiment and the jobs
of this server; ``POST /jobs`` (CSRF-checked by the security middleware) plans the variant
(:mod:`.._job_plan`) and starts it (:mod:`.._jobs`); ``GET /jobs/ID`` is the job's status: the
partial htmx polls every second while the job runs, or the whole page when opened as a link.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ..._errors import NotFoundError, RagmeterError
from .._app_state import state_of
from .._render import fragment, page
from .._views import TemplateVariables
from ._ids import stored_id

if TYPE_CHECKING:  # pragma: no cover
    from ...store import Store
    from .._jobs import JobSnapshot

router = APIRouter()


#: a refused request's one-line answer: htmx swaps it although its status is 4xx (lab.js)
MESSAGE_HEADER = "X-Ragmeter-Message"


def _htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def _from_jobs_page(request: Request) -> bool:
    """The request came from the jobs page's form (htmx names the element it swaps into)."""
    return request.headers.get("hx-target") == "job-area"


@dataclass(frozen=True)
class ExperimentFile:
    """A stored experiment and the file the lab would extend (``problem``: why it cannot)."""

    name: str
    file: str
    run: int
    problem: str | None


def experiments_with_files(store: Store, root: Path) -> list[ExperimentFile]:
    """Every stored experiment whose runs name an experiment file (the lab can extend those
    inside its folder ``root``; one named elsewhere is listed with the reason it cannot be)."""
    from .._context import experiment_file_of
    from .._paths import OutsideRoot

    out: dict[str, ExperimentFile] = {}
    for r in store.runs():
        if r.experiment in out and out[r.experiment].problem is None:
            continue
        try:
            path = experiment_file_of(r, root)
        except OutsideRoot as exc:
            out.setdefault(r.experiment, ExperimentFile(r.experiment, exc.shown, r.id, str(exc)))
            continue
        if path is not None:
            out[r.experiment] = ExperimentFile(r.experiment, str(path), r.id, None)
    return sorted(out.values(), key=lambda e: e.name)


@dataclass(frozen=True)
class BaselineShown:
    """The experiment's baseline, each field's placeholder in the start form."""

    method: str
    chunker: str
    k: int | None
    budget: int | None
    depth: int | None


@dataclass(frozen=True)
class StartForm:
    """The start form of one experiment: its file, baseline and the known choices."""

    experiment: str
    file: str
    baseline: BaselineShown
    methods: list[str]
    chunkers: list[str]
    stored: int


@dataclass(frozen=True)
class FormContext(TemplateVariables):
    """``jobs.html``'s ``form`` (None: no experiment chosen) and ``form_error``."""

    form: StartForm | None
    form_error: str | None


def form_context(
    store: Store, root: Path, *, run: int | None, experiment: str | None
) -> FormContext:
    """What the start form needs: the experiment, its baseline and the known choices."""
    from .._job_plan import chunkers, experiment_file, experiment_runs, methods

    if run is None and not experiment:
        return FormContext(None, None)
    try:
        runs = experiment_runs(store, run=run, experiment=experiment)
        from ...experiments import load_experiment

        exp = load_experiment(experiment_file(runs, root), warn=False)
    except RagmeterError as exc:
        return FormContext(None, str(exc).splitlines()[0])
    b = exp.baseline.settings
    return FormContext(
        form=StartForm(
            experiment=runs[0].experiment,
            file=str(exp.path),
            baseline=BaselineShown(
                method=b.label(),
                chunker=b.chunker or (b.chunks.name if b.chunks else "-"),
                k=b.k,
                budget=b.budget,
                depth=b.depth,
            ),
            methods=[m.label for m in methods(exp, runs)],
            chunkers=chunkers(exp, runs),
            stored=len([r for r in runs if r.status == "finished"]),
        ),
        form_error=None,
    )


def _jobs(request: Request) -> list[JobSnapshot]:
    state = state_of(request)
    with state.lock:
        jobs = list(state.jobs.values())
    return [j.snapshot() for j in sorted(jobs, key=lambda j: j.started, reverse=True)]


def _page(
    request: Request,
    *,
    run: int | None = None,
    experiment: str | None = None,
    values: dict[str, str] | None = None,
    error: str | None = None,
    already: int | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    state = state_of(request)
    return page(
        request,
        "jobs.html",
        status_code=status_code,
        title="Run a new combination",
        experiments=experiments_with_files(state.store, state.root),
        jobs=_jobs(request),
        values=values or {},
        error=error,
        already=already,
        job_id=None,
        **form_context(state.store, state.root, run=run, experiment=experiment),
    )


@router.get("/jobs")
def jobs_page(request: Request, run: str | None = None, experiment: str | None = None) -> Response:
    try:
        run_id = stored_id(state_of(request).store, run)
    except NotFoundError as exc:
        return _page(request, experiment=experiment, error=str(exc), status_code=404)
    return _page(request, run=run_id, experiment=experiment)


@router.post("/jobs")
async def start(request: Request) -> Response:
    from .._job_plan import AlreadyRun, plan_job
    from .._jobs import JobConflict, start_job

    form = await request.form()
    values = {
        k: str(form.get(k) or "")
        for k in ("run", "experiment", "retriever", "chunker", "k", "budget")
    }
    state = state_of(request)
    try:
        run = int(values["run"]) if values["run"].strip() else None
    except ValueError:
        run, values["run"] = None, ""
    already = job_id = None
    try:
        plan = plan_job(  # checks the experiment file lies in the lab's folder: never the page
            state.store,
            root=state.root,
            run=run,
            experiment=values["experiment"] or None,
            retriever=values["retriever"],
            chunker=values["chunker"],
            k=values["k"],
            budget=values["budget"],
        )
        job = start_job(state, plan)
    except JobConflict as exc:
        error, code, job_id = str(exc), 409, exc.job.id
    except AlreadyRun as exc:
        error, code, already = str(exc), 409, exc.run_id
    except RagmeterError as exc:
        error, code = "; ".join(str(exc).splitlines()), 400
    else:
        if _htmx(request):
            # from the jobs page the message line is cleared too; from the lab page (its
            # "not run yet" form) the job replaces the form
            started = "_job_started.html" if _from_jobs_page(request) else "_job.html"
            return fragment(request, started, job=job.snapshot())
        return RedirectResponse(f"/jobs/{job.id}", status_code=303)
    if _htmx(request):
        response = fragment(
            request,
            "_job_error.html",
            status_code=code,
            error=error,
            already=already,
            job_id=job_id,
        )
        response.headers[MESSAGE_HEADER] = "1"  # lab.js swaps these 4xx answers
        if _from_jobs_page(request):
            response.headers["HX-Retarget"] = "#job-message"
            response.headers["HX-Reswap"] = "innerHTML"
        return response
    return _page(
        request,
        run=run,
        experiment=values["experiment"] or None,
        values=values,
        error=error,
        already=already,
        status_code=code,
    )


@router.get("/jobs/{job_id}")
def job_status(request: Request, job_id: str) -> Response:
    state = state_of(request)
    with state.lock:
        job = state.jobs.get(job_id)
    if job is None:
        if _htmx(request):
            response = fragment(
                request,
                "_job_error.html",
                status_code=404,
                error=f"there is no job {job_id} in this lab (jobs last as long as the server)",
                already=None,
                job_id=None,
            )
            response.headers[MESSAGE_HEADER] = "1"
            return response
        return _page(request, error=f"there is no job {job_id} in this lab", status_code=404)
    snap = job.snapshot()
    if _htmx(request):
        return fragment(request, "_job.html", job=snap)
    return _page(request, experiment=snap.experiment)
