"""A pipeline from an experiment file's retriever table, and LlamaIndex kept offline.

``{kind = "python", target = "mypkg.rag:retrieve"}``: ``target`` is the function itself.
``{kind = "langchain" | "llamaindex", target = "mypkg.rag:make_retriever"}``: ``target`` is the
retriever object, or a function called with no arguments that returns it (the usual way: the
module builds its index when asked, not when imported).

``timeout`` (seconds, default :data:`._calls.DEFAULT_TIMEOUT`, 0 for no limit) bounds each
question's call (:mod:`._calls`).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from ..._errors import UsageError
from ._adapters import CallablePipeline, LangChainPipeline, LlamaIndexPipeline, Pipeline
from ._calls import DEFAULT_TIMEOUT, check_timeout
from ._stdout import user_code
from ._target import check_signature, load_target, user_failure

#: the NLTK data llama-index-core loads for its sentence splitter and stopwords, and downloads
#: when it does not find it
NLTK_PACKAGES = ("corpora/stopwords", "tokenizers/punkt_tab")


def load_pipeline(spec: dict[str, Any], base_dir: str | os.PathLike[str] | None = None) -> Pipeline:
    """The :class:`Pipeline` of a normalised retriever spec of kind python, langchain or
    llamaindex; ``base_dir`` is where a relative target is looked up (the experiment's folder).
    """
    kind, target, timeout, obj = _target_of(spec, base_dir)
    if kind == "python":
        return CallablePipeline(obj, name=target, timeout=timeout)
    if _builder(kind, target, obj):
        try:
            with user_code():
                obj = obj()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # building the user's retriever failed: nothing can run
            base = Path(base_dir) if base_dir is not None else Path.cwd()
            raise user_failure(target, exc, base, "building the retriever") from exc
    if kind == "langchain":
        return LangChainPipeline(
            obj, doc_key=spec.get("doc_key", "source"), name=target, timeout=timeout
        )
    return LlamaIndexPipeline(obj, name=target, timeout=timeout)


def check_pipeline(spec: dict[str, Any], base_dir: str | os.PathLike[str] | None = None) -> None:
    """Import the module a pipeline spec names and check its target as :func:`load_pipeline`
    will use it (its signature; a LangChain or LlamaIndex target is a retriever or a function
    of no arguments), without calling it: ``run_experiment`` checks every pipeline this way
    before any retrieval, so a broken module fails at once, not after the baseline's run.
    Importing is done once: :func:`load_pipeline` finds the module already imported."""
    kind, target, _timeout, obj = _target_of(spec, base_dir)
    if kind != "python":
        _builder(kind, target, obj)


def _target_of(
    spec: dict[str, Any], base_dir: str | os.PathLike[str] | None
) -> tuple[str, str, float | None, Any]:
    """(kind, target, timeout, the object the target names), the spec and the object checked
    (a python target's signature)."""
    kind, target = spec.get("kind"), spec.get("target")
    if kind not in ("python", "langchain", "llamaindex") or not isinstance(target, str):
        raise UsageError(f"not a pipeline spec: {spec!r}")
    if kind == "llamaindex":
        check_llamaindex_offline()
    timeout = check_timeout(spec.get("timeout", DEFAULT_TIMEOUT), "the pipeline's timeout")
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    obj = load_target(target, base)
    if kind == "python":
        check_signature(obj, target, ("question",), "question -> hits")
    return kind, target, timeout, obj


def _builder(kind: str, target: str, obj: Any) -> bool:
    """Whether ``obj`` is a function that builds the retriever (else it is the retriever);
    a UsageError when it is neither."""
    method = "invoke" if kind == "langchain" else "retrieve"
    if callable(getattr(obj, method, None)):
        return False
    if not callable(obj):
        raise UsageError(
            f"target {target!r} is a {type(obj).__name__}: give a {kind} retriever or a "
            "function that returns one"
        )
    check_signature(obj, target, (), f"of no arguments that returns a {kind} retriever")
    return True


def check_llamaindex_offline() -> None:
    """Refuse to start a LlamaIndex pipeline that would download NLTK data.

    llama-index-core ships the NLTK data its sentence splitter needs and uses it, unless the
    ``NLTK_DATA`` environment variable names another folder: then it downloads what that
    folder lacks, which fails (or waits) on an offline machine with an unhelpful message. This
    check says what is missing and how to fix it, before any user code runs."""
    folder = os.environ.get("NLTK_DATA")
    if folder:
        missing = _missing(Path(folder))
        if missing:
            raise UsageError(
                f"NLTK_DATA={folder} lacks {', '.join(missing)}, which llama-index-core would "
                "try to download (ragmeter runs offline). Unset NLTK_DATA to use the copy "
                "llama-index-core ships with, or add the data: python -m nltk.downloader "
                f"-d {folder} stopwords punkt_tab"
            )
        return
    try:
        spec = importlib.util.find_spec("llama_index.core")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return  # not installed: importing the target says so
    bundled = Path(next(iter(spec.submodule_search_locations))) / "_static" / "nltk_cache"
    missing = _missing(bundled)
    if missing:
        raise UsageError(
            f"this llama-index-core has no {', '.join(missing)} in {bundled} and would try to "
            "download it (ragmeter runs offline): set NLTK_DATA to a folder that holds "
            "stopwords and punkt_tab"
        )


def _missing(folder: Path) -> list[str]:
    return [
        name
        for name in NLTK_PACKAGES
        if not (folder / name).exists() and not (folder / f"{name}.zip").exists()
    ]
