"""Validate a judge against human labels before trusting it ("before you trust a model
judge": hand-label a sample, score it, measure agreement per class, read the disagreements, check
order effects, repeat runs).

Definitions (rows = human label, columns = judge label, ``n`` judged items):
- confusion matrix ``C[i, j]`` = items humans labelled ``i`` and the judge ``j``;
- observed agreement ``p_o = trace(C) / n``;
- chance agreement ``p_e = sum_k (row_k / n) * (col_k / n)``;
- Cohen's kappa ``(p_o - p_e) / (1 - p_e)`` (1.0 when ``p_e == 1`` and ``p_o == 1``);
- agreement per class ``k`` = ``C[k, k] / row_k`` (of the items humans put in ``k``, the share the
  judge put there too), with the judge's precision ``C[k, k] / col_k`` beside it;
- order flips (pairwise judgements run in both orders): pairs whose preferred answer changes
  with the order shown;
- repeated runs: items whose label differs between runs, and the mean over items of the
  population variance of numeric scores across runs.
A failed judgement is never a label: failed items are listed and left out of kappa;
``agreement_all`` counts them as disagreements.

Labels (human and judge alike) are JSON booleans or words from :data:`LABEL_WORDS`, compared
after trimming spaces and ignoring case, and mapped explicitly to one canonical word per class:
``true``/``"true"``/``"pass"`` -> ``pass``, ``false``/``"false"``/``"fail"`` -> ``fail``, and the
judges' own scales (yes/partly/no, supported/unsupported, correct/incorrect, a/b/tie) to
themselves. Anything else (a number, ``"maybe"``, ``"1"``) is an error naming the file, line and
field, and so are two labels for the same item (same id, run and order) and labels from two
scales in one comparison (``pass`` against ``supported`` would count as a disagreement every
time). With nothing to compare (no labelled item judged, or every judgement failed) there is no
agreement to report: an error says so instead of a NaN.

Claim-level labels (the claim metrics of :mod:`ragmeter.answers.claims`): one line per
(answer id, claim, what it was checked against), ``{"id": "change-fee-basic", "claim": "The
change fee is $75.", "against": "context"|"reference"|"answer", "supported": true|false}``.
Each is matched to the judge's verdict on the same answer id, the same ``against`` and the same
claim text (spaces collapsed, case ignored: :func:`ragmeter.answers.claims.claim_key`), read from
the claim metrics' details in the JSON of ``answers check --format json`` (``--metric claims``,
or no ``--metric`` when the file holds only claim metrics). The labels are pass (supported) and
fail. A claim the judge did not list (it split the text differently, or its calls for that
answer failed) is "not judged", never an agreement.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import numpy as np

from .._errors import Problem, UsageError, ValidationError
from ..io import iter_jsonl

#: label word (trimmed, lower-cased) -> canonical label. JSON ``true``/``false`` read as
#: ``"true"``/``"false"``. One scale per comparison (:data:`LABEL_SCALES`).
LABEL_WORDS: Mapping[str, str] = {
    "true": "pass",
    "pass": "pass",
    "false": "fail",
    "fail": "fail",
    "yes": "yes",
    "partly": "partly",
    "no": "no",
    "supported": "supported",
    "unsupported": "unsupported",
    "correct": "correct",
    "incorrect": "incorrect",
    "a": "a",
    "b": "b",
    "tie": "tie",
}
#: the scales canonical labels belong to; human and judge labels must share one.
LABEL_SCALES: tuple[tuple[str, ...], ...] = (
    ("pass", "fail"),
    ("yes", "partly", "no"),
    ("supported", "unsupported"),
    ("correct", "incorrect"),
    ("a", "b", "tie"),
)
_SCALE_OF = {lab: "/".join(scale) for scale in LABEL_SCALES for lab in scale}
_ACCEPTED = (
    "true/false, pass/fail, yes/partly/no, supported/unsupported, correct/incorrect, a/b/tie"
)


def normalize_label(value: Any) -> str:
    """The canonical label of ``value`` (see module docstring); ValueError when it is none."""
    if isinstance(value, bool):
        return "pass" if value else "fail"
    if isinstance(value, str):
        label = LABEL_WORDS.get(value.strip().lower())
        if label is not None:
            return label
    raise ValueError(f"{json.dumps(value)[:60]} is not a label; use {_ACCEPTED} (any case)")


def confusion_matrix(
    human: Sequence[str], judge: Sequence[str], labels: Sequence[str]
) -> np.ndarray:
    """``C[i, j]``: count of items with human label ``labels[i]`` and judge label ``labels[j]``."""
    index = {lab: i for i, lab in enumerate(labels)}
    c = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for h, j in zip(human, judge, strict=True):
        c[index[h], index[j]] += 1
    return c


def kappa_from_confusion(c: np.ndarray) -> float:
    """Cohen's kappa of a confusion matrix (see module docstring)."""
    n = c.sum()
    if n == 0:
        return float("nan")
    po = np.trace(c) / n
    pe = float((c.sum(axis=1) / n) @ (c.sum(axis=0) / n))
    if pe == 1.0:
        return 1.0 if po == 1.0 else float("nan")
    return float((po - pe) / (1 - pe))


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float:
    """Cohen's kappa of two label sequences of equal length."""
    labels = sorted(set(a) | set(b))
    return kappa_from_confusion(confusion_matrix(a, b, labels))


