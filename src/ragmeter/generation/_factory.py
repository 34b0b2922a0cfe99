"""Generators from an experiment file's ``[generator]`` table.

Shape (one backend per table)::

    [generator]
    kind = "openai"                    # or "local", "python"
    base_url = "http://127.0.0.1:8080/v1"
    model = "smollm2"
    api_key_env = "OPENAI_API_KEY"     # the NAME of the variable; never the key itself
    prompt = "answer-v1"               # a shipped prompt id, or a .txt file beside the file
    temperature = 0                    # defaults: temperature 0, seed 0, max_tokens 256
    seed = 0
    max_tokens = 256

- ``openai``: ``base_url`` and ``model`` (required), ``api_key_env``, ``timeout``,
  ``max_retries``, ``backoff``, ``max_backoff``, ``concurrency``, ``price_per_1k_prompt``,
  ``price_per_1k_completion``, ``max_reply_bytes``, ``params`` (a table of extra request
  params such as ``top_p``);
- ``local``: exactly one of ``gguf`` (a file) or ``model`` (a folder), relative to the
  experiment file; ``threads``, ``max_new_tokens``;
- ``python``: ``target = "pkg.module:function"`` or ``"file.py:function"`` (the experiment
  file's folder is importable; loaded as pipelines are, :mod:`ragmeter.retrieval.pipelines.
  _target`), ``version`` (bump it to re-make cached answers after editing code the function
  calls), ``on_error = "record" | "raise"``, ``timeout`` (seconds per call, default 300, 0 for
  no limit: :mod:`._callable`).

Every table may also set ``prompt``, ``temperature``, ``seed``, ``max_tokens``, ``cache``
(default true) and ``name``. A bad value is an :class:`InputError` naming the field
(``generator.timeout``); a key written into the file (``api_key``) is refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

from .._errors import InputError, UsageError
from ._cache import CachedGenerator
from ._prompts import DEFAULT_PROMPT
from ._protocol import DEFAULT_PARAMS, Generator

GENERATOR_KINDS: tuple[str, ...] = ("openai", "local", "python")
COMMON_FIELDS = ("kind", "prompt", "temperature", "seed", "max_tokens", "cache", "name")
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "openai": (
        "base_url",
        "model",
        "api_key_env",
        "timeout",
        "max_retries",
        "backoff",
        "max_backoff",
        "concurrency",
        "price_per_1k_prompt",
        "price_per_1k_completion",
        "max_reply_bytes",
        "params",
    ),
    "local": ("gguf", "model", "threads", "max_new_tokens"),
    "python": ("target", "version", "on_error", "timeout"),
}
_REQUIRED = {"openai": ("base_url", "model"), "python": ("target",)}
_STRINGS = ("base_url", "model", "api_key_env", "gguf", "target", "version", "on_error", "name")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: ``pkg.module:function`` or ``path/to/file.py:function`` (the pipelines' target grammar)
_TARGET = re.compile(r"^\S.*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
#: the longest timeout of a python generator's call (a day); 0 is no limit
MAX_PYTHON_TIMEOUT = 86_400.0
#: keys that belong beside [generator], not in it: a TOML key written after the [generator]
#: header is inside that table, which is how they usually land there
_NOT_GENERATOR = {
    "context": "context = {...} is set at the top level (above [generator]), in [baseline] or "
    "in a variant",
    "order": "order is set at the top level (above [generator]), in [baseline] or in a variant",
}


@dataclass(frozen=True)
class GeneratorConfig:
    """A checked ``[generator]`` table: the backend (``kind`` and its ``options``), the prompt
    id or path, the request params (over :data:`DEFAULT_PARAMS`), and whether to cache."""

    kind: str
    options: Mapping[str, Any]
    prompt: str = DEFAULT_PROMPT
    params: Mapping[str, Any] = field(default_factory=lambda: dict(DEFAULT_PARAMS))
    cache: bool = True
    name: str | None = None


def _bad(message: str, path: Any, table: str, name: str) -> InputError:
    return InputError(message, path=path, field=f"{table}.{name}")


def _check_value(name: str, value: Any) -> str | None:
    """Why ``value`` cannot be the field ``name``, or None."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    is_num = (is_int or isinstance(value, float)) and math.isfinite(value)
    if name in _STRINGS:
        return None if isinstance(value, str) and value.strip() else "must be a non-empty string"
    if name == "temperature":
        return None if is_num and 0 <= value <= 2 else "must be a number from 0 to 2"
    if name == "seed":
        return None if is_int else "must be an integer"
    if name in ("max_tokens", "threads", "max_new_tokens", "concurrency", "max_reply_bytes"):
        return None if is_int and value >= 1 else "must be a whole number >= 1"
    if name == "max_retries":
        return None if is_int and value >= 0 else "must be a whole number >= 0"
    if name in (
        "timeout",
        "backoff",
        "max_backoff",
        "price_per_1k_prompt",
        "price_per_1k_completion",
    ):
        return None if is_num and value >= 0 else "must be a number >= 0"
    if name == "cache":
        return None if isinstance(value, bool) else "must be true or false"
    if name == "params":
        return None if isinstance(value, Mapping) else "must be a table of request parameters"
    if name == "prompt":
        return None if isinstance(value, str) and value.strip() else "must be a prompt id or path"
    return None


