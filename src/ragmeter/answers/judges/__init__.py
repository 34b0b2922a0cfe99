"""Model judges: the protocol, an OpenAI-compatible client, a fake judge, versioned prompts."""

from ._build import JUDGE_KINDS, JudgeOptions, make_judge
from ._plan import JudgePlan, PlanningJudge
from ._prompts import Prompt, load_prompt
from ._protocol import FAKE_LABEL, Judge, JudgeInfo, JudgeReply, JudgeRequest
from ._usage import tokens_unknown, usage_between, usage_reading
from .fake import FakeJudge
from .openai import JudgeUsage, OpenAIJudge

__all__ = [
    "FAKE_LABEL",
    "JUDGE_KINDS",
    "FakeJudge",
    "Judge",
    "JudgeInfo",
    "JudgeOptions",
    "JudgePlan",
    "JudgeReply",
    "JudgeRequest",
    "JudgeUsage",
    "OpenAIJudge",
    "PlanningJudge",
    "Prompt",
    "load_prompt",
    "make_judge",
    "tokens_unknown",
    "usage_between",
    "usage_reading",
]
# parse_json_object (._protocol) is an internal of the OpenAI judge (it raises a bare ValueError
# that the client turns into a retry), not public API: import it from its module. The chat
# transport and its reply cache are ragmeter.chat's.
