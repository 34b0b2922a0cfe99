"""Answer-level scores from a judge: faithfulness (claim-level support), context relevance,
answer relevance, correctness, and pairwise preference.

Each :class:`JudgeMetric` declares the inputs it needs; :func:`judge_metric` refuses (UsageError
naming the input and the questions lacking it) before any call is made. Scores:

- faithfulness = supported claims / claims; label "supported" when every claim is supported,
  else "unsupported". A reply listing no claim is a failure, not 1.0: every answer judged is
  non-empty, and a refusal often looks exactly like an empty claim list.
- context_relevance, answer_relevance: verdict yes / partly / no -> 1 / 0.5 / 0.
- correctness: verdict correct / incorrect -> 1 / 0.
- pairwise: winner A / B / tie (run in both orders by :func:`judge_pairwise`).
- the claim-level metrics :data:`CLAIM_METRICS` (claim_faithfulness, hallucination,
  claim_precision, claim_recall, context_utilisation; ``claims`` names all five) are defined and
  scored by :mod:`ragmeter.answers.claims` (two prompts, several calls per answer); their scores
  are :class:`JudgedScore` s like the others. :func:`expand_metrics` reads a list of names.

Every :class:`JudgedScore` records the judge (name, model, params), the prompt id and the sha256
of the prompt file; a reply that failed or does not fit its task's shape (checked by
:func:`.judges._replies.check_reply` whichever judge produced it) is a score with ``ok=False``
and ``score=None``, counted as failed, never as a pass. :func:`require_one_config`
refuses to put scores from two judge configurations into one table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import UsageError
from .judges._prompts import Prompt, load_prompt
from .judges._protocol import Judge, JudgeInfo, JudgeRequest
from .judges._replies import check_reply


def _claims(data: Mapping[str, Any]) -> tuple[float, str, dict[str, Any]]:
    claims = data.get("claims")
    if not isinstance(claims, list) or not all(
        isinstance(c, Mapping) and isinstance(c.get("supported"), bool) for c in claims
    ):
        raise ValueError("expected {'claims': [{'claim': ..., 'supported': true|false}]}")
    if not claims:
        raise ValueError("the reply lists no claim (an empty claim list is a failure)")
    n_ok = sum(c["supported"] for c in claims)
    return (
        n_ok / len(claims),
        "supported" if n_ok == len(claims) else "unsupported",
        {
            "claims": [
                {"claim": str(c.get("claim", "")), "supported": c["supported"]} for c in claims
            ]
        },
    )


def _verdict(
    options: Mapping[str, float], key: str = "verdict"
) -> Callable[[Mapping[str, Any]], tuple[float, str, dict[str, Any]]]:
    def parse(data: Mapping[str, Any]) -> tuple[float, str, dict[str, Any]]:
        v = str(data.get(key, "")).strip().lower() if data.get(key) is not None else ""
        match = {k.lower(): k for k in options}
        if v not in match:
            raise ValueError(
                f"expected '{key}' to be one of {', '.join(options)}, got {data.get(key)!r}"
            )
        return options[match[v]], match[v], {}

    return parse


@dataclass(frozen=True)
class JudgeMetric:
    """A judged answer-level metric: its prompt task, declared inputs and reply parser."""

    name: str
    inputs: tuple[str, ...]
    description: str
    parse: Callable[[Mapping[str, Any]], tuple[float, str, dict[str, Any]]] = field(repr=False)


#: Human-readable meaning of each input, used in error messages.
INPUTS = {
    "question": "the question text (from the golden set)",
    "answer": "the generated answer (from the answers file)",
    "context": 'the passages in the prompt (answers\' "context" chunk ids plus the chunks)',
    "reference": 'the reference answer (the golden set\'s "answer")',
    "answer_a": "the first answer of the pair",
    "answer_b": "the second answer of the pair",
}

JUDGE_METRICS: dict[str, JudgeMetric] = {
    m.name: m
    for m in (
        JudgeMetric(
            "faithfulness",
            ("question", "answer", "context"),
            "claim-level support of the answer by its context",
            _claims,
        ),
        JudgeMetric(
            "context_relevance",
            ("question", "context"),
            "is the retrieved context focused on the question",
            _verdict({"yes": 1.0, "partly": 0.5, "no": 0.0}),
        ),
        JudgeMetric(
            "answer_relevance",
            ("question", "answer"),
            "does the answer address the question",
            _verdict({"yes": 1.0, "partly": 0.5, "no": 0.0}),
        ),
        JudgeMetric(
            "correctness",
            ("question", "answer", "reference"),
            "does the answer agree with the reference",
            _verdict({"correct": 1.0, "incorrect": 0.0}),
        ),
        JudgeMetric(
            "pairwise",
            ("question", "answer_a", "answer_b", "reference"),
            "which of two answers is better",
            _verdict({"A": 1.0, "B": 0.0, "tie": 0.5}, "winner"),
        ),
    )
}


#: the claim-level metrics (:mod:`ragmeter.answers.claims`), in report order
CLAIM_METRICS = (
    "claim_faithfulness",
    "hallucination",
    "claim_precision",
    "claim_recall",
    "context_utilisation",
)
#: the name that selects all of :data:`CLAIM_METRICS`
CLAIMS_ALIAS = "claims"
#: every name ``judge_metrics`` / ``[judge] metrics`` accepts
METRIC_NAMES = (*JUDGE_METRICS, *CLAIM_METRICS, CLAIMS_ALIAS)


def expand_metrics(names: Sequence[str]) -> list[str]:
    """``names`` with ``claims`` replaced by the five claim metrics, each name once, in order;
    UsageError naming an unknown one and the valid names."""
    out: list[str] = []
    for name in names:
        if name not in METRIC_NAMES:
            raise UsageError(f"unknown judge metric '{name}'; valid: {', '.join(METRIC_NAMES)}")
        out += CLAIM_METRICS if name == CLAIMS_ALIAS else [name]
    return list(dict.fromkeys(out))


def prompt_tasks(metric: str) -> tuple[str, ...]:
    """The prompt files (tasks) a metric name uses: its own, or ``claims`` and
    ``claim_support`` for a claim metric (and for ``claims``)."""
    if metric in CLAIM_METRICS or metric == CLAIMS_ALIAS:
        return ("claims", "claim_support")
    return (metric,)


@dataclass(frozen=True)
class JudgedScore:
    """One judged score with the configuration that produced it."""

    id: str
    metric: str
    ok: bool
    score: float | None
    label: str | None
    judge: JudgeInfo
    prompt: Mapping[str, str]
    error: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    cached: bool = False

    @property
    def config(self) -> tuple[str, str]:
        """(judge label, prompt id@sha) — two scores are comparable only when equal."""
        return self.judge.label, f"{self.prompt.get('id')}@{str(self.prompt.get('sha256'))[:12]}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "metric": self.metric,
            "ok": self.ok,
            "score": self.score,
            "label": self.label,
            "error": self.error,
            "detail": dict(self.detail),
            "cached": self.cached,
            "judge": self.judge.to_dict(),
            "prompt": dict(self.prompt),
        }


def get_metric(name: str) -> JudgeMetric:
    if name in CLAIM_METRICS or name == CLAIMS_ALIAS:
        raise UsageError(
            f"{name} is a claim-level metric, scored by several calls per answer: use "
            "ragmeter.answers.claims.judge_claims, or check_answers(judge_metrics=[...])"
        )
    try:
        return JUDGE_METRICS[name]
    except KeyError:
        raise UsageError(
            f"unknown judge metric '{name}'; valid: {', '.join(JUDGE_METRICS)}"
        ) from None


def missing_inputs(metric: JudgeMetric, items: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """input name -> ids of items lacking it (None or empty string counts as missing)."""
    return gaps_of(metric.inputs, items)


def gaps_of(inputs: Sequence[str], items: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """input name -> ids of the items lacking it (None or an empty string counts as missing)."""
    out: dict[str, list[str]] = {}
    for item in items:
        for name in inputs:
            v = item.get(name)
            if v is None or (isinstance(v, str) and not v.strip()):
                out.setdefault(name, []).append(str(item.get("id")))
    return out


def missing_error(metric: str, inputs: Sequence[str], gaps: Mapping[str, list[str]]) -> UsageError:
    """The refusal of a judge metric whose inputs some items lack: each input, how many items
    lack it and the first five ids."""
    parts = [
        f"'{name}' ({INPUTS.get(name, name)}) for {len(ids)} item(s): "
        f"{', '.join(ids[:5])}{' ...' if len(ids) > 5 else ''}"
        for name, ids in gaps.items()
    ]
    return UsageError(
        f"judge metric {metric} needs {', '.join(inputs)}; missing " + "; ".join(parts)
    )


def judge_metric(
    judge: Judge,
    metric: str | JudgeMetric,
    items: Sequence[Mapping[str, Any]],
    *,
    prompt: Prompt | None = None,
) -> list[JudgedScore]:
    """Judge ``items`` (dicts with ``id`` and the metric's inputs) with one prompt.

    Raises UsageError naming each missing input and the ids lacking it, before any call.
    """
    m = metric if isinstance(metric, JudgeMetric) else get_metric(metric)
    if judge is None or not hasattr(judge, "judge"):
        raise UsageError(
            f"{m.name} needs a judge: pass one explicitly (e.g. FakeJudge() for a "
            "demo, OpenAIJudge(...) for a model); ragmeter never picks one for you"
        )
    gaps = missing_inputs(m, items)
    if gaps:
        raise missing_error(m.name, m.inputs, gaps)
    p = prompt or load_prompt(m.name)
    requests = [
        JudgeRequest(
            m.name, p.render({k: item[k] for k in p.inputs}), {k: item[k] for k in m.inputs}
        )
        for item in items
    ]
    replies = judge.judge(requests)
    if len(replies) != len(requests):
        raise UsageError(f"judge returned {len(replies)} replies for {len(requests)} requests")
    info, pinfo = judge.info, p.to_dict()
    out = []
    for item, reply in zip(items, replies, strict=True):
        qid = str(item["id"])
        if not reply.ok or reply.data is None:
            out.append(
                JudgedScore(
                    qid, m.name, False, None, None, info, pinfo, reply.error or "judge failed"
                )
            )
            continue
        try:
            score, label, detail = m.parse(check_reply(m.name, reply.data))
        except ValueError as exc:
            out.append(
                JudgedScore(
                    qid,
                    m.name,
                    False,
                    None,
                    None,
                    info,
                    pinfo,
                    f"reply does not fit {p.id}: {exc}",
                    cached=reply.cached,
                )
            )
            continue
        reason = reply.data.get("reason")
        if reason is not None:
            detail = {**detail, "reason": str(reason)}
        out.append(
            JudgedScore(qid, m.name, True, score, label, info, pinfo, None, detail, reply.cached)
        )
    return out


def require_one_config(scores: Iterable[JudgedScore]) -> tuple[str, str] | None:
    """The single (judge, prompt) configuration of ``scores``; UsageError when mixed."""
    configs = {(s.metric, s.config) for s in scores}
    per_metric: dict[str, set[tuple[str, str]]] = {}
    for metric, cfg in configs:
        per_metric.setdefault(metric, set()).add(cfg)
    mixed = {m: c for m, c in per_metric.items() if len(c) > 1}
    if mixed:
        m, cfgs = next(iter(mixed.items()))
        listing = "; ".join(f"{j} with prompt {p}" for j, p in sorted(cfgs))
        raise UsageError(
            f"scores for {m} come from {len(cfgs)} judge configurations ({listing}); "
            "re-judge everything with one configuration before comparing"
        )
    judges = {cfg[0] for _, cfg in configs}
    return (judges.pop(), "") if len(judges) == 1 else None


@dataclass(frozen=True)
class PairwiseResult:
    """A pairwise judgement run in both orders; ``winner`` in terms of the original (a, b)."""

    id: str
    ab: str | None  # winner when a was shown first: "a", "b", "tie" or None (failed)
    ba: str | None  # winner when b was shown first, mapped back to "a"/"b"
    flipped: bool  # both orders succeeded and disagree

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "ab": self.ab, "ba": self.ba, "flipped": self.flipped}


def judge_pairwise(judge: Judge, items: Sequence[Mapping[str, Any]]) -> list[PairwiseResult]:
    """Ask ``judge`` which of ``answer_a``/``answer_b`` is better, in both orders.

    A flip is a pair whose preferred answer changes with the order shown (position bias).
    """
    swapped = [
        {**it, "answer_a": it.get("answer_b"), "answer_b": it.get("answer_a")} for it in items
    ]
    first = judge_metric(judge, "pairwise", items)
    second = judge_metric(judge, "pairwise", swapped)
    to_ab = {"A": "a", "B": "b", "tie": "tie"}
    to_ba = {"A": "b", "B": "a", "tie": "tie"}
    out = []
    for s1, s2 in zip(first, second, strict=True):
        w1 = to_ab[s1.label] if s1.ok and s1.label else None
        w2 = to_ba[s2.label] if s2.ok and s2.label else None
        out.append(PairwiseResult(s1.id, w1, w2, w1 is not None and w2 is not None and w1 != w2))
    return out
