"""A local model in this process: a GGUF file or a model folder run by ``transformers`` on CPU.

Extra ``[local]`` (``transformers``, ``gguf``, ``accelerate``); torch is installed by the user
first, as a CPU wheel: ``pip install torch==2.13.0`` then ``pip install 'ragmeter[local]'``. A
missing piece is a :class:`~ragmeter._errors.MissingExtraError` naming both commands, raised when
the generator is built, before any question is sent.

Nothing touches the network: ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` are set before
``transformers`` is imported and every load passes ``local_files_only=True``, so a missing file
fails at once. The tokenizer (and its chat template) comes from the same GGUF file or folder as
the weights, so the prompt is the one the model was trained to read.

Decoding is greedy when ``temperature`` is 0 (the default) and sampled otherwise, with torch's
seed set from the request's ``seed`` before every question, so an answer does not depend on the
questions asked before it. The fingerprint (part of the answer cache key) is the sha256 of the
weights plus the fixed generation options; hashing a 100 MB GGUF takes a fraction of a second
and is remembered per (path, size, mtime) for the life of the process.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._errors import InputError, MissingExtraError, UsageError
from .._extras import require
from ._protocol import DEFAULT_PARAMS, Generation, GenerationRequest, Progress

#: How to install what this backend needs (torch first, as a CPU wheel).
TORCH_INSTALL = "pip install torch==2.13.0"
#: Request params this backend understands; any other is a configuration error.
KNOWN_PARAMS = frozenset({"temperature", "seed", "max_tokens", "top_p"})
_PURPOSE = "the local model (generator kind 'local')"

# (resolved path, size, mtime_ns) -> sha256 hex; a folder keys on all its files' stats
_DIGESTS: dict[tuple[Any, ...], str] = {}


def _file_stats(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns)


def _hash_files(files: Sequence[Path], root: Path | None) -> str:
    h = hashlib.sha256()
    for f in files:
        if root is not None:  # a folder: the names are part of the model
            h.update(str(f.relative_to(root)).encode("utf-8") + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def weights_digest(path: Path) -> str:
    """sha256 of a GGUF file, or of every file of a model folder (names and bytes), cached by
    size and modification time so a re-run does not hash 100 MB again."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        key: tuple[Any, ...] = ("dir", *(_file_stats(f) for f in files))
        root: Path | None = path
    else:
        files, key, root = [path], _file_stats(path), None
    if key not in _DIGESTS:
        _DIGESTS[key] = _hash_files(files, root)
    return _DIGESTS[key]


def missing_torch_error(package: str) -> MissingExtraError:
    """The error for a missing torch / transformers / gguf / accelerate: names both installs."""
    return MissingExtraError("local", package, _PURPOSE, first=f"{TORCH_INSTALL} (a CPU wheel)")


def _check_installed(gguf: bool) -> None:
    """Fail before any question is sent when a piece of the backend is missing (no import:
    importing torch takes seconds; the generator loads it on first use)."""
    needed = ["torch", "transformers"] + (["gguf", "accelerate"] if gguf else [])
    for module in needed:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken install or a module set to None
            found = False
        if not found:
            raise missing_torch_error(module)


