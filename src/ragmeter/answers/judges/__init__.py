"""Model judges: the protocol, an OpenAI-compatible client, a fake judge, versioned prompts."""

from ._cache import DiskCache, cache_key
from ._prompts import Prompt, load_prompt
from ._protocol import FAKE_LABEL, Judge, JudgeInfo, JudgeReply, JudgeRequest, parse_json_object
from .fake import FakeJudge
from .openai import JudgeUsage, OpenAIJudge

__all__ = [
           "FAKE_LABEL",
           "DiskCache",
           "FakeJudge",
           "Judge",
           "JudgeInfo",
           "JudgeReply",
           "JudgeRequest",
           "JudgeUsage",
           "OpenAIJudge",
           "Prompt",
           "cache_key",
           "load_prompt",
           "parse_json_object",
]
