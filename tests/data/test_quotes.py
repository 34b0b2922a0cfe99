"""Evidence written as text (``{"quote": ...}`` spans): exact and normalised matching, the offsets
they map back to, and the errors naming question, document and quote."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ragmeter._errors import InputError, RagmeterWarning, ValidationError
from ragmeter.data import Corpus, Document, load_corpus, load_golden, validate_golden, write_golden
from ragmeter.data._quotes import (
    QuoteResolver,
    find_exact,
    find_normalised,
    normal_form,
    normalise,
    resolve_quotes,
)

REPO = Path(__file__).resolve().parents[2]
FARE_RULES = REPO / "examples" / "fare-rules" / "corpus.jsonl"

#: documents beside the (ASCII) fare-rules corpus, so that quotes hold accents, CJK, emoji and
#: characters whose case folding changes length (ß → ss, İ → i̇, ﬁ → fi).
UNICODE_DOCS = [
    Document(
        id="tarifs-fr",
        text="Frais de modification : 50 € par passager.\nLes billets « Flex » sont "
        "remboursables jusqu'à 24 h avant le départ.\n\nÇa coûte moins cher en février.",
    ),
    Document(
        id="rules-ja",
        text="運賃規則：変更手数料は1回につき5,000円です。\n払い戻しは出発の24時間前まで可能です。"
        "\n座席指定は無料です。",
    ),
    Document(
        id="emoji",
        text="Bags 🧳 and pets 🐕\u200d🦺 travel too ✈️.\nStraße, İstanbul, ﬁnal fees — "
        "Größe ΣΊΣΥΦΟΣ.\n\tTabs\tand  double  spaces.",
    ),
]


def _docs(**texts: str) -> QuoteResolver:
    return QuoteResolver(texts)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def _q(qid: str, *spans: dict[str, Any]) -> dict[str, Any]:
    return {"id": qid, "question": f"question {qid}?", "evidence": list(spans)}


SMALL = Corpus(
    [
        Document(id="d1", text="Basic fares cannot be changed. Standard fares pay $75."),
        Document(id="d2", text="Refunds: Flex fares\nare refundable."),
    ]
)


# --- matching ----------------------------------------------------------------------------------
def test_find_exact_lists_every_occurrence_overlapping_ones_too() -> None:
    assert find_exact("aaaa", "aa") == [0, 1, 2]
    assert find_exact("abc", "") == []
    assert find_exact("abc", "x") == []


def test_normal_form_maps_each_character_back_to_the_original() -> None:
    form = normal_form("A  b\n\tß")
    assert form.text == "a b ss"
    # the whitespace runs map to their whole run; both s of ß map to ß, first opens, last closes
    assert list(zip(form.starts, form.ends, strict=True)) == [
        (0, 1),
        (1, 3),
        (3, 4),
        (4, 6),
        (6, 7),
        (6, 7),
    ]
    assert form.opens == (True, True, True, True, True, False)
    assert form.closes == (True, True, True, True, False, True)
    assert normalise("  Hello\n  WORLD \t") == "hello world"


@pytest.mark.parametrize(
    ("text", "quote_", "span"),
    [
        ("Die Straße ist lang", "STRASSE", (4, 10)),  # ß (1) folds to ss (2)
        ("see İSTANBUL now", "i̇stanbul", (4, 12)),  # İ (1) folds to i + combining dot (2)
        ("the ﬁnal fee", "FINAL", (4, 8)),  # the ﬁ ligature (1) folds to fi (2)
        ("ΣΊΣΥΦΟΣ", "σίσυφοσ", (0, 7)),  # final sigma and capital sigma fold alike
        ("two\n\n  lines here", "Two Lines", (0, 12)),
    ],
)
def test_normalised_offsets_point_into_the_original_text_when_folding_changes_lengths(
    text: str, quote_: str, span: tuple[int, int]
) -> None:
    r = _docs(d=text).resolve(quote_)
    assert (r.doc, r.start, r.end, r.method) == ("d", *span, "normalised")
    assert normalise(text[r.start : r.end]) == normalise(quote_)


def test_a_match_inside_one_characters_folding_is_refused() -> None:
    # "s" occurs inside "ss" (the folding of ß), but no span of the original reads "s"
    assert find_normalised(normal_form("ß"), "s") == []
    with pytest.raises(InputError, match="not in document 'd'"):
        _docs(d="ß").resolve("s", doc="d")
    # "ss" is the whole of ß's folding: a match
    assert find_normalised(normal_form("aßa"), "ss") == [(1, 2)]


def test_exact_wins_over_normalised_and_occurrence_counts_the_kind_used() -> None:
    r = _docs(d="Fee fee FEE").resolve("fee")
    assert (r.start, r.end, r.method) == (4, 7, "exact")
    loose = _docs(d="Fee FEE x").resolve("fEe", occurrence=2)
    assert (loose.start, loose.end, loose.method, loose.matches) == (4, 7, "normalised", 2)


def test_errors_name_document_and_quote() -> None:
    docs = _docs(a="one fee, two fees", b="no fee here")
    with pytest.raises(InputError, match=r"is in 2 documents .*'a' \(2x\), 'b' \(1x\).*\"doc\""):
        docs.resolve("fee")
    with pytest.raises(InputError) as exc:
        docs.resolve("fee", doc="a")
    assert "occurs 2 times in document 'a'" in str(exc.value)
    assert "at 4-7 'one [fee], two fees'" in str(exc.value)
    assert "at 13-16 'one fee, two [fee]s'" in str(exc.value)
    assert '"occurrence": N' in str(exc.value)
    with pytest.raises(InputError, match="asks for match 3, but quote 'fee' occurs 2 time"):
        docs.resolve("fee", doc="a", occurrence=3)
    with pytest.raises(InputError, match="quote 'refund' is not in any document of the corpus"):
        docs.resolve("refund")
    with pytest.raises(InputError, match="unknown document 'c'"):
        docs.resolve("fee", doc="c")
    with pytest.raises(InputError, match="empty"):
        docs.resolve("  \n")


# --- properties --------------------------------------------------------------------------------
ALPHABET = st.sampled_from([*"ab AB\n\tßẞİıσςΣﬁé€中文🧳", "e\u0301"])
TEXTS = st.lists(ALPHABET, min_size=1, max_size=60).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, data=st.data())
def test_a_substring_that_occurs_once_resolves_to_its_own_offsets(
    text: str, data: st.DataObject
) -> None:
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    sub = text[i:j]
    assume(sub.strip() and find_exact(text, sub) == [i])
    r = _docs(d=text).resolve(sub)
    assert (r.doc, r.start, r.end, r.method) == ("d", i, j, "exact")


def _mangle(text: str, draw: Any) -> str:
    """The same words in another case and spacing (what a spreadsheet does to a quote)."""
    text = draw(st.sampled_from([str.upper, str.lower, str.swapcase, str.casefold]))(text)
    space = draw(st.sampled_from([" ", "  ", "\n", "\t \n"]))
    return re.sub(r"\s+", space, text)


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, data=st.data())
def test_a_normalised_match_reads_as_the_normalised_quote(text: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    quote_ = _mangle(text[i:j], data.draw)
    needle = normalise(quote_)
    assume(needle)
    for start, end in find_normalised(normal_form(text), needle):
        assert 0 <= start < end <= len(text)
        assert normalise(text[start:end]) == needle
    try:
        r = _docs(d=text).resolve(quote_)
    except InputError:
        return  # several matches, or the mangling broke a folding apart: an error, never a guess
    assert normalise(text[r.start : r.end]) == needle
    if r.method == "exact":
        assert text[r.start : r.end] == quote_


# --- golden files ------------------------------------------------------------------------------
def _fixture(tmp_path: Path, seed: int = 24) -> tuple[Path, Path, list[dict[str, Any]]]:
    """100 quote spans drawn (seeded) from the fare-rules corpus plus the unicode documents:
    the quote-labelled golden file, its corpus, and the offsets each span was drawn at."""
    docs = [*load_corpus(FARE_RULES), *UNICODE_DOCS]
    corpus = Corpus(docs)
    corpus_file = tmp_path / "corpus.jsonl"
    corpus_file.write_text(
        "".join(d.model_dump_json(exclude_none=True) + "\n" for d in docs), "utf-8"
    )
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    drawn: list[dict[str, Any]] = []
    n = 0
    while n < 100:
        qid = f"q{len(rows) + 1:03d}"
        spans: list[dict[str, Any]] = []
        taken: list[tuple[str, int, int]] = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            if n >= 100:
                break
            # one span in four from the unicode documents, the rest from fare-rules
            doc = rng.choice(UNICODE_DOCS) if rng.random() < 0.25 else rng.choice(docs[:-3])
            size = rng.randint(4, min(90, len(doc.text)))
            start = rng.randrange(0, len(doc.text) - size + 1)
            end = start + size
            text = doc.text[start:end]
            if not text.strip() or any(d == doc.id and s < end and start < e for d, s, e in taken):
                continue
            span: dict[str, Any] = {"grade": rng.choice([1, 2])}
            loose = _loosen(text, doc.text, start, end, rng)
            if loose is not None:  # the words in another case and spacing, found normalised
                span.update(loose, doc=doc.id)
            else:
                where = {d.id: find_exact(d.text, text) for d in docs}
                span["quote"] = text
                if sum(1 for hits in where.values() if hits) > 1 or rng.random() < 0.5:
                    span["doc"] = doc.id
                if len(where[doc.id]) > 1:
                    span["occurrence"] = where[doc.id].index(start) + 1
            if rng.random() < 0.3:
                span["required"] = rng.random() < 0.5
            spans.append(span)
            taken.append((doc.id, start, end))
            drawn.append({"question": qid, "doc": doc.id, "start": start, "end": end})
            n += 1
        if spans:
            rows.append(_q(qid, *spans))
    golden_file = _write(tmp_path / "golden.jsonl", rows)
    assert corpus.ids == [d.id for d in docs]
    return golden_file, corpus_file, drawn


def _loosen(
    text: str, doc_text: str, start: int, end: int, rng: random.Random
) -> dict[str, Any] | None:
    """For one span in five whose ends are not whitespace: the quote upper-cased with its
    whitespace changed, and the occurrence that picks the drawn span among the normalised
    matches; None when that quote would match exactly or not map back to the drawn span."""
    if rng.random() >= 0.2 or text != text.strip():
        return None
    quote_ = re.sub(r"\s+", "\n  ", text.upper())
    if quote_ == text or find_exact(doc_text, quote_):
        return None
    matches = find_normalised(normal_form(doc_text), normalise(quote_))
    if (start, end) not in matches:
        return None
    out: dict[str, Any] = {"quote": quote_}
    if len(matches) > 1:
        out["occurrence"] = matches.index((start, end)) + 1
    return out


def test_a_quote_labelled_golden_set_of_100_spans_resolves_to_the_drawn_offsets(
    tmp_path: Path,
) -> None:
    golden_file, corpus_file, drawn = _fixture(tmp_path)
    rows = [json.loads(line) for line in golden_file.read_text("utf-8").splitlines()]
    quotes = [s["quote"] for r in rows for s in r["evidence"]]
    assert len(quotes) == 100
    # the fixture holds what it should: newlines, non-ASCII, case-folded, with and without doc
    assert sum("\n" in q for q in quotes) >= 10
    assert sum(not q.isascii() for q in quotes) >= 10
    assert any(re.search("[\u3040-\u9fff]", q) for q in quotes)
    spans = [s for r in rows for s in r["evidence"]]
    assert any("doc" not in s for s in spans) and any("occurrence" in s for s in spans)

    corpus = load_corpus(corpus_file)
    read = resolve_quotes(golden_file, corpus)
    assert read.problems == []
    assert len(read.quotes) == 100 and read.unresolved == 0
    assert 0 < len(read.normalised) < 100 and read.exact == 100 - len(read.normalised)
    with pytest.warns(RagmeterWarning, match=rf"{len(read.normalised)} of 100 quote span"):
        golden = load_golden(golden_file, corpus)
    got = [
        {"question": q.id, "doc": ev.doc, "start": ev.start, "end": ev.end}
        for q in golden
        for ev in q.evidence
    ]
    assert got == drawn
    for q in golden:
        for ev in q.evidence:
            assert ev.text == corpus[ev.doc].text[ev.start : ev.end]

    # written with its offsets, the set is the same set: same labels, same version
    resolved_file = write_golden(golden, tmp_path / "resolved.jsonl")
    again = load_golden(resolved_file, corpus)
    assert again.labels_digest == golden.labels_digest
    assert again.version == golden.version


def test_quotes_and_offsets_mix_and_the_resolved_spans_are_checked_like_any_other(
    tmp_path: Path,
) -> None:
    path = _write(
        tmp_path / "g.jsonl",
        [
            _q(
                "q1",
                {"doc": "d1", "start": 0, "end": 30, "grade": 2},
                {"quote": "Standard fares", "grade": 1, "required": True},
            ),
            # the quote resolves onto d1 0-11, inside the offset span beside it: an overlap
            _q("q2", {"doc": "d1", "start": 0, "end": 30}, {"quote": "Basic fares"}),
        ],
    )
    problems = validate_golden(path, SMALL)
    assert [(p.line, p.field) for p in problems] == [(2, "evidence[0]")]
    assert "overlaps evidence[1]" in problems[0].message
    ok = _write(tmp_path / "ok.jsonl", [json.loads(path.read_text().splitlines()[0])])
    (q1,) = load_golden(ok, SMALL)
    assert [(e.doc, e.start, e.end, e.grade, e.required) for e in q1.evidence] == [
        ("d1", 0, 30, 2, None),
        ("d1", 31, 45, 1, True),
    ]


def test_ambiguous_and_missing_quotes_are_errors_naming_question_document_and_quote(
    tmp_path: Path,
) -> None:
    path = _write(
        tmp_path / "g.jsonl",
        [
            _q("fine", {"quote": "Basic fares cannot"}),
            _q("twice", {"quote": "fares", "doc": "d1"}),
            _q("two-docs", {"quote": "fares"}),
            _q("missing", {"quote": "no such words", "doc": "d2"}),
            _q("nowhere", {"quote": "no such words"}),
            _q("typo-doc", {"quote": "fares", "doc": "d11"}),
            _q("both", {"quote": "fares", "doc": "d1", "start": 6, "end": 11}),
            _q("bad-occurrence", {"quote": "fares", "doc": "d1", "occurrence": 0}),
        ],
    )
    with pytest.raises(ValidationError) as exc:
        load_golden(path, SMALL)
    by_line = {p.line: p for p in exc.value.problems}
    assert sorted(by_line) == [2, 3, 4, 5, 6, 7, 8]
    assert all(p.path == str(path) for p in by_line.values())
    assert by_line[2].field == "evidence[0].quote"
    assert by_line[2].message.startswith("question 'twice': quote 'fares' occurs 2 times in ")
    assert "document 'd1'" in by_line[2].message and "at 6-11 " in by_line[2].message
    assert "at 40-45 " in by_line[2].message
    assert "question 'two-docs'" in by_line[3].message
    assert "'d1' (2x), 'd2' (1x)" in by_line[3].message
    assert by_line[4].message == (
        "question 'missing': quote 'no such words' is not in document 'd2', neither exactly nor "
        "after normalising whitespace and case"
    )
    assert "any document of the corpus" in by_line[5].message
    assert by_line[6].field == "evidence[0].doc"
    assert "unknown document 'd11'" in by_line[6].message and "did you mean 'd1'?" in (
        by_line[6].message
    )
    assert "either a quote or start/end" in by_line[7].message
    assert by_line[8].field == "evidence[0].occurrence"
    # the message a user reads carries file and line too
    assert f"{path}:4: field 'evidence[0].quote': question 'missing'" in str(exc.value)


def test_without_a_corpus_a_quote_is_an_error_saying_it_needs_one(tmp_path: Path) -> None:
    path = _write(tmp_path / "g.jsonl", [_q("q1", {"quote": "Basic fares"})])
    with pytest.raises(ValidationError, match="needs the corpus to find its offsets"):
        load_golden(path)
    assert load_golden(path, SMALL)["q1"].evidence[0].end == 11


def test_a_normalised_match_is_a_warning_naming_the_span(tmp_path: Path) -> None:
    path = _write(tmp_path / "g.jsonl", [_q("q1", {"quote": "flex FARES are", "doc": "d2"})])
    with pytest.warns(RagmeterWarning, match=r"1 of 1 quote span.*q1 evidence\[0\]"):
        golden = load_golden(path, SMALL)
    ev = golden["q1"].evidence[0]
    assert SMALL["d2"].text[ev.start : ev.end] == "Flex fares\nare" == ev.text


def test_a_file_without_quotes_reads_as_before(tmp_path: Path) -> None:
    path = _write(tmp_path / "g.jsonl", [_q("q1", {"doc": "d1", "start": 0, "end": 5})])
    read = resolve_quotes(path, SMALL)
    assert read.quotes == [] and read.problems == []
    assert read.questions[0].evidence[0].text is None


def test_a_frozen_quote_labelled_set_checks_against_its_corpus(tmp_path: Path) -> None:
    from ragmeter.data import check_frozen, freeze

    path = _write(tmp_path / "g.jsonl", [_q("q1", {"quote": "Standard fares", "grade": 2})])
    done = freeze(path, SMALL)
    assert check_frozen(path, SMALL).ok
    # the quoted words move in an edited document: the labels changed, and the check says so
    edited = Corpus(
        [
            Document(id="d1", text="Standard fares pay $75. Basic fares cannot be changed."),
            SMALL["d2"],
        ]
    )
    check = check_frozen(path, edited)
    assert not check.ok and check.locked_version == done.lock["version"]
    assert check.changed_questions == ["q1"]


def test_the_fast_normal_forms_equal_the_character_by_character_one_for_every_character() -> None:
    """``normal_text`` (the search's first test) and the one-to-one shortcut of ``normal_form``
    give exactly the character-by-character definition: for every Unicode character that case
    folding or whitespace touches, and a seeded sample of the rest (each beside letters, spaces
    and another of itself, so that whitespace runs and context show)."""
    import sys

    from ragmeter.data._quotes import _one_to_one, _per_character, normal_text

    chars = [chr(i) for i in range(sys.maxunicode + 1) if not 0xD800 <= i <= 0xDFFF]
    assert all(c.casefold() for c in chars)  # no character folds to nothing
    touched = [c for c in chars if c.casefold() != c or c.isspace() or re.match(r"\s", c)]
    assert len(touched) > 1400
    for c in [*touched, *random.Random(0).sample(chars, 3000)]:
        code = ord(c)
        text = f"A{c}b {c}{c}\n"
        slow = _per_character(text)
        assert normal_text(text) == slow.text, hex(code)
        if len(text.casefold()) == len(text):
            assert _one_to_one(text) == slow, hex(code)