@dataclass(frozen=True)
class JudgeValidation:
    """Agreement of one judge with human labels, with the disagreements themselves."""

    labels: tuple[str, ...]
    n: int
    confusion: np.ndarray
    agreement: float
    agreement_all: float
    kappa: float
    per_class: Mapping[str, Mapping[str, float | int | None]]
    disagreements: tuple[tuple[str, str, str], ...]  # (id, human, judge)
    failed: tuple[str, ...] = ()
    unlabelled: tuple[str, ...] = ()  # human-labelled ids the judge never scored
    order_pairs: int = 0
    order_flips: tuple[str, ...] = ()
    n_runs: int = 1
    unstable: tuple[str, ...] = ()
    score_variance: float | None = None
    judge: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": dict(self.judge),
            "n": self.n,
            "labels": list(self.labels),
            "confusion": {"rows_human_cols_judge": self.confusion.tolist()},
            "agreement": self.agreement,
            "agreement_all": self.agreement_all,
            "kappa": self.kappa,
            "per_class": {k: dict(v) for k, v in self.per_class.items()},
            "disagreements": [{"id": i, "human": h, "judge": j} for i, h, j in self.disagreements],
            "failed": list(self.failed),
            "unlabelled": list(self.unlabelled),
            "order": {
                "pairs_both_orders": self.order_pairs,
                "flips": len(self.order_flips),
                "flipped_ids": list(self.order_flips),
            },
            "repeats": {
                "runs": self.n_runs,
                "unstable": len(self.unstable),
                "unstable_ids": list(self.unstable),
                "score_variance": self.score_variance,
            },
        }


@dataclass(frozen=True)
class JudgeLabel:
    """One judge output to validate: label (None when the judgement failed), run, order, score."""

    id: str
    label: str | None
    run: int = 0
    order: str = "ab"
    score: float | None = None


