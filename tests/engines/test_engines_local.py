"""Engines without Ray: choosing one, and the two hooks the lower layers give an engine (an
encoder's ``encode_batches`` consumed by the embedding cache, ``map_slices`` consumed by the
answer cache), driven here by fakes that return batches out of order or die half way."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _retrieval_fakes import HashingEncoder
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter._errors import MissingExtraError, UsageError
from ragmeter.cli import app
from ragmeter.engines import LocalEngine, RayEngine, local, resolve_engine
from ragmeter.engines._ray import import_roots
from ragmeter.generation import (
    CachedGenerator,
    CallableGenerator,
    ContextSpec,
    Passage,
    assemble,
    load_prompt,
    make_request,
)
from ragmeter.retrieval import Cache, encode_cached

TEXTS = [f"text {i} about fares and refunds {'x ' * (i % 5)}" for i in range(30)]


class BatchEncoder(HashingEncoder):
    """An engine's encoder without an engine: hands back batches of ``size`` in ``order`` (a
    permutation of batch numbers) and dies (an exception) after ``die_after`` batches."""

    def __init__(self, size: int, order: Sequence[int], die_after: int | None = None) -> None:
        super().__init__()
        self.size, self.order, self.die_after = size, list(order), die_after

    def encode_batches(self, texts: Sequence[str], *, role: str) -> Iterator[tuple[range, Any]]:
        n = len(texts)
        batches = [range(a, min(a + self.size, n)) for a in range(0, n, self.size)]
        for done, j in enumerate(j for j in self.order if j < len(batches)):
            if self.die_after is not None and done == self.die_after:
                raise RuntimeError("worker lost")
            rows = batches[j]
            yield rows, self.encode([texts[i] for i in rows], role=role)


def test_resolve_engine() -> None:
    assert isinstance(resolve_engine(None), LocalEngine)
    assert isinstance(resolve_engine("local"), LocalEngine)
    eng = RayEngine(address="auto")  # nothing starts until a job runs
    assert resolve_engine(eng) is eng
    with pytest.raises(UsageError, match="one of local, ray"):
        resolve_engine("spark")
    with pytest.raises(UsageError, match="needs the Ray engine"):
        resolve_engine("local", address="auto")
    with pytest.raises(UsageError, match="engine object"):
        resolve_engine(42)  # type: ignore[arg-type]
    for bad in ({"actors": 0}, {"batch_texts": True}, {"retries": -1}, {"slice_size": 0}):
        with pytest.raises(UsageError, match="RayEngine"):
            RayEngine(**bad)


def test_ray_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(MissingExtraError, match=r"ragmeter\[ray\]"):
        RayEngine().ray()


@settings(max_examples=40, deadline=None)
@given(size=st.integers(1, 12), seed=st.integers(0, 2**32 - 1))
def test_batches_in_any_order_give_the_local_vectors(size: int, seed: int) -> None:
    expected = HashingEncoder().encode(TEXTS)
    order = np.random.default_rng(seed).permutation((len(TEXTS) + size - 1) // size)
    enc = BatchEncoder(size, order.tolist())
    got = encode_cached(enc, TEXTS, role="passage", cache=None)
    assert got.tobytes() == expected.tobytes()
    assert enc.texts_encoded == len(TEXTS)


def test_a_lost_batch_keeps_what_finished_and_a_rerun_makes_only_the_rest(tmp_path: Path) -> None:
    # batches of 4 handed back as 2, 0, 5, then the worker dies: 12 texts finished
    dying = BatchEncoder(4, [2, 0, 5, 1, 3, 4, 6, 7], die_after=3)
    with pytest.raises(RuntimeError, match="worker lost"):
        encode_cached(dying, TEXTS, role="passage", cache=Cache(tmp_path))
    assert len(Cache(tmp_path).embeddings("hashing-64", "text")) == 12
    again = BatchEncoder(4, range(8))
    got = encode_cached(again, TEXTS, role="passage", cache=Cache(tmp_path))
    assert again.texts_encoded == 30 - 12
    assert got.tobytes() == HashingEncoder().encode(TEXTS).tobytes()


def test_local_engine_embed_is_encode_cached(tmp_path: Path) -> None:
    enc = HashingEncoder()
    got = local().embed(enc, TEXTS, cache=Cache(tmp_path))
    assert got.tobytes() == HashingEncoder().encode(TEXTS).tobytes()
    again = HashingEncoder()
    local().embed(again, TEXTS, cache=Cache(tmp_path))
    assert again.calls == 0


PASSAGES = [
    Passage("fares#0-40", "fares", 0, 40, "The change fee is $75.", 6, 1),
    Passage("bags#0-30", "bags", 0, 30, "One checked bag is free.", 6, 2),
]


def answer(question: str, passages: list[Passage]) -> str:
    return f"{question} -> {passages[0].text} [1]"


def _requests(n: int) -> list[Any]:
    p = load_prompt("answer-v1")
    ctx = assemble("q", PASSAGES, ContextSpec())
    return [make_request(f"q{i}", f"question {i % 37}?", ctx, p) for i in range(n)]


def reversed_slices(gen: Any, slices: list[Sequence[Any]]) -> Iterator[tuple[int, list[Any]]]:
    """What an engine does, minus the cluster: every slice answered, the last one first."""
    for j in reversed(range(len(slices))):
        yield j, gen.generate(slices[j])


def test_answer_slices_in_any_order_are_the_same_answers_and_cached(tmp_path: Path) -> None:
    requests = _requests(50)  # 37 distinct questions: duplicates are answered once
    here = CallableGenerator(answer).generate(requests)
    inner = CallableGenerator(answer)
    gen = CachedGenerator(inner, tmp_path)
    seen: list[int] = []
    got = gen.generate(requests, lambda done, total: seen.append(done), map_slices=reversed_slices)
    assert [(g.question_id, g.text, g.citations) for g in got] == [
        (g.question_id, g.text, g.citations) for g in here
    ]
    assert inner.calls == 37 and seen == sorted(seen)
    told: list[int] = []  # progress ends where the one-slice-after-another path ends
    CachedGenerator(CallableGenerator(answer), tmp_path / "b").generate(
        requests, lambda done, total: told.append(done)
    )
    assert seen[-1] == told[-1]
    again = CallableGenerator(answer)
    cached = CachedGenerator(again, tmp_path).generate(requests, map_slices=reversed_slices)
    assert again.calls == 0 and all(g.cached for g in cached)


def test_local_engine_generate_and_judge_are_the_objects_own() -> None:
    from ragmeter.answers.judges import JudgeRequest
    from ragmeter.answers.judges.fake import FakeJudge

    requests = _requests(3)
    assert [g.text for g in local().generate(CallableGenerator(answer), requests, None)] == [
        g.text for g in CallableGenerator(answer).generate(requests)
    ]
    reqs = [JudgeRequest("answer_relevance", (), {"question": "fee?", "answer": "The fee is $75."})]
    assert local().judge(FakeJudge(), reqs) == FakeJudge().judge(reqs)


def test_import_roots_find_the_users_folder(tmp_path: Path) -> None:
    import functools

    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "rag.py").write_text("def answer(q, ps):\n    return q\n")
    sys.path.insert(0, str(tmp_path))
    try:
        from mypkg.rag import answer as user_answer  # type: ignore[import-not-found]

        roots = import_roots(functools.partial(CallableGenerator, user_answer))
        assert str(tmp_path.resolve()) in roots
        assert str(tmp_path.resolve()) in import_roots(CallableGenerator(user_answer))
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("mypkg.rag", "mypkg"):
            sys.modules.pop(name, None)


def test_import_roots_carry_the_folders_a_users_module_imports_from(tmp_path: Path) -> None:
    """A user's module that imports a helper from another folder on sys.path (a test module
    importing tests/_helpers.py; an encoder beside its utilities): the worker needs both
    folders, or unpickling the object fails there and the actor dies on every batch."""
    code, helpers = tmp_path / "code", tmp_path / "helpers"
    code.mkdir()
    helpers.mkdir()
    (helpers / "_shared_bits.py").write_text("SUFFIX = '!'\n")
    (code / "my_encoder.py").write_text(
        "from _shared_bits import SUFFIX\n\ndef answer(q, ps):\n    return q + SUFFIX\n"
    )
    sys.path[:0] = [str(code), str(helpers)]
    try:
        from my_encoder import answer as user_answer  # type: ignore[import-not-found]

        roots = import_roots(CallableGenerator(user_answer))
        assert str(code.resolve()) in roots and str(helpers.resolve()) in roots
        # never the interpreter's own folders or installed packages
        assert not any("site-packages" in r for r in roots)
        assert not any(Path(r) == Path(sys.base_prefix).resolve() for r in roots)
    finally:
        sys.path.remove(str(code))
        sys.path.remove(str(helpers))
        for name in ("my_encoder", "_shared_bits"):
            sys.modules.pop(name, None)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "spark"], "engine must be one of local, ray"),
        (["--ray-address", "auto"], "needs the Ray engine"),
    ],
)
def test_cli_refuses_a_bad_engine_before_running(
    fare_rules_dir: Path, args: list[str], message: str
) -> None:
    result = CliRunner().invoke(
        app, ["run", str(fare_rules_dir / "experiment.toml"), "--no-store", *args]
    )
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
