"""Hostile numbers: every number a user gives (an option, a gain map, a count, a seed, a value in
an evaluation file) is either used as meant or refused with a clean error; no result is NaN,
infinite, outside its range or silently 0, and no size allocates without bound.

One test per case of issue 11's "numbers" family (each fails on the commit before issue 10, or on
the commit of issue 10 where that did not fix it), then hypothesis properties for the family.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import ragmeter
from ragmeter import InputError, UsageError
from ragmeter.cli import app

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "tests" / "fixtures" / "toy"
FARE = REPO / "examples" / "fare-rules"
BASE_EVAL = FARE / "runs" / "baseline" / "evaluation.json"
HYBRID_EVAL = FARE / "runs" / "hybrid" / "evaluation.json"
LOG2_3 = math.log2(3)

runner = CliRunner()


def cli(*args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one command; a Python exception is a test failure."""
    r = runner.invoke(app, list(args), env={"COLUMNS": "120"})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"traceback from {args}: {r.exception!r}") from r.exception
    return r.exit_code, r.stdout, r.stderr


def refused(*args: str) -> str:
    """The one-line error of a command that must exit 2."""
    code, out, err = cli(*args)
    assert code == 2, (code, out[-500:], err[-500:])
    assert "error:" in err and "Traceback" not in err
    return err


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def no_bad_float(text: str) -> None:
    low = text.lower()
    for word in ("nan", "inf"):
        assert not any(
            tok.strip("[](),:;\"'") in (word, f"-{word}", f"+{word}")
            for tok in low.replace(",", " ").split()
        ), text[-800:]


# -- silently wrong 1: gain maps ----------------------------------------------------------------
def test_gain_map_for_grade_zero_is_refused_on_the_command_line() -> None:
    # before issue 10: printed nDCG 2.98 (grade 0 and unretrieved positions got gain 5)
    err = refused(
        "eval", str(TOY / "qrels.txt"), str(TOY / "baseline.run"), "-m", "nDCG(gains=0:5)@10"
    )
    assert "grade 0" in err


def test_gain_map_for_grade_zero_is_refused_in_python_on_every_route(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="grade 0"):
        ragmeter.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, "nDCG(gains=0:5)@10")
    with pytest.raises(UsageError, match="grade -1"):
        ragmeter.Metric("nDCG", 10, gains=((-1, 2.0),))
    # an evaluation file whose metric is such a map (hand-edited) is refused by compare
    rec = json.loads(BASE_EVAL.read_text())
    rec["aggregate"] = {"nDCG(gains=0:5)@10": 0.5}
    rec["per_query"] = {q: {"nDCG(gains=0:5)@10": 0.5} for q in rec["per_query"]}
    bad = write(tmp_path / "bad.json", json.dumps(rec))
    err = refused("compare", str(bad), str(bad), "-m", "nDCG(gains=0:5)@10", "--no-ledger")
    assert "grade 0" in err
    err = refused(
        "sweep", str(TOY / "baseline.run"), "--qrels", str(TOY / "qrels.txt"), "-m",
        "nDCG(gains=0:5)",
    )  # fmt: skip
    assert "grade 0" in err


def test_gain_map_in_an_experiment_file_is_refused(tmp_path: Path) -> None:
    exp = write(
        tmp_path / "exp.toml",
        'name = "x"\ngolden = "g.jsonl"\ncorpus = "c.jsonl"\nk = 4\n'
        'metrics = ["R", "nDCG(gains=0:5,1:1)"]\n[baseline]\nchunker = "tokens:300:0"\n'
        'retriever = "bm25"\n',
    )
    from ragmeter.experiments import load_experiment

    with pytest.raises(InputError, match="grade 0"):
        load_experiment(exp, warn=False)


