"""``write_report``: the lab's views rendered into ONE self-contained HTML file.

The file carries its CSS and its scripts inline (Vega, Vega-Lite, vega-embed, the Vega
expression interpreter and ``lab.js``; no htmx: a report has nothing to fetch), and its data as
``<script type="application/json">`` blocks. A ``<meta>`` Content-Security-Policy allows exactly
those inline scripts, by their SHA-256 hashes, and no network at all (``default-src 'none'``, no
``connect-src``): opened from ``file://`` in a CI artifact or a PR comment, the page can neither
run injected code nor fetch anything.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import InputError, RagmeterError
from ._render import STATIC, render
from ._views import TemplateVariables

if TYPE_CHECKING:  # pragma: no cover
    from ..retrieval import ProgressSink
    from ..store import Store
    from ._report_data import (
        ComparisonSection,
        DiagnosisSection,
        JudgeSection,
        RunSection,
        SweepSection,
    )

#: the inline scripts of a report, in load order (under lab/static/)
SCRIPTS = (
    "vendor/vega.min.js",
    "vendor/vega-lite.min.js",
    "vendor/vega-embed.min.js",
    "vendor/vega-interpreter.min.js",
    "lab.js",
)


def script_texts() -> list[str]:
    """The inline scripts' code. A ``</script`` inside one would end its element early: the
    vendored builds hold none (checked here, so an upgrade that adds one fails loudly)."""
    out = []
    for name in SCRIPTS:
        code = (STATIC / name).read_text(encoding="utf-8")
        if re.search(r"</script", code, re.IGNORECASE):
            raise RagmeterError(f"lab/static/{name} holds '</script' and cannot be inlined")
        out.append(code)
    return out


def sha256_source(code: str) -> str:
    """The CSP source that allows exactly this inline script: ``'sha256-<base64>'``."""
    digest = hashlib.sha256(code.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def report_csp(scripts: Sequence[str]) -> str:
    """No network, no frames, no forms, no plugins; scripts only by hash; inline styles (Vega
    sizes its SVG charts with them) and data: images only."""
    hashes = " ".join(sha256_source(s) for s in scripts)
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src {hashes}",
            "style-src 'unsafe-inline'",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )


def question_anchor(run_id: int, qid: str) -> str:
    """An in-page id for one question of one run: HTML ids may hold any character but the
    anchor must survive a URL fragment, so the question id is hex-encoded."""
    return f"r{int(run_id)}-q{qid.encode('utf-8').hex()}"


@dataclass(frozen=True)
class OverviewRow:
    """One reported run in the report's table of runs."""

    id: int
    name: str
    experiment: str
    is_baseline: bool
    report_baseline: bool
    golden_version: str | None
    finished: str
    changes: list[str]
    headline: list[tuple[str, Any]]
    n_queries: int | None
    context_tokens: float | None


@dataclass(frozen=True)
class ReportPage(TemplateVariables):
    """Everything ``report.html`` shows (its top-level variables)."""

    title: str
    generated: str
    store: str
    selectors: list[str]
    baseline: OverviewRow
    overview: list[OverviewRow]
    runs: list[RunSection]
    no_ranked: list[int]
    comparisons: list[ComparisonSection]
    sweep: SweepSection | None
    diagnoses: list[DiagnosisSection]
    judge: JudgeSection | None


