"""The labelling jobs end to end on a store: queues from questions (JSONL, CSV), a golden set or
answers; assignment; saves whose spans are exactly ``doc.text[start:end]`` for any text;
agreement equal to ``ragmeter golden agree`` on the exported files; final labels, adjudication
and freezing with the parent version; answer reviews in ``judge validate --human``'s format
with the kappa it prints; BM25 search over the queue's corpus. On SQLite, and on PostgreSQL when
RAGMETER_TEST_DATABASE_URL is set (``store_url`` in conftest.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter._errors import InputError, NotFoundError, UsageError, ValidationError
from ragmeter.data import Corpus, Document, load_corpus, load_golden, read_lock
from ragmeter.store import NewItem, Store
from ragmeter.workflows import golden as golden_jobs
from ragmeter.workflows import labelling as lab
from ragmeter.workflows.answers import validate_judge_files

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "traffic"
CORPUS = EXAMPLE / "corpus.jsonl"
GOLDEN = EXAMPLE / "golden.jsonl"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """A fresh store: SQLite, then PostgreSQL when RAGMETER_TEST_DATABASE_URL is set."""
    with Store.open(store_url, migrate=True) as s:
        yield s


def _questions(tmp_path: Path, n: int = 10) -> Path:
    gold = load_golden(GOLDEN)
    path = tmp_path / "questions.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": q.id, "question": q.question, "slice": q.slices[0]}) + "\n"
            for q in list(gold)[:n]
        )
    )
    return path


def _label_of(qid: str, shift: int = 0, grade: int = 2) -> dict[str, object]:
    """The example golden set's label of ``qid`` as a payload (spans moved by ``shift``)."""
    q = load_golden(GOLDEN)[qid]
    if not q.answerable:
        return {"answerable": False, "spans": []}
    e = q.evidence[0]
    return {
        "spans": [{"doc": e.doc, "start": e.start + shift, "end": e.end + shift, "grade": grade}],
        "answer": q.answer,
        "slices": list(q.slices),
    }


# -- queues ------------------------------------------------------------------------------------
def test_a_queue_from_questions_a_csv_and_a_golden_set(store: Store, tmp_path: Path) -> None:
    q = lab.create_queue_from(store, "log", questions=TRAFFIC / "log.jsonl", corpus=CORPUS)
    items = store.items(q.id)
    assert q.source == str(TRAFFIC / "log.jsonl") and q.n_docs == 31
    assert items[0].question == "How much is the change fee for a Standard fare?"
    assert items[0].qid.startswith("q-") and items[0].origin == "written"
    assert dict(items[0].context) == {"slice": "fees", "channel": "web"}
    assert items[0].prefill == {"slices": ["fees"]}
    assert [i.double for i in items] == [lab.is_double(i.qid, 0, 0.2) for i in items]
    assert 0 < sum(i.double for i in items) < len(items)

    csv = lab.create_queue_from(store, "csv", questions=TRAFFIC / "log.csv", corpus=CORPUS)
    assert [i.qid for i in store.items(csv.id)] == [i.qid for i in items]  # same ids, same text

    review = lab.create_queue_from(store, "review", golden=GOLDEN, corpus=CORPUS)
    assert review.parent_version == load_golden(GOLDEN, CORPUS).version
    first = store.items(review.id)[0]
    assert first.origin == "golden" and first.prefill is not None
    assert first.prefill["spans"][0]["text"] == "Standard fares: $75"


def test_a_bad_questions_line_names_file_line_and_field(store: Store, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "fine?"}\n{"question": 3}\n{"question": "fine?"}\n')
    with pytest.raises(ValidationError) as info:
        lab.create_queue_from(store, "bad", questions=bad, corpus=CORPUS)
    assert f"{bad}:2: field 'question'" in str(info.value)
    same = tmp_path / "same.jsonl"
    same.write_text('{"id": "a", "question": "one?"}\n{"id": "a", "question": "two?"}\n')
    with pytest.raises(ValidationError, match=r"same\.jsonl:2: field 'id'.*line 1"):
        lab.create_queue_from(store, "same", questions=same, corpus=CORPUS)
    assert store.queues() == []  # nothing half made


