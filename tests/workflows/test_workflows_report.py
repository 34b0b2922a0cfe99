"""``ragmeter.workflows.report``: what the HTML report reads from the store, called directly on
the fare-rules example recorded as a user records it (four runs, two answer sets checked
against the baseline's and the reranker's runs)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _lab_store import FareStore, cli, record_fare_rules

from ragmeter._errors import NotFoundError, UsageError
from ragmeter.diagnosis import Diagnosis
from ragmeter.store import Store
from ragmeter.workflows import report as wf


@pytest.fixture(scope="module")
def fare(tmp_path_factory: pytest.TempPathFactory) -> FareStore:
    return record_fare_rules(tmp_path_factory.mktemp("workflow-report"))


@pytest.fixture
def store(fare: FareStore) -> Iterator[Store]:
    with Store.open(fare.url) as s:
        yield s


def test_resolve_runs_baseline_first_without_repeats(fare: FareStore, store: Store) -> None:
    name = store.run(fare.ids["baseline"]).experiment
    every = [r.id for r in wf.resolve_runs(store, [name])]
    assert every[0] == fare.ids["baseline"] and sorted(every) == sorted(fare.ids.values())
    rerank = fare.ids["reranker"]
    assert wf.resolve_runs(store, [f"run:{rerank}", name])[0].id == rerank
    assert [r.id for r in wf.resolve_runs(store, [str(rerank), f"run:{rerank}"])] == [rerank]
    with pytest.raises(NotFoundError, match="stored experiments: "):
        wf.resolve_runs(store, ["no such experiment"])
    with pytest.raises(UsageError, match="name at least one"):
        wf.resolve_runs(store, [])


def test_resolve_runs_refuses_a_run_not_finished(fare: FareStore, tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'other.db'}") as other:
        rid = other.start_run(experiment="x", name="still going")
        with pytest.raises(UsageError, match="is running: a report shows finished runs only"):
            wf.resolve_runs(other, [str(rid)])


def test_answered_runs_pair_each_run_with_its_answer_set(fare: FareStore, store: Store) -> None:
    runs = wf.resolve_runs(store, [str(i) for i in fare.ids.values()])
    pairs = {p.run.name: p.answers for p in wf.answered_runs(store, runs)}
    assert set(pairs) == {"baseline", "reranker"}
    assert pairs["baseline"].id == fare.answers["baseline"]
    assert pairs["reranker"].id == fare.answers["rerank"]
    # only the runs asked about
    only = wf.answered_runs(store, [store.run(fare.ids["reranker"])])
    assert [p.run.id for p in only] == [fare.ids["reranker"]]


def test_retrieval_diagnosis_reads_the_stored_recall(fare: FareStore, store: Store) -> None:
    run = store.run(fare.ids["baseline"])
    d = wf.retrieval_diagnosis(store, run)
    assert isinstance(d, Diagnosis)
    first = d.steps[0]  # recall at the prompt k, read from the stored evaluation
    assert first.status != "unknown" and first.value is not None and 0 <= first.value <= 1
    assert d.table is None  # the retrieval-by-answer grid needs an answer set


def test_judge_validations_label_the_reported_questions(
    fare: FareStore, store: Store, tmp_path: Path
) -> None:
    version = store.run(fare.ids["baseline"]).golden_version
    assert wf.judge_validations_for(store, [version], lambda vid: vid) is None  # none yet
    human, judge = tmp_path / "human.jsonl", tmp_path / "judge.jsonl"
    rows = [
        ("change-fee-standard", "supported", "supported"),
        ("pet-fee", "unsupported", "supported"),
    ]
    human.write_text("".join(json.dumps({"id": i, "label": h}) + "\n" for i, h, _ in rows))
    judge.write_text("".join(json.dumps({"id": i, "label": j}) + "\n" for i, _, j in rows))
    for _ in range(2):
        cli("judge", "validate", "--human", human, "--judge", judge, "--db", fare.url)
    found = wf.judge_validations_for(store, [version, None], lambda vid: ("laid out", vid))
    assert found is not None
    ids = [v.id for v in store.judge_validations()]  # newest first
    assert found.newest == ("laid out", ids[0])
    assert [r.id for r in found.older] == ids[1:]
    assert wf.judge_validations_for(store, ["g-000000000000"], lambda vid: vid) is None


@pytest.mark.parametrize(
    ("metrics", "headroom"),
    [
        (("AllR@4", "AllR@20", "R@4"), "AllR@20"),  # recall's own largest cutoff
        (("AllR@4", "R@4", "R@20"), "R@20"),  # AllR at one k: the largest of several R@k
        (("AllR@4", "R@4"), None),  # no larger cutoff: no headroom step
    ],
)
def test_retrieval_diagnosis_is_diagnose_on_the_stored_recall(
    tmp_path: Path, metrics: tuple[str, ...], headroom: str | None
) -> None:
    import numpy as np

    from ragmeter.diagnosis import diagnose, recall_from_evaluation
    from ragmeter.metrics import Evaluation, parse

    values = np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])[:, : len(metrics)]
    e = Evaluation(
        run="stored",
        metrics=tuple(parse(m) for m in metrics),
        query_ids=("q1", "q2", "q3"),
        values=values,
        golden_version="v1",
    )
    with Store.open(f"sqlite:///{tmp_path / 'r.db'}") as s:
        run = s.run(s.record_evaluation(e))
        got = wf.retrieval_diagnosis(s, run)
    want = diagnose(
        prompt_recall=recall_from_evaluation(e, "AllR@4"),
        headroom_recall=recall_from_evaluation(e, headroom) if headroom else None,
        golden_version=run.golden_version,
    )
    assert got is not None and got.to_dict() == want.to_dict()


def test_retrieval_diagnosis_without_a_recall_is_none(tmp_path: Path) -> None:
    import numpy as np

    from ragmeter.metrics import Evaluation, parse

    e = Evaluation(run="rr", metrics=(parse("RR@10"),), query_ids=("q1",), values=np.ones((1, 1)))
    with Store.open(f"sqlite:///{tmp_path / 'r.db'}") as s:
        assert wf.retrieval_diagnosis(s, s.run(s.record_evaluation(e))) is None