def test_hand_built_gain_map_case_scores_0_631_not_1() -> None:
    # the relevant item (grade 1) is at rank 2 behind a judged non-relevant one (grade 0):
    # DCG = 1/log2(3), IDCG = 1, so nDCG = 0.631; a gain for grade 0 made it 1.0
    qrels = {"q": {"bad": 0, "good": 1}}
    run = {"q": {"bad": 2.0, "good": 1.0}}
    e = ragmeter.evaluate(qrels, run, "nDCG(gains=1:1)@10")
    assert e.mean("nDCG(gains=1:1)@10") == pytest.approx(1 / LOG2_3)
    with pytest.raises(UsageError):
        ragmeter.evaluate(qrels, run, "nDCG(gains=0:1,1:1)@10")


@pytest.mark.parametrize("value", ["-5", "-0.5", "nan", "inf", "-inf", "1e999"])
def test_negative_or_non_finite_gain_is_refused(value: str) -> None:
    # today gains=1:-5 prints nDCG -0.262; nan/inf end in a traceback from the JSON writer
    err = refused(
        "eval", str(TOY / "qrels.txt"), str(TOY / "baseline.run"),
        "-m", f"nDCG(gains=1:{value})@10", "-f", "json",
    )  # fmt: skip
    assert "gain" in err
    with pytest.raises(UsageError, match="gain"):
        ragmeter.metrics.parse(f"nDCG(gains=2:{value})")


def test_zero_gain_for_a_low_grade_is_kept() -> None:
    # the documented way to give lower grades no gain: nDCG(gains=1:0,2:1)
    qrels = {"q": {"weak": 1, "strong": 2}}
    run = {"q": {"weak": 2.0, "strong": 1.0}}
    e = ragmeter.evaluate(qrels, run, "nDCG(gains=1:0,2:1)@10")
    assert e.mean("nDCG(gains=1:0,2:1)@10") == pytest.approx(1 / LOG2_3)


# -- NaN and infinity: huge gains ------------------------------------------------------------------
def test_exp_gain_of_a_huge_grade_is_computed_not_nan(tmp_path: Path) -> None:
    # 2^1024 overflows a float: the grades are scaled by a power of two, nDCG is scale-free.
    # ranked: grade 1023 then grade 1024; ideal: 1024 then 1023. Divide by 2^1024:
    # nDCG = (1/2 + 1/log2 3) / (1 + (1/2)/log2 3) (the -1 of 2^g - 1 is below float precision)
    q = write(tmp_path / "q.txt", "q 0 a 1023\nq 0 b 1024\n")
    r = write(tmp_path / "r.run", "q Q0 a 1 2.0 x\nq Q0 b 2 1.0 x\n")
    code, out, _ = cli("eval", str(q), str(r), "-m", "nDCG(gain=exp)@10", "-f", "json")
    assert code == 0
    got = json.loads(out)["aggregate"]["nDCG(gain=exp)@10"]
    assert got == pytest.approx((0.5 + 1 / LOG2_3) / (1 + 0.5 / LOG2_3), rel=1e-12)
    code, out, _ = cli("explain", "rank-curve", "--grades", "2000", "-f", "json")
    assert code == 0
    no_bad_float(out)


def test_gain_map_with_huge_values_is_not_nan() -> None:
    # 1e308 + 1e308 overflows: gains scale by a power of two first
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    e = ragmeter.evaluate(qrels, run, "nDCG(gains=1:1e308,2:1e308)")
    assert e.mean("nDCG(gains=1:1e308,2:1e308)") == pytest.approx(1.0)
    e = ragmeter.evaluate(qrels, run, "nDCG(gains=1:1e308,2:1.5e308)")
    want = (1 + 1.5 / LOG2_3) / (1.5 + 1 / LOG2_3)
    assert e.mean("nDCG(gains=1:1e308,2:1.5e308)") == pytest.approx(want)


