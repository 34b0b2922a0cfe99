"""The lab's views (experiments, comparison, sweeps, diagnosis, question, judges, slider) on a
store recorded from the fare-rules example the way a user records it (``ragmeter run``,
``answers check``, ``compare``, ``judge validate``): every number a page shows equals what the
command line printed for the same inputs, every link resolves, hostile strings print escaped."""

from __future__ import annotations

import html
import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# justified: the lab is the optional [web] extra; the test extra installs it
pytest.importorskip("fastapi")  # justified: the lab is the [web] extra
pytest.importorskip("httpx")  # justified: the [test] extra's HTTP client

from _lab_store import EXAMPLE, cli_json, record_fare_rules
from fastapi.testclient import TestClient

from ragmeter import Store
from ragmeter.lab import create_app
from ragmeter.paired import bootstrap_means
from ragmeter.paired._bootstrap import bootstrap_interval

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(1)>'
VERSION_RE = re.compile(r"g-[0-9a-f]{12}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The example recorded into a fresh store: 4 runs, 2 answer sets, 3 comparisons and a
    judge validation, with what each command printed."""
    fare = record_fare_rules(tmp_path_factory.mktemp("lab"))
    root, url, ids, chunks = fare.root, fare.url, fare.ids, fare.chunks
    diagnose = fare.diagnose()
    b, h, r, s = ids["baseline"], ids["hybrid"], ids["reranker"], ids["smaller chunks"]
    compares = [
        cli_json("compare", b, h, "-m", "AllR@4", "--db", url, "-f", "json"),
        cli_json("compare", b, r, "-m", "AllR@4", "--db", url, "-f", "json"),
        cli_json("compare", b, s, "-m", "AllR@budget=1200", "--db", url, "-f", "json"),
    ]
    human, judge = root / "human.jsonl", root / "judge.jsonl"
    pairs = [
        ("a", "supported", "supported"),
        ("b", "unsupported", "supported"),
        (HOSTILE, "unsupported", "supported"),
        ("d", "unsupported", "unsupported"),
    ]
    human.write_text("".join(json.dumps({"id": i, "label": x}) + "\n" for i, x, _ in pairs))
    judge.write_text("".join(json.dumps({"id": i, "label": y}) + "\n" for i, _, y in pairs))
    judged = cli_json(
        "judge", "validate", "--human", human, "--judge", judge, "--db", url, "-f", "json"
    )
    runs = [root / "runs" / n / "run.trec" for n in ("baseline", "hybrid", "reranker")]
    swept = cli_json(
        "sweep",
        *runs,
        "--golden",
        root / "golden.jsonl",
        "--chunks",
        chunks,
        "-m",
        "R",
        "--k",
        "1..20",
        "--headroom-k",
        "20",
        "-f",
        "json",
    )
    curve = cli_json("explain", "rank-curve", "--k", "5", "-f", "json")
    store = Store.open(url)
    client = TestClient(create_app(store=store, root=root), base_url="http://127.0.0.1")
    yield {
        "url": url,
        "ids": ids,
        "client": client,
        "store": store,
        "compares": compares,
        "judged": judged,
        "diagnose": diagnose,
        "sweep": swept,
        "curve": curve,
    }
    store.close()


def text_of(page: str) -> str:
    """The page's visible text (tags dropped, entities decoded, spaces collapsed)."""
    page = re.sub(r"<script[^>]*>.*?</script>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def get(lab: dict[str, Any], url: str, status: int = 200) -> str:
    r = lab["client"].get(url)
    assert r.status_code == status, (url, r.status_code, r.text[-500:])
    return r.text


# -- experiments -----------------------------------------------------------------------------
def test_experiments_lists_every_run_with_its_headline_and_the_ledger(lab: dict[str, Any]) -> None:
    page = text_of(get(lab, "/"))
    for run in lab["store"].runs():
        assert f"{run.id} {run.name}" in page
        assert f"AllR@budget=1200 {run.metrics['AllR@budget=1200']:.3f}" in page
    # three comparisons counted three candidates on the version; the optimism is the one the
    # third `ragmeter compare` printed
    sel = lab["compares"][2]["selection"]
    assert lab["compares"][2]["n_variants_tried"] == 3
    assert "3 variants compared on this version: the best one's lead is optimistic" in page
    assert f"about {sel['optimism']:+.3f} above its true value" in page
    assert "baseline → hybrid" in page and "+0.150" in page


def test_experiments_filters_by_status_golden_and_experiment(lab: dict[str, Any]) -> None:
    assert "No run matches" in text_of(get(lab, "/?status=failed"))
    version = lab["store"].run(1).golden_version
    assert "Runs (4 of 4)" in text_of(get(lab, f"/?golden={version}&status=finished"))
    assert "Runs (0 of 4)" in text_of(get(lab, "/?experiment=nothing%20of%20the%20kind"))


# -- comparison ------------------------------------------------------------------------------
def _same_as_cli(page: str, c: dict[str, Any]) -> None:
    from ragmeter._interval import interval_text
    from ragmeter._pvalue import format_p, p_is

    lo, hi = c["ci"]
    assert (
        f"Difference {c['mean_delta']:+.4f}, 95% interval {interval_text(lo, hi)}, "
        f"sign test p {p_is(c['sign_test_p'])}." in page
    )
    assert f"{c['wins']} / {c['losses']} / {c['ties']}" in page
    assert format_p(c["sign_test_p"]) in page
    for name, s in {**c["splits"], **c["slices"]}.items():
        slo, shi = s["ci"]
        assert (
            f"{s['n']} {s['baseline_mean']:.3f} {s['candidate_mean']:.3f} "
            f"{s['mean_delta']:+.3f} {interval_text(slo, shi)} "
            f"{s['wins']}/{s['losses']}/{s['ties']}" in page
        ), name
    assert "split heldout (held out)" in page
    for qid in c["fixed_ids"] + c["broken_ids"]:
        assert qid in page


def test_stored_comparisons_show_what_compare_printed(lab: dict[str, Any]) -> None:
    for cid, c in enumerate(lab["compares"], start=1):
        _same_as_cli(text_of(get(lab, f"/comparisons/{cid}")), c)


def test_a_comparison_computed_now_equals_compare_and_counts_nothing(lab: dict[str, Any]) -> None:
    from ragmeter.lab._data_comparison import live_comparison_context

    n_before = len(lab["store"].ledger.entries())
    ids = lab["ids"]
    c = lab["compares"][0]
    page = text_of(get(lab, f"/compare?base={ids['baseline']}&cand={ids['hybrid']}&metric=AllR@4"))
    _same_as_cli(page, c)
    ctx = live_comparison_context(lab["store"], ids["baseline"], ids["hybrid"], "AllR@4")
    assert (ctx.mean_delta, list(ctx.ci)) == (c["mean_delta"], c["ci"])
    assert [q.qid for q in ctx.fixed_ids] == c["fixed_ids"]
    assert ctx.one_change.ok and ctx.fairness.ok
    assert len(lab["store"].ledger.entries()) == n_before  # a page view counts nothing
    # the histogram is the distribution the interval is the percentiles of
    assert ctx.histogram_matches
    assert sum(b["count"] for b in ctx.histogram.bins) == c["n_resamples"]
    # smaller chunks at k: not the same budget, said on the page
    bad = text_of(
        get(lab, f"/compare?base={ids['baseline']}&cand={ids['smaller chunks']}&metric=R@20")
    )
    assert "Is it a fair test?" in bad and "compare at a token budget, e.g. R@budget=1200" in bad


def test_comparison_errors_are_pages_not_tracebacks(lab: dict[str, Any]) -> None:
    assert "has no run 99" in text_of(get(lab, "/compare?base=1&cand=99", 404))
    assert "pick two different runs" in text_of(get(lab, "/compare?base=1&cand=1", 400))
    assert "no comparison 42" in text_of(get(lab, "/comparisons/42", 404))


@settings(max_examples=40, deadline=None)
@given(
    diffs=st.lists(st.sampled_from([-1.0, 0.0, 0.0, 1.0, 0.5]), min_size=1, max_size=60),
    seed=st.integers(0, 2**32 - 1),
    resamples=st.integers(1, 400),
    method=st.sampled_from(["index", "counts", "auto"]),
)
def test_bootstrap_means_are_the_draws_the_interval_is_taken_from(
    diffs: list[float], seed: int, resamples: int, method: str
) -> None:
    d = np.asarray(diffs)
    iv = bootstrap_interval(d, n_resamples=resamples, seed=seed, method=method)  # type: ignore[arg-type]
    means, used = bootstrap_means(d, n_resamples=resamples, seed=seed, method=method)  # type: ignore[arg-type]
    assert used == iv.method and len(means) == resamples
    lo, hi = np.percentile(means, [2.5, 97.5])
    assert (float(lo), float(hi)) == (iv.lo, iv.hi)


def test_bootstrap_means_by_hand() -> None:
    # n = 2, index method: the means are those of rng.integers(0, 2, (B, 2)) draws
    rng = np.random.default_rng(7)
    idx = rng.integers(0, 2, size=(5, 2))
    d = np.array([0.0, 1.0])
    means, method = bootstrap_means(d, n_resamples=5, seed=7, method="index")
    assert method == "index"
    assert means.tolist() == d[idx].mean(axis=1).tolist()


# -- sweeps ----------------------------------------------------------------------------------
def test_sweep_equals_ragmeter_sweep_and_marks_headroom(lab: dict[str, Any]) -> None:
    from ragmeter.lab._data_sweeps import sweeps_context

    ids = lab["ids"]
    runs = [ids["baseline"], ids["hybrid"], ids["reranker"]]
    ctx = sweeps_context(lab["store"], runs, metric="R", kind="k", cutoffs="1..20")
    cli_sweep = lab["sweep"][0]
    assert ctx.sweep["cutoffs"] == cli_sweep["cutoffs"]
    assert list(ctx.sweep["values"].values()) == list(cli_sweep["values"].values())
    assert list(ctx.sweep["headroom"]["values"].values()) == list(
        cli_sweep["headroom"]["values"].values()
    )
    assert ctx.prompt == 4
    page = text_of(get(lab, f"/sweeps?runs={','.join(map(str, runs))}&metric=R&kind=k"))
    assert "past the prompt's k (4)" in page
    for cut, row in zip(cli_sweep["cutoffs"], ctx.table, strict=True):
        assert row.cutoff == cut
    # runs with different chunkings sweep the token budget by default
    budget = text_of(get(lab, f"/sweeps?runs={ids['baseline']},{ids['smaller chunks']}"))
    assert "R@budget" in budget and "prompt budget 1200" not in budget  # the label is in JSON
    assert "Shaded: past the prompt's budget (1200)" in budget
    assert "must be stored run ids" in text_of(get(lab, "/sweeps?runs=1,x", 400))


# -- diagnosis -------------------------------------------------------------------------------
def test_diagnosis_equals_ragmeter_diagnose(lab: dict[str, Any]) -> None:
    from ragmeter.lab._data_diagnosis import diagnosis_context

    ctx = diagnosis_context(lab["store"], 1, cache=lab["client"].app.state.lab.contexts)
    want = {k: v for k, v in lab["diagnose"].items() if k not in ("answers", "faithful_but_wrong")}
    assert ctx.diagnosis == want
    page = text_of(get(lab, "/diagnosis?answers=1"))
    cells = {c["cell"]: c["count"] for c in want["table"]["cells"]}
    assert cells == {
        "working": 49,
        "generation_failure": 14,
        "from_memory": 2,
        "retrieval_failure": 14,
    }  # the example README
    for c in want["table"]["cells"]:
        assert f"{c['count']} {c['title']}" in page
    for s in want["steps"]:
        assert s["detail"] in page
    assert want["experiment"]["refutation"] in page
    assert f"failing link {want['failing_link']}" in page
    # the reranker's answers are read against the reranker's run
    assert "read against run 4 · reranker" in text_of(get(lab, "/diagnosis?answers=2"))
    assert "no answer set 9" in text_of(get(lab, "/diagnosis?answers=9", 404))


# -- question --------------------------------------------------------------------------------
def test_question_shows_evidence_ranked_lists_answers_and_checks(lab: dict[str, Any]) -> None:
    version = lab["store"].run(1).golden_version
    raw = get(lab, f"/question?golden={version}&qid=change-fee-standard")
    page = text_of(raw)
    assert "What is the change fee for a Standard fare?" in page and "$75" in page
    assert re.search(r"<mark[^>]*>Standard fares: \$75", raw)  # the span inside fees-2026
    for run in lab["store"].runs():
        assert f"{run.id} · {run.name}" in page
    assert "prompt ends here: k = 4" in page
    # the baseline's answer quotes the 2024 schedule: supported by its citation, and wrong
    assert "faithful but wrong" in page and "missing 75 USD; states 100 USD" in page
    assert "fees-2024:484-556" in page
    assert "no question 'nope'" in text_of(get(lab, f"/question?golden={version}&qid=nope", 404))


# -- judges and the slider -------------------------------------------------------------------
def test_judge_validation_equals_judge_validate(lab: dict[str, Any]) -> None:
    j = lab["judged"]
    page = get(lab, "/judges/1")
    text = text_of(page)
    assert f"Cohen's kappa {j['kappa']:.3f}" in text
    assert f"observed agreement {j['agreement']:.3f}" in text
    for lab_, row in zip(j["labels"], j["confusion"]["rows_human_cols_judge"], strict=True):
        assert f"{lab_} {' '.join(map(str, row))} {sum(row)}" in text
    for d in j["disagreements"]:
        assert d["id"] in text
    i = page.find("<script>alert")
    assert i < 0, page[i - 300 : i + 100]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "Judge validations" in text_of(get(lab, "/judges"))


def test_slider_embeds_the_engine_curve_and_no_inline_code(lab: dict[str, Any]) -> None:
    page = get(lab, "/slider")
    curve = json.loads(re.search(r'id="slider-curve">(.*?)</script>', page, re.S).group(1))
    assert curve["rows"] == lab["curve"]["rows"]
    assert 'type="range"' in page and 'data-behaviour="slider"' in page
    for tag in re.findall(r"<script[^>]*>", page):
        assert "src=" in tag or 'type="application/json"' in tag, tag
    assert "onclick" not in page and "onload" not in page


# -- links and hostile strings ---------------------------------------------------------------
def test_every_link_of_every_view_resolves(lab: dict[str, Any]) -> None:
    from ragmeter.lab.views import routers

    paths = {r.path for router in routers() for r in router.routes}
    version = lab["store"].run(1).golden_version
    start = [
        "/",
        "/compare",
        "/comparisons/1",
        "/sweeps",
        "/sweeps?runs=1,2,3,4",
        "/diagnosis",
        "/diagnosis?answers=1",
        "/judges",
        "/judges/1",
        "/slider",
        f"/question?golden={version}&qid=change-fee-basic",
    ]
    seen: set[str] = set()
    for url in start:
        for href in re.findall(r'href="(/[^"#]*)', get(lab, url)):
            href = html.unescape(href)
            if href in seen or href.startswith("/static/"):
                continue
            if (
                href.split("?")[0] not in paths
                and not href.startswith("/comparisons/")
                and not href.startswith("/judges/")
            ):
                continue  # another helper's view not built in this tree
            same_view = [h for h in seen if h.split("?")[0] == href.split("?")[0]]
            seen.add(href)
            if len(same_view) >= 4:  # a few links per view: every kind, not all 90 questions
                continue
            assert lab["client"].get(href).status_code == 200, (url, href)
    assert any(h.startswith("/question?") for h in seen)
    assert any(h.startswith("/comparisons/") for h in seen)


def test_hostile_question_ids_and_texts_print_escaped(tmp_path: Path) -> None:
    from ragmeter import GoldenSet, Question, compare, load_corpus

    url = f"sqlite:///{tmp_path / 'x.db'}"
    q = Question(
        id=HOSTILE,
        question=f"{HOSTILE} [bold]x[/bold] :smile: </script><b>",
        answer="javascript:alert(1)",
        evidence=[],
        answerable=False,
    )
    other = Question(id="plain", question="plain?", answer=None, evidence=[], answerable=False)
    with Store.open(url) as store:
        version = store.put_golden(
            GoldenSet([q, other], corpus=load_corpus(EXAMPLE / "corpus.jsonl"))
        )
        store.record_answers(
            name=HOSTILE,
            answers=[{"id": HOSTILE, "answer": HOSTILE}],
            report={"answers": []},
            golden_version=version,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = compare(
                {HOSTILE: 0.0, "plain": 1.0},
                {HOSTILE: 1.0, "plain": 1.0},
                outcome="answer correct",
                n_resamples=50,
            )
        from dataclasses import replace

        store.record_comparison(replace(c, golden_version=version))
        client = TestClient(create_app(store=store), base_url="http://127.0.0.1")
        from urllib.parse import quote

        pages = [
            client.get(f"/question?golden={version}&qid={quote(HOSTILE)}"),
            client.get("/comparisons/1"),
            client.get("/"),
            client.get("/diagnosis"),
        ]
        for r in pages:
            assert r.status_code == 200, r.text[-300:]
            assert "<script>alert" not in r.text and "<img src=x" not in r.text
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
        assert "[bold]x[/bold] :smile:" in text_of(pages[0].text)
        # the link to the question carries the id URL-encoded, and it resolves
        link = html.unescape(re.search(r'href="(/question\?[^"]+)"', pages[1].text).group(1))
        assert client.get(link).status_code == 200


def test_every_pages_model_is_a_frozen_record(lab: dict[str, Any]) -> None:
    """The data functions hand the templates typed, read-only records, not dicts."""
    from dataclasses import FrozenInstanceError, is_dataclass

    from ragmeter.lab._data_comparison import choices, stored_comparison_context
    from ragmeter.lab._data_diagnosis import diagnosis_list_context
    from ragmeter.lab._data_experiments import experiments_context
    from ragmeter.lab._data_judges import judge_context, judges_list_context
    from ragmeter.lab._lab_page import empty_page

    store = lab["store"]
    models = [
        choices(store),
        stored_comparison_context(store, 1),
        diagnosis_list_context(store),
        experiments_context(store),
        judges_list_context(store),
        judge_context(store, 1),
        empty_page(),
    ]
    for model in models:
        assert is_dataclass(model) and not isinstance(model, dict), type(model)
        with pytest.raises(FrozenInstanceError):
            setattr(model, "extra", 1)  # noqa: B010
    assert [line.row.id for line in experiments_context(store).comparisons] == [3, 2, 1]