def parse_generator(
    spec: Mapping[str, Any],
    *,
    path: str | PathLike[str] | None = None,
    table: str = "generator",
) -> GeneratorConfig:
    """Check a ``[generator]`` table (every error an :class:`InputError` naming the field)."""
    if not isinstance(spec, Mapping):
        raise InputError('must be a table, e.g. {kind = "openai", ...}', path=path, field=table)
    if "api_key" in spec:
        raise _bad(
            "never write an API key into the experiment file; set api_key_env to the name of "
            "the environment variable that holds it",
            path,
            table,
            "api_key",
        )
    kind = spec.get("kind")
    if kind not in GENERATOR_KINDS:
        raise _bad(
            f"must be one of {', '.join(GENERATOR_KINDS)}, got {kind!r}", path, table, "kind"
        )
    allowed = COMMON_FIELDS + KIND_FIELDS[kind]
    unknown = sorted(set(spec) - set(allowed))
    if unknown:
        hint = _NOT_GENERATOR.get(unknown[0])
        raise _bad(
            f"not a generator setting: {hint}; a key written below the [generator] header "
            "belongs to that table, so move it above the header"
            if hint
            else f"unknown setting for a {kind} generator; expected one of {', '.join(allowed)}",
            path,
            table,
            unknown[0],
        )
    for name in _REQUIRED.get(kind, ()):
        if name not in spec:
            raise _bad(f"a {kind} generator needs '{name}'", path, table, name)
    for name, value in spec.items():
        why = _check_value(name, value)
        if why is not None:
            raise _bad(f"{why}, got {value!r}", path, table, name)
    if kind == "local" and ("gguf" in spec) == ("model" in spec):
        raise _bad(
            "a local generator needs exactly one of 'gguf' (a .gguf file) or 'model' (a folder)",
            path,
            table,
            "gguf",
        )
    if kind == "openai" and "api_key_env" in spec and not _ENV_NAME.match(spec["api_key_env"]):
        raise _bad(
            "must be the NAME of an environment variable (letters, digits, _), e.g. "
            "OPENAI_API_KEY, never the key itself",
            path,
            table,
            "api_key_env",
        )
    if kind == "python":
        if not _TARGET.match(spec["target"]):
            raise _bad(
                "must look like 'package.module:function' or 'file.py:function', got "
                f"{spec['target']!r}",
                path,
                table,
                "target",
            )
        if spec.get("timeout", 0) > MAX_PYTHON_TIMEOUT:
            raise _bad(
                f"must be at most {MAX_PYTHON_TIMEOUT:g} seconds (0 for no limit), got "
                f"{spec['timeout']!r}",
                path,
                table,
                "timeout",
            )
        if spec.get("on_error", "record") not in ("record", "raise"):
            raise _bad(
                f"must be 'record' or 'raise', got {spec['on_error']!r}", path, table, "on_error"
            )
    params = {**DEFAULT_PARAMS}
    for name in ("temperature", "seed", "max_tokens"):
        if name in spec:
            params[name] = spec[name]
    return GeneratorConfig(
        kind,
        {k: v for k, v in spec.items() if k in KIND_FIELDS[kind]},
        str(spec.get("prompt", DEFAULT_PROMPT)),
        params,
        bool(spec.get("cache", True)),
        spec.get("name"),
    )