# -- silently wrong 2: a mean over no query --------------------------------------------------------
def test_mean_over_no_scorable_query_is_not_zero(tmp_path: Path) -> None:
    q = write(tmp_path / "q.txt", "q1 0 d1 0\nq2 0 d2 0\n")
    r = write(tmp_path / "r.run", "q1 Q0 d1 1 1.0 x\n")
    code, out, _ = cli("eval", str(q), str(r), "-m", "nDCG@10,RR", "-f", "json")
    assert code == 0
    d = json.loads(out)
    assert d["n_queries"] == 0
    assert d["aggregate"] == {"nDCG@10": None, "RR": None}
    code, out, _ = cli("eval", str(q), str(r), "-m", "nDCG@10")
    assert code == 0 and "n/a (no scorable query)" in out and "0.0000" not in out
    code, out, _ = cli("eval", str(q), str(r), "-m", "nDCG@10", "-f", "csv")
    assert code == 0
    assert out.splitlines()[-1].split(",")[-1] == ""  # an empty cell, never 0.000000


def test_evaluate_on_no_query_has_no_mean() -> None:
    # a labelled query with no judgement (an empty qrels dict is refused: issue 22)
    e = ragmeter.evaluate({"q": {}}, {"q": {"a": 1.0}}, ["R@5"])
    assert e.n_queries == 0
    assert e.aggregate == {"R@5": None}
    with pytest.raises(UsageError, match="no scorable query"):
        e.mean("R@5")
    # an evaluation with no query survives its own file format
    again = ragmeter.Evaluation.from_dict(e.to_dict())
    assert again.aggregate == {"R@5": None}


def test_sweep_over_no_scorable_query_is_refused(tmp_path: Path) -> None:
    q = write(tmp_path / "q.txt", "q1 0 d1 0\n")
    r = write(tmp_path / "r.run", "q1 Q0 d1 1 1.0 x\n")
    err = refused("sweep", str(r), "--qrels", str(q), "--k", "1..3")
    assert "no scorable query" in err


# -- NaN and infinity: options -----------------------------------------------------------------
FLOAT_OPTIONS = [
    ("diagnose", "--counts", "41,9,6,14", "--prompt-threshold"),
    ("diagnose", "--counts", "41,9,6,14", "--headroom-threshold"),
    ("diagnose", "--counts", "41,9,6,14", "--answer-threshold"),
]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.parametrize("case", FLOAT_OPTIONS)
def test_non_finite_threshold_is_refused(case: tuple[str, ...], value: str) -> None:
    # before: --prompt-threshold nan -f json was a traceback (NaN in the JSON writer)
    err = refused(*case, value, "-f", "json")
    assert case[-1] in err and "finite" in err


@pytest.mark.parametrize("value", ["-1", "2", "1.0001"])
@pytest.mark.parametrize(
    "option", ["--prompt-threshold", "--headroom-threshold", "--answer-threshold"]
)
def test_diagnose_threshold_outside_0_1_is_refused(option: str, value: str) -> None:
    err = refused("diagnose", "--counts", "41,9,6,14", option, value)
    assert "[0, 1]" in err


def test_diagnose_thresholds_in_python() -> None:
    from ragmeter.diagnosis import Thresholds

    with pytest.raises(UsageError, match=r"\[0, 1\]"):
        Thresholds(prompt_recall=2)
    with pytest.raises(UsageError, match="finite"):
        Thresholds(answer_ok=float("nan"))


GATE = [str(BASE_EVAL), str(HYBRID_EVAL), "-m", "AllR@4"]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--min-delta", "nan"),
        ("--min-delta", "2"),
        ("--min-delta", "-1.5"),
        ("--require-ci-above", "inf"),
        ("--require-ci-above", "-5"),
        ("--require-ci-above", "1.01"),
    ],
)
def test_gate_thresholds_outside_their_range_are_refused(option: str, value: str) -> None:
    # before: --min-delta 2 or --require-ci-above inf failed the gate, -5 passed it; nan with
    # -f json was a traceback
    err = refused("gate", *GATE, option, value, "-f", "json")
    assert option in err or option.lstrip("-").replace("-", "_") in err


