"""Rich renderings of answer reports, the retrieval-by-answer table, diagnoses and judge
validations, shared by the CLI and the demo."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .diagnose import Diagnosis
from .judge_validation import JudgeValidation
from .report import AnswerReport
from .table import CELLS, RetrievalAnswerTable


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def print_report(console: Console, report: AnswerReport, *, per_answer: bool = False) -> None:
    s = report.summary()
    t = Table(title=f"answers: {escape(report.variant)}"
              + (f" (golden {report.golden_version})" if report.golden_version else ""))
    t.add_column("check")
    t.add_column("value", justify="right")
    rows = [
        ("answers / missing", f"{s['n_answers']} / {s['n_missing']}"),
        ("correct (combined rule)", f"{s['correct']} of {s['n_scored']} = {_pct(s['correct_rate'])}"),
        ("correct and supported", f"{s['ok']} of {s['n_scored']} = {_pct(s['ok_rate'])}"),
        ("exact match rate", _pct(s["exact_rate"])),
        ("mean token F1", _pct(s["mean_f1"])),
        ("value match rate", _pct(s["value_match_rate"])),
        ("quotes checked / failed", f"{s['quotes_checked']} / {s['quotes_failed']}"),
        ("values checked / failed", f"{s['values_checked']} / {s['values_failed']}"),
        ("supported / unsupported / unknown",
         f"{s['supported']} / {s['unsupported']} / {s['support_unknown']}"),
        ("faithful but wrong", str(s["faithful_but_wrong"])),
    ]
    ab = s["abstention"]
    if ab["n_unanswerable"]:
        rows.append(("abstained on unanswerable",
                     f"{ab['abstained_unanswerable']} of {ab['n_unanswerable']}"))
    rows.append(("abstained on answerable", f"{ab['abstained_answerable']} of {ab['n_answerable']}"))
    for name, j in (s.get("judged") or {}).items():
        rows.append((f"judge {name} (mean, failed)", f"{_pct(j['mean'])}, {j['failed']} of {j['n']}"))
    for r in rows:
        t.add_row(*r)
    t.caption = f"correct: {s['rule']}"
    if s.get("judge"):
        t.caption += f"\njudge: {s['judge']}"
    console.print(t)

    sl = report.by_slice()
    if sl:
        st = Table(title="by slice")
        for col in ("slice", "n", "correct", "correct and supported"):
            st.add_column(col, justify="left" if col == "slice" else "right")
        for name, row in sl.items():
            st.add_row(escape(name), str(row["n"]), _pct(row["correct_rate"]), _pct(row["ok_rate"]))
        console.print(st)

    failed = [(c.id, q) for c in report.checks for q in c.faithfulness.failed_quotes]
    if failed:
        ft = Table(title="quotes not found in the cited passage")
        for col in ("question", "quote", "checked", "found elsewhere"):
            ft.add_column(col)
        for qid, q in failed:
            ft.add_row(qid, escape(q.quote), escape(", ".join(q.checked) or q.reason),
                       escape(", ".join(q.found_elsewhere) or "nowhere"))
        console.print(ft)
    fv = [(c.id, v) for c in report.checks for v in c.faithfulness.failed_values]
    if fv:
        vt = Table(title="stated values not in the cited passage")
        for col in ("question", "value", "checked", "found elsewhere"):
            vt.add_column(col)
        for qid, v in fv:
            vt.add_row(qid, v.value, escape(", ".join(v.checked) or "no citation"),
                       escape(", ".join(v.found_elsewhere) or "nowhere"))
        console.print(vt)
    if report.faithful_but_wrong:
        bt = Table(title="faithful but wrong (look at the corpus, not the model)")
        for col in ("question", "answer", "reference", "cited", "evidence", "stale"):
            bt.add_column(col)
        for f in report.faithful_but_wrong:
            bt.add_row(f.id, escape(f.answer), escape(f.reference or ""),
                       escape("; ".join(_doc(c) for c in f.cited)),
                       escape("; ".join(_doc(e) for e in f.evidence)), "yes" if f.stale else "no")
        console.print(bt)
    if per_answer:
        pt = Table(title="per answer")
        for col in ("question", "correct", "supported", "reason"):
            pt.add_column(col)
        for c in report.checks:
            pt.add_row(c.id, str(c.correct), str(c.supported), escape(c.reason))
        console.print(pt)


def _doc(d: dict[str, Any] | Any) -> str:
    extra = ", ".join(f"{k}={v}" for k, v in d.items() if k != "doc")
    return f"{d['doc']}" + (f" ({extra})" if extra else "")


def print_table(console: Console, table: RetrievalAnswerTable, title: str | None = None) -> None:
    t = Table(title=title or "retrieval-by-answer table")
    t.add_column(table.evidence_label)
    t.add_column("answer correct and supported", justify="right")
    t.add_column("not", justify="right")
    by = {(c.evidence, c.answer_ok): c for c in CELLS}
    for ev, name in ((True, "in context"), (False, "not in context")):
        t.add_row(name, str(table.count(by[(ev, True)].key)), str(table.count(by[(ev, False)].key)))
    lb = table.largest_bad
    lines = [f"{c.title} ({table.count(c.key)}): {c.reading}" for c in CELLS]
    lines.append(f"largest bad cell: {lb.title} ({table.count(lb.key)} of {table.n})" if lb
                 else "no bad cell has any question")
    if table.excluded:
        lines.append(f"{len(table.excluded)} question(s) not in the table (unanswerable or unscored)")
    t.caption = "\n".join(lines)
    console.print(t)


def print_diagnosis(console: Console, d: Diagnosis) -> None:
    t = Table(title="where to look first")
    for col in ("step", "status", "detail"):
        t.add_column(col)
    colour = {"pass": "green", "fail": "red", "unknown": "yellow"}
    for s in d.steps:
        t.add_row(escape(s.question), f"[{colour[s.status]}]{s.status}[/]", escape(s.detail))
    console.print(t)
    for n in d.notes:
        console.print(f"note: {escape(n)}")
    e = d.experiment
    console.print(f"[bold]failing link:[/bold] {escape(d.failing_link or 'none')}")
    console.print("[bold]next experiment (one change):[/bold]")
    console.print(f"  change:     {escape(e.change)}")
    console.print(f"  metric:     {escape(e.metric)}")
    console.print(f"  comparison: {escape(e.comparison)}")
    console.print(f"  refute:     {escape(e.refutation)}")
    if e.assumption:
        console.print(f"  assumption: {escape(e.assumption)}")


def print_validation(console: Console, v: JudgeValidation) -> None:
    judge = v.judge.get("judge") if isinstance(v.judge.get("judge"), dict) else v.judge
    if judge:
        fake = " (FAKE JUDGE)" if judge.get("fake") else ""
        console.print(f"judge: {escape(str(judge.get('name', '')))} model="
                      f"{escape(str(judge.get('model', '')))}{fake}")
    ct = Table(title=f"confusion matrix ({v.n} items; rows human, columns judge)")
    ct.add_column("human \\ judge")
    for lab in v.labels:
        ct.add_column(escape(lab), justify="right")
    for i, lab in enumerate(v.labels):
        ct.add_row(escape(lab), *(str(int(x)) for x in v.confusion[i]))
    console.print(ct)
    pt = Table(title="agreement per class")
    for col in ("class", "human", "judge", "agree", "agreement", "precision"):
        pt.add_column(col, justify="left" if col == "class" else "right")
    for lab, row in v.per_class.items():
        pt.add_row(escape(lab), str(row["n_human"]), str(row["n_judge"]), str(row["agree"]),
                   _pct(row["agreement"]), _pct(row["precision"]))
    pt.caption = (f"observed agreement {v.agreement:.3f}; Cohen's kappa {v.kappa:.3f}; "
                  f"failed judgements {len(v.failed)} (agreement counting them as "
                  f"disagreements {v.agreement_all:.3f}); not judged {len(v.unlabelled)}")
    console.print(pt)
    if v.order_pairs:
        console.print(f"order effects: {len(v.order_flips)} flip(s) in {v.order_pairs} pair(s) "
                      f"run in both orders" + (f": {', '.join(v.order_flips)}" if v.order_flips else ""))
    if v.n_runs > 1:
        var = "" if v.score_variance is None else f"; mean score variance {v.score_variance:.4f}"
        console.print(f"repeats: {v.n_runs} runs; {len(v.unstable)} item(s) changed label{var}")
    if v.disagreements:
        dt = Table(title="disagreements")
        for col in ("id", "human", "judge"):
            dt.add_column(col)
        for item, human, judged in v.disagreements:
            dt.add_row(escape(item), escape(human), escape(judged))
        console.print(dt)
