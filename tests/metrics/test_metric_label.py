"""Every nDCG header says its gain (issue 27, item 3): ``nDCG@10 (linear)`` for the default gain,
the canonical string (``nDCG(gain=exp)@10``) otherwise; every other metric is headed by its
canonical string. JSON keys and CSV headers keep the canonical string."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragmeter.metrics import Metric, metric_label, parse


def test_ndcg_headers_say_the_gain() -> None:
    assert parse("nDCG@10").label == "nDCG@10 (linear)"
    assert parse("nDCG(gain=linear)@10").label == "nDCG@10 (linear)"
    assert parse("nDCG(gain=exp)@10").label == "nDCG(gain=exp)@10"
    assert parse("nDCG(gains=1:3,2:9)@5").label == "nDCG(gains=1:3,2:9)@5"
    assert parse("nDCG").label == "nDCG (linear)"
    assert parse("R@4").label == "R@4" and parse("RR").label == "RR"


def test_the_function_takes_strings_and_templates() -> None:
    assert metric_label("nDCG@4") == "nDCG@4 (linear)"
    assert metric_label(Metric("nDCG", 3, gain="exp")) == "nDCG(gain=exp)@3"
    assert metric_label("nDCG@k") == "nDCG@k (linear)"  # a sweep's title
    assert metric_label("nDCG(gain=exp)@k") == "nDCG(gain=exp)@k"
    assert metric_label("R@budget") == "R@budget"
    assert metric_label("answer correct") == "answer correct"  # no metric: as given
    assert metric_label("nDCG@4 and AllR@4") == "nDCG@4 and AllR@4"  # prose is not a header


_ndcg = st.builds(
    lambda k, gain, gains: Metric("nDCG", k, gain=gain if gains is None else "linear", gains=gains),
    st.one_of(st.none(), st.integers(1, 1000)),
    st.sampled_from(["linear", "exp"]),
    st.one_of(
        st.none(),
        st.lists(
            st.tuples(st.integers(1, 4), st.integers(0, 20).map(float)),
            min_size=1,
            max_size=3,
            unique_by=lambda t: t[0],
        ).map(lambda xs: tuple(sorted(xs))),
    ),
)


@given(_ndcg)
def test_every_ndcg_label_names_its_gain_and_reads_back(m: Metric) -> None:
    label = m.label
    assert "gain" in label or label.endswith(" (linear)")
    # the label is the canonical string, with " (linear)" added only for the default gain
    assert parse(label.removesuffix(" (linear)")) == m
    assert metric_label(str(m)) == label


@given(st.sampled_from(["R", "Hit", "RR", "AllR", "P"]), st.integers(1, 100))
def test_other_metrics_are_headed_by_their_canonical_string(name: str, k: int) -> None:
    m = Metric(name, k)
    assert m.label == str(m) == metric_label(str(m))