@pytest.mark.parametrize("command", ["compare", "gate"])
def test_negative_seed_is_refused(command: str) -> None:
    # before: ValueError: expected non-negative integer (a traceback)
    extra = ["--no-ledger"] if command == "compare" else ["--max-broken", "3"]
    err = refused(command, *GATE, "--seed", "-1", *extra)
    assert "seed" in err


def test_negative_seed_is_refused_by_answers_compare_and_golden_sample(tmp_path: Path) -> None:
    err = refused(
        "answers", "compare", str(FARE / "answers" / "baseline.jsonl"),
        str(FARE / "answers" / "rerank.jsonl"), "--golden", str(FARE / "golden.jsonl"),
        "--corpus", str(FARE / "corpus.jsonl"), "--seed", "-1",
    )  # fmt: skip
    assert "seed" in err
    logs = write(tmp_path / "logs.jsonl", '{"question": "a"}\n{"question": "b"}\n')
    err = refused(
        "golden", "sample", str(logs), "-n", "1", "--seed", "-1", "-o", str(tmp_path / "s.jsonl")
    )
    assert "seed" in err
    with pytest.raises(UsageError, match="seed"):
        ragmeter.paired_bootstrap([0.1, 0.2], seed=-1)


def test_negative_movers_is_refused() -> None:
    # before: --movers -1 was accepted (a negative count of movers to show)
    err = refused("compare", *GATE, "--movers", "-1", "--no-ledger")
    assert "movers" in err


def test_metrics_that_are_not_strings_are_a_usage_error() -> None:
    # before: evaluate(..., [5]) raised AttributeError deep inside the parser
    with pytest.raises(UsageError, match="metric"):
        ragmeter.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, [5])  # type: ignore[list-item]
    with pytest.raises(UsageError, match="metric"):
        ragmeter.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, 5)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="metric"):
        ragmeter.evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["R@5", None])  # type: ignore[list-item]


@pytest.mark.parametrize("value", [1.5, -0.25, 2])
def test_compare_refuses_a_per_query_value_outside_0_1(tmp_path: Path, value: float) -> None:
    rec = json.loads(BASE_EVAL.read_text())
    first = next(iter(rec["per_query"]))
    rec["per_query"][first]["AllR@4"] = value
    bad = write(tmp_path / "bad.json", json.dumps(rec))
    err = refused("compare", str(bad), str(HYBRID_EVAL), "-m", "AllR@4", "--no-ledger")
    assert str(bad) in err and "per_query" in err and first in err and "[0, 1]" in err
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        ragmeter.Evaluation.load(bad)


def test_an_aggregate_that_is_a_list_is_an_input_error(tmp_path: Path) -> None:
    rec = json.loads(BASE_EVAL.read_text())
    rec["aggregate"] = [1, 2]
    bad = write(tmp_path / "bad.json", json.dumps(rec))
    err = refused("compare", str(bad), str(HYBRID_EVAL), "-m", "AllR@4", "--no-ledger")
    assert "aggregate" in err and str(bad) in err


def test_judge_validate_with_no_shared_id_is_a_clean_error(tmp_path: Path) -> None:
    # before: agreement and kappa were NaN; -f json was a traceback
    human = write(tmp_path / "h.jsonl", '{"id": "a", "label": true}\n')
    judged = write(tmp_path / "j.jsonl", '{"id": "b", "label": true}\n')
    for fmt in ("table", "json"):
        err = refused("judge", "validate", "--human", str(human), "--judge", str(judged), "-f", fmt)
        assert "no human-labelled id was judged" in err


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0])
def test_retriever_parameters_must_be_finite(value: float) -> None:
    # before: BM25Retriever(k1=nan) and fuse(..., weights=[nan, 1]) were accepted (NaN passes
    # every comparison) and scored every item NaN
    from ragmeter.retrieval.bm25 import BM25Retriever
    from ragmeter.retrieval.hybrid import HybridRetriever, fuse

    with pytest.raises(UsageError, match="k1"):
        BM25Retriever(k1=value)
    with pytest.raises(UsageError, match="bm25 b"):
        BM25Retriever(b=value)
    from ragmeter.io import to_run

    run = to_run({"q": {"a": 1.0}})
    with pytest.raises(UsageError, match="weight"):
        fuse([run, run], fusion="weighted", weights=[value, 1.0])
    with pytest.raises(UsageError, match="hybrid weight"):
        HybridRetriever(BM25Retriever(), BM25Retriever(), weight=value)


