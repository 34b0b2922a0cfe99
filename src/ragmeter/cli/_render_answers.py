"""Rich renderings of what the answers package computes: an answers report, the paired
comparison of two answer variants and a judge validation. The numbers come from
:mod:`ragmeter.answers`; this module only lays them out (shared by the commands and the demo).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from .._interval import interval_text
from .._literal import CAPTION, TITLE, lit
from .._pvalue import p_is
from ._common import columns_table

if TYPE_CHECKING:  # pragma: no cover
    from ..answers import AnswerReport, JudgeValidation
    from ..answers.paired import AnswerComparison


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def print_report(
    console: Console,
    report: AnswerReport,
    *,
    per_answer: bool = False,
    limit: int | None = None,
    more: str = "--all",
    details: bool = True,
    details_option: str = "--details",
) -> None:
    """The summary table, the by-slice table and one table per kind of failure found.
    ``limit`` shows the first faithful-but-wrong answers only, and says how many more there
    are and the option (``more``) that lists them all. ``details=False`` (the demo) leaves the
    failure tables out and says in one line how many rows they hold and the option
    (``details_option``) that prints them."""
    s = report.summary()
    # lit: ids, answers, quotes, variant and slice names print as written (never markup/emoji)
    t = Table(
        title=lit(
            f"answers: {report.variant}"
            + (f" (golden {report.golden_version})" if report.golden_version else ""),
            TITLE,
        )
    )
    t.add_column("check")
    t.add_column("value", justify="right")
    rows = [
        ("answers / missing", f"{s['n_answers']} / {s['n_missing']}"),
        (
            "correct (combined rule)",
            f"{s['correct']} of {s['n_scored']} = {_pct(s['correct_rate'])}",
        ),
        ("correct and supported", f"{s['ok']} of {s['ok_known']} = {_pct(s['ok_rate'])}"),
        ("correct, support unknown (not counted)", str(s["correct_support_unknown"])),
        ("exact match rate", _pct(s["exact_rate"])),
        ("mean token F1", _pct(s["mean_f1"])),
        ("value match rate", _pct(s["value_match_rate"])),
        ("quotes checked / failed", f"{s['quotes_checked']} / {s['quotes_failed']}"),
        ("values checked / failed", f"{s['values_checked']} / {s['values_failed']}"),
        (
            "supported / unsupported / unknown",
            f"{s['supported']} / {s['unsupported']} / {s['support_unknown']}",
        ),
        (
            "cites a passage outside its context",
            str(s["cites_outside_context"]) if s["context_known"] else "context not known",
        ),
        ("faithful but wrong", str(s["faithful_but_wrong"])),
    ]
    ab = s["abstention"]
    if ab["n_unanswerable"]:
        rows.append(
            (
                "abstained on unanswerable",
                f"{ab['abstained_unanswerable']} of {ab['n_unanswerable']}",
            )
        )
    rows.append(
        ("abstained on answerable", f"{ab['abstained_answerable']} of {ab['n_answerable']}")
    )
    for name, j in (s.get("judged") or {}).items():
        if "no_claims" in j:  # a claim metric: mean over the answers with claims
            rows.append(
                (
                    f"judge {name} (mean over n, no claims, failed)",
                    f"{_pct(j['mean'])} over {j['scored']}, {j['no_claims']}, "
                    f"{j['failed']} of {j['n']}",
                )
            )
            continue
        rows.append(
            (f"judge {name} (mean, failed)", f"{_pct(j['mean'])}, {j['failed']} of {j['n']}")
        )
    for what, value in rows:
        t.add_row(lit(what), lit(value))
    for what, value in _judge_failures(report):
        t.add_row(lit(what), lit(value))
    caption = f"correct: {s['rule']}" + (f"\njudge: {s['judge']}" if s.get("judge") else "")
    t.caption = lit(caption, CAPTION)
    console.print(t)

    sl = report.by_slice()
    if sl:
        st = columns_table(
            "by slice", ("slice", "n", "correct", "correct and supported"), text=("slice",)
        )
        for name, row in sl.items():
            st.add_row(lit(name), str(row["n"]), _pct(row["correct_rate"]), _pct(row["ok_rate"]))
        console.print(st)

    if not details:
        hidden = _detail_counts(report)
        if hidden:
            console.print(lit(f"answer-check detail: {hidden} (listed with {details_option})"))
        return
    quotes = [
        (c.id, q.quote, ", ".join(q.checked) or q.reason, ", ".join(q.found_elsewhere) or "nowhere")
        for c in report.checks
        for q in c.faithfulness.failed_quotes
    ]
    _print_failures(console, "quotes not found in the cited passage", "quote", quotes)
    values = [
        (
            c.id,
            v.value,
            ", ".join(v.checked) or "no citation",
            ", ".join(v.found_elsewhere) or "nowhere",
        )
        for c in report.checks
        for v in c.faithfulness.failed_values
    ]
    _print_failures(console, "stated values not in the cited passage", "value", values)
    outside = [c for c in report.checks if c.cites_outside_context]
    if outside:
        ot = columns_table(
            "citations outside the prompt context (a pipeline bug or a leak from memory; never "
            "counted as supported)",
            ("question", "cited outside the context", "context from"),
            overflow="fold",
        )
        for c in outside:
            ot.add_row(
                lit(c.id), lit(", ".join(c.faithfulness.outside_context)), lit(c.context_from or "")
            )
        console.print(ot)
    if report.faithful_but_wrong:
        bt = columns_table(
            "faithful but wrong (look at the corpus, not the model)",
            ("question", "answer", "reference", "cited", "evidence", "stale"),
            overflow="fold",
        )
        shown = report.faithful_but_wrong
        if limit is not None and len(shown) > limit:
            bt.caption = lit(f"the first {limit}; {len(shown) - limit} more ({more})", CAPTION)
            shown = shown[:limit]
        for f in shown:
            bt.add_row(
                lit(f.id),
                lit(f.answer),
                lit(f.reference or ""),
                lit("; ".join(_doc(c) for c in f.cited)),
                lit("; ".join(_doc(e) for e in f.evidence)),
                "yes" if f.stale else "no",
            )
        console.print(bt)
    if per_answer:
        pt = columns_table("per answer", ("question", "correct", "supported", "reason"))
        for c in report.checks:
            pt.add_row(lit(c.id), str(c.correct), str(c.supported), lit(c.reason))
        console.print(pt)


def _detail_counts(report: AnswerReport) -> str:
    """What the failure tables would list, counted: "1 quote and 12 values not found in the
    cited passage, 9 faithful but wrong"; "" when they would list nothing."""
    quotes = sum(len(c.faithfulness.failed_quotes) for c in report.checks)
    values = sum(len(c.faithfulness.failed_values) for c in report.checks)
    outside = sum(1 for c in report.checks if c.cites_outside_context)
    parts = []
    if quotes or values:
        said = [
            f"{n} {word}{'' if n == 1 else 's'}"
            for n, word in ((quotes, "quote"), (values, "value"))
            if n
        ]
        parts.append(f"{' and '.join(said)} not found in the cited passage")
    if outside:
        parts.append(f"{outside} citing outside the prompt context")
    if report.faithful_but_wrong:
        parts.append(f"{len(report.faithful_but_wrong)} faithful but wrong")
    return ", ".join(parts)


