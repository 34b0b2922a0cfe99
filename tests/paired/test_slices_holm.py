"""Per-slice p-values are Holm-adjusted for the number of slices; the gate checks slices on the
adjusted values, skips slices under ``min_slice`` questions, and leaves the overall check as is.
"""

from __future__ import annotations

import json
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter import Evaluation, RagmeterWarning
from ragmeter.metrics import parse
from ragmeter.paired import GateRule, compare, gate, holm


# -- Holm ---------------------------------------------------------------------------------------
def test_holm_by_hand() -> None:
    # sorted: 0.005 x4 = 0.02; 0.01 x3 = 0.03; 0.03 x2 = 0.06; 0.04 x1 = 0.04 -> max(0.06, .04)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # capped at 1, and a later adjusted value never falls below an earlier one
    assert holm([0.5, 0.2, 0.9]) == pytest.approx([1.0, 0.6, 1.0])
    # ties: 0.01 x3 = 0.03, 0.01 x2 = 0.02 -> 0.03 (monotone), 0.2 x1
    assert holm([0.01, 0.01, 0.2]) == pytest.approx([0.03, 0.03, 0.2])
    assert holm([0.02]) == [0.02]
    assert holm([]) == []


def test_holm_matches_reference_values() -> None:
    # nine slices; reference computed by hand: sorted p with multipliers 9..1, running maximum
    p = [1.0, 1.0, 1.0, 0.03125, 1.0, 1.0, 1.0, 1.0, 0.000488]
    # 0.000488 x 9 = 0.004392; 0.03125 x 8 = 0.25; then 1.0 x 7..1 capped at 1
    want = [1.0, 1.0, 1.0, 0.25, 1.0, 1.0, 1.0, 1.0, 0.004392]
    assert holm(p) == pytest.approx(want)


