"""The lab's recomputation (ragmeter.lab._recompute, _prepared, _ranked_list, _context): a stored
run's metrics at any k or token budget equal what the command line prints for that cutoff
(``ragmeter eval --golden --corpus --chunks``, ``labels export`` + ``eval`` for nDCG, and the
numbers ``ragmeter run`` stored at the experiment's own k and budget); gained / lost / fixed /
broken follow ``ragmeter compare``; the evidence segments inside each chunk are the labelled
characters; a moved experiment file falls back to the stored golden set and offsets."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import Store, compare, load_corpus
from ragmeter.cli import app as cli_app
from ragmeter.lab._context import load_experiment_files, run_context
from ragmeter.lab._paths import LabCache
from ragmeter.lab._prepared import prepared_run
from ragmeter.lab._ranked_list import Piece, excerpt, pieces, question_list
from ragmeter.lab._recompute import PromptCutoff, movements, scores

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
KS = (1, 3, 7, 12)
BUDGETS = (450, 1200, 2500)


def cli_json(*args: Any) -> dict[str, Any]:
    result = CliRunner().invoke(cli_app, [str(a) for a in args])
    assert result.exit_code == 0, (args, result.output)
    out = result.stdout
    return json.loads(out[out.index("{") :])  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The example recorded into a fresh store by ``ragmeter run``'s recorder (from a copy of
    its files, so a test may move them), with the chunk files the CLI needs."""
    from ragmeter.workflows.experiment import run_and_record

    root = tmp_path_factory.mktemp("lab-recompute")
    for name in ("golden.jsonl", "corpus.jsonl", "experiment.toml"):
        shutil.copy(EXAMPLE / name, root / name)
    store = Store.open(f"sqlite:///{root / 'lab.db'}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, ids = run_and_record(
            store, root / "experiment.toml", cache_dir=EXAMPLE / ".ragmeter-cache"
        )
    chunks = {}
    for size in (300, 100):
        chunks[size] = root / f"chunks-{size}.jsonl"
        CliRunner().invoke(
            cli_app,
            [
                "chunk",
                str(root / "corpus.jsonl"),
                "-c",
                f"tokens:{size}:0",
                "-o",
                str(chunks[size]),
            ],
        )
    yield {"root": root, "store": store, "ids": ids, "chunks": chunks, "cache": LabCache(root)}
    store.close()


def cli_eval(lab: Any, variant: str, size: int, metrics: str) -> dict[str, Any]:
    root = lab["root"]
    return cli_json(
        "eval", "--no-store", "--golden", root / "golden.jsonl", "--corpus",
        root / "corpus.jsonl", "--chunks", lab["chunks"][size],
        root / "runs" / variant / "run.trec", "-m", metrics, "-f", "json", "--per-query",
    )  # fmt: skip


def cli_ndcg(lab: Any, variant: str, size: int, k: int) -> dict[str, Any]:
    root = lab["root"]
    qrels = root / f"qrels-{size}.trec"
    if not qrels.exists():
        CliRunner().invoke(
            cli_app,
            ["labels", "export", "--golden", str(root / "golden.jsonl"), "--chunks",
             str(lab["chunks"][size]), "-o", str(qrels)],
        )  # fmt: skip
    return cli_json(
        "eval", "--no-store", qrels, root / "runs" / variant / "run.trec", "-m", f"nDCG@{k}",
        "-f", "json", "--per-query",
    )  # fmt: skip


def prepared(lab: Any, variant: str) -> Any:
    return prepared_run(lab["store"], lab["ids"][variant], lab["cache"])


@pytest.mark.parametrize(("variant", "size"), [("baseline", 300), ("smaller chunks", 100)])
def test_every_k_and_budget_gives_the_numbers_the_cli_prints(lab: Any, variant: str, size: int):
    p = prepared(lab, variant)
    folder = variant.replace(" ", "-")
    for k in KS:
        sc = scores(p, PromptCutoff(k=k))
        printed = cli_eval(lab, folder, size, f"R@{k},AllR@{k},RR@{k},R@20")
        for key, name in (("R", f"R@{k}"), ("AllR", f"AllR@{k}"), ("RR", f"RR@{k}"),
                          ("headroom", "R@20")):  # fmt: skip
            assert sc.names[key] == name
            assert sc.means[key] == printed["aggregate"][name]
            assert {q: sc.value(key, q) for q in sc.qids} == {
                q: v[name] for q, v in printed["per_query"].items()
            }
        ndcg = cli_ndcg(lab, folder, size, k)
        assert sc.means["nDCG"] == ndcg["aggregate"][f"nDCG@{k}"]
        assert {q: sc.value("nDCG", q) for q in sc.qids} == {
            q: v[f"nDCG@{k}"] for q, v in ndcg["per_query"].items()
        }
    for b in BUDGETS:
        sc = scores(p, PromptCutoff(budget=b))
        names = f"R@budget={b},AllR@budget={b},RR@budget={b}"
        printed = cli_eval(lab, folder, size, names)
        for key in ("R", "AllR", "RR"):
            assert sc.means[key] == printed["aggregate"][f"{key}@budget={b}"]
        # the prompt cutoff drawn in each list is where the CLI says the budget fills
        assert {q: sc.prompt_size(q) for q in sc.qids} == {
            q: d["effective_k"][str(b)] for q, d in printed["details"].items()
        }
        assert sc.means["nDCG"] is None and "fixed k" in sc.unavailable["nDCG"]


