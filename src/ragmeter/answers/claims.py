"""Claim-level answer checks (RAGChecker-style), through the judge plumbing: model-based.

A judge splits a text into claims (prompt ``claims.v1``: question + text ->
``{"claims": [...]}``) and checks numbered claims against a passage (prompt
``claim_support.v1``: passage + claims -> ``{"verdicts": [{"claim": 1, "supported": true}]}``).
Three texts are split: the **answer**, the **reference** answer (the golden set's ``answer``) and
the **evidence** (the text of the question's labelled spans, joined). Four checks are made:
answer claims against the prompt **context** and against the **reference**, reference claims
against the **answer**, evidence claims against the **answer**. Every split is given the question
(a text is split into the claims it makes as an answer to it, each a self-contained sentence), and
the check against the reference shows the question with it (:func:`reference_passage`:
``Question: ...`` then ``Reference answer: ...``), so that a bare reference (``$75``, ``rule 16``)
and its question support a full-sentence claim, as in RAGChecker. Per answer:

- ``claim_faithfulness`` = answer claims supported by the context / answer claims;
- ``hallucination`` = answer claims supported by neither the context nor the reference / answer
  claims;
- ``claim_precision`` = answer claims supported by the reference / answer claims;
- ``claim_recall`` = reference claims supported by the answer / reference claims;
- ``context_utilisation`` = evidence claims supported by the answer / evidence claims (needs span
  labels).

``claims`` names all five. Each metric asks only for the calls it needs (one split per text, one
check per text pair; a split or check shared by two metrics is made once): with all five, seven
calls per answer (:data:`CALLS`).

An abstention or an empty answer has no claims: every metric is None with the label
``"no claims"``, counted apart (``no_claims``), never 1.0 or 0.0, and no call is made for it.
Any failed call (transport, a reply that does not fit its shape, a split listing no claim for a
non-empty text, verdicts that do not number each claim sent exactly once) makes every metric of
that answer that needs it a failure (``ok=False``, ``score=None``, the error saying which call),
never a pass. Questions without a reference (unanswerable) are not scored on the metrics that
need one; those without span labels not on ``context_utilisation``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import UsageError
from .judged import CLAIM_METRICS, CLAIMS_ALIAS, JudgedScore
from .judges._plan import DRY_RUN_ERROR, PlanningJudge
from .judges._prompts import Prompt, load_prompt
from .judges._protocol import Judge, JudgeReply, JudgeRequest
from .judges._replies import check_reply

__all__ = [
    "AGAINST",
    "CALLS",
    "CLAIMS_ALIAS",
    "CLAIM_INPUTS",
    "CLAIM_METRICS",
    "NO_CLAIMS",
    "claim_key",
    "claim_prompts",
    "claim_verdicts",
    "judge_claims",
    "numbered",
    "reference_passage",
]

#: what a claim is checked against
AGAINST = ("context", "reference", "answer")
#: the label of a score with no claims to count (abstention, empty answer)
NO_CLAIMS = "no claims"

#: metric -> the checks it needs: (whose claims, checked against what)
_CHECKS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "claim_faithfulness": (("answer", "context"),),
    "hallucination": (("answer", "context"), ("answer", "reference")),
    "claim_precision": (("answer", "reference"),),
    "claim_recall": (("reference", "answer"),),
    "context_utilisation": (("evidence", "answer"),),
}
#: metric -> the inputs it needs besides the answer (an empty answer is "no claims", not missing)
CLAIM_INPUTS: Mapping[str, tuple[str, ...]] = {
    m: tuple(dict.fromkeys(t for pair in checks for t in pair if t != "answer"))
    for m, checks in _CHECKS.items()
}


def calls_per_answer(metrics: Sequence[str]) -> int:
    """Judge calls per answer for ``metrics`` (texts split + pairs checked; shared ones once)."""
    pairs = {p for m in metrics for p in _CHECKS[m]}
    return len({of for of, _ in pairs}) + len(pairs)


#: calls per answer: each metric alone, and all five
CALLS: Mapping[str, int] = {
    **{m: calls_per_answer([m]) for m in CLAIM_METRICS},
    CLAIMS_ALIAS: calls_per_answer(CLAIM_METRICS),
}


def numbered(claims: Sequence[str]) -> str:
    """The claims as the ``claim_support`` prompt shows them: ``1. ...`` one per line."""
    return "\n".join(f"{i}. {' '.join(c.split())}" for i, c in enumerate(claims, 1))


def reference_passage(question: str, reference: str) -> str:
    """The passage answer claims are checked against for ``claim_precision`` and
    ``hallucination``: the question, then the reference answer (the reference alone when there is
    no question)."""
    q, r = " ".join(question.split()), reference.strip()
    return f"Question: {q}\nReference answer: {r}" if q else r


def _check_inputs(item: Mapping[str, Any], against: str) -> dict[str, Any]:
    """The passage a claim is checked against, and the raw texts it is made of (a judge that
    reads inputs, such as the fake judge, gets the question and the reference apart)."""
    if against != "reference":
        return {"passage": item[against]}
    question = str(item.get("question") or "")
    return {
        "passage": reference_passage(question, item["reference"]),
        "question": question,
        "reference": item["reference"],
    }


def claim_prompts(folder: Any = None) -> tuple[Prompt, Prompt]:
    """The ``claims`` and ``claim_support`` prompts (shipped, or from ``folder``)."""
    return load_prompt("claims", folder=folder), load_prompt("claim_support", folder=folder)


def _prompt_record(split: Prompt, support: Prompt) -> dict[str, str]:
    """The prompt identity a claim score records: both prompt ids, one sha256 over both."""
    sha = hashlib.sha256(f"{split.sha256}\n{support.sha256}".encode()).hexdigest()
    return {
        "id": f"{split.id}+{support.id}",
        "version": split.version,
        "sha256": sha,
        f"{split.task}_sha256": split.sha256,
        f"{support.task}_sha256": support.sha256,
    }


@dataclass
class _Outcome:
    """One call's result: the claims or verdicts, or why it failed."""

    value: list[Any] | None
    error: str | None
    cached: bool