def validate_judge(
    human: Mapping[str, str],
    judged: Iterable[JudgeLabel],
    *,
    judge: Mapping[str, Any] | None = None,
) -> JudgeValidation:
    """Compare judge labels with human labels (see module docstring for every number).

    The judge's label on an item is the one of run 0 in order "ab"; other runs feed the repeat
    statistics and order "ba" the flip count (its label already mapped back to the "ab" frame).
    """
    if not human:
        raise UsageError("no human labels to validate against")
    try:
        human = {i: normalize_label(lab) for i, lab in human.items()}
    except ValueError as exc:
        raise UsageError(f"human label: {exc}") from None
    by: dict[tuple[str, int, str], JudgeLabel] = {}
    for jl in judged:
        key = (jl.id, jl.run, jl.order)
        if key in by:
            raise UsageError(
                f"two judge labels for '{jl.id}' (run {jl.run}, order {jl.order}); keep one"
            )
        if jl.label is not None:
            try:
                jl = JudgeLabel(jl.id, normalize_label(jl.label), jl.run, jl.order, jl.score)
            except ValueError as exc:
                raise UsageError(f"judge label of '{jl.id}': {exc}") from None
        by[key] = jl
    _one_scale(human.values(), (jl.label for jl in by.values() if jl.label is not None))
    runs = sorted({r for _, r, _ in by})
    primary = {i: jl for (i, r, o), jl in by.items() if r == (runs[0] if runs else 0) and o == "ab"}
    ids = [i for i in human if i in primary and primary[i].label is not None]
    failed = tuple(i for i in human if i in primary and primary[i].label is None)
    unlabelled = tuple(i for i in human if i not in primary)
    if not ids:
        what = (
            f"all {len(failed)} judgements of labelled items failed"
            if failed
            else "no human-labelled id was judged (do the two files use the same ids?)"
        )
        raise UsageError(f"nothing to compare: {what}; agreement and kappa are undefined")
    h = [human[i] for i in ids]
    j = [str(primary[i].label) for i in ids]
    labels = tuple(sorted(set(h) | set(j)))
    c = confusion_matrix(h, j, labels)
    n = len(ids)
    agree = float(np.trace(c) / n) if n else float("nan")
    per_class: dict[str, dict[str, float | int | None]] = {}
    for k, lab in enumerate(labels):
        row, col = int(c[k].sum()), int(c[:, k].sum())
        per_class[lab] = {
            "n_human": row,
            "n_judge": col,
            "agree": int(c[k, k]),
            "agreement": c[k, k] / row if row else None,
            "precision": c[k, k] / col if col else None,
        }
    dis = tuple((i, human[i], str(primary[i].label)) for i in ids if human[i] != primary[i].label)

    pairs, flips = 0, []
    for (i, r, o), jl in by.items():
        if o == "ab" and (i, r, "ba") in by:
            other = by[(i, r, "ba")]
            if jl.label is not None and other.label is not None:
                pairs += 1
                if jl.label != other.label:
                    flips.append(i)

    unstable, variances = [], []
    if len(runs) > 1:
        for i in human:
            labs = [by[(i, r, "ab")] for r in runs if (i, r, "ab") in by]
            got = [x.label for x in labs if x.label is not None]
            if len(got) > 1 and len(set(got)) > 1:
                unstable.append(i)
            scores = [x.score for x in labs if x.score is not None]
            if len(scores) > 1:
                variances.append(float(np.var(scores)))
    return JudgeValidation(
        labels,
        n,
        c,
        agree,
        float(np.trace(c) / (n + len(failed))) if n + len(failed) else float("nan"),
        kappa_from_confusion(c),
        per_class,
        dis,
        failed,
        unlabelled,
        pairs,
        tuple(sorted(flips)),
        max(len(runs), 1),
        tuple(unstable),
        float(np.mean(variances)) if variances else None,
        dict(judge or {}),
    )


def _one_scale(human: Iterable[str], judge: Iterable[str]) -> None:
    """UsageError when the labels come from more than one scale of :data:`LABEL_SCALES`."""
    hs = {_SCALE_OF[x] for x in human}
    js = {_SCALE_OF[x] for x in judge}
    if len(hs | js) > 1:
        raise UsageError(
            f"labels from different scales cannot agree: human labels use {', '.join(sorted(hs))}"
            f", judge labels {', '.join(sorted(js)) or 'none'}; relabel one side so both use "
            "one scale"
        )


# -- files ---------------------------------------------------------------------------------------
def _read_jsonl(path: str | PathLike[str], problems: list[Problem]) -> list[tuple[int, Any]]:
    return list(iter_jsonl(path, problems, what="labels"))


def _claim_record(
    rec: Mapping[str, Any], path: str, line: int, problems: list[Problem], *, judge: bool = False
) -> tuple[str, Any] | None:
    """(the claim key, the label) of one claim-level line, or None after adding its problem."""
    from .claims import AGAINST, claim_key

    i, claim, against = rec.get("id"), rec.get("claim"), rec.get("against")
    lab = rec.get("supported", rec.get("label") if judge else None)
    if not isinstance(i, str) or not i:
        problems.append(Problem("needs a non-empty string", path, line, "id"))
    elif not isinstance(claim, str) or not claim.strip():
        problems.append(Problem("needs the claim's text (a non-empty string)", path, line, "claim"))
    elif against not in AGAINST:
        problems.append(
            Problem(
                f"must be one of {', '.join(AGAINST)}, got {json.dumps(against)}",
                path,
                line,
                "against",
            )
        )
    elif not isinstance(lab, bool) and not (judge and (lab is None or isinstance(lab, str))):
        problems.append(Problem("must be true or false", path, line, "supported"))
    else:
        return claim_key(i, claim, against), lab
    return None