# -- hangs and runaway memory ------------------------------------------------------------------
def test_sweep_k_range_is_capped_at_the_runs_depth() -> None:
    # before: --k 1..100000000 on a 4-row run reached 10 GB in 60 s
    code, out, _ = cli(
        "sweep", str(TOY / "baseline.run"), "--qrels", str(TOY / "qrels.txt"),
        "--k", "1..100000000", "-m", "R", "-f", "json",
    )  # fmt: skip
    assert code == 0
    (s,) = json.loads(out)
    assert s["cutoffs"] == list(range(1, 9))  # the toy runs hold 8 items per query
    assert any("capped at 8" in n for n in s["notes"])
    code, out, _ = cli(
        "sweep", str(TOY / "baseline.run"), "--qrels", str(TOY / "qrels.txt"),
        "--k", "1..100000000", "-m", "R",
    )  # fmt: skip
    assert code == 0 and "capped at 8" in out


def test_sweep_cutoffs_are_bounded_in_python() -> None:
    from ragmeter.paired._sweep import parse_cutoffs

    assert parse_cutoffs("1..100000000", cap=5) == [1, 2, 3, 4, 5]
    assert parse_cutoffs("1..3,50", cap=5) == [1, 2, 3, 50]  # a cutoff given alone is kept
    with pytest.raises(UsageError, match="10,000"):
        parse_cutoffs("1..100000000")
    with pytest.raises(UsageError, match="10,000"):
        ragmeter.sweep({"q": {"a": 1}}, {"r": {"q": {"a": 1.0}}}, "R", range(1, 10**9))


def test_diagnose_counts_are_bounded() -> None:
    # before: --counts 99999999999999999999,1,1,1 never finished (one id string per question)
    err = refused("diagnose", "--counts", "99999999999999999999,1,1,1")
    assert "10,000,000" in err
    from ragmeter.diagnosis import table_from_counts

    with pytest.raises(UsageError, match="10,000,000"):
        table_from_counts(10_000_001, 1, 1, 1)


def test_counts_table_holds_no_per_question_ids() -> None:
    from ragmeter.diagnosis import diagnose, table_from_counts

    t = table_from_counts(10_000_000, 2_000_000, 1, 9_000_000, support_unknown=3)
    assert t.n == 21_000_004
    assert t.count("working") == 10_000_000
    assert t.largest_bad is not None and t.largest_bad.key == "retrieval_failure"
    cells = {c["cell"]: c for c in t.to_dict()["cells"]}
    assert cells["working"]["count"] == 10_000_000 and cells["working"]["ids"] is None
    d = diagnose(table=t)
    assert d.failing_link is not None


def test_bootstrap_resamples_are_bounded() -> None:
    # before: --resamples 100000000000 asked numpy for 1.46 TiB
    err = refused("compare", *GATE, "--resamples", "100000000000", "--no-ledger")
    assert "resamples" in err and "1,000,000" in err
    with pytest.raises(UsageError, match="resamples"):
        ragmeter.paired_bootstrap([0.0, 1.0], n_resamples=10**9)


def test_counts_bootstrap_draws_in_blocks_with_the_same_stream() -> None:
    from ragmeter.paired import _bootstrap as B

    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    d = np.repeat([0.0, 1.0, -1.0], [50, 30, 20])
    whole = B.resample_means(d, 3000, rng_a, "counts")
    old = B.BLOCK_ELEMENTS
    try:
        B.BLOCK_ELEMENTS = 10  # three values: blocks of three resamples
        blocks = B.resample_means(d, 3000, rng_b, "counts")
    finally:
        B.BLOCK_ELEMENTS = old
    assert np.array_equal(whole, blocks)