class LocalGenerator:
    """Answers with a local model through ``transformers`` on CPU.

    Exactly one of ``gguf`` (a ``.gguf`` file, e.g. SmolLM2-135M-Instruct Q4_1) and ``model``
    (a folder saved with ``save_pretrained``: config, weights, tokenizer). ``max_new_tokens``
    bounds an answer when a request gives no ``max_tokens``; ``threads`` sets torch's CPU
    threads while it loads and answers (None: torch's default, one per core; on a machine
    shared with other busy processes, fewer threads than cores is much faster). The model is
    loaded on first use (:meth:`load`). ``calls`` counts the questions sent to the model
    (cache hits never reach it).
    """

    def __init__(
        self,
        *,
        gguf: str | os.PathLike[str] | None = None,
        model: str | os.PathLike[str] | None = None,
        max_new_tokens: int = int(DEFAULT_PARAMS["max_tokens"]),
        threads: int | None = None,
    ) -> None:
        if (gguf is None) == (model is None):
            raise UsageError("a local generator needs exactly one of 'gguf' (a file) or 'model'")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
            raise UsageError(f"max_new_tokens must be a whole number, got {max_new_tokens!r}")
        if max_new_tokens < 1:
            raise UsageError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise UsageError(f"threads must be a whole number >= 1, got {threads!r}")
        if gguf is not None:
            self.path = Path(gguf)
            if not self.path.is_file():
                raise InputError("GGUF model file not found", path=self.path)
        else:
            self.path = Path(model)  # type: ignore[arg-type]
            if not (self.path / "config.json").is_file():
                raise InputError(
                    "is not a model folder (expected config.json and the weights, as "
                    "save_pretrained writes them)",
                    path=self.path,
                )
        self.is_gguf = gguf is not None
        self.max_new_tokens = max_new_tokens
        self.threads = threads
        self.name = f"local:{self.path.name}"
        self.calls = 0
        self.load_seconds: float | None = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._torch: Any = None
        _check_installed(self.is_gguf)

    def fingerprint(self) -> str:
        """The weights' sha256 and the fixed options that change answers (not the request's
        params, which the answer cache keys on separately). Not the file's name: the same
        bytes renamed or linked elsewhere give the same answers, so they share the cache."""
        kind = "gguf" if self.is_gguf else "folder"
        return (
            f"local/transformers/{kind}/sha256={weights_digest(self.path)}"
            f"/dtype=float32/default_max_tokens={self.max_new_tokens}"
        )

    def load(self) -> None:
        """Import torch and transformers and load the tokenizer and the weights (once)."""
        if self._model is not None:
            return
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        started = time.perf_counter()
        try:
            torch = require("torch", _PURPOSE)
            transformers = require("transformers", _PURPOSE)
        except MissingExtraError as exc:
            raise missing_torch_error(exc.package) from exc
        folder, kwargs = self._where()
        try:
            with _quiet_load(transformers), self._threads(torch):
                tokenizer = transformers.AutoTokenizer.from_pretrained(folder, **kwargs)
                model = transformers.AutoModelForCausalLM.from_pretrained(
                    folder, **kwargs, **_dtype_kwarg(transformers, torch)
                )
        except Exception as exc:  # a damaged or foreign file fails in many ways (struct.error...)
            raise InputError(
                f"cannot load the model ({type(exc).__name__}: {exc})", path=self.path
            ) from exc
        if not getattr(tokenizer, "chat_template", None):
            raise InputError(
                "the model's tokenizer has no chat template: use an instruction-tuned (chat) model",
                path=self.path,
            )
        model.eval()
        self._torch, self._tokenizer, self._model = torch, tokenizer, model
        self.load_seconds = time.perf_counter() - started

    @contextmanager
    def _threads(self, torch: Any) -> Iterator[None]:
        """torch's thread count for this model only; the process's setting is restored after."""
        before = torch.get_num_threads()
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        try:
            yield
        finally:
            if self.threads is not None:
                torch.set_num_threads(before)

    def _where(self) -> tuple[str, dict[str, Any]]:
        kwargs: dict[str, Any] = {"local_files_only": True}
        if self.is_gguf:
            kwargs["gguf_file"] = self.path.name
            return str(self.path.parent), kwargs
        return str(self.path), kwargs

    def generate(
        self, requests: Sequence[GenerationRequest], progress: Progress | None = None
    ) -> list[Generation]:
        """One answer per request, in order; a question that fails carries its error."""
        for req in requests:
            _check_params(req.params)
        if requests:
            self.load()
        out: list[Generation] = []
        for i, req in enumerate(requests, 1):
            out.append(self._answer(req))
            if progress is not None:
                progress(i, len(requests))
        return out

    def _answer(self, req: GenerationRequest) -> Generation:
        started = time.perf_counter()
        self.calls += 1
        try:
            text, usage = self._run(req)
        except Exception as exc:  # one question's failure is recorded, never raised
            return Generation(
                req.question_id,
                "",
                seconds=time.perf_counter() - started,
                error=f"{type(exc).__name__}: {exc}",
            )
        from ._citations import parse_citations

        return Generation(
            req.question_id,
            text,
            citations=parse_citations(text, req.context),
            usage=usage,
            seconds=time.perf_counter() - started,
        )

    def _run(self, req: GenerationRequest) -> tuple[str, dict[str, Any]]:
        torch, tok, model = self._torch, self._tokenizer, self._model
        given = {k: v for k, v in req.params.items() if v is not None}
        params = {**DEFAULT_PARAMS, "max_tokens": self.max_new_tokens, **given}
        enc = tok.apply_chat_template(
            [dict(m) for m in req.messages],
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
        )
        n_in = int(enc["input_ids"].shape[1])
        limit = getattr(model.config, "max_position_embeddings", None)
        max_new = int(params["max_tokens"])
        if limit is not None and n_in + max_new > limit:
            raise ValueError(
                f"the prompt has {n_in} tokens; with max_tokens={max_new} it exceeds the "
                f"model's context of {limit} tokens"
            )
        temperature = float(params["temperature"])
        options: dict[str, Any] = {"max_new_tokens": max_new, "do_sample": temperature > 0}
        if temperature > 0:
            options["temperature"] = temperature
            if params.get("top_p") is not None:
                options["top_p"] = float(params["top_p"])
        else:  # greedy: the model's own sampling defaults must not leak in
            options.update(temperature=None, top_p=None, top_k=None)
        if tok.pad_token_id is None:
            options["pad_token_id"] = tok.eos_token_id
        torch.manual_seed(int(params["seed"]))
        with torch.inference_mode(), self._threads(torch):
            out = model.generate(**enc, **options)
        new = out[0][n_in:]
        text = tok.decode(new, skip_special_tokens=True).strip()
        return text, {"prompt_tokens": n_in, "completion_tokens": int(new.shape[0])}