def load_human_labels(path: str | PathLike[str]) -> dict[str, str]:
    """``{"id": ..., "label": ...}`` per line; one label per id; labels as :data:`LABEL_WORDS`.

    Or claim-level labels, ``{"id", "claim", "against", "supported"}`` per line (module
    docstring): the id returned is then the claim key, the label pass or fail. One file holds
    one kind (a line of the other kind is an error naming it)."""
    out: dict[str, str] = {}
    lines: dict[str, int] = {}
    problems: list[Problem] = []
    kind: tuple[str, int] | None = None  # ("claim" | "answer", first line)
    for line, rec in _read_jsonl(path, problems):
        this = "claim" if "claim" in rec or "against" in rec else "answer"
        if kind is None:
            kind = (this, line)
        elif kind[0] != this:
            problems.append(
                Problem(
                    f"a {this}-level label in a file of {kind[0]}-level labels (line {kind[1]}); "
                    "keep one kind per file",
                    str(path),
                    line,
                    "claim",
                )
            )
            continue
        if this == "claim":
            got = _claim_record(rec, str(path), line, problems)
            if got is None:
                continue
            i, lab = got
        else:
            i, lab = rec.get("id"), rec.get("label")
        if not isinstance(i, str) or not i:
            problems.append(Problem("needs a non-empty string", str(path), line, "id"))
            continue
        try:
            label = normalize_label(lab)
        except ValueError as exc:
            problems.append(Problem(str(exc), str(path), line, "label"))
            continue
        if i in lines:
            problems.append(
                Problem(
                    f"second label for '{i}' (the first is on line {lines[i]}); keep one",
                    str(path),
                    line,
                    "id",
                )
            )
            continue
        out[i], lines[i] = label, line
    if problems:
        raise ValidationError(problems, what=str(path))
    return out


def load_judge_labels(
    path: str | PathLike[str], *, metric: str | None = None, variant: str | None = None
) -> tuple[list[JudgeLabel], dict[str, Any]]:
    """Judge outputs: ``{"id", "label", "run"?, "order"?: "ab"|"ba", "score"?, "ok"?}`` per line,
    or the JSON document ``ragmeter answers check --format json`` writes (one variant's object,
    or a list of them), whose judgements sit under ``answers[i].judged.<metric>``. A document
    with judgements of several metrics needs ``metric``; a list of several variants needs
    ``variant`` (both refused with the choices otherwise). A record with ``"ok": false`` or no
    label is a failed judgement; ``ok`` is a JSON boolean, labels as :data:`LABEL_WORDS`, and one
    record per (id, run, order). Returns the labels and the judge info when the records carry
    one (refusing a file that mixes two judge configurations)."""
    problems: list[Problem] = []
    report = _report_document(path)
    if report is None:
        if variant is not None:
            raise UsageError(
                f"--variant applies to the JSON of 'ragmeter answers check'; {path} is JSON "
                "Lines of judge labels (one variant)"
            )
        records: list[tuple[int | None, str | None, Any]] = []
        for n, rec in _read_jsonl(path, problems):
            if metric is not None and rec.get("metric") not in (None, metric):
                continue
            if isinstance(rec, dict) and ("claim" in rec or "against" in rec):
                got = _claim_record(rec, str(path), n, problems, judge=True)
                if got is None:
                    continue
                rec = {**rec, "id": got[0], "label": got[1]}
            records.append((n, None, rec))
    else:
        records = [
            (None, where, rec) for where, rec in _report_records(report, path, metric, variant)
        ]
    out: list[JudgeLabel] = []
    judges: set[str] = set()
    seen: dict[tuple[str, int, str], str] = {}
    for line, where, rec in records:

        def bad(
            message: str, name: str, line: int | None = line, where: str | None = where
        ) -> None:
            problems.append(Problem(message, str(path), line, f"{where}.{name}" if where else name))

        if not isinstance(rec, dict):
            problems.append(Problem("must be a JSON object", str(path), line, where))
            continue
        i = rec.get("id")
        if not isinstance(i, str) or not i:
            bad("needs a non-empty string", "id")
            continue
        order = rec.get("order", "ab")
        if order not in ("ab", "ba"):
            bad("must be 'ab' or 'ba'", "order")
            continue
        run = rec.get("run", 0)
        if not isinstance(run, int) or isinstance(run, bool) or run < 0:
            bad("must be an integer >= 0", "run")
            continue
        ok = rec.get("ok", True)
        if not isinstance(ok, bool):
            bad("must be true or false", "ok")
            continue
        lab = rec.get("label") if ok else None
        if lab is not None:
            try:
                lab = normalize_label(lab)
            except ValueError as exc:
                bad(str(exc), "label")
                continue
        score = rec.get("score")
        if score is not None and (
            not isinstance(score, (int, float))
            or isinstance(score, bool)
            or not math.isfinite(score)
        ):
            bad("must be a finite number", "score")
            continue
        key = (i, run, order)
        here = f"line {line}" if line is not None else str(where)
        if key in seen:
            bad(
                f"second judge label for '{i}' (run {run}, order {order}; the first is "
                f"{seen[key]}); keep one",
                "id",
            )
            continue
        seen[key] = here
        if isinstance(rec.get("judge"), dict):
            judges.add(
                json.dumps({"judge": rec["judge"], "prompt": rec.get("prompt")}, sort_keys=True)
            )
        out.append(JudgeLabel(i, lab, run, order, None if score is None else float(score)))
    if len(judges) > 1:
        problems.append(
            Problem(
                f"mixes {len(judges)} judge configurations; validate one at a time",
                str(path),
                None,
                "judge",
            )
        )
    if problems:
        raise ValidationError(problems, what=str(path))
    return out, (json.loads(judges.pop()) if judges else {})