def test_unknown_names_list_what_exists(store: Store, tmp_path: Path) -> None:
    lab.create_queue_from(store, "one", questions=_questions(tmp_path), corpus=CORPUS)
    store.add_labeller("ana")
    with pytest.raises(NotFoundError, match="the queues are: 'one'"):
        lab.next_item(store, "two", "ana")
    with pytest.raises(NotFoundError, match="the labellers are: 'ana'"):
        lab.next_item(store, "one", "bo")
    item = store.items("one")[0]
    with pytest.raises(NotFoundError, match="no label item"):
        lab.save(store, "one", item.id + 1000, "ana", {}, 0)


# -- saving ------------------------------------------------------------------------------------
def test_bad_spans_are_refused_naming_the_field(store: Store, tmp_path: Path) -> None:
    lab.create_queue_from(store, "q", questions=_questions(tmp_path), corpus=CORPUS)
    store.add_labeller("ana")
    item = store.items("q")[0].id
    size = len(load_corpus(CORPUS)["fees-2026"].text)
    cases = [
        ({"doc": "nope", "start": 0, "end": 3}, "spans[0].doc", "not in this queue's corpus"),
        ({"doc": "fees-2026", "start": 5, "end": size + 1}, "spans[0].end", "out of range"),
        ({"doc": "fees-2026", "start": 5, "end": 5}, "spans[0].end", "out of range"),
        (
            {"doc": "fees-2026", "start": 734, "end": 753, "text": "other"},
            "spans[0].text",
            "is not",
        ),
        ({"doc": "fees-2026", "start": 0, "end": 3, "grade": 3}, "spans[0].grade", "1 or 2"),
    ]
    for span, where, message in cases:
        with pytest.raises(InputError, match=message) as info:
            lab.save(store, "q", item, "ana", {"spans": [span]}, 0)
        assert info.value.field == where
    overlap = [{"doc": "changes", "start": 0, "end": 10}, {"doc": "changes", "start": 5, "end": 20}]
    with pytest.raises(InputError, match="overlap"):
        lab.save(store, "q", item, "ana", {"spans": overlap}, 0)
    with pytest.raises(InputError, match="unanswerable"):
        lab.save(store, "q", item, "ana", {"answerable": False, "spans": overlap[:1]}, 0)
    with pytest.raises(InputError, match="Extra inputs"):
        lab.save(store, "q", item, "ana", {"spanz": []}, 0)
    assert store.labels(queue_id="q") == []


#: any text, with the characters a browser selection gets wrong most often mixed in: emoji
#: (astral, and a ZWJ family), CJK, combining accents, newlines, markup-looking text
TEXT = st.lists(
    st.one_of(
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
        st.sampled_from(
            ["🎉", "👩\u200d👩\u200d👧", "東京", "\n", "\r\n", "é", "e\u0301", "<b>", "&amp;"]
        ),
    ),
    min_size=1,
    max_size=40,
).map("".join)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=TEXT, cut=st.data())
def test_a_saved_span_is_exactly_the_selected_text(
    store: Store, text: str, cut: st.DataObject
) -> None:
    """Any text (emoji, CJK, newlines, combining marks, markup-looking text): the span the page
    sends with its selected string is stored with ``text == doc.text[start:end]``."""
    start = cut.draw(st.integers(0, len(text) - 1))
    end = cut.draw(st.integers(start + 1, len(text)))
    name = f"p{abs(hash(text)) % 10**12}"
    if name not in {q.name for q in store.queues()}:
        store.create_queue(name, corpus=Corpus([Document(id="d", text=text)]), items=[])
        store.add_items(name, [NewItem("x", "?")])
        lab.ensure_labeller(store, "ana")
    item = store.items(name)[0]
    saved = store.labels(item_id=item.id)
    span = {"doc": "d", "start": start, "end": end, "text": text[start:end]}
    row = lab.save(
        store, name, item.id, "ana", {"spans": [span]}, saved[0].revision if saved else 0
    )
    stored = row.payload["spans"][0]
    assert stored["text"] == text[start:end] == text[stored["start"] : stored["end"]]


