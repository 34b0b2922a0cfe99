"""Versioned answer prompts and citation parsing."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ragmeter._errors import InputError, UsageError
from ragmeter.answers._schema import looks_abstained
from ragmeter.generation import (
    ABSTAIN_PHRASE,
    DEFAULT_PARAMS,
    ContextSpec,
    Passage,
    assemble,
    find_citations,
    load_prompt,
    make_request,
    parse_citations,
    shipped_prompts,
)


def _ctx():
    ps = [
        Passage("fares#0-100", "fares", 0, 100, "The change fee is $75.", 6, 1),
        Passage("bags#200-300", "bags", 200, 300, "One bag is free.", 5, 2),
        Passage("chunk-x", "rules", 0, 50, "Refunds within 24 hours.", 5, 3),
    ]
    return assemble("q1", ps, ContextSpec(order="rank"))


def test_shipped_prompt_is_versioned_and_hashed() -> None:
    p = load_prompt("answer-v1")
    assert (p.name, p.version, p.id) == ("answer", "v1", "answer-v1")
    assert p.hash == hashlib.sha256(p.text.encode()).hexdigest()
    assert p.key == f"answer-v1#{p.hash}"
    assert "answer-v1" in shipped_prompts()


def test_prompt_asks_for_citations_and_a_recognised_abstention() -> None:
    p = load_prompt("answer-v1")
    msgs = p.render(question="What is the fee?", context="[1] fares (chars 0-9)\nFee $75.")
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert ABSTAIN_PHRASE in msgs[0]["content"] and "[1]" in msgs[0]["content"]
    assert "What is the fee?" in msgs[1]["content"]
    assert "[1] fares (chars 0-9)\nFee $75." in msgs[1]["content"]
    assert looks_abstained(ABSTAIN_PHRASE)
    # a context with '$' signs and template-looking text is inserted literally
    odd = p.render(question="$question?", context="$context ${x} $$")
    assert "$context ${x} $$" in odd[1]["content"] and "$question?" in odd[1]["content"]


def test_request_carries_prompt_key_and_default_params() -> None:
    ctx = _ctx()
    p = load_prompt("answer-v1")
    req = make_request("q1", "What is the fee?", ctx, p, {"max_tokens": 64})
    assert req.prompt == p.key and req.context is ctx
    assert dict(req.params) == {**DEFAULT_PARAMS, "max_tokens": 64}
    assert DEFAULT_PARAMS["temperature"] == 0 and DEFAULT_PARAMS["seed"] == 0
    assert ctx.text in req.messages[1]["content"]


def test_user_prompt_file(tmp_path: Path) -> None:
    f = tmp_path / "terse-v2.txt"
    f.write_text("### system\nBe terse. Fees cost $$5.\n### user\n$context\nQ: $question\n")
    p = load_prompt("terse-v2.txt", base_dir=tmp_path)
    assert (p.name, p.version) == ("terse", "v2")
    assert p.render(question="q?", context="C")[0]["content"] == "Be terse. Fees cost $5."
    assert load_prompt(f).hash == p.hash


@pytest.mark.parametrize(
    ("name", "body", "words"),
    [
        ("answer.txt", "### system\n$context\n### user\n$question", "named <name>-v<N>.txt"),
        ("a-v1.txt", "### user\n$context $question", "'### system' and a '### user'"),
        ("a-v1.txt", "### system\n$context\n### user\n$question $answer", "unknown placeholder"),
        ("a-v1.txt", "### system\nCosts $5\n### user\n$question $context", "write $$"),
        ("a-v1.txt", "### system\nhi\n### user\n$question", "never places $context"),
    ],
)
def test_bad_prompt_files_name_the_file(tmp_path: Path, name: str, body: str, words: str) -> None:
    f = tmp_path / name
    f.write_text(body)
    with pytest.raises(InputError) as e:
        load_prompt(f)
    assert words in str(e.value) and str(f) in str(e.value)


def test_unknown_shipped_prompt_lists_the_shipped_ones(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="have: answer-v1"):
        load_prompt("answer-v9")
    with pytest.raises(InputError, match="prompt file not found"):
        load_prompt("nope-v1.txt", base_dir=tmp_path)


@pytest.mark.parametrize(
    ("text", "ids", "unknown"),
    [
        ("The fee is $75 [1].", ("fares#0-100",), ()),
        ("Fee [2, 3] and [1].", ("bags#200-300", "chunk-x", "fares#0-100"), ()),
        ("See [Passage 2]; also [2][1].", ("bags#200-300", "fares#0-100"), ()),
        ("Range [1-3].", ("fares#0-100", "bags#200-300", "chunk-x"), ()),
        ("By id [bags#200-300] and [chunk-x].", ("bags#200-300", "chunk-x"), ()),
        ("Inside a passage [fares#10-40].", ("fares#0-100",), ()),
        ("Outside [fares#90-140] or [7].", (), ("fares#90-140", "7")),
        ("Not citations: [see table 1], [link](http://x) and [].", (), ()),
        ("Mixed [1, see below] is not a citation group.", (), ()),
        ("Range too long [1-9].", (), ("1-9",)),
        ("Range past the end [2-4].", (), ("2-4",)),
        ("No markers at all.", (), ()),
    ],
)
def test_citation_markers(text: str, ids: tuple, unknown: tuple) -> None:
    found = find_citations(text, _ctx())
    assert found.ids == ids and found.unknown == unknown
    assert parse_citations(text, _ctx()) == ids


def test_citations_follow_the_prompt_order_not_the_rank() -> None:
    ps = [
        Passage("a#0-5", "a", 0, 5, "aaaaa", 1, 1),
        Passage("b#0-5", "b", 0, 5, "bbbbb", 1, 2),
        Passage("c#0-5", "c", 0, 5, "ccccc", 1, 3),
    ]
    ctx = assemble("q", ps, ContextSpec(order="sandwich"))  # ranks 1, 3, 2
    assert parse_citations("[2] and [3]", ctx) == ("c#0-5", "b#0-5")
