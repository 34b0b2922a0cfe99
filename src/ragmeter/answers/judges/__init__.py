"""Model judges: the protocol, an OpenAI-compatible client, a fake judge, versioned prompts."""

from ._prompts import Prompt, load_prompt
from ._protocol import FAKE_LABEL, Judge, JudgeInfo, JudgeReply, JudgeRequest
from .fake import FakeJudge
from .openai import JudgeUsage, OpenAIJudge

__all__ = [
    "FAKE_LABEL",
    "FakeJudge",
    "Judge",
    "JudgeInfo",
    "JudgeReply",
    "JudgeRequest",
    "JudgeUsage",
    "OpenAIJudge",
    "Prompt",
    "load_prompt",
]
# DiskCache, cache_key (._cache) and parse_json_object (._protocol) are internals of the OpenAI
# client (parse_json_object raises a bare ValueError that the client turns into a retry), not
# public API: import them from their modules.
