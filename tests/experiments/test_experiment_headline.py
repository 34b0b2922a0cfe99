"""An experiment's one headline metric: declared with ``headline = "..."`` (validated with file,
line and field: a metric the experiment computes at the baseline's prompt k or budget), else
its default: AllR when the experiment computes it on span labels, else its first metric, at the
baseline's token budget when it is scored there, else at the prompt k.

The property test draws metric lists and cutoffs and checks that the default is always one of
the baseline's prompt metrics, and that declaring any one of them is accepted as written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter import ValidationError
from ragmeter.experiments import Settings, headline_of, load_experiment, prompt_metrics
from ragmeter.metrics import parse

REPO = Path(__file__).resolve().parents[2]
FARE_RULES = REPO / "examples" / "fare-rules"


def write(tmp_path: Path, top: str, *, metrics: str = '["R", "AllR", "RR"]') -> Path:
    (tmp_path / "golden.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "corpus.jsonl").write_text("", encoding="utf-8")
    path = tmp_path / "exp.toml"
    path.write_text(
        'golden = "golden.jsonl"\n'
        'corpus = "corpus.jsonl"\n'
        f"metrics = {metrics}\n"
        f"{top}\n"
        "[baseline]\n"
        'chunker = "tokens:300:0"\n'
        'retriever = "bm25"\n'
        "\n"
        "[[variant]]\n"
        'name = "small"\n'
        'chunker = "tokens:100:0"\n'
        "k = 12\n",
        encoding="utf-8",
    )
    return path


def test_the_fare_rules_example_declares_allr_at_its_budget() -> None:
    exp = load_experiment(FARE_RULES / "experiment.toml", warn=False)
    assert str(exp.headline_metric) == "AllR@budget=1200"
    # every variant computes it (smaller chunks run k = 12, at the same budget)
    for v in exp.all_variants:
        assert exp.headline_metric in exp.prompt_metrics(v.settings)


@pytest.mark.parametrize(
    ("top", "metrics", "expected"),
    [
        ("k = 4\nbudget = 1200", '["R", "AllR", "RR"]', "AllR@budget=1200"),
        ("k = 4", '["R", "AllR", "RR"]', "AllR@4"),
        ("k = 4\nbudget = 1200", '["R", "RR"]', "R@budget=1200"),  # no AllR: the first
        ("k = 4\nbudget = 1200", '["nDCG", "R"]', "nDCG@4"),  # nDCG has no budget cut
        ('k = 4\nbudget = 1200\nheadline = "RR"', '["R", "AllR", "RR"]', "RR@budget=1200"),
        ('k = 4\nbudget = 1200\nheadline = "R@4"', '["R", "AllR", "RR"]', "R@4"),
    ],
)
def test_the_headline_declared_or_by_default(
    tmp_path: Path, top: str, metrics: str, expected: str
) -> None:
    exp = load_experiment(write(tmp_path, top, metrics=metrics), warn=False)
    assert str(exp.headline_metric) == expected
    assert exp.is_headline(expected) and not exp.is_headline("R@12")


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ('"Hit"', "Hit is not one of them. Choose one of: R@4, R@budget=1200, AllR@4"),
        ('"R@5"', "R@5 is not one of them"),
        ('"AllR@budget=900"', "AllR@budget=900 is not one of them"),
        ('"Recal"', "metric 'Recal'"),
        ("3", "'headline' must be one metric name"),
    ],
)
def test_a_headline_the_experiment_does_not_compute_is_refused_at_its_line(
    tmp_path: Path, value: str, fragment: str
) -> None:
    path = write(tmp_path, f"k = 4\nbudget = 1200\nheadline = {value}")
    with pytest.raises(ValidationError) as err:
        load_experiment(path, warn=False)
    [problem] = err.value.problems
    assert (problem.line, problem.field) == (6, "headline")
    assert fragment in problem.message and str(path) in str(err.value)


NAMES = st.sampled_from(["R", "Hit", "RR", "AllR", "nDCG", "AP"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    names=st.lists(NAMES, min_size=1, max_size=5, unique=True),
    k=st.one_of(st.none(), st.integers(1, 50)),
    budget=st.one_of(st.none(), st.integers(1, 5000)),
    level=st.sampled_from(["span", "document"]),
    pick=st.integers(0, 100),
)
def test_the_default_is_always_computed_and_any_computed_metric_may_be_declared(
    names: list[str], k: int | None, budget: int | None, level: str, pick: int
) -> None:
    if k is None and (budget is None or level == "document"):
        k = 4  # the file's rules require a cutoff every metric can be read at
    metrics = tuple(parse(n) for n in names)
    s = Settings(k=k, budget=budget)
    computed = prompt_metrics(metrics, s, level)
    default = headline_of(None, metrics, s, level)
    assert default in computed
    if "AllR" in names and level == "span":
        assert default.name == "AllR"  # type: ignore[union-attr]
    chosen = computed[pick % len(computed)]
    assert headline_of(chosen, metrics, s, level) == chosen
    if chosen.info.cutoff != "required":  # P has no form without a cutoff
        assert headline_of(chosen.at(), metrics, s, level) in computed
