"""FakeJudge: deterministic rules standing in for a model judge in tests and demos.

It reads the raw inputs of each request, not the prompt text, and every reply it gives carries
``"judge": "FAKE JUDGE"`` and a reason starting with ``FAKE JUDGE:``; its :class:`JudgeInfo` is
marked ``fake``, so every report that shows its scores says so. Never use its numbers as evidence.

Rules (content words: normalised tokens of 3+ letters that are not stop words)
- faithfulness: each sentence of the answer is a claim; supported when >= 60% of its content
  words appear in the context and every money/duration/percentage/date it states appears there.
- context_relevance / answer_relevance: share of the question's content words found in the
  context / answer: >= 0.5 "yes", >= 0.2 "partly", else "no".
- correctness: ragmeter's deterministic correctness rule against the reference.
- pairwise: the answer with the higher token F1 against the reference wins; equal F1 is a "tie",
  or "A" (the first shown) when ``position_bias=True`` (to exercise order-flip counting).
- claims (claim split): each sentence of the text is a claim (split after ``.``, ``!`` or ``?``
  followed by white space); the question is not used, so a bare reference (``$75``) is one
  claim, ``$75``.
- claim_support: a claim is supported by a passage when every one of its claim words appears in
  the passage. Claim words (:func:`claim_words`): lower-cased runs of letters and digits (``$75``
  gives ``75``, ``$75.50`` gives ``75`` and ``50``), minus the short stop list
  :data:`CLAIM_STOPWORDS` (articles, forms of "be", prepositions, pronouns; never a negation).
  A check against the reference answer (inputs ``question`` and ``reference``, the passage
  ``Question: ...`` / ``Reference answer: ...``) uses the words of the question and of the
  reference together, never the passage's two labels: "The change fee for a Standard fare is
  $75" is supported by the question "What is the change fee for a Standard fare?" with the
  reference "$75".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..._errors import UsageError
from .._values import extract_values
from ..correctness import score_correctness, token_f1
from ..faithfulness import normalize_quote
from ._protocol import FAKE_LABEL, JudgeInfo, JudgeReply, JudgeRequest

_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "are",
        "was",
        "were",
        "with",
        "that",
        "this",
        "from",
        "not",
        "but",
        "can",
        "has",
        "have",
        "had",
        "its",
        "into",
        "than",
        "then",
        "there",
        "their",
        "them",
        "they",
        "you",
        "your",
        "our",
        "any",
        "all",
        "per",
        "may",
        "will",
        "would",
        "should",
        "could",
        "does",
        "did",
        "what",
        "which",
        "when",
        "where",
        "who",
        "how",
        "why",
        "about",
        "after",
        "before",
        "within",
        "under",
        "over",
        "also",
        "only",
    ]
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
#: words a claim may lack in its passage and still be supported (no negation: "not", "no" and
#: "never" must be found like any other word)
CLAIM_STOPWORDS = frozenset(
    (
        "a an the is are was were be been being am it its this that these those there here "
        "of to in on at by for with from as into onto and or if then so than "
        "he she they them their his her we our you your i me my do does did has have had"
    ).split()
)
_CLAIM_WORD = re.compile(r"[a-z0-9]+")


def claim_words(text: str) -> set[str]:
    """The claim words of ``text`` (see module docstring: the claim_support rule)."""
    return {w for w in _CLAIM_WORD.findall(text.lower()) if w not in CLAIM_STOPWORDS}


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: the fake judge's claims."""
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


_UNIT_KINDS = ("money", "duration", "percent", "date")


def _words(text: str) -> set[str]:
    return {w for w in normalize_quote(text).split() if len(w) >= 3 and w not in _STOP}


def _share(needles: set[str], hay: set[str]) -> float:
    return len(needles & hay) / len(needles) if needles else 0.0


def _verdict(share: float) -> str:
    return "yes" if share >= 0.5 else "partly" if share >= 0.2 else "no"


class FakeJudge:
    """A rule-based judge (see module docstring). Deterministic; makes no network call."""

    def __init__(self, *, position_bias: bool = False) -> None:
        self.position_bias = position_bias
        self.calls = 0

    @property
    def info(self) -> JudgeInfo:
        return JudgeInfo(
            f"{FAKE_LABEL} (rule-based, not a model)",
            "fake-rules-v1",
            {"position_bias": self.position_bias},
            fake=True,
        )

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        out = []
        for req in requests:
            self.calls += 1
            try:
                data = self._rule(req.task, req.inputs)
            except KeyError as exc:
                out.append(JudgeReply(False, None, None, f"{FAKE_LABEL}: missing input {exc}", 1))
                continue
            data = {**data, "judge": FAKE_LABEL}
            out.append(JudgeReply(True, data, json.dumps(data), None, 1))
        return out

    def _rule(self, task: str, x: Mapping[str, Any]) -> dict[str, Any]:
        if task == "faithfulness":
            ctx = str(x["context"])
            ctx_words, ctx_values = _words(ctx), extract_values(ctx)
            claims = []
            for sent in (s for s in _SENTENCE.split(str(x["answer"]).strip()) if s):
                vals = {v for v in extract_values(sent) if v[0] in _UNIT_KINDS}
                ok = _share(_words(sent), ctx_words) >= 0.6 and vals <= ctx_values
                claims.append({"claim": sent, "supported": ok})
            return {"claims": claims, "reason": f"{FAKE_LABEL}: word overlap with the context"}
        if task in ("context_relevance", "answer_relevance"):
            other = x["context"] if task == "context_relevance" else x["answer"]
            share = _share(_words(str(x["question"])), _words(str(other)))
            return {
                "verdict": _verdict(share),
                "reason": f"{FAKE_LABEL}: {share:.0%} of the question's words found",
            }
        if task == "correctness":
            c = score_correctness(str(x["answer"]), str(x["reference"]))
            return {
                "verdict": "correct" if c.correct else "incorrect",
                "reason": f"{FAKE_LABEL}: {c.reason}",
            }
        if task == "pairwise":
            ref = str(x["reference"])
            fa, fb = token_f1(str(x["answer_a"]), ref), token_f1(str(x["answer_b"]), ref)
            winner = "A" if fa > fb else "B" if fb > fa else ("A" if self.position_bias else "tie")
            return {"winner": winner, "reason": f"{FAKE_LABEL}: token F1 {fa:.2f} vs {fb:.2f}"}
        if task == "claims":
            return {
                "claims": sentences(str(x["text"])),
                "reason": f"{FAKE_LABEL}: one claim per sentence",
            }
        if task == "claim_support":
            if "reference" in x:  # against the reference: its question and it, not the labels
                have = claim_words(str(x["question"])) | claim_words(str(x["reference"]))
            else:
                have = claim_words(str(x["passage"]))
            verdicts = [
                {"claim": n, "supported": claim_words(str(c)) <= have}
                for n, c in enumerate(x["claims"], 1)
            ]
            return {
                "verdicts": verdicts,
                "reason": f"{FAKE_LABEL}: every claim word found in the "
                + ("question and the reference" if "reference" in x else "passage"),
            }
        # a UsageError, not a NotFoundError: judge() turns a KeyError into "missing input"
        raise UsageError(
            f"the fake judge has no rule for task '{task}'; it knows "
            "faithfulness, answer_relevance, context_relevance, correctness, "
            "pairwise, claims, claim_support"
        )