def _print_failures(
    console: Console, title: str, what: str, rows: list[tuple[str, str, str, str]]
) -> None:
    """The quotes (or values) the cited passage does not hold: question, ``what``, the passages
    checked, where else it was found. Nothing when ``rows`` is empty."""
    if rows:
        t = columns_table(title, ("question", what, "checked", "found elsewhere"), overflow="fold")
        for row in rows:
            t.add_row(*(lit(x) for x in row))
        console.print(t)


def _doc(d: dict[str, Any] | Any) -> str:
    extra = ", ".join(f"{k}={v}" for k, v in d.items() if k != "doc")
    return f"{d['doc']}" + (f" ({extra})" if extra else "")


def _judge_failures(report: AnswerReport) -> list[tuple[str, str]]:
    """Why judgements failed, most frequent reason first (the JSON holds it per answer): a
    count of failures without the reason (connection refused, a malformed reply) sends the
    user to the JSON."""
    reasons: dict[str, int] = {}
    for c in report.checks:
        for s in c.judged.values():
            if not s.ok:
                why = s.error or "no score"
                reasons[why] = reasons.get(why, 0) + 1
    ranked = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    rows = [(f"judge failed ({n}x)", why) for why, n in ranked[:3]]
    if len(ranked) > 3:
        rest = sum(n for _, n in ranked[3:])
        rows.append((f"judge failed ({rest}x)", f"{len(ranked) - 3} other reasons (--format json)"))
    return rows