def _build(config: GeneratorConfig, base_dir: Path | None) -> Generator:
    opts = dict(config.options)
    if config.kind == "openai":
        from ._openai import OpenAIGenerator

        extra = opts.pop("params", None)
        return OpenAIGenerator(
            opts.pop("base_url"),
            opts.pop("model"),
            opts.pop("api_key_env", None),
            extra_params=extra,
            name=config.name,
            **opts,
        )
    if config.kind == "local":
        from ._local import LocalGenerator

        for key in ("gguf", "model"):
            if key in opts:
                p = Path(opts[key]).expanduser()
                opts[key] = p if p.is_absolute() or base_dir is None else base_dir / p
        gen = LocalGenerator(**opts)
        if config.name:
            gen.name = config.name
        return gen
    from ._callable import DEFAULT_TIMEOUT, CallableGenerator

    target = opts["target"]
    return CallableGenerator(
        _function(target, base_dir),
        name=config.name,
        version=opts.get("version", ""),
        on_error=opts.get("on_error", "record"),
        timeout=opts.get("timeout", DEFAULT_TIMEOUT),
        # a file target's module name holds a hash of its path: name it as the file does
        target=target if target.partition(":")[0].endswith(".py") else None,
    )


def _function(target: str, base_dir: Path | None) -> Any:
    """The user's generator function, imported and its signature checked."""
    from ..retrieval.pipelines import check_signature, load_target

    # the pipelines' loader: a syntax error, an exception or sys.exit() at import, a missing
    # name or a wrong signature is one UsageError naming the file and line, never a traceback
    fn = load_target(target, base_dir)
    check_signature(fn, target, ("question", "passages"), "(question, passages) -> answer")
    return fn


def check_generator(
    spec: Mapping[str, Any] | GeneratorConfig,
    base_dir: str | PathLike[str] | None = None,
    *,
    path: str | PathLike[str] | None = None,
    table: str = "generator",
) -> None:
    """Import and check the user's code a ``[generator]`` table names (kind python: the module
    imported, the function's signature checked), raising what :func:`make_generator` would,
    without building the generator: ``run_experiment`` checks every generator this way before
    any retrieval, so a broken module fails at once, not after the baseline's run. The module
    is imported once: :func:`make_generator` finds it imported."""
    config = (
        spec if isinstance(spec, GeneratorConfig) else parse_generator(spec, path=path, table=table)
    )
    if config.kind != "python":
        return
    folder = Path(base_dir) if base_dir is not None else None
    try:
        _function(config.options["target"], folder)
    except (UsageError, InputError) as exc:
        raise InputError(
            str(exc), path=path, field=f"{table}.{_field_of(str(exc), config)}"
        ) from None


def make_generator(
    spec: Mapping[str, Any] | GeneratorConfig,
    base_dir: str | PathLike[str] | None = None,
    *,
    path: str | PathLike[str] | None = None,
    table: str = "generator",
    cache_dir: str | PathLike[str] | None = None,
) -> Generator:
    """The generator a ``[generator]`` table describes (see the module docstring).

    ``base_dir`` is the experiment file's folder (relative model paths, importable targets);
    ``path`` the file itself, for messages. With ``cache_dir`` (the experiment's cache root)
    and ``cache`` not false, the generator is wrapped in a :class:`CachedGenerator`. A setting
    the backend refuses (a timeout out of bounds, an unset key variable, a target that cannot
    be imported) is an :class:`InputError` naming the field; a missing optional dependency is
    a :class:`MissingExtraError`.
    """
    config = (
        spec if isinstance(spec, GeneratorConfig) else parse_generator(spec, path=path, table=table)
    )
    folder = Path(base_dir) if base_dir is not None else None
    try:
        gen = _build(config, folder)
    except (UsageError, InputError) as exc:  # not MissingExtraError: it names the extra
        raise InputError(
            str(exc), path=path, field=f"{table}.{_field_of(str(exc), config)}"
        ) from None
    if cache_dir is not None and config.cache:
        return CachedGenerator(gen, cache_dir)
    return gen


def _field_of(message: str, config: GeneratorConfig) -> str:
    """The option a backend's refusal is about: the first one its message names."""
    hints = (
        ("environment variable", "api_key_env"),
        ("base URL", "base_url"),
        ("GGUF", "gguf"),
        ("model folder", "model"),
    )
    for hint, name in hints:
        if hint in message and name in config.options:
            return name
    names = sorted(config.options, key=len, reverse=True)  # max_backoff before backoff
    found = [(message.find(n), n) for n in names if n in message]
    if found:
        return min(found)[1]
    return "target" if config.kind == "python" else "kind"