def _split_result(reply: JudgeReply, what: str) -> _Outcome:
    if not reply.ok or reply.data is None:
        return _Outcome(
            None, f"splitting the {what} failed: {reply.error or 'judge failed'}", False
        )
    try:
        data = check_reply("claims", reply.data)
    except ValueError as exc:
        return _Outcome(None, f"splitting the {what}: {exc}", reply.cached)
    return _Outcome([" ".join(str(c).split()) for c in data["claims"]], None, reply.cached)


def _support_result(reply: JudgeReply, n: int, what: str) -> _Outcome:
    if not reply.ok or reply.data is None:
        return _Outcome(None, f"checking {what} failed: {reply.error or 'judge failed'}", False)
    try:
        data = check_reply("claim_support", reply.data)
    except ValueError as exc:
        return _Outcome(None, f"checking {what}: {exc}", reply.cached)
    got: dict[int, bool] = {}
    for v in data["verdicts"]:
        if v["claim"] in got:
            return _Outcome(None, f"checking {what}: claim {v['claim']} has two verdicts", False)
        got[v["claim"]] = v["supported"]
    if sorted(got) != list(range(1, n + 1)):
        extra = sorted(set(got) - set(range(1, n + 1)))
        lacking = sorted(set(range(1, n + 1)) - set(got))
        why = "; ".join(
            x
            for x in (
                f"no verdict for claim(s) {', '.join(map(str, lacking))}" if lacking else "",
                f"verdicts for claim(s) {', '.join(map(str, extra))} not sent" if extra else "",
            )
            if x
        )
        return _Outcome(None, f"checking {what}: {n} claims sent, {why}", reply.cached)
    return _Outcome([got[i] for i in range(1, n + 1)], None, reply.cached)