def test_plan_sizes_are_formulas_and_targets_are_bounded() -> None:
    # a plan row is a formula of n (nothing allocated): a huge n is computed, not refused
    code, out, _ = cli(
        "plan", "--baseline-rate", "0.5", "--discordance", "0.1", "--n", "99999999999999999999",
        "-f", "json",
    )  # fmt: skip
    assert code == 0
    (row,) = json.loads(out)["rows"]
    z = 1.959963984540054
    assert row["paired_half_width"] == pytest.approx(z * math.sqrt(0.1 / 99999999999999999999))
    # before: ZeroDivisionError (target squared underflows to 0)
    err = refused("plan", "--baseline-rate", "0.5", "--discordance", "0.1", "--target", "1e-300")
    assert "target" in err and "1e-09" in err


# -- properties --------------------------------------------------------------------------------
GRADES = st.integers(-3, 1100)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    judged=st.dictionaries(st.sampled_from("abcdefgh"), GRADES, min_size=1, max_size=8),
    ranked=st.lists(st.sampled_from("abcdefghij"), min_size=0, max_size=10, unique=True),
    rule=st.one_of(
        st.sampled_from(["", "(gain=exp)"]),
        st.dictionaries(
            st.integers(-2, 1100),
            st.one_of(
                st.floats(allow_nan=True, allow_infinity=True),
                st.sampled_from([0.0, -0.0, 1e308, 5e-324]),
            ),
            min_size=1,
            max_size=4,
        ),
    ),
    k=st.one_of(st.none(), st.integers(1, 12)),
)
@pytest.mark.filterwarnings("ignore::ragmeter.RagmeterWarning")
def test_every_ndcg_is_in_0_1_or_refused(
    judged: dict[str, int], ranked: list[str], rule: str | dict[int, float], k: int | None
) -> None:
    if isinstance(rule, dict):
        opts = "(gains=" + ",".join(f"{g}:{v!r}" for g, v in rule.items()) + ")"
    else:
        opts = rule
    name = f"nDCG{opts}" + ("" if k is None else f"@{k}")
    run = {"q": {doc: float(len(ranked) - i) for i, doc in enumerate(ranked)}}
    try:
        e = ragmeter.evaluate({"q": judged}, run, name)
    except UsageError as exc:
        assert str(exc)
        assert isinstance(rule, dict)  # only a gain map can be refused
        assert any(g < 1 or not (math.isfinite(v) and v >= 0) for g, v in rule.items())
        return
    (m,) = e.metrics
    values = e.values[:, 0]
    assert np.all(np.isfinite(values)) and np.all(values >= 0) and np.all(values <= 1 + 1e-12)
    agg = e.aggregate[str(m)]
    assert (agg is None) == (e.n_queries == 0)


