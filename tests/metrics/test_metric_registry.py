"""The metric registry is the one declaration of every metric: the grammar, both engines, the
``ragmeter metrics`` command and the README's table read it, and a Metric value travels through
comparison, sweep, gate and diagnosis (strings only at the edges)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import InputError, UsageError
from ragmeter.cli import app
from ragmeter.diagnosis import RecallAt, diagnose, recall_from_evaluation, table_from_counts
from ragmeter.metrics import REGISTRY, Evaluation, Metric, _doc, evaluate, parse
from ragmeter.metrics._kernels import SpanInputs
from ragmeter.paired import GateRule, compare, gate, sweep_values

README = Path(__file__).resolve().parents[2] / "README.md"
runner = CliRunner()


# -- the README and `ragmeter metrics` are generated from the registry ---------------------------
def test_readme_metric_table_is_the_registry() -> None:
    text = README.read_text(encoding="utf-8")
    assert _doc.rewrite(text) == text, "run: python -m ragmeter.metrics._doc --write README.md"
    start, end = _doc.current_block(text)
    block = text[start:end]
    for info in REGISTRY.values():
        assert f"| `{info.forms[0]}`" in block
        for name in info.trec_eval:
            assert f"`{name}`" in block


def test_doc_check_fails_on_a_stale_readme(tmp_path: Path) -> None:
    stale = tmp_path / "README.md"
    text = README.read_text(encoding="utf-8")
    stale.write_text(text.replace("`recall_k`", "`recall`", 1), encoding="utf-8")
    assert _doc.main(["--check", str(stale)]) == 1
    assert _doc.main(["--write", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == text
    assert _doc.main(["--check", str(stale)]) == 0
    (tmp_path / "bare.md").write_text("no markers\n", encoding="utf-8")
    with pytest.raises(InputError, match="metric-table markers"):
        _doc.main(["--check", str(tmp_path / "bare.md")])


def test_metrics_command_lists_every_metric_as_json_csv_and_table() -> None:
    r = runner.invoke(app, ["metrics", "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert [x["name"] for x in rows] == list(REGISTRY)
    by = {x["name"]: x for x in rows}
    assert by["nDCG"]["trec_eval"] == ["ndcg_cut_k", "ndcg"]
    assert by["R"]["options"] == [
        {"name": "rel", "default": 1, "doc": "relevant means grade >= rel"}
    ]
    assert by["AllR"]["labels"] == ["spans"] and by["P"]["labels"] == ["items"]
    assert by["P"]["forms"] == ["P@k"] and by["Rprec"]["forms"] == ["Rprec"]
    assert by["RR"]["aliases"] == ["MRR"]

    csv_out = runner.invoke(app, ["metrics", "-f", "csv"]).stdout.splitlines()
    assert len(csv_out) == 1 + len(REGISTRY) and csv_out[0].startswith("name,title,forms")

    for cols in ("80", "120"):
        table = runner.invoke(app, ["metrics"], env={"COLUMNS": cols})
        assert table.exit_code == 0
        for info in REGISTRY.values():
            assert info.forms[0] in table.stdout
        assert "…" not in table.stdout  # nothing truncated

    one = runner.invoke(app, ["metrics", "MRR", "nDCG(gain=exp)@3", "-f", "json"])
    assert [x["name"] for x in json.loads(one.stdout)] == ["RR", "nDCG"]
    bad = runner.invoke(app, ["metrics", "Recal"])
    assert bad.exit_code == 2 and "Did you mean" in bad.output


# -- each entry is consistent with the grammar and the engines ------------------------------------
@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_written_form_parses_back_to_the_entry(name: str) -> None:
    info = REGISTRY[name]
    for form in info.forms:
        m = parse(form.replace("@k", "@5").replace("=B", "=1200"))
        assert m.name == name and parse(str(m)) == m
        assert set(m.params) == info.options
    for alias in info.aliases:
        assert parse(alias + ("@3" if info.cutoff == "required" else "")).name == name


def test_levels_come_from_the_kernels_and_the_engines_follow_them() -> None:
    for info in REGISTRY.values():
        assert ("rank" in info.levels) == (info.rank_kernel is not None)
        assert ("span" in info.levels) == (info.span_kernel is not None)
    qrels, run = {"q": {"a": 1}}, {"q": {"a": 1.0}}
    for name, info in REGISTRY.items():
        m = Metric(name, 1 if info.cutoff != "none" else None)
        if "rank" in info.levels:
            assert evaluate(qrels, run, [m]).aggregate[str(m)] == 1.0
        else:
            with pytest.raises(UsageError, match="span-level"):
                evaluate(qrels, run, [m])


def test_span_kernels_on_hand_built_spans() -> None:
    # q0: a required grade-1 span found at rank 1, an optional grade-2 span found at rank 3;
    # q1: one span never found. Cutoffs: q0 at 2, q1 at 5.
    x = SpanInputs(
        question=np.array([0, 0, 1]),
        grade=np.array([1, 2, 1]),
        required=np.array([True, False, False]),
        found=np.array([1.0, 3.0, np.inf]),
        cutoff=np.array([2.0, 5.0]),
        nq=2,
    )

    def value(text: str) -> list[float]:
        m = parse(text)
        kernel = m.info.span_kernel
        assert kernel is not None
        return kernel(x, m).tolist()

    assert value("R") == [0.5, 0.0]  # 1 of 2 spans within 2; none
    assert value("R(rel=2)") == [0.0, 0.0]  # the grade-2 span is at rank 3 > 2
    assert value("Hit") == [1.0, 0.0]
    assert value("RR") == [1.0, 0.0]
    assert value("AllR") == [1.0, 0.0]  # the one required span is found


# -- one gain rule -------------------------------------------------------------------------------
def test_a_gain_map_names_grades_of_one_or_more() -> None:
    # grades <= 0 always have gain 0 (docs/metrics.md); a map entry for one was accepted and
    # then read by the engine but not by Metric.gain_of: two rules. Now it is refused.
    with pytest.raises(UsageError, match="grades >= 1"):
        parse("nDCG(gains=0:5,1:1)@3")
    with pytest.raises(UsageError, match="grades >= 1"):
        Metric("nDCG", 3, gains=((-1, 2.0),))


def test_ndcg_by_hand_with_exp_gain() -> None:
    # ranked: c (grade 0), a (grade 2 -> gain 3), b (grade 1 -> gain 1)
    ev = evaluate(
        {"q": {"a": 2, "b": 1, "c": 0}}, {"q": {"c": 3.0, "a": 2.0, "b": 1.0}}, "nDCG(gain=exp)@3"
    )
    dcg = 3 / math.log2(3) + 1 / 2
    idcg = 3 + 1 / math.log2(3)
    assert ev.aggregate["nDCG(gain=exp)@3"] == pytest.approx(dcg / idcg, abs=1e-12)


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    st.dictionaries(st.sampled_from("abcdefgh"), st.integers(-1, 4), min_size=1, max_size=8),
    st.sampled_from(["nDCG", "nDCG(gain=exp)", "nDCG(gains=1:3,2:0.5,4:9)"]),
    st.integers(1, 8),
    st.randoms(use_true_random=False),
)
def test_engine_ndcg_equals_a_reference_built_on_gain_of(grades, text, k, rnd) -> None:
    """The engine's nDCG and a plain-Python nDCG computed with Metric.gain_of agree: one rule."""
    if max(grades.values()) < 1:
        grades["z"] = 1
    docs = list(grades)
    rnd.shuffle(docs)
    run = {"q": {d: float(len(docs) - i) for i, d in enumerate(docs)}}
    m = parse(f"{text}@{k}")
    gains = [m.gain_of(grades[d]) for d in docs[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted((m.gain_of(g) for g in grades.values()), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    got = evaluate({"q": grades}, run, [m]).values[0, 0]
    assert got == pytest.approx(dcg / idcg if idcg > 0 else 0.0, abs=1e-12)


# -- a metric is a value equal to its canonical string --------------------------------------------
def test_metric_equals_and_hashes_like_its_canonical_string() -> None:
    m = parse("MRR@10")
    assert m == "RR@10" and m != "MRR@10" and m == Metric("RR", 10)
    assert {"RR@10": 0.5}[m] == 0.5 and hash(m) == hash("RR@10")
    assert parse("nDCG(gain=exp)@10").stem == "nDCG(gain=exp)"
    assert parse("R(rel=2)@budget=900").stem == "R(rel=2)"
    assert parse("nDCG(gains=2:9,1:3)@5").params == {
        "gain": "linear",
        "gains": ((1, 3.0), (2, 9.0)),
    }
    assert parse("P", default_k=1) == "P@1" and parse("R", default_k=1) == "R"


# -- metric values through comparison, gate, sweep and diagnosis ----------------------------------
def _ev(run: str, metric: str, values: list[float]) -> Evaluation:
    qids = tuple(f"q{i}" for i in range(len(values)))
    return Evaluation(
        run=run, metrics=(parse(metric),), query_ids=qids, values=np.array(values).reshape(-1, 1)
    )


def test_comparison_carries_the_metric_or_names_the_outcome() -> None:
    c = compare(
        _ev("a", "Hit@5", [0, 1, 0, 1]), _ev("b", "Hit@5", [1, 1, 1, 1]), "Hit@5", n_resamples=50
    )
    assert isinstance(c.metric, Metric) and c.metric.k == 5 and c.binary
    assert c.to_dict()["metric"] == "Hit@5" and c.label == "Hit@5"
    r = gate(c, GateRule(max_broken=0))
    assert "on Hit@5" in r.statement and "on Hit@5" in r.to_markdown()

    o = compare({"x": 0, "y": 1}, {"x": 1, "y": 1}, outcome="answer correct", n_resamples=50)
    assert o.metric is None and o.outcome == "answer correct"
    assert o.to_dict()["metric"] == "answer correct" and o.binary
    free = compare({"x": 0, "y": 1}, {"x": 1, "y": 1}, "answer correct", n_resamples=50)
    assert free.metric is None and free.label == "answer correct"
    with pytest.raises(UsageError, match="outcome="):
        compare(_ev("a", "Hit@5", [0, 1]), _ev("b", "Hit@5", [1, 1]), outcome="x")


def test_sweep_keeps_the_metric_and_its_options() -> None:
    s = sweep_values({"A": [0.1, 0.2], "B": [0.3, 0.1]}, [3, 5], "nDCG(gain=exp)")
    assert s.metric == Metric("nDCG", 3, gain="exp") and s.label == "nDCG(gain=exp)@k"
    assert s.metric_at(5) == "nDCG(gain=exp)@5"
    b = sweep_values({"A": [0.5]}, [800], "AllR", kind="budget", headroom_k=20, headroom={"A": 0.9})
    assert b.metric_at(800) == "AllR@budget=800" and b.label == "AllR@budget"
    assert b.to_dict()["headroom"]["metric"] == "R@20"
    with pytest.raises(UsageError, match="takes no cutoff"):
        sweep_values({"A": [0.5]}, [3], "Rprec")


def test_diagnosis_reads_the_cutoff_from_the_metric() -> None:
    rec = RecallAt("AllR@budget=1200", 0.7, 80)
    assert rec.metric == Metric("AllR", budget=1200)
    d = diagnose(
        table=table_from_counts(49, 14, 2, 14),
        prompt_recall=rec,
        headroom_recall=RecallAt("AllR@budget=4000", 0.97, 80),
    )
    assert d.experiment.link == "ranking"
    # nDCG has no token-budget form and was not measured: not named (issue 27, item 3)
    assert d.experiment.metric == "AllR@budget=1200"
    assert "has a rank cutoff, not a token budget" in (d.experiment.assumption or "")
    assert "the candidates within a 4000-token budget" in d.experiment.change
    ranked = diagnose(
        table=table_from_counts(49, 14, 2, 14),
        prompt_recall=RecallAt("AllR@4", 0.7, 80),
        headroom_recall=RecallAt("R@20", 0.97, 80),
    )
    assert "over the top 20 candidates" in ranked.experiment.change
    got = recall_from_evaluation(_ev("a", "AllR@3", [1, 0, 1, 1]), Metric("AllR", 3))
    assert got.metric == Metric("AllR", 3) and got.value == 0.75 and got.n == 4