def _passage(item: Mapping[str, Any], name: str) -> str | None:
    v = item.get(name)
    return v if isinstance(v, str) and v.strip() else None


def _empty(item: Mapping[str, Any]) -> bool:
    return bool(item.get("abstained")) or _passage(item, "answer") is None


def judge_claims(
    judge: Judge,
    metrics: Sequence[str],
    items: Sequence[Mapping[str, Any]],
    *,
    prompts: tuple[Prompt, Prompt] | None = None,
) -> list[JudgedScore]:
    """Score ``items`` on the claim ``metrics`` (see module docstring).

    Each item: ``id``, ``question``, ``answer``, ``abstained`` (bool), and the texts the metrics
    need: ``context``, ``reference``, ``evidence`` (the caller leaves out the items that lack one,
    or refuses them: a missing input here is a UsageError); ``metrics`` (optional) the subset of
    ``metrics`` the item is scored on. One score per item and metric scored. Every text split and
    every pair checked once per item, however many metrics need it.
    """
    bad = [m for m in metrics if m not in _CHECKS]
    if bad:
        raise UsageError(f"unknown claim metric '{bad[0]}'; valid: {', '.join(CLAIM_METRICS)}")
    split_p, support_p = prompts or claim_prompts()
    info, pinfo = judge.info, _prompt_record(split_p, support_p)
    scored = {str(item["id"]): list(item.get("metrics", metrics)) for item in items}
    for item in items:
        if any(m not in metrics for m in scored[str(item["id"])]):
            raise UsageError(f"'{item['id']}' asks for a metric not in {', '.join(metrics)}")
        if _empty(item):
            continue
        for m in scored[str(item["id"])]:
            lacking = [n for n in CLAIM_INPUTS[m] if _passage(item, n) is None]
            if lacking:
                raise UsageError(f"claim metric {m} needs {', '.join(lacking)} for '{item['id']}'")

    # 1. split every text some metric needs, in one batch
    wanted: dict[str, set[tuple[str, str]]] = {}
    for item in items:
        if not _empty(item):
            wanted[str(item["id"])] = {p for m in scored[str(item["id"])] for p in _CHECKS[m]}
    split_keys = [
        (str(item["id"]), of)
        for item in items
        if str(item["id"]) in wanted
        for of in ("answer", "reference", "evidence")
        if any(p[0] == of for p in wanted[str(item["id"])])
    ]
    by_id = {str(item["id"]): item for item in items}
    split_reqs = [
        JudgeRequest(
            "claims",
            split_p.render({"question": by_id[i].get("question") or "", "text": by_id[i][of]}),
            {"question": by_id[i].get("question") or "", "text": by_id[i][of]},
        )
        for i, of in split_keys
    ]
    split_out = {
        key: _split_result(reply, key[1])
        for key, reply in zip(split_keys, _ask(judge, split_reqs), strict=True)
    }

    # 2. check each (claims, passage) pair some metric needs, in one batch
    check_keys: list[tuple[str, str, str]] = []
    unrendered: list[tuple[str, str, str]] = []
    for i, pairs in wanted.items():
        for of, against in sorted(pairs):
            got = split_out[(i, of)]
            if got.value is not None:
                check_keys.append((i, of, against))
            elif got.error is not None and DRY_RUN_ERROR in got.error:
                unrendered.append((i, of, against))
    check_reqs = []
    for i, of, against in check_keys:
        claims = split_out[(i, of)].value or []
        given = _check_inputs(by_id[i], against)
        check_reqs.append(
            JudgeRequest(
                "claim_support",
                support_p.render({"passage": given["passage"], "claims": numbered(claims)}),
                {**given, "claims": list(claims)},
            )
        )
    check_out = {
        key: _support_result(
            reply, len(split_out[(key[0], key[1])].value or []), f"{key[1]} claims vs {key[2]}"
        )
        for key, reply in zip(check_keys, _ask(judge, check_reqs), strict=True)
    }
    if unrendered and isinstance(judge, PlanningJudge):
        # a dry run without cached splits: count the checks that would follow them
        template = len(support_p.system) + len(support_p.user)
        for i, of, against in unrendered:
            passage = _check_inputs(by_id[i], against)["passage"]
            judge.unrendered("claim_support", template + len(passage) + len(by_id[i][of]))

    # 3. the scores
    out: list[JudgedScore] = []
    for item in items:
        i = str(item["id"])
        for m in scored[i]:
            if i not in wanted:
                out.append(JudgedScore(i, m, True, None, NO_CLAIMS, info, pinfo, None, {}))
                continue
            out.append(_score(i, m, split_out, check_out, info, pinfo))
    return out