def shown_ids(ids: list[str], show_all: bool, limit: int = 10) -> str:
    """The ids, the first ``limit`` unless ``show_all``: a cut list says how much was left out
    and how to see it."""
    if show_all or len(ids) <= limit:
        return ", ".join(ids)
    return f"{', '.join(ids[:limit])} ... and {len(ids) - limit} more (--all)"


def print_answer_comparison(
    console: Console, ac: AnswerComparison, *, show_all: bool = False
) -> None:
    """Means, fixed/broken/net, the paired bootstrap interval, the sign test and the verdict."""
    from ..answers.paired import METRIC_LABEL

    c = ac.comparison
    lo, hi = c.ci
    where = f" ({ac.split} split)" if ac.split else ""
    head = lit(f"{ac.candidate} vs {ac.baseline}", "bold")  # names print as written
    console.print(head.append(f" on {METRIC_LABEL}{where}, {c.n} paired questions"))
    console.print(
        f"  baseline {c.baseline_values.mean():.3f}, candidate "
        f"{c.candidate_values.mean():.3f}, difference {c.mean_delta:+.3f}"
    )
    console.print(
        f"  fixed {c.fixed}, broken {c.broken}, net {c.fixed - c.broken:+d}; "
        f"{int(c.confidence * 100)}% paired bootstrap interval {interval_text(lo, hi)}; "
        f"sign test p {p_is(c.sign_test_p)}"
    )
    console.print(lit(f"  verdict: {c.verdict}"))
    if c.fixed_ids:
        console.print(lit(f"  fixed: {shown_ids(list(c.fixed_ids), show_all)}"))
    if c.broken_ids:
        console.print(lit(f"  broken: {shown_ids(list(c.broken_ids), show_all)}"))


def print_validation(console: Console, v: JudgeValidation) -> None:
    """Confusion matrix, agreement per class, kappa, order flips, repeats, disagreements."""
    judge = v.judge.get("judge") if isinstance(v.judge.get("judge"), dict) else v.judge
    if judge:
        fake = " (FAKE JUDGE)" if judge.get("fake") else ""
        console.print(lit(f"judge: {judge.get('name', '')} model={judge.get('model', '')}{fake}"))
    ct = Table(title=f"confusion matrix ({v.n} items; rows human, columns judge)")
    ct.add_column("human \\ judge")
    for lab in v.labels:
        ct.add_column(lit(lab), justify="right")
    for i, lab in enumerate(v.labels):
        ct.add_row(lit(lab), *(str(int(x)) for x in v.confusion[i]))
    console.print(ct)
    pt = columns_table(
        "agreement per class",
        ("class", "human", "judge", "agree", "agreement", "precision"),
        text=("class",),
    )
    for lab, row in v.per_class.items():
        pt.add_row(
            lit(lab),
            str(row["n_human"]),
            str(row["n_judge"]),
            str(row["agree"]),
            _pct(row["agreement"]),
            _pct(row["precision"]),
        )
    pt.caption = (
        f"observed agreement {v.agreement:.3f}; Cohen's kappa {v.kappa:.3f}; "
        f"failed judgements {len(v.failed)} (agreement counting them as "
        f"disagreements {v.agreement_all:.3f}); not judged {len(v.unlabelled)}"
    )
    console.print(pt)
    if v.order_pairs:
        console.print(
            lit(
                f"order effects: {len(v.order_flips)} flip(s) in {v.order_pairs} pair(s) "
                f"run in both orders" + (f": {', '.join(v.order_flips)}" if v.order_flips else "")
            )
        )
    if v.n_runs > 1:
        var = "" if v.score_variance is None else f"; mean score variance {v.score_variance:.4f}"
        console.print(f"repeats: {v.n_runs} runs; {len(v.unstable)} item(s) changed label{var}")
    if v.disagreements:
        dt = columns_table("disagreements", ("id", "human", "judge"))
        for item, human, judged in v.disagreements:
            dt.add_row(lit(item), lit(human), lit(judged))
        console.print(dt)