def report_context(
    store: Store,
    selectors: Sequence[str],
    metric: str | None = None,
    options: Mapping[str, Any] | None = None,
    root: str | Path | None = None,
    progress: ProgressSink | None = None,
) -> ReportPage:
    """Everything the report shows (see docs/lab.md), built from the store without HTTP; the
    comparisons on ``metric`` with ``options`` (``ragmeter gate``'s) when given. Files the
    stored runs name are read only inside ``root`` (default: the current folder), as the lab
    reads them."""
    from ..retrieval import progress_for
    from ..workflows.report import resolve_runs
    from ._commands import shown_url
    from ._data_experiments import headline, when
    from ._paths import LabCache
    from ._report_data import (
        comparison_section,
        diagnosis_sections,
        judge_section,
        run_section,
        sweep_section,
    )

    runs = resolve_runs(store, selectors)
    base = runs[0]
    cache = LabCache(root)
    overview = [
        OverviewRow(
            id=r.id,
            name=r.name,
            experiment=r.experiment,
            is_baseline=r.is_baseline,
            report_baseline=r.id == base.id,
            golden_version=r.golden_version,
            finished=when(r.finished_at or r.started_at),
            changes=list(r.changes),
            headline=headline(r.metrics),
            n_queries=r.n_queries,
            context_tokens=r.context_tokens,
        )
        for r in runs
    ]
    steps = progress_for(None) if progress is None else progress  # None: silent
    ranked = [r for r in runs if r.has_ranked]
    with steps.step(f"report: ranked lists of {len(ranked)} runs", len(ranked)) as advance:
        sections = []
        for r in ranked:
            sections.append(run_section(store, r, cache, question_anchor))
            advance(1)
    # a question links into the report only where the report embeds its ranked list
    embedded = {q.anchor for s in sections for q in s.questions if q.list}

    def link(run_id: int, qid: str) -> str | None:
        anchor = question_anchor(run_id, qid)
        return f"#{anchor}" if anchor in embedded else None

    with steps.step(f"report: {len(runs) - 1} comparisons", len(runs) - 1) as advance:
        comparisons = []
        for r in runs[1:]:
            comparisons.append(comparison_section(store, base, r, link, metric, options))
            advance(1)
    with steps.step("report: sweeps, diagnosis and judges", None):
        sweep = sweep_section(store, runs, cache)
        diagnoses = diagnosis_sections(store, runs, cache, link)
        judge = judge_section(store, [r.golden_version for r in runs])
    return ReportPage(
        title=f"ragmeter report: {base.experiment}",
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        store=shown_url(store.display_url),  # a SQLite file relative to the folder
        selectors=list(selectors),
        baseline=overview[0],
        overview=overview,
        runs=sections,
        no_ranked=[r.id for r in runs if not r.has_ranked],
        comparisons=comparisons,
        sweep=sweep,
        diagnoses=diagnoses,
        judge=judge,
    )


def render_report(
    store: Store,
    selectors: Sequence[str],
    metric: str | None = None,
    options: Mapping[str, Any] | None = None,
    root: str | Path | None = None,
    progress: ProgressSink | None = None,
) -> str:
    """The report's HTML text."""
    from markupsafe import Markup

    from ._commands import paths_relative_to
    from ._notices import collecting, notice

    scripts = script_texts()
    css = (STATIC / "lab.css").read_text(encoding="utf-8")
    if re.search(r"</style", css, re.IGNORECASE):
        raise RagmeterError("lab/static/lab.css holds '</style' and cannot be inlined")
    # a file meant to be shared: paths relative to the experiments folder (where its command
    # lines run), a file outside it by name only; never an absolute local path
    with collecting() as skipped, paths_relative_to(Path.cwd() if root is None else root):
        context = report_context(store, selectors, metric, options, root, progress)
        # the package's own assets go in verbatim (escaping would change the code and its
        # hash); every piece of data still goes through autoescape or tojson
        return render(
            "report.html",
            report=True,
            report_csp=report_csp(scripts),
            inline_css=Markup(css),
            inline_scripts=[Markup(code) for code in scripts],
            damaged=notice(skipped),
            **context,
        )


def write_report(
    store: Store,
    selectors: Sequence[str],
    out: str | os.PathLike[str],
    *,
    metric: str | None = None,
    options: Mapping[str, Any] | None = None,
    root: str | Path | None = None,
    progress: ProgressSink | None = None,
) -> Path:
    """Write the report for ``selectors`` (stored run ids ``12`` / ``run:12`` or experiment
    names; the first run is the baseline) to ``out``; returns its path. ``metric`` and
    ``options`` (``n_resamples``, ``seed``, ``intersect``): the comparisons as ``ragmeter gate``
    made its own; by default each run's comparison metric (see ``pair_choice``). ``root``: the
    only folder the experiment and chunk files the runs name are read in (default: the
    current one; see :mod:`._paths`). ``progress``: where each step of the build is reported
    (the command line's bars or lines on stderr; silent by default)."""
    from ..io import atomic_write

    html = render_report(store, selectors, metric, options, root, progress)
    path = Path(out)
    if path.is_dir():
        raise InputError("is a folder: give the report's file name", path=path)
    atomic_write(path, html)
    return path
