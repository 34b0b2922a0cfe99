"""One Jinja2 environment for the lab's pages and the HTML report.

Autoescape is on for every template; data meant for JavaScript goes into
``<script type="application/json">`` through Jinja's ``tojson`` (which escapes ``<``, ``>``,
``&`` and ``'``, so a ``</script>`` inside a document cannot end the block). No inline script
code is ever emitted: the Content-Security-Policy allows only the lab's own files (and, in the
report, the exact hashes of the inlined ones).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import jinja2
    from starlette.requests import Request
    from starlette.responses import HTMLResponse

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"


@functools.cache
def environment() -> jinja2.Environment:
    import jinja2

    from ..metrics import metric_label

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = number
    env.filters["signed"] = signed
    env.filters["interval"] = interval
    # a header: nDCG@4 (linear), the gain said; anything else (None, an outcome) as given
    env.filters["metric"] = lambda m: metric_label(m) if isinstance(m, str) else m
    env.globals["NAV"] = NAV
    return env


#: the nav bar: (path, label)
NAV = (
    ("/", "Experiments"),
    ("/lab", "Lab"),
    ("/compare", "Comparison"),
    ("/sweeps", "Sweeps"),
    ("/diagnosis", "Diagnosis"),
    ("/judges", "Judges"),
    ("/slider", "Slider"),
    ("/jobs", "Jobs"),
    ("/label", "Label"),
    ("/review", "Review"),
)


def number(value: Any, digits: int = 3) -> str:
    """A metric value as the CLI prints it; ``-`` for None (no mean)."""
    if value is None:
        return "-"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    try:
        return f"{float(value):.{digits}f}"
    except (TypeError, ValueError):
        return str(value)


def signed(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{float(value):+.{digits}f}"


def interval(ends: Any, digits: int = 3) -> str:
    """``[lo, hi]`` as every interface prints an interval: each end on its side of zero
    (:func:`ragmeter._interval.interval_text`); ``-`` without one."""
    from .._interval import interval_text

    if ends is None or any(e is None for e in ends):
        return "-"
    return interval_text(float(ends[0]), float(ends[1]), digits)


def render(template: str, **context: Any) -> str:
    """Render ``template`` (the report calls this directly with ``report=True``)."""
    context.setdefault("report", False)
    context.setdefault("nonce", "")
    context.setdefault("csrf_token", "")
    context.setdefault("request_path", "")
    context.setdefault("title", "ragmeter lab")
    context.setdefault("damaged", None)
    return str(environment().get_template(template).render(**context))


def page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """A full page for the lab: the template rendered with the request's nonce and CSRF token,
    and a line naming the damaged rows its lists left out (:mod:`._notices`)."""
    from starlette.responses import HTMLResponse

    from ._notices import notice

    html = render(
        template,
        damaged=notice(),
        nonce=getattr(request.state, "nonce", ""),
        csrf_token=getattr(request.state, "csrf_token", ""),
        request_path=request.url.path,
        query=dict(request.query_params),
        **context,
    )
    return HTMLResponse(html, status_code=status_code)


def fragment(request: Request, template: str, **context: Any) -> HTMLResponse:
    """A partial for htmx (same rendering, no page chrome in the template)."""
    return page(request, template, **context)