def test_frozen_spans_of_multibyte_text_read_back_exactly(store: Store, tmp_path: Path) -> None:
    texts = {
        "ascii": "The fee is $75.\nPaid <b>online</b> & later.",
        "accented": "Le tarif réduit s'applique à l'été, café compris.",
        "cjk": "東京の料金は七十五ドルです。\n払い戻し不可。",
        "emoji": "Fees 🎉🧳 apply: 75€ 👩‍👩‍👧 per family.",
    }
    corpus = Corpus([Document(id=k, text=v) for k, v in texts.items()])
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": k, "question": k}) + "\n" for k in texts))
    lab.create_queue_from(store, "mb", questions=questions, corpus=corpus, double_share=0.0)
    lab.ensure_labeller(store, "ana")
    chosen = {"ascii": (4, 22), "accented": (3, 14), "cjk": (3, 17), "emoji": (5, 20)}
    for it in store.items("mb"):
        s, e = chosen[it.qid]
        span = {"doc": it.qid, "start": s, "end": e, "text": texts[it.qid][s:e], "required": True}
        lab.save(store, "mb", it.id, "ana", {"spans": [span]}, 0)
    done = lab.freeze_queue(store, "mb", tmp_path / "v1")
    gold = load_golden(done.golden, load_corpus(done.corpus))
    for q in gold:
        (ev,) = q.evidence
        assert ev.text == texts[q.id][slice(*chosen[q.id])] == corpus[q.id].text[ev.start : ev.end]
        assert ev.required is True
    assert "\n" in gold["ascii"].evidence[0].text and "\n" in gold["cjk"].evidence[0].text


# -- assignment, agreement, freezing -----------------------------------------------------------
def test_next_item_gives_double_items_to_two_labellers(store: Store, tmp_path: Path) -> None:
    lab.create_queue_from(
        store, "q", questions=_questions(tmp_path, 4), corpus=CORPUS, double_share=0.5, seed=3
    )
    for name in ("ana", "bo"):
        store.add_labeller(name)
    items = store.items("q")
    doubles = [i.qid for i in items if i.double]
    assert 0 < len(doubles) < 4
    seen: dict[str, list[str]] = {"ana": [], "bo": []}
    while True:
        progressed = False
        for name in ("ana", "bo"):
            it = lab.next_item(store, "q", name)
            if it is not None:
                lab.save(store, "q", it.id, name, _label_of(it.qid), 0)
                seen[name].append(it.qid)
                progressed = True
        if not progressed:
            break
    both = set(seen["ana"]) & set(seen["bo"])
    assert both == set(doubles)
    assert set(seen["ana"]) | set(seen["bo"]) == {i.qid for i in items}
    # a skip does not count as a label: the item goes to the next labeller
    store.add_labeller("cy")
    lab.create_queue_from(
        store, "s", questions=_questions(tmp_path, 1), corpus=CORPUS, double_share=0
    )
    it = lab.next_item(store, "s", "ana")
    assert it is not None
    lab.save(store, "s", it.id, "ana", {"skipped": True}, 0)
    assert lab.next_item(store, "s", "ana") is None
    assert lab.next_item(store, "s", "cy") == it


