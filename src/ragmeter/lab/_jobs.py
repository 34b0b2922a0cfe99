"""Background jobs: run one new variant of a stored experiment while the page polls.

A job runs the plan of :mod:`._job_plan` (the experiment's baseline and the one new variant)
through :func:`ragmeter.run_experiment`, the cached runner of ``ragmeter run``, with the same
cache folder ``ragmeter run`` uses for that file; the baseline comes from that cache and is not
stored again, the new variant is recorded as ``ragmeter run`` records it (started ``running``,
finished with every row, or ended ``failed``). Progress goes into the job through a
:class:`JobProgress` sink; ``GET /jobs/ID`` reads a :meth:`Job.snapshot`. One job at a time
per experiment; jobs live in memory (``LabState.jobs``) for the life of the server.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._errors import RagmeterError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ..store import Store
    from ._app_state import LabState
    from ._job_plan import JobPlan

#: job states; ``running`` and ``queued`` are live (the page polls them)
LIVE = ("queued", "running")
_ids = itertools.count(1)


@dataclass
class Job:
    """One background run. Written by its worker thread, read by requests: every read and
    write goes through ``lock``."""

    id: str
    experiment: str
    variant: str
    changes: tuple[str, ...]
    warnings: tuple[str, ...]
    baseline_run: int | None
    status: str = "queued"
    #: what the runner is doing now ("chunk tokens:100:0", "score ..."), and its counts
    step: str = "waiting to start"
    done: int = 0
    total: int | None = None
    #: which of the plan's variants is running: (1-based index, count, name)
    phase: tuple[int, int, str] = (0, 2, "")
    run_id: int | None = None
    error: str | None = None
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def update(self, **values: Any) -> None:
        with self.lock:
            for key, value in values.items():
                setattr(self, key, value)

    def snapshot(self) -> JobSnapshot:
        """A consistent copy for one page render."""
        with self.lock:
            share = None
            if self.total:
                share = min(1.0, self.done / self.total)
            return JobSnapshot(
                id=self.id,
                experiment=self.experiment,
                variant=self.variant,
                changes=list(self.changes),
                warnings=list(self.warnings),
                baseline_run=self.baseline_run,
                status=self.status,
                live=self.status in LIVE,
                step=self.step,
                done=self.done,
                total=self.total,
                share=share,
                phase=self.phase,
                run_id=self.run_id,
                error=self.error,
                seconds=(self.ended or time.monotonic()) - self.started,
            )


@dataclass(frozen=True)
class JobSnapshot:
    """A job as one page render shows it (``_job.html``'s ``job``)."""

    id: str
    experiment: str
    variant: str
    changes: list[str]
    warnings: list[str]
    baseline_run: int | None
    status: str
    #: queued or running: the page polls it
    live: bool
    step: str
    done: int
    total: int | None
    #: done / total, None while the total is unknown
    share: float | None
    phase: tuple[int, int, str]
    run_id: int | None
    error: str | None
    seconds: float


class JobProgress:
    """A :class:`ragmeter.retrieval._progress.ProgressSink` that records each step into a job
    (its description, and ``done`` of ``total`` as the runner advances)."""

    def __init__(self, job: Job) -> None:
        self.job = job

    @contextlib.contextmanager
    def step(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        self.job.update(step=description, done=0, total=total)

        def advance(n: int) -> None:
            with self.job.lock:
                self.job.done += n

        yield advance


def one_line(exc: BaseException) -> str:
    """The first line of an error's message (the page shows one line, never a traceback)."""
    text = str(exc).strip()
    if not isinstance(exc, RagmeterError):
        text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    first = text.splitlines()[0] if text else "the run failed"
    return first[:500]


def start_job(state: LabState, plan: JobPlan) -> Job:
    """Start ``plan`` in a background thread; refuses a second live job for the experiment."""
    name = plan.experiment.name
    with state.lock:
        for other in state.jobs.values():
            if other.experiment == name and other.snapshot().live:
                raise JobConflict(other)
        job = Job(
            id=str(next(_ids)),
            experiment=name,
            variant=plan.variant.name,
            changes=plan.changes,
            warnings=plan.warnings,
            baseline_run=plan.baseline_run,
            phase=(0, len(plan.experiment.all_variants), ""),
        )
        state.jobs[job.id] = job
    worker = threading.Thread(
        target=run_job, args=(job, state.store, plan), name=f"ragmeter-job-{job.id}", daemon=True
    )
    worker.start()
    return job


class JobConflict(UsageError):
    """A job of the same experiment is still running."""

    def __init__(self, job: Job) -> None:
        self.job = job
        super().__init__(
            f"a job of this experiment is still running (job {job.id}: {job.variant}); "
            "one job at a time per experiment"
        )


def run_job(job: Job, store: Store, plan: JobPlan) -> None:
    """The worker: run the plan, record the new variant only, end the job finished or failed."""
    from ..workflows.experiment import run_and_record_variant

    exp, variant = plan.experiment, plan.variant
    count = len(exp.all_variants)

    def stored(run_id: int) -> None:
        job.update(status="running", run_id=run_id)

    def started(v: Any, _version: str | None) -> None:
        index = 1 + [x.name for x in exp.all_variants].index(v.name)
        what = "the baseline, from the cache" if v.is_baseline else "the new variant"
        job.update(phase=(index, count, what))

    try:
        run_and_record_variant(
            store,
            exp,
            variant,
            on_started=stored,
            failure=one_line,
            on_variant_start=started,
            progress=JobProgress(job),
        )
        job.update(status="finished", step="done", ended=time.monotonic())
    except BaseException as exc:  # the thread must end the job whatever happened
        job.update(status="failed", error=one_line(exc), ended=time.monotonic())
        if not isinstance(exc, Exception):
            raise