def _ask(judge: Judge, requests: list[JudgeRequest]) -> list[JudgeReply]:
    if not requests:
        return []
    replies = judge.judge(requests)
    if len(replies) != len(requests):
        raise UsageError(f"judge returned {len(replies)} replies for {len(requests)} requests")
    return replies


def _score(
    i: str,
    m: str,
    split_out: Mapping[tuple[str, str], _Outcome],
    check_out: Mapping[tuple[str, str, str], _Outcome],
    info: Any,
    pinfo: Mapping[str, str],
) -> JudgedScore:
    pairs = _CHECKS[m]
    errors = [
        e
        for e in dict.fromkeys(
            [split_out[(i, of)].error for of, _ in pairs]
            + [check_out[(i, of, a)].error for of, a in pairs if (i, of, a) in check_out]
        )
        if e
    ]
    cached = all(split_out[(i, of)].cached for of, _ in pairs) and all(
        check_out[(i, of, a)].cached for of, a in pairs if (i, of, a) in check_out
    )
    if errors:
        return JudgedScore(i, m, False, None, None, info, pinfo, "; ".join(errors), cached=cached)
    of = pairs[0][0]
    claims = split_out[(i, of)].value or []
    checks = [
        {
            "of": o,
            "against": a,
            "claims": [
                {"claim": c, "supported": s}
                for c, s in zip(claims, check_out[(i, o, a)].value or [], strict=True)
            ],
        }
        for o, a in pairs
    ]
    verdicts = [check_out[(i, o, a)].value or [] for o, a in pairs]
    detail: dict[str, Any]
    if m == "hallucination":
        flagged = [not (x or y) for x, y in zip(verdicts[0], verdicts[1], strict=True)]
        k = sum(flagged)
        detail = {
            "checks": checks,
            "hallucinated": [c for c, f in zip(claims, flagged, strict=True) if f],
        }
        label = "supported" if k == 0 else "unsupported"
    else:
        k = sum(verdicts[0])
        detail = {"checks": checks}
        label = "supported" if k == len(claims) else "unsupported"
    detail = {**detail, "count": k, "n_claims": len(claims)}
    return JudgedScore(i, m, True, k / len(claims), label, info, pinfo, None, detail, cached)


def claim_verdicts(judged: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """``(claim, against, supported)`` of every check in one answer's judged claim metrics
    (``AnswerCheck.to_dict()["judged"]``), each (claim, against) once."""
    out: dict[tuple[str, str], bool] = {}
    for name in CLAIM_METRICS:
        rec = judged.get(name)
        if not isinstance(rec, Mapping) or not rec.get("ok"):
            continue
        detail = rec.get("detail")
        for check in (detail or {}).get("checks", []) if isinstance(detail, Mapping) else []:
            if not isinstance(check, Mapping):
                continue
            for c in check.get("claims", []):
                if isinstance(c, Mapping) and isinstance(c.get("supported"), bool):
                    out.setdefault((str(c.get("claim")), str(check.get("against"))), c["supported"])
    return [(c, a, s) for (c, a), s in out.items()]


def claim_key(answer_id: str, claim: str, against: str) -> str:
    """The id a claim-level label is matched by: answer id, against, and the claim's text with
    its spaces collapsed and case ignored."""
    return f"{answer_id} | {against} | {' '.join(claim.split()).casefold()}"
