"""The callable generator, the answer cache around any generator, and make_generator."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ragmeter._errors import InputError, UsageError
from ragmeter.generation import (
    CachedGenerator,
    CallableGenerator,
    ContextSpec,
    Generation,
    Generator,
    GeneratorConfig,
    Passage,
    answer_key,
    assemble,
    load_prompt,
    make_generator,
    make_request,
    parse_generator,
)

PASSAGES = [
    Passage("fares#0-40", "fares", 0, 40, "The change fee is $75.", 6, 1),
    Passage("bags#0-30", "bags", 0, 30, "One checked bag is free.", 6, 2),
    Passage("rules#0-30", "rules", 0, 30, "Refunds within 24 hours.", 6, 3),
]
QUESTIONS = {"q1": "What is the change fee?", "q2": "Is a bag free?", "q3": "Can I get a refund?"}


def _requests(order: str = "rank", prompt: str = "answer-v1", params: Any = None):
    p = load_prompt(prompt)
    return [
        make_request(qid, q, assemble(qid, PASSAGES, ContextSpec(order=order)), p, params)
        for qid, q in QUESTIONS.items()
    ]


def answerer(question: str, passages: list[Passage]) -> Any:
    """A deterministic 'pipeline': answers from the first passage, cites it by id."""
    if "refund" in question:
        raise RuntimeError("index offline")
    if "bag" in question:
        return "Yes, one bag [2].", None
    return f"{passages[0].text}", [passages[0].id, 9]


def test_callable_answers_errors_and_citations() -> None:
    gen = CallableGenerator(answerer)
    assert isinstance(gen, Generator)
    out = gen.generate(_requests())
    assert [g.question_id for g in out] == ["q1", "q2", "q3"]
    assert out[0].text == "The change fee is $75." and out[0].citations == ("fares#0-40",)
    assert out[0].unknown_citations == ("9",)
    assert out[1].citations == ("bags#0-30",)  # parsed from the text's [2]
    assert out[2].error == "RuntimeError: index offline" and out[2].text == ""
    assert not out[2].ok and out[0].ok
    assert gen.errors == 1 and gen.calls == 3


@pytest.mark.parametrize(
    ("result", "words"),
    [
        (42, "must return the answer text or (text, citations), got int"),
        (("text", "fares#0-40"), "citations must be a list"),
        (("text", [1.5]), "a citation is a passage id or number, got float"),
        (("a", "b", "c"), "got tuple"),
    ],
)
def test_wrong_return_shape_is_a_recorded_error(result: Any, words: str) -> None:
    gen = CallableGenerator(lambda q, ps: result)
    out = gen.generate(_requests()[:1])
    assert out[0].error is not None and words in out[0].error and gen.errors == 1


def test_on_error_raise_stops_with_the_question_id() -> None:
    gen = CallableGenerator(answerer, on_error="raise")
    with pytest.raises(UsageError, match="failed on question q3: RuntimeError: index offline"):
        gen.generate(_requests())


def test_fingerprint_follows_the_code_and_the_version() -> None:
    def f(q: str, ps: list) -> str:
        return "a"

    def g(q: str, ps: list) -> str:
        return "b"

    assert CallableGenerator(f).fingerprint() != CallableGenerator(g).fingerprint()
    assert CallableGenerator(f).fingerprint() == CallableGenerator(f).fingerprint()
    assert CallableGenerator(f, version="2").fingerprint() != CallableGenerator(f).fingerprint()


# -- the answer cache ------------------------------------------------------------------------
class Counting:
    """Counts the questions that reach it; fails any question listed in ``fail``."""

    name = "counting"

    def __init__(self, fail: set[str] | None = None, tag: str = "v1") -> None:
        self.calls = 0
        self.fail = set(fail or ())
        self.tag = tag

    def fingerprint(self) -> str:
        return f"counting/{self.tag}"

    def generate(self, requests, progress=None) -> list[Generation]:
        out = []
        for r in requests:
            self.calls += 1
            if r.question_id in self.fail:
                out.append(Generation(r.question_id, "", error="boom"))
            else:
                out.append(Generation(r.question_id, f"answer to {r.question_id} [1]", ("x",)))
        return out


def test_second_run_makes_zero_model_calls(tmp_path: Path) -> None:
    inner = Counting()
    first = CachedGenerator(inner, tmp_path).generate(_requests())
    assert inner.calls == 3 and not any(g.cached for g in first)
    again = CachedGenerator(inner, tmp_path)
    seen: list[tuple[int, int]] = []
    second = again.generate(_requests(), lambda d, n: seen.append((d, n)))
    assert inner.calls == 3  # zero model calls
    assert all(g.cached and g.seconds == 0.0 for g in second)
    assert [g.text for g in second] == [g.text for g in first]
    assert again.stats.to_dict() == {"hits": 3, "misses": 0, "hit_rate": 1.0}
    assert seen[-1] == (3, 3)
    assert len(list((tmp_path / "answers").rglob("*.json"))) == 3


def test_failures_are_not_cached(tmp_path: Path) -> None:
    inner = Counting(fail={"q2"})
    CachedGenerator(inner, tmp_path).generate(_requests())
    inner.fail = set()
    out = CachedGenerator(inner, tmp_path).generate(_requests())
    assert inner.calls == 4  # only q2 asked again
    assert [g.cached for g in out] == [True, False, True] and out[1].ok


@pytest.mark.parametrize(
    "change",
    [
        {"order": "sandwich"},  # another context text -> another context hash
        {"params": {"temperature": 0.7}},
        {"params": {"seed": 1}},
        {"tag": "v2"},  # another generator fingerprint
    ],
)
def test_each_key_part_separates_answers(tmp_path: Path, change: dict) -> None:
    CachedGenerator(Counting(), tmp_path).generate(_requests())
    inner = Counting(tag=change.get("tag", "v1"))
    reqs = _requests(order=change.get("order", "rank"), params=change.get("params"))
    CachedGenerator(inner, tmp_path).generate(reqs)
    assert inner.calls == 3


def test_prompt_version_is_in_the_key(tmp_path: Path) -> None:
    base = _requests()[0]
    other = type(base)(
        *[getattr(base, f) for f in ("question_id", "question", "context", "messages", "params")],
        "answer-v2#abc",
    )
    assert answer_key("g", base) != answer_key("g", other)
    # same request, same key; the question is in the key (messages hash)
    assert answer_key("g", base) == answer_key("g", _requests()[0])
    assert answer_key("g", _requests()[0]) != answer_key("g", _requests()[1])


def test_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    inner = Counting()
    CachedGenerator(inner, tmp_path).generate(_requests()[:1])
    (entry,) = (tmp_path / "answers").rglob("*.json")
    entry.write_text("{not json")
    out = CachedGenerator(inner, tmp_path).generate(_requests()[:1])
    assert inner.calls == 2 and out[0].ok and not out[0].cached
    assert json.loads(entry.read_text())["text"] == "answer to q1 [1]"


# -- make_generator --------------------------------------------------------------------------
def test_python_target_from_the_experiment_folder(tmp_path: Path) -> None:
    (tmp_path / "my_rag_gen.py").write_text(
        textwrap.dedent(
            """
            def answer(question, passages):
                return f"{len(passages)} passages [1]"
            """
        )
    )
    spec = {"kind": "python", "target": "my_rag_gen:answer", "seed": 3, "max_tokens": 32}
    cfg = parse_generator(spec)
    assert cfg.params == {"temperature": 0.0, "seed": 3, "max_tokens": 32}
    assert cfg.prompt == "answer-v1" and cfg.cache
    gen = make_generator(spec, tmp_path, cache_dir=tmp_path / "cache")
    assert isinstance(gen, CachedGenerator) and isinstance(gen.inner, CallableGenerator)
    out = gen.generate(_requests())
    assert out[0].text == "3 passages [1]" and out[0].citations == ("fares#0-40",)
    plain = make_generator({**spec, "cache": False}, tmp_path, cache_dir=tmp_path / "cache")
    assert isinstance(plain, CallableGenerator)


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        ({"kind": "cloud"}, "generator.kind", "one of openai, local, python"),
        ({}, "generator.kind", "one of openai, local, python"),
        ({"kind": "openai", "model": "m"}, "generator.base_url", "needs 'base_url'"),
        (
            {"kind": "openai", "base_url": "http://x", "model": "m", "api_key": "sk-1"},
            "generator.api_key",
            "never write an API key",
        ),
        (
            {"kind": "openai", "base_url": "http://x", "model": "m", "api_key_env": "sk-abc"},
            "generator.api_key_env",
            "NAME of an environment variable",
        ),
        (
            {"kind": "openai", "base_url": "http://x", "model": "m", "temperature": 3},
            "generator.temperature",
            "from 0 to 2",
        ),
        (
            {"kind": "openai", "base_url": "http://x", "model": "m", "max_tokens": 0},
            "generator.max_tokens",
            ">= 1",
        ),
        (
            {"kind": "openai", "base_url": "http://x", "model": "m", "seed": "1"},
            "generator.seed",
            "an integer",
        ),
        (
            {"kind": "openai", "base_url": "http://x", "model": "m", "gguf": "a.gguf"},
            "generator.gguf",
            "unknown setting for a openai generator",
        ),
        ({"kind": "local"}, "generator.gguf", "exactly one of 'gguf'"),
        ({"kind": "local", "gguf": "a", "model": "b"}, "generator.gguf", "exactly one"),
        ({"kind": "python", "target": "no colon"}, "generator.target", "package.module:function"),
        (
            {"kind": "python", "target": "m:f", "on_error": "ignore"},
            "generator.on_error",
            "'record' or 'raise'",
        ),
        ({"kind": "python", "target": "m:f", "cache": "yes"}, "generator.cache", "true or false"),
    ],
)
def test_bad_tables_name_the_field(spec: dict, field: str, words: str) -> None:
    with pytest.raises(InputError) as e:
        make_generator(spec, path="exp.toml")
    assert e.value.field == field and words in str(e.value) and e.value.path == "exp.toml"


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        (
            {"kind": "python", "target": "no_such_module_xyz:f"},
            "generator.target",
            "cannot import module 'no_such_module_xyz'",
        ),
        ({"kind": "python", "target": "json:no_such"}, "generator.target", "has no 'no_such'"),
        ({"kind": "python", "target": "json:__name__"}, "generator.target", "not a function"),
        (
            {"kind": "openai", "base_url": "ftp://x", "model": "m"},
            "generator.base_url",
            "must start with http",
        ),
        (
            {"kind": "openai", "base_url": "http://127.0.0.1:1", "model": "m", "timeout": 99999},
            "generator.timeout",
            "generator timeout",
        ),
        (
            {
                "kind": "openai",
                "base_url": "http://127.0.0.1:1",
                "model": "m",
                "params": {"stream": True},
            },
            "generator.params",
            "stream",
        ),
    ],
)
def test_settings_the_backend_refuses_name_the_field(spec: dict, field: str, words: str) -> None:
    with pytest.raises(InputError) as e:
        make_generator(spec, path="exp.toml")
    assert e.value.field == field and words in str(e.value)


def test_missing_local_model_file_names_the_field_and_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        make_generator({"kind": "local", "gguf": "models/none.gguf"}, tmp_path, path="exp.toml")
    assert e.value.field == "generator.gguf"
    assert str(tmp_path / "models" / "none.gguf") in str(e.value)


def test_config_object_is_accepted() -> None:
    cfg = GeneratorConfig("python", {"target": "math:pow"})
    gen = make_generator(cfg)
    assert isinstance(gen, CallableGenerator) and gen.target == "math:pow"


@pytest.mark.parametrize("stop_after", [1, 5, 16, 17, 33])
def test_a_run_stopped_half_way_keeps_every_finished_slice(tmp_path, monkeypatch, stop_after):
    """Answers are cached slice by slice (``SAVE_EVERY``): a generator stopped by Ctrl-C after
    ``stop_after`` answers leaves every completed slice in the cache, and the re-run asks the
    model only for the rest."""
    from ragmeter.generation import _cache

    monkeypatch.setattr(_cache, "SAVE_EVERY", 4)
    p = load_prompt("answer-v1")
    questions = {f"q{i:02d}": f"What is fee number {i}?" for i in range(40)}
    requests = [
        make_request(qid, q, assemble(qid, PASSAGES, ContextSpec()), p)
        for qid, q in questions.items()
    ]
    calls: list[str] = []
    stop = [stop_after]

    def fn(question: str, passages: list[Passage]) -> str:
        if len(calls) == stop[0]:
            raise KeyboardInterrupt
        calls.append(question)
        return f"answer to {question}"

    with pytest.raises(KeyboardInterrupt):
        CachedGenerator(CallableGenerator(fn), tmp_path).generate(requests)
    saved = (stop_after // 4) * 4  # whole slices only
    calls.clear()
    stop[0] = -1  # the same function (the cache keys on its source), now answering everything
    again = CachedGenerator(CallableGenerator(fn), tmp_path)
    out = again.generate(requests)
    assert [g.text for g in out] == [f"answer to {q}" for q in questions.values()]
    assert again.stats.hits == saved and again.stats.misses == 40 - saved
    assert len(calls) == 40 - saved
