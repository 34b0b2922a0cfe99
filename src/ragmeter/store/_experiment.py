"""Record an experiment as it runs: every variant starts ``running`` and is stored ``finished``
with all its rows the moment it completes; a failure marks the rest ``failed``, Ctrl-C or a
signal marks them ``interrupted``, and a run whose process was killed outright is found
``running`` by a dead process and marked ``interrupted`` the next time the store is read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..experiments import Experiment, ExperimentResult, Variant
    from ._store import Store


def run_and_record(
    store: Store,
    path: str | os.PathLike[str],
    *,
    allow_outside: bool = False,
    **run_kwargs: Any,
) -> tuple[ExperimentResult, dict[str, int]]:
    """Run the experiment file at ``path`` (see :func:`ragmeter.run_experiment`) and record
    every variant; returns the result and ``{variant name: run id}``."""
    from ..experiments import load_experiment, run_experiment
    from ..experiments._provenance import provenance
    from ..experiments._runner import load_user_code
    from ..retrieval.pipelines._stdout import routed
    from ._runs import end_unfinished, start_runs

    exp = load_experiment(Path(path), allow_outside=allow_outside)
    # a broken module of the user's fails before any run is recorded (none is left "failed")
    with routed():  # what it prints at import goes to stderr, as during the run
        load_user_code(exp)
    specs = [run_spec(exp, v) for v in exp.all_variants]
    ids = dict(
        zip(
            [v.name for v in exp.all_variants],
            start_runs(store, specs, provenance=provenance(Path(exp.path).parent)),
            strict=True,
        )
    )

    def finished(r: Any) -> None:
        record_variant(store, exp, ids[r.name], r)

    try:
        result = run_experiment(exp, on_variant=finished, **run_kwargs)
    except (KeyboardInterrupt, SystemExit) as exc:
        end_unfinished(
            store,
            list(ids.values()),
            status="interrupted",
            message=f"stopped ({type(exc).__name__})",
        )
        raise
    except BaseException as exc:
        end_unfinished(store, list(ids.values()), status="failed", message=str(exc))
        raise
    if result.golden is not None:
        store.put_golden(result.golden)
    if result.corpus is not None:
        store.set_corpus(list(ids.values()), result.corpus, str(exp.corpus or exp.beir))
    return result, ids


def run_spec(exp: Experiment, v: Variant) -> dict[str, Any]:
    """What :func:`ragmeter.store._runs.start_runs` records for variant ``v`` of ``exp`` (the
    lab's background jobs start their one new variant with the same record)."""
    return dict(
        experiment=exp.name,
        name=v.name,
        config={"settings": v.settings.to_dict(), "level": exp.level},
        kind="experiment",
        label=None,
        is_baseline=v.is_baseline,
        file=str(exp.path),
    )


def record_variant(store: Store, exp: Experiment, run_id: int, r: Any) -> None:
    """Finish the stored run ``run_id`` with the variant result ``r`` of ``exp``: its
    evaluations, ranked list, metrics and config record, as ``ragmeter run`` stores them."""
    from ..experiments._runner import config_record_of

    store.finish_run(
        run_id,
        evaluations={
            "document" if exp.level == "document" else "span": r.evaluation,
            "chunk": r.chunk_evaluation,
        },
        ranked=r.ranked_table(),
        metrics=r.to_dict()["metrics"],
        timings=r.timings,
        seconds=r.timings.get("total"),
        context_tokens=r.context_tokens,
        notes=list(r.notes),
        golden_version=r.evaluation.golden_version,
        label=r.label,
        config=config_record_of(exp, r),
        changes=list(r.changes),
        chunking=r.chunking or None,
    )
    if getattr(r, "answers", None) is not None:
        record_generated_answers(store, run_id, r)


def record_generated_answers(store: Store, run_id: int, r: Any) -> int:
    """Record the answers variant ``r`` generated (each with its exact context and, when the
    experiment has a judge, the judge's label, score or error per metric under ``judged``) and
    the checks made of them, tied to the variant's stored run ``run_id``."""
    a = r.answers
    source = None if a.folder is None else str(Path(a.folder) / "answers.jsonl")
    judged: dict[str, dict[str, Any]] = {}
    for j in a.judgements() if getattr(a, "judge", None) else ():
        judged.setdefault(j["id"], {})[j["metric"]] = {
            k: j[k] for k in ("ok", "score", "label", "error", "judge", "prompt")
        }
    return store.record_answers(
        name=r.name,
        answers=[
            {**x, **({"judged": judged[x["id"]]} if x["id"] in judged else {})} for x in a.records
        ],
        report={**a.report.to_dict(), "generation": a.to_dict()},
        golden_version=r.evaluation.golden_version,
        source=source,
        run_id=run_id,
    )