#: every float option of every command, with arguments that make the command run otherwise
FLOAT_CASES = [
    ["diagnose", "--counts", "41,9,6,14", "--headroom-threshold"],
    ["diagnose", "--counts", "41,9,6,14", "--prompt-threshold"],
    ["diagnose", "--counts", "41,9,6,14", "--answer-threshold"],
    ["eval", str(TOY / "qrels.txt"), str(TOY / "baseline.run"), "--cover"],
    ["compare", *GATE, "--no-ledger", "--resamples", "200", "--confidence"],
    ["compare", *GATE, "--no-ledger", "--resamples", "200", "--cover"],
    ["gate", *GATE, "--resamples", "200", "--min-delta"],
    ["gate", *GATE, "--resamples", "200", "--require-ci-above"],
    ["gate", *GATE, "--resamples", "200", "--max-broken", "3", "--cover"],
    [
        "sweep",
        str(TOY / "baseline.run"),
        "--qrels",
        str(TOY / "qrels.txt"),
        "--k",
        "1..3",
        "--cover",
    ],
    ["plan", "--discordance", "0.1", "--baseline-rate"],
    ["plan", "--baseline-rate", "0.5", "--discordance"],
    ["plan", "--baseline-rate", "0.5", "--difference"],
    ["plan", "--baseline-rate", "0.5", "--discordance", "0.1", "--target"],
    ["plan", "--baseline-rate", "0.5", "--discordance", "0.1", "--confidence"],
    ["plan", *GATE, "--target"],
    [
        "golden",
        "compare-traffic",
        str(FARE / "golden.jsonl"),
        str(FARE / "golden.jsonl"),
        "--factor",
    ],
    ["labels", "budget", "300x12", "400x9", "--tolerance"],
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.sampled_from(FLOAT_CASES),
    value=st.one_of(
        st.sampled_from(["nan", "inf", "-inf", "1e308", "-1e308", "-0.0", "0", "1", "1e-300"]),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
    ),
)
def test_every_float_option_runs_or_exits_2_without_nan(case: list[str], value: str) -> None:
    code, out, err = cli(*case, value, *([] if case[0] == "labels" else ["-f", "json"]))
    assert code in (0, 1, 2), (code, err[-400:])
    if code == 2:
        assert "error:" in err and "Traceback" not in err
    else:
        no_bad_float(out)
        if case[0] != "labels":
            json.loads(out)  # strict JSON: no NaN or Infinity
    if value.lstrip("-") in ("nan", "inf"):
        assert code == 2 and case[-1] in err


@settings(max_examples=15, deadline=None)
@given(value=st.one_of(st.integers(-(10**30), 10**30), st.sampled_from([-1, 0, 2**63, 2**64])))
def test_every_seed_runs_or_exits_2(value: int) -> None:
    code, _, err = cli("compare", *GATE, "--no-ledger", "--resamples", "50", "--seed", str(value))
    assert code in (0, 2)
    assert (code == 2) == (value < 0), err


# -- the Python API on plain mappings, paired_bootstrap and a saved comparison -----------------
@pytest.mark.parametrize(
    ("baseline", "metric", "qid"),
    [
        ({"a": 0.5, "b": 1.7}, "R@5", "b"),  # above 1 for a [0, 1] metric
        ({"a": -0.5, "b": 0.5}, "R@5", "a"),  # below 0
        ({"a": "0.5", "b": 0.5}, "R@5", "a"),  # text, even text float() would read
        ({"a": "0.5", "b": 0.5}, None, "a"),  # text is refused for a plain outcome too
        ({"a": 0.5, "b": None}, None, "b"),
        ({"a": float("nan"), "b": 0.5}, None, "a"),
        ({"a": 0.5, "b": float("-inf")}, "answer correct", "b"),
        ({"a": 10**400, "b": 0.5}, None, "a"),  # an integer beyond any float
    ],
)
def test_compare_refuses_bad_mapping_values_naming_the_question(
    baseline: dict[str, object], metric: str | None, qid: str
) -> None:
    candidate = {"a": 0.25, "b": 0.75}
    with pytest.raises(UsageError, match=rf"question {qid} \(") as info:
        ragmeter.compare(baseline, candidate, metric, n_resamples=50)  # type: ignore[arg-type]
    assert "Traceback" not in str(info.value)
    # the same values on the other side are refused too, naming that side
    with pytest.raises(UsageError, match="candidate"):
        ragmeter.compare(candidate, baseline, metric, n_resamples=50)  # type: ignore[arg-type]


def test_compare_plain_outcome_may_be_any_finite_number() -> None:
    # no metric: a plain outcome (latency, a cost) is any finite number; the mean delta is exact
    c = ragmeter.compare({"a": 120.0, "b": -3}, {"a": 100.0, "b": 7}, n_resamples=50)
    assert c.mean_delta == pytest.approx(((100 - 120) + (7 - -3)) / 2)  # -5.0
    assert c.binary is False
    # bools count as 0 and 1 (an "answer correct" outcome)
    c = ragmeter.compare({"a": True, "b": False}, {"a": True, "b": True}, "answer correct")
    assert c.mean_delta == pytest.approx(0.5) and c.fixed == 1
    # a bounded metric takes its endpoints
    c = ragmeter.compare({"a": 0, "b": 1}, {"a": 1, "b": 1}, "R@5", n_resamples=50)
    assert c.mean_delta == pytest.approx(0.5)