def step_down(p: list[float], alpha: float) -> set[int]:
    """Holm's procedure as first stated: reject in order while p_(j) <= alpha / (m - j)."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    out: set[int] = set()
    for j, i in enumerate(order):
        if p[i] > alpha / (len(p) - j):
            break
        out.add(i)
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=12),
    st.sampled_from([0.01, 0.05, 0.1]),
)
def test_holm_rejects_what_the_step_down_procedure_rejects(p: list[float], alpha: float) -> None:
    adj = holm(p)
    m = len(p)
    assert all(a >= x - 1e-15 and a <= min(1.0, m * x) + 1e-12 for a, x in zip(adj, p, strict=True))
    # order preserving: a smaller raw p never gets a larger adjusted p
    assert all(adj[i] <= adj[j] + 1e-15 for i in range(m) for j in range(m) if p[i] < p[j])
    # adjusted <= alpha exactly for the hypotheses the step-down procedure rejects
    # (away from the boundary, where float rounding of m x p could go either way)
    if all(abs(x * k - alpha) > 1e-9 for x in p for k in range(1, m + 1)):
        assert {i for i, a in enumerate(adj) if a <= alpha} == step_down(p, alpha)


# -- compare: raw and adjusted per slice --------------------------------------------------------
def fare_like(slice_moves: dict[str, tuple[int, int, int]], n_other: int = 20):
    """Binary runs with slices of given (size, wins, losses); other questions tie at 1."""
    base: list[float] = []
    cand: list[float] = []
    slices: dict[str, tuple[str, ...]] = {}
    for name, (size, wins, losses) in slice_moves.items():
        for i in range(size):
            q = f"{name}-{i:02d}"
            slices[q] = (name,)
            if i < wins:
                base.append(0.0), cand.append(1.0)
            elif i < wins + losses:
                base.append(1.0), cand.append(0.0)
            else:
                base.append(1.0), cand.append(1.0)
    qids = [*slices, *(f"other-{i}" for i in range(n_other))]
    base += [1.0] * n_other
    cand += [1.0] * n_other
    m = (parse("AllR@budget=1200"),)
    kw = {"slices": slices, "golden_version": "g1"}
    return (
        Evaluation("baseline", m, tuple(qids), np.array(base)[:, None], **kw),
        Evaluation("reranker", m, tuple(qids), np.array(cand)[:, None], **kw),
    )


# the fare-rules reranker: 1 win and 1 loss in "changes" (17) and "fees" (24), and in the
# 9-question "multi-passage" slice; clear wins elsewhere
FARE = {
    "ancillaries": (14, 0, 0),
    "changes": (17, 1, 1),
    "fees": (24, 1, 1),
    "identifier-lookup": (22, 6, 0),
    "infants-children": (14, 1, 1),
    "multi-passage": (9, 1, 1),
    "refunds": (19, 2, 1),
    "stale-policy": (15, 1, 1),
    "unanswerable": (10, 0, 0),
}


def quiet(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagmeterWarning)
        return compare(*args, **kw)


def test_compare_records_raw_and_holm_adjusted_slice_p() -> None:
    c = quiet(*fare_like(FARE))
    assert c.slice_adjustment == ("holm", 9)
    raw = [s.stats.sign_test_p for s in c.slices.values()]
    assert [s.p_adjusted for s in c.slices.values()] == pytest.approx(holm(raw))
    ident = c.slices["identifier-lookup"]
    assert ident.stats.sign_test_p == pytest.approx(2 / 64)  # 6 wins, 0 losses
    assert ident.p_adjusted == pytest.approx(min(1.0, 9 * 2 / 64))  # the smallest of nine
    d = c.to_dict()
    assert d["slice_p_adjustment"] == {"method": "holm", "n_slices": 9}
    s = d["slices"]["identifier-lookup"]
    assert s["sign_test_p"] == pytest.approx(2 / 64)
    assert s["sign_test_p_holm"] == pytest.approx(9 * 2 / 64)
    assert "per-slice p-values Holm-adjusted over 9 slices" in c.slice_note
    # splits and the overall figure are not adjusted
    assert "sign_test_p_holm" not in d and all(
        "sign_test_p_holm" not in v for v in d["splits"].values()
    )


# -- the gate -----------------------------------------------------------------------------------
RULE = GateRule(require_ci_above=-0.1, per_slice=True)


def test_one_win_one_loss_slices_no_longer_fail_the_gate() -> None:
    c = quiet(*fare_like(FARE))
    r = gate(c, RULE)
    assert r.passed, [ch.describe() for ch in r.checks if ch.failed]
    by = {ch.scope: ch for ch in r.checks}
    for name in ("changes", "fees", "infants-children", "stale-policy"):
        ch = by[f"slice {name}"]
        assert not ch.passed and ch.chance and not ch.failed  # over the limit, by chance
        assert ch.p_value == 1.0 and ch.p_adjusted == 1.0
        assert "within chance" in ch.describe() and "Holm" in ch.describe()
    # the 9-question slice is not gated at all, and the skip is listed
    assert "slice multi-passage" not in by
    assert r.skipped == (("multi-passage", 9),)
    assert r.adjustment_line == "per-slice p-values Holm-adjusted over 9 slices"
    d = r.to_dict()
    assert d["skipped"] == [{"slice": "multi-passage", "n": 9}]
    assert d["min_slice"] == 10 and d["slice_p_adjustment"] == "holm"
    md = r.to_markdown()
    assert "per-slice p-values Holm-adjusted over 9 slices" in md
    assert "| slice multi-passage | - | 9 questions | - | skipped |" in md
    suite = ET.fromstring(r.to_junit_xml()).find("testsuite")
    assert suite is not None and suite.get("failures") == "0" and suite.get("skipped") == "1"


def test_a_real_slice_regression_still_fails() -> None:
    moves = dict(FARE, fees=(24, 0, 12))  # 12 losses, no win: p = 2 / 4096, Holm x9 < 0.05
    c = quiet(*fare_like(moves))
    r = gate(c, RULE)
    by = {ch.scope: ch for ch in r.checks}
    fees = by["slice fees"]
    assert fees.p_value == pytest.approx(2 / 4096)
    assert fees.p_adjusted == pytest.approx(9 * 2 / 4096)
    assert fees.failed and not r.passed
    assert "FAIL" in fees.describe()
    # the other slices with 1 win and 1 loss stay within chance
    assert not by["slice changes"].failed


def test_overall_check_is_not_adjusted() -> None:
    # 3 broken overall against --max-broken 0: fails overall whatever the p-value
    c = quiet(*fare_like(FARE))
    r = gate(c, GateRule(max_broken=0, per_slice=True))
    overall = [ch for ch in r.checks if ch.scope == "overall"]
    assert overall[0].failed and overall[0].p_adjusted is None
    assert not r.passed
    assert all(not ch.failed for ch in r.checks if ch.scope != "overall")


def test_min_slice_is_a_setting() -> None:
    c = quiet(*fare_like(FARE))
    r = gate(c, GateRule(require_ci_above=-0.1, per_slice=True, min_slice=20))
    assert {name for name, _ in r.skipped} == {
        "ancillaries",
        "changes",
        "infants-children",
        "multi-passage",
        "refunds",
        "stale-policy",
        "unanswerable",
    }
    assert {ch.scope for ch in r.checks} == {"overall", "slice fees", "slice identifier-lookup"}
    everything = gate(c, GateRule(require_ci_above=-0.1, per_slice=True, min_slice=1))
    assert everything.skipped == () and "slice multi-passage" in {
        ch.scope for ch in everything.checks
    }


def test_cli_gate_per_slice_prints_the_adjustment_and_skips(tmp_path) -> None:
    from test_cli_compare import cli

    a, b = fare_like(FARE)
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a.to_dict()))
    pb.write_text(json.dumps(b.to_dict()))
    args = [
        "gate",
        str(pa),
        str(pb),
        "-m",
        "AllR@budget=1200",
        "--require-ci-above",
        "-0.1",
        "--per-slice",
    ]
    code, out, err = cli(*args)
    assert code == 0, out + err
    flat = " ".join(out.split())
    assert "per-slice p-values Holm-adjusted over 9 slices" in flat
    assert "slice multi-passage: skipped, 9 questions (under 10" in flat
    assert "gate passed" in flat
    code, out, err = cli(*args, "--min-slice", "5")
    assert code == 0 and "skipped" not in out
    code, out, err = cli(*args, "--format", "json")
    assert json.loads(out)["skipped"] == [{"slice": "multi-passage", "n": 9}]
