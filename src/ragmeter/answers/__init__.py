"""Answer-level evaluation: answers files, correctness, abstention, deterministic faithfulness,
judges and their validation, prompt contexts."""

from ._schema import (
    Answer,
    AnswerSet,
    Citation,
    answers_from_records,
    load_answers,
    require_same_questions,
)
from .abstention import AbstentionSummary, abstention_verdict
from .correctness import (
    CORRECT_RULE,
    Correctness,
    exact_match,
    normalize_answer,
    score_correctness,
    token_f1,
    value_match,
)
from .faithfulness import Faithfulness, QuoteCheck, check_faithfulness, extract_quotes
from .judge_validation import JudgeValidation, cohen_kappa, validate_judge
from .judged import JUDGE_METRICS, JudgedScore, judge_metric, judge_pairwise, require_one_config
from .paired import compare_answers
from .report import AnswerCheck, AnswerReport, FaithfulButWrong, check_answers

__all__ = [
    "CORRECT_RULE",
    "JUDGE_METRICS",
    "AbstentionSummary",
    "Answer",
    "AnswerCheck",
    "AnswerReport",
    "AnswerSet",
    "Citation",
    "Correctness",
    "FaithfulButWrong",
    "Faithfulness",
    "JudgeValidation",
    "JudgedScore",
    "QuoteCheck",
    "abstention_verdict",
    "answers_from_records",
    "check_answers",
    "check_faithfulness",
    "cohen_kappa",
    "compare_answers",
    "exact_match",
    "extract_quotes",
    "judge_metric",
    "judge_pairwise",
    "load_answers",
    "normalize_answer",
    "require_one_config",
    "require_same_questions",
    "score_correctness",
    "token_f1",
    "validate_judge",
    "value_match",
]