def _check_params(params: Mapping[str, Any]) -> None:
    unknown = sorted(set(params) - KNOWN_PARAMS)
    if unknown:
        raise UsageError(
            f"the local generator does not understand parameter(s) {', '.join(unknown)}; "
            f"it takes {', '.join(sorted(KNOWN_PARAMS))}"
        )
    for name in ("max_tokens", "seed"):
        value = params.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise UsageError(f"parameter {name} must be a whole number, got {value!r}")
    if params.get("max_tokens") is not None and params["max_tokens"] < 1:
        raise UsageError(f"parameter max_tokens must be >= 1, got {params['max_tokens']}")
    t = params.get("temperature")
    if t is not None and (isinstance(t, bool) or not isinstance(t, int | float) or t < 0):
        raise UsageError(f"parameter temperature must be a number >= 0, got {t!r}")
    p = params.get("top_p")
    if p is not None and (isinstance(p, bool) or not isinstance(p, int | float) or not 0 < p <= 1):
        raise UsageError(f"parameter top_p must be a number in (0, 1], got {p!r}")


@contextmanager
def _quiet_load(transformers: Any) -> Iterator[None]:
    """No progress bars while loading: a load is not a question's progress, and the GGUF
    converter draws its own ``tqdm`` bar, outside transformers' switch."""
    log = transformers.utils.logging
    bars = log.is_progress_bar_enabled()
    log.disable_progress_bar()
    gguf_utils = sys.modules.get("transformers.modeling_gguf_pytorch_utils")
    if gguf_utils is None:
        try:
            gguf_utils = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
        except ImportError:  # an older or newer layout: the bar shows, nothing breaks
            gguf_utils = None
    bar = getattr(gguf_utils, "tqdm", None)
    if bar is not None:
        gguf_utils.tqdm = functools.partial(bar, disable=True)  # type: ignore[union-attr]
    try:
        yield
    finally:
        if bar is not None:
            gguf_utils.tqdm = bar  # type: ignore[union-attr]
        if bars:
            log.enable_progress_bar()


def _dtype_kwarg(transformers: Any, torch: Any) -> dict[str, Any]:
    """float32 on CPU (bfloat16 checkpoints are slow there); ``dtype`` was ``torch_dtype``
    before transformers 4.56."""
    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    name = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
    return {name: torch.float32}