def test_agreement_is_golden_agree_on_the_exported_files(store: Store, tmp_path: Path) -> None:
    lab.create_queue_from(
        store, "q", questions=_questions(tmp_path, 10), corpus=CORPUS, double_share=1.0
    )
    store.add_labeller("bo")
    store.add_labeller("ana")
    items = store.items("q")
    for n, it in enumerate(items):
        # bo labels first on most items: bo is labeller A
        first, second = ("bo", "ana") if n % 3 else ("ana", "bo")
        lab.save(store, "q", it.id, first, _label_of(it.qid), 0)
        other = _label_of(it.qid, shift=2 if n % 4 == 0 else 0, grade=1 if n % 5 == 0 else 2)
        lab.save(store, "q", it.id, second, other, 0)
    result = lab.agreement(store, "q")
    assert (result.source_a, result.source_b) == ("bo", "ana")
    lab.export_labeller(store, "q", "bo", tmp_path / "bo.jsonl")
    lab.export_labeller(store, "q", "ana", tmp_path / "ana.jsonl")
    files = golden_jobs.agree(tmp_path / "bo.jsonl", tmp_path / "ana.jsonl", CORPUS).result
    assert len(result.questions) == len(files.questions) == 10
    assert result.f1 == files.f1 and result.macro_f1 == files.macro_f1
    assert result.precision == files.precision and result.recall == files.recall
    assert result.kappa() == files.kappa() and result.kappa("linear") == files.kappa("linear")
    assert result.f1 is not None and result.f1 < 1.0
    differ = lab.disagreements(store, "q")
    assert {d.item.qid for d in differ} == {
        it.qid for n, it in enumerate(items) if n % 4 == 0 or n % 5 == 0
    }
    with pytest.raises(UsageError, match="already exist"):
        lab.export_labeller(store, "q", "ana", tmp_path / "bo.jsonl")


def test_freezing_needs_adjudication_then_records_the_parent(store: Store, tmp_path: Path) -> None:
    review = lab.create_queue_from(store, "rev", golden=GOLDEN, corpus=CORPUS, double_share=0.0)
    parent = review.parent_version
    items = store.items("rev")[:3]
    for name in ("ana", "bo", "cy"):
        store.add_labeller(name)
    lab.save(store, "rev", items[0].id, "ana", _label_of(items[0].qid), 0)
    lab.save(store, "rev", items[0].id, "bo", _label_of(items[0].qid), 0)  # agree
    lab.save(store, "rev", items[1].id, "ana", _label_of(items[1].qid), 0)
    lab.save(store, "rev", items[1].id, "bo", _label_of(items[1].qid, shift=1), 0)  # differ
    lab.save(store, "rev", items[2].id, "ana", {"skipped": True}, 0)
    statuses = {it.qid: s for it, s, _ in lab.final_labels(store, "rev")}
    assert [statuses[i.qid] for i in items] == ["agreed", "unresolved", "skipped"]
    with pytest.raises(UsageError, match=items[1].qid):
        lab.freeze_queue(store, "rev", tmp_path / "v2")
    lab.adjudicate(store, "rev", items[1].id, "cy", _label_of(items[1].qid, shift=1), 0)
    done = lab.freeze_queue(store, "rev", tmp_path / "v2", name="v2")
    v1 = load_golden(GOLDEN)
    # v2 extends v1: every question of v1, in its order, the two labelled ones relabelled
    assert done.questions == len(v1) and done.parent == parent
    assert (done.relabelled, done.kept_from_parent) == (2, len(v1) - 2)
    assert done.left_out == {"skipped": 1, "unlabelled": len(store.items("rev")) - 3}
    lock = read_lock(done.lock)
    assert lock["parent"] == parent and lock["version"] == done.version
    stored = {g.version: g for g in store.golden_versions()}
    assert done.version in stored and stored[done.version].name == "v2"
    gold = load_golden(done.golden, CORPUS)
    assert gold.ids == v1.ids
    assert gold[items[1].qid].evidence[0].start == v1[items[1].qid].evidence[0].start + 1
    kept = [q for q in v1.ids if q not in (items[0].qid, items[1].qid)]
    assert [gold[q] for q in kept] == [v1[q] for q in kept]  # carried over as they were
    # the queue's questions alone, when asked
    alone = lab.freeze_queue(store, "rev", tmp_path / "alone", extend=False)
    assert alone.questions == 2 and alone.kept_from_parent == 0
    assert load_golden(alone.golden, CORPUS).ids == [items[0].qid, items[1].qid]
    # the same freeze again changes nothing; another result needs force
    assert lab.freeze_queue(store, "rev", tmp_path / "v2").version == done.version
    lab.save(store, "rev", items[2].id, "ana", _label_of(items[2].qid), 1)
    with pytest.raises(UsageError, match="already exist"):
        lab.freeze_queue(store, "rev", tmp_path / "v2")
    again = lab.freeze_queue(store, "rev", tmp_path / "v2", force=True)
    assert again.questions == len(v1) and again.relabelled == 3