def _report_document(path: str | PathLike[str]) -> Any:
    """The file's JSON document when it is ``answers check --format json`` output (an object
    with ``answers``, or a non-empty list of them); None for anything else (JSON Lines)."""
    from .._errors import InputError
    from ..io import read_json

    try:
        doc = read_json(path)
    except InputError:
        return None

    def one(x: Any) -> bool:
        return isinstance(x, dict) and isinstance(x.get("answers"), list)

    if one(doc) or (isinstance(doc, list) and doc and all(one(x) for x in doc)):
        return doc
    return None


def _report_records(
    doc: Any, path: str | PathLike[str], metric: str | None, variant: str | None
) -> list[tuple[str, Any]]:
    """``(field path, judged record)`` of one variant and one metric of an answers report."""
    reports = [(f"[{n}].", r) for n, r in enumerate(doc)] if isinstance(doc, list) else [("", doc)]

    def name(r: dict[str, Any]) -> str:
        summary = r.get("summary")
        return str(summary.get("variant")) if isinstance(summary, dict) else "?"

    if variant is not None:
        reports = [(p, r) for p, r in reports if name(r) == variant]
        if not reports:
            have = ", ".join(name(r) for r in (doc if isinstance(doc, list) else [doc]))
            raise UsageError(f"{path} has no variant '{variant}' (it has: {have})")
    if len(reports) > 1:
        have = ", ".join(name(r) for _, r in reports)
        raise UsageError(
            f"{path} checks {len(reports)} answer variants ({have}); choose one with --variant"
        )
    prefix, report = reports[0]
    answers = [(f"{prefix}answers[{n}]", a) for n, a in enumerate(report["answers"])]
    metrics = sorted(
        {
            m
            for _, a in answers
            if isinstance(a, dict) and isinstance(a.get("judged"), dict)
            for m in a["judged"]
        }
    )
    if not metrics:
        raise UsageError(
            f"{path} holds no judgements: run 'ragmeter answers check' with --judge and "
            "--judge-metrics"
        )
    from .claims import claim_key, claim_verdicts
    from .judged import CLAIM_METRICS, CLAIMS_ALIAS

    if metric in (CLAIMS_ALIAS, *CLAIM_METRICS) or (
        metric is None and all(m in CLAIM_METRICS for m in metrics)
    ):
        if not any(m in CLAIM_METRICS for m in metrics):
            raise UsageError(f"{path} has no claim-level judgements (it has: {', '.join(metrics)})")
        out: list[tuple[str, Any]] = []
        for where, a in answers:
            judged = a.get("judged") if isinstance(a, dict) else None
            if not isinstance(judged, dict):
                continue
            first = next((judged[m] for m in CLAIM_METRICS if m in judged), None)
            config = (
                {k: first.get(k) for k in ("judge", "prompt")} if isinstance(first, dict) else {}
            )
            for claim, against, ok in claim_verdicts(judged):
                rec = {"id": claim_key(str(a.get("id")), claim, against), "label": ok, **config}
                out.append((f"{where}.judged", rec))
        return out
    if metric is None:
        if len(metrics) > 1:
            raise UsageError(
                f"{path} holds judgements of {len(metrics)} metrics ({', '.join(metrics)}); "
                "choose one with --metric"
            )
        metric = metrics[0]
    elif metric not in metrics:
        raise UsageError(f"{path} has no '{metric}' judgements (it has: {', '.join(metrics)})")
    return [
        (f"{where}.judged.{metric}", a["judged"][metric])
        for where, a in answers
        if isinstance(a, dict) and isinstance(a.get("judged"), dict) and metric in a["judged"]
    ]
