"""The OpenAI-compatible chat transport below answer generation and the judges: one POST to
``/chat/completions`` with retries, timeouts, a reply cap and concurrency (:class:`ChatClient`),
the usage it counts (:class:`ChatUsage`) and the disk cache of replies
(:class:`DiskCache`, keyed by :func:`cache_key`). It knows nothing of what a reply must say: the
judge checks for its task's JSON object, the generator accepts any text.
"""

from ._cache import DiskCache, cache_key
from ._client import (
    MAX_CONCURRENCY,
    MAX_REPLY_BYTES,
    MAX_REPLY_CAP,
    MAX_RETRIES,
    MAX_TIMEOUT_S,
    ChatClient,
    ChatReply,
    Check,
)
from ._usage import ChatUsage

__all__ = [
    "MAX_CONCURRENCY",
    "MAX_REPLY_BYTES",
    "MAX_REPLY_CAP",
    "MAX_RETRIES",
    "MAX_TIMEOUT_S",
    "ChatClient",
    "ChatReply",
    "ChatUsage",
    "Check",
    "DiskCache",
    "cache_key",
]
