"""Answer generation: context assembly, versioned prompts, generators and the answer cache.

The chain's last link run by ragmeter itself: retrieved passages are assembled into a context
(:func:`assemble`; or, for the context ablations, the labelled evidence or nothing:
:func:`source_context`), a versioned prompt turns question and context into chat messages
(:func:`load_prompt`, :func:`make_request`), a :class:`Generator` answers (an OpenAI-compatible
server, a local model, or the user's own function), citations are parsed back to passage ids,
and every answer is cached by (generator, prompt version, context hash, params).
"""

from ._assemble import (
    ORDERS,
    AssembledContext,
    ContextPassage,
    ContextSpec,
    Passage,
    arrange,
    assemble,
    dedupe,
)
from ._assemble import (
    SOURCES as CONTEXT_SOURCES,
)
from ._cache import CachedGenerator, CacheStats, answer_key
from ._callable import CallableGenerator
from ._checked import checked
from ._citations import Citations, find_citations, parse_citations
from ._factory import (
    GENERATOR_KINDS,
    GeneratorConfig,
    check_generator,
    make_generator,
    parse_generator,
)
from ._openai import OpenAIGenerator
from ._oracle import source_context
from ._prompts import (
    ABSTAIN_PHRASE,
    DEFAULT_PROMPT,
    PromptTemplate,
    load_prompt,
    make_request,
    shipped_prompts,
)
from ._protocol import DEFAULT_PARAMS, Generation, GenerationRequest, Generator, Progress

__all__ = [
    "ABSTAIN_PHRASE",
    "CONTEXT_SOURCES",
    "DEFAULT_PARAMS",
    "DEFAULT_PROMPT",
    "GENERATOR_KINDS",
    "ORDERS",
    "AssembledContext",
    "CacheStats",
    "CachedGenerator",
    "CallableGenerator",
    "Citations",
    "ContextPassage",
    "ContextSpec",
    "Generation",
    "GenerationRequest",
    "Generator",
    "GeneratorConfig",
    "OpenAIGenerator",
    "Passage",
    "Progress",
    "PromptTemplate",
    "answer_key",
    "arrange",
    "assemble",
    "check_generator",
    "checked",
    "dedupe",
    "find_citations",
    "load_prompt",
    "make_generator",
    "make_request",
    "parse_citations",
    "parse_generator",
    "shipped_prompts",
    "source_context",
]