def test_a_new_version_adds_the_queues_questions_to_its_parent(
    store: Store, tmp_path: Path
) -> None:
    """Logged questions labelled on a queue whose parent is v1: v2 = v1's questions, then the
    new ones; a parent the store does not hold, named by its version alone, is refused."""
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"question": "Is a pet allowed in the cabin?"}\n{"question": "What does a seat cost?"}\n',
        encoding="utf-8",
    )
    v1 = load_golden(GOLDEN, CORPUS)
    with pytest.raises(UsageError, match="not in the store"):
        lab.create_queue_from(store, "bare", questions=log, corpus=CORPUS, parent=v1.version)
    lab.create_queue_from(store, "new", questions=log, corpus=CORPUS, parent=GOLDEN)
    store.add_labeller("ana")
    new = store.items("new")
    doc = next(iter(load_corpus(CORPUS)))
    label = {"spans": [{"doc": doc.id, "start": 0, "end": 5, "grade": 2, "required": True}]}
    lab.save(store, "new", new[0].id, "ana", label, 0)
    done = lab.freeze_queue(store, "new", tmp_path / "v2")
    gold = load_golden(done.golden, CORPUS)
    assert gold.ids == [*v1.ids, new[0].qid] and done.parent == v1.version
    assert (done.kept_from_parent, done.relabelled, done.left_out) == (
        len(v1),
        0,
        {"unlabelled": 1},
    )


# -- answer review -----------------------------------------------------------------------------
def test_answer_reviews_are_what_judge_validate_reads(store: Store, tmp_path: Path) -> None:
    answers = EXAMPLE / "answers" / "baseline.jsonl"
    q = lab.create_queue_from(
        store,
        "ans",
        kind="answers",
        answers=answers,
        golden=GOLDEN,
        corpus=CORPUS,
        double_share=1.0,
    )
    items = store.items(q.id)[:30]
    assert items[0].context["answer"] and items[0].context["citations"][0]["text"]
    store.add_labeller("ana")
    store.add_labeller("bo")
    for n, it in enumerate(items):
        a = {"correct": "correct" if n % 2 else "incorrect", "supported": "supported"}
        b = dict(a)
        if n % 7 == 0:
            b["correct"] = "correct"
        if n % 3 == 0:
            b["supported"] = "unsupported"
        lab.save(store, "ans", it.id, "ana", a, 0)
        lab.save(store, "ans", it.id, "bo", b, 0)
    with pytest.raises(InputError):
        lab.save(store, "ans", items[0].id, "ana", {"correct": "maybe"}, 1)
    shown = lab.answer_agreement(store, "ans")
    assert lab.answer_labellers(store, "ans") == ("ana", "bo")
    out = lab.export_answer_labels(store, "ans", tmp_path / "human")
    assert str(tmp_path / "human" / "human-correctness.jsonl") in out.files
    for metric in ("correctness", "faithfulness"):
        a_file = tmp_path / "human" / f"human-{metric}.ana.jsonl"
        b_file = tmp_path / "human" / f"human-{metric}.bo.jsonl"
        printed = validate_judge_files(a_file, b_file).validation
        assert printed.kappa == shown[metric].kappa and printed.n == 30
    final = [json.loads(x) for x in (tmp_path / "human" / "human-correctness.jsonl").open()]
    differ = {n for n in range(30) if (n % 7 == 0 and n % 2 == 0) or n % 3 == 0}
    agreed = [it for n, it in enumerate(items) if n not in differ]
    assert {r["id"] for r in final} == {it.qid for it in agreed}
    assert {r["label"] for r in final} <= {"correct", "incorrect"}


# -- search ------------------------------------------------------------------------------------
def test_bm25_search_lists_passages_of_the_queues_corpus(store: Store, tmp_path: Path) -> None:
    pytest.importorskip("bm25s")  # justified: BM25 is the [bm25] extra
    lab.create_queue_from(store, "q", questions=_questions(tmp_path, 2), corpus=CORPUS)
    hits = lab.search(store, "q", "change fee Standard fare", k=5)
    corpus = load_corpus(CORPUS)
    assert 1 <= len(hits) <= 5
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    for h in hits:
        assert h["text"] == corpus[h["doc"]].text[h["start"] : h["end"]]
    assert any("75" in h["text"] for h in hits)
    assert lab.search(store, "q", "   ") == []
    with pytest.raises(UsageError, match="bm25"):
        lab.search(store, "q", "fee", retriever="grep")
    assert "bm25" in lab.available_retrievers()