@pytest.mark.parametrize(
    "diffs",
    [
        [],
        np.array([]),
        ["0.5", 0.1],  # numpy would read the text as 0.5
        [0.1, "x"],
        [[0.1, 0.2], [0.3]],  # ragged: "mismatched lengths"
        [[0.1, 0.2], [0.3, 0.4]],  # two-dimensional
        np.array(["0.1", "0.2"]),
        [0.1, float("nan")],
        [float("inf"), 1.0],
        [10**400, 0.0],
        "0.5",
        None,
    ],
)
def test_paired_bootstrap_refuses_what_has_no_interval(diffs: object) -> None:
    with pytest.raises(UsageError, match="paired differences"):
        ragmeter.paired_bootstrap(diffs, n_resamples=50)  # type: ignore[arg-type]


def test_paired_bootstrap_of_one_constant_is_that_constant() -> None:
    ci = ragmeter.paired_bootstrap([0.25, 0.25, 0.25], n_resamples=50)
    assert (ci.lo, ci.hi) == (0.25, 0.25)
    ci = ragmeter.paired_bootstrap(np.array([1, 1], dtype=np.int8), n_resamples=50)
    assert (ci.lo, ci.hi) == (1.0, 1.0)


@pytest.mark.parametrize("n", [10**30, 10**9 + 1, 10**400])
def test_plan_from_a_record_bounds_its_count(tmp_path: Path, n: int) -> None:
    rec = {"binary": True, "n": n, "fixed": 3, "broken": 1, "baseline_mean": 0.5}
    cmp = write(tmp_path / "cmp.json", json.dumps(rec))
    err = refused("plan", "--from", str(cmp), "-f", "json")
    assert str(cmp) in err and "'n'" in err
    # beyond a float, it is no finite number; otherwise the bound is named
    assert ("1,000,000,000" in err) or ("finite number" in err and n > 10**300)


def test_plan_from_a_record_at_the_bound_is_exact(tmp_path: Path) -> None:
    n = 10**9
    rec = {"binary": True, "n": n, "fixed": 3, "broken": 1, "baseline_mean": 0.5}
    cmp = write(tmp_path / "cmp.json", json.dumps(rec))
    code, out, err = cli("plan", "--from", str(cmp), "-f", "json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["observed_n"] == n
    # fixed + broken of n: the changed share, hand-computed
    assert plan["changed_share"] == pytest.approx(4 / n)


@settings(max_examples=200, deadline=None)
@given(
    values=st.dictionaries(
        st.sampled_from("abcdef"),
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.integers(-5, 5),
            st.text(max_size=3),
            st.none(),
        ),
        min_size=1,
        max_size=6,
    ),
    metric=st.sampled_from([None, "R@5", "nDCG@3", "answer correct"]),
)
def test_compare_on_any_mapping_is_a_result_in_range_or_a_usage_error(
    values: dict[str, object], metric: str | None
) -> None:
    other = dict.fromkeys(values, 0.5)
    try:
        c = ragmeter.compare(values, other, metric, n_resamples=20)  # type: ignore[arg-type]
    except UsageError as e:
        assert "question" in str(e) or "binary" in str(e)
        return
    except InputError as e:  # a binary metric given non-binary values
        assert "binary" in str(e)
        return
    bounded = metric in ("R@5", "nDCG@3")
    for v in values.values():
        assert isinstance(v, (int, float)) and math.isfinite(v)
        assert not bounded or 0.0 <= v <= 1.0
    assert math.isfinite(c.mean_delta) and all(math.isfinite(x) for x in c.ci)