def test_at_the_experiments_own_k_and_budget_the_numbers_are_the_stored_ones(lab: Any):
    store = lab["store"]
    for variant, run_id in lab["ids"].items():
        p = prepared(lab, variant)
        run = store.run(run_id)
        s = run.config["settings"]
        for cutoff in (PromptCutoff(k=s["k"]), PromptCutoff(budget=s["budget"])):
            sc = scores(p, cutoff)
            for key in ("R", "AllR", "RR", "headroom", "nDCG"):
                if sc.means[key] is not None:
                    assert sc.means[key] == run.metrics[sc.names[key]], (variant, key)
        stored = store.evaluation(run_id, "span")
        sc = scores(p, PromptCutoff(k=s["k"]))
        assert sc.qids == stored.query_ids
        assert np.array_equal(sc.values["R"], stored.values[:, stored.metrics.index(
            next(m for m in stored.metrics if str(m) == f"R@{s['k']}"))])  # fmt: skip


def test_gained_lost_fixed_and_broken_follow_ragmeter_compare(lab: Any):
    store, ids = lab["store"], lab["ids"]
    base = scores(prepared(lab, "baseline"), PromptCutoff(k=4))
    for variant in ("hybrid", "reranker"):
        moved = movements(base, scores(prepared(lab, variant), PromptCutoff(k=4)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b, c = store.evaluation(ids["baseline"]), store.evaluation(ids[variant])
            for key, metric in (("AllR", "AllR@4"), ("R", "R@4"), ("RR", "RR@4")):
                cmp = compare(b, c, metric)
                m = moved[key]
                assert (len(m.gained), len(m.lost)) == (cmp.wins, cmp.losses)
                assert m.fixed == cmp.fixed_ids and m.broken == cmp.broken_ids
                assert m.mean_delta == pytest.approx(cmp.mean_delta, abs=1e-15)
    assert moved["AllR"].binary and moved["R"].fixed is None  # fixed/broken: yes/no metrics only
    # hand-checked on the example: the hybrid fixes 12 questions at AllR@4 and breaks none
    hybrid = movements(base, scores(prepared(lab, "hybrid"), PromptCutoff(k=4)))["AllR"]
    assert (len(hybrid.fixed or ()), len(hybrid.broken or ())) == (12, 0)


def test_marked_segments_are_the_labelled_characters(lab: Any):
    corpus = load_corpus(lab["root"] / "corpus.jsonl")
    p = prepared(lab, "baseline")
    checked_whole = 0
    for q in p.ctx.golden:
        if not q.evidence:
            continue
        ql = question_list(p, PromptCutoff(k=4), q.id)
        for it in ql.items:
            assert it.text == corpus[it.doc].text[it.start : it.end]
            assert "".join(x.text for x in it.pieces) == it.text
            for piece in it.pieces:
                if piece.grade is None:
                    continue
                ev = q.evidence[piece.evidence]
                assert piece.grade == ev.grade and ev.doc == it.doc
                absolute = (it.start + piece.start, it.start + piece.end)
                assert ev.start <= absolute[0] < absolute[1] <= ev.end
                assert piece.text == corpus[it.doc].text[absolute[0] : absolute[1]]
                if absolute == (ev.start, ev.end):
                    checked_whole += 1
                    assert piece.text == (ev.text or corpus[ev.doc].text[ev.start : ev.end])
        # the evidence table's found ranks are the engine's first found rank
        first = [e.found_rank for e in ql.evidence if e.found_rank is not None]
        detail = lab["store"].evaluation(lab["ids"]["baseline"]).details[q.id]["first_rank"]
        assert (min(first) if first else None) == detail
    assert checked_whole > 50


def test_the_prompt_cutoff_is_k_or_where_the_budget_fills(lab: Any):
    p = prepared(lab, "smaller chunks")
    ql = question_list(p, PromptCutoff(budget=450), "24h-rule-basic")
    tokens = [it.n_tokens for it in ql.items]
    fill = ql.prompt_size
    assert fill is not None and sum(tokens[:fill]) <= 450 < sum(tokens[: fill + 1])
    assert [it.in_prompt for it in ql.items] == [i < fill for i in range(len(ql.items))]
    assert f"{fill} chunk(s) fill the 450-token budget" in ql.cutoff_label
    q4 = question_list(p, PromptCutoff(k=4), "24h-rule-basic", limit=6)
    full = question_list(p, PromptCutoff(k=4), "24h-rule-basic")
    last_marked = max(it.rank for it in full.items if it.segments)
    assert last_marked > 6  # the example's second span is found deep in the list
    # a short list still shows the prompt, the chunk after it and every chunk with evidence
    assert q4.cutoff_label == "prompt ends here: k = 4" and len(q4.items) == last_marked
    assert q4.items == full.items[:last_marked]
    assert [it.in_prompt for it in q4.items] == [True] * 4 + [False] * (last_marked - 4)
    assert len(question_list(p, PromptCutoff(k=30), "24h-rule-basic", limit=6).items) == 31


def test_a_moved_experiment_falls_back_to_the_stored_golden_set_and_offsets(
    lab: Any, tmp_path: Path
) -> None:
    from ragmeter.workflows.experiment import run_and_record

    root = tmp_path / "moved"
    root.mkdir()
    for name in ("golden.jsonl", "corpus.jsonl", "experiment.toml"):
        shutil.copy(EXAMPLE / name, root / name)
    with Store.open(f"sqlite:///{tmp_path / 'moved.db'}") as store:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, ids = run_and_record(
                store, root / "experiment.toml", cache_dir=EXAMPLE / ".ragmeter-cache"
            )
        before = scores(prepared_run(store, ids["baseline"], LabCache(tmp_path)), PromptCutoff(k=7))
        shutil.move(root, tmp_path / "elsewhere")
        p = prepared_run(store, ids["baseline"], LabCache(tmp_path))
        assert p.problem is not None and "is not there any more" in p.problem
        assert "stored golden set" in p.problem and not p.has_chunking
        after = scores(p, PromptCutoff(k=7))
        for key in ("R", "AllR", "RR", "headroom"):
            assert np.array_equal(after.values[key], before.values[key])
        assert after.means["nDCG"] is None and "chunking" in after.unavailable["nDCG"]
        with pytest.raises(Exception, match="token budget"):
            scores(p, PromptCutoff(budget=1200))
        ql = question_list(p, PromptCutoff(k=4), "24h-rule-basic")
        assert ql.items[0].text is None and ql.items[0].segments  # offsets, no text
        assert ql.items[0].doc == "refunds" and ql.items[0].segments[0][2] == 2


def test_an_edited_experiment_file_is_read_again(lab: Any, tmp_path: Path) -> None:
    root = tmp_path / "exp"
    shutil.copytree(lab["root"], root, ignore=shutil.ignore_patterns("*.db", "runs", "*.trec"))
    cache = LabCache(lab["root"])
    first = load_experiment_files(root / "experiment.toml", cache)
    assert load_experiment_files(root / "experiment.toml", cache) is first
    path = root / "golden.jsonl"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    again = load_experiment_files(root / "experiment.toml", cache)
    assert again is not first and again.golden.version == first.golden.version
    ctx = run_context(lab["store"], lab["store"].run(lab["ids"]["baseline"]), cache)
    assert ctx.problem is None and ctx.chunking is not None and ctx.is_current()


def test_cutoffs_are_checked() -> None:
    with pytest.raises(Exception, match="one of them"):
        PromptCutoff()
    with pytest.raises(Exception, match="one of them"):
        PromptCutoff(k=3, budget=100)
    with pytest.raises(Exception, match="k must be"):
        PromptCutoff(k=0)
    assert PromptCutoff(budget=1200).label == "budget = 1,200 tokens"
    assert PromptCutoff.of_settings({"k": None, "budget": 900}) == PromptCutoff(budget=900)


segments_st = st.lists(
    st.tuples(st.integers(-5, 60), st.integers(0, 70), st.integers(1, 3), st.integers(0, 4)),
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=60), segs=segments_st)
def test_pieces_cover_the_text_and_mark_exactly_the_segments(text: str, segs: list[Any]) -> None:
    segs = [(a, b, g, e) for a, b, g, e in segs if a < b]
    out = pieces(text, segs)
    assert "".join(p.text for p in out) == text
    assert all(p.text == text[p.start : p.end] and p.start < p.end for p in out)
    marked = {i for p in out if p.grade is not None for i in range(p.start, p.end)}
    wanted = {i for a, b, _, _ in segs for i in range(max(a, 0), min(b, len(text)))}
    assert marked == wanted
    for p in out:  # where segments overlap, the higher grade marks the characters (a piece
        if p.grade is not None:  # may join neighbouring segments of one grade: check each one)
            for i in range(p.start, p.end):
                assert p.grade == max(g for a, b, g, _ in segs if a <= i < b)
    shown = excerpt(out, context=5)
    assert "".join(s.text for s in shown) == text  # folding hides nothing for good
    assert all(not s.fold for s in shown if s.piece.grade is not None)


def test_excerpt_keeps_context_next_to_marks() -> None:
    text = "a" * 100 + "EVIDENCE" + "b" * 100
    out = excerpt((Piece(text[:100], 0, 100), Piece("EVIDENCE", 100, 108, 2, 0),
                   Piece(text[108:], 108, 208)), context=10)  # fmt: skip
    assert [(s.text, s.fold) for s in out] == [
        ("a" * 90, True), ("a" * 10, False), ("EVIDENCE", False), ("b" * 10, False),
        ("b" * 90, True),
    ]  # fmt: skip