def test_imported_labels_freeze_to_the_same_version(store: Store, tmp_path: Path) -> None:
    """A review whose labels are the golden set's own freezes to its version again (recorded
    with no parent: no version is its own parent); a label file's problems name where."""
    review = lab.create_queue_from(store, "rev", golden=GOLDEN, corpus=CORPUS)
    lab.ensure_labeller(store, "ana")
    done = lab.import_labels(store, "rev", "ana", GOLDEN)
    assert done.saved == 90 and done.kept == ()
    again = lab.import_labels(store, "rev", "ana", GOLDEN)
    assert again.saved == 0 and len(again.kept) == 90
    assert lab.import_labels(store, "rev", "ana", GOLDEN, replace=True).saved == 90
    frozen = lab.freeze_queue(store, "rev", tmp_path / "same")
    assert frozen.version == review.parent_version and frozen.parent is None
    assert (
        load_golden(tmp_path / "same" / "golden.jsonl").questions == load_golden(GOLDEN).questions
    )

    # a label file that leaves the split open: the freeze's hash of the id decides it
    from ragmeter.data import assign_split

    open_split = tmp_path / "open.jsonl"
    open_split.write_text(
        "".join(
            json.dumps({"id": x.id, "question": x.question, "answerable": False}) + "\n"
            for x in load_golden(GOLDEN)
        )
    )
    lab.create_queue_from(store, "open", golden=GOLDEN, corpus=CORPUS)
    lab.import_labels(store, "open", "ana", open_split)
    opened = lab.freeze_queue(store, "open", tmp_path / "open", extend=False)
    splits = {x.id: x.split for x in load_golden(opened.golden)}
    assert splits == {x.id: assign_split(x.id) for x in load_golden(GOLDEN)}
    assert set(splits.values()) == {"tune", "heldout"}

    other = tmp_path / "other.jsonl"
    other.write_text('{"id": "nope", "question": "?", "answerable": false}\n')
    with pytest.raises(UsageError, match="not in queue 'rev': nope"):
        lab.import_labels(store, "rev", "ana", other)
    q = load_golden(GOLDEN)["change-fee-standard"]
    graded = q.model_copy(update={"evidence": [q.evidence[0].model_copy(update={"grade": 3})]})
    bad = tmp_path / "bad.jsonl"
    bad.write_text(graded.model_dump_json(exclude_none=True) + "\n")
    with pytest.raises(InputError, match="1 or 2") as info:
        lab.import_labels(store, "rev", "ana", bad)
    assert info.value.path == str(bad) and info.value.line == 1


def test_search_keeps_its_chunking_and_index_in_the_cache_folder(
    store: Store, tmp_path: Path
) -> None:
    pytest.importorskip("bm25s")  # justified: BM25 is the [bm25] extra
    lab.create_queue_from(store, "c", questions=_questions(tmp_path, 1), corpus=CORPUS)
    cache = tmp_path / "cache"
    lab.prepare_search(store, "c", cache_dir=cache)
    assert {p.name for p in cache.iterdir()} == {"chunkings", "bm25"}
    first = lab.search(store, "c", "refund", cache_dir=cache)
    entries = sorted(p.relative_to(cache) for p in cache.rglob("*"))
    # another queue of the same corpus: no index in this process yet, the folder's is read
    lab.create_queue_from(store, "d", questions=_questions(tmp_path, 1), corpus=CORPUS)
    assert lab.search(store, "d", "refund", cache_dir=cache) == first
    assert sorted(p.relative_to(cache) for p in cache.rglob("*")) == entries
    with pytest.raises(UsageError, match="unknown search retriever"):
        lab.prepare_search(store, "c", retriever="tfidf")
