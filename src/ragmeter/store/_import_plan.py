"""What ``ragmeter runs import PATH`` will store, read and checked whole before anything is
written (see :mod:`._transfer`).

Every file is validated with the schema its writer writes by (``config.json`` and
``summary.json``: :mod:`ragmeter.experiments._output_schema`; ``run.json``:
:mod:`._run_file`; evaluations: :meth:`Evaluation.from_dict`; ledger lines:
:mod:`ragmeter.paired._ledger_schema`; run files: the TREC reader, or the Parquet columns
``ragmeter run`` writes), and the files of one variant are checked against each other: one
golden-set version, the means each file states equal to the per-question values, the ranked
lists of no question the evaluation does not hold, the levels and ranked lists ``run.json``
names present. Every problem is collected, with its file, line and field, and raised at once
(:class:`ValidationError`; one problem is one :class:`InputError` line), so a failed import
names everything to fix and has written nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import InputError, Problem, RagmeterError, ValidationError

#: the means a file states must equal the per-question values' means this closely
MEAN_TOLERANCE = 1e-9
#: the store's ``source`` and ``file`` columns hold this many characters
PATH_LIMIT = 1000


@dataclass(frozen=True)
class RunImport:
    """One run to insert, finished: what :func:`ragmeter.store._runs.insert_finished_run`
    takes."""

    spec: dict[str, Any]
    evaluations: dict[str, Any]
    ranked: Any
    fields: dict[str, Any]
    provenance: dict[str, Any] = field(default_factory=dict)
    chunking: dict[str, Any] | None = None
    #: when the run started and finished (an export's record keeps its own; else now)
    times: tuple[Any, Any] = (None, None)


@dataclass(frozen=True)
class ImportPlan:
    runs: tuple[RunImport, ...] = ()
    ledger: tuple[dict[str, Any], ...] = ()


class Problems:
    """Problems found so far, each with its file, line and field."""

    def __init__(self) -> None:
        self.items: list[Problem] = []

    def add(
        self, message: str, path: Path | str, *, line: int | None = None, field: str | None = None
    ) -> None:
        self.items.append(Problem(message, str(path), line, field or None))

    def error(self, exc: RagmeterError, path: Path | str) -> None:
        if isinstance(exc, ValidationError):
            self.items.extend(exc.problems)
        elif isinstance(exc, InputError):
            self.items.append(Problem(exc.message, exc.path or str(path), exc.line, exc.field))
        else:
            self.items.append(Problem(str(exc), str(path)))

    def schema(self, exc: Any, data: Any, path: Path | str, line: int | None = None) -> None:
        """A pydantic error of ``data`` (read from ``path``), one problem per key."""
        from ..io._schema_problems import field_name, schema_errors

        def unknown(_parent: dict[str, Any], keys: tuple[str | int, ...]) -> str:
            return f"unknown key '{keys[-1]}': ragmeter does not write it in this file"

        for keys, message in schema_errors(exc, data, unknown):
            self.add(message, path, line=line, field=field_name("", keys))

    def raise_if_any(self, what: Path) -> None:
        if len(self.items) == 1:
            p = self.items[0]
            raise InputError(p.message, path=p.path, line=p.line, field=p.field)
        if self.items:
            raise ValidationError(self.items, what=f"{what} (nothing was imported)")


def plan_paths(paths: Sequence[Path]) -> list[tuple[Path, ImportPlan]]:
    """Each PATH's plan (:func:`plan_import`), all of them read and checked before anything is
    written. A PATH that fails is raised as it is when it is the only one (its error names the
    PATH or a file in it); the problems of several are raised at once, naming the PATHs:
    nothing of any PATH is imported."""
    planned: list[tuple[Path, ImportPlan]] = []
    failed: list[RagmeterError] = []
    problems = Problems()
    refused: list[str] = []
    for path in paths:
        try:
            planned.append((path, plan_import(path)))
        except RagmeterError as exc:
            failed.append(exc)
            problems.error(exc, path)
            refused.append(str(path))
    if len(failed) == 1:
        raise failed[0]
    if failed:
        raise ValidationError(
            problems.items, what=f"{', '.join(refused)} (nothing of any PATH was imported)"
        )
    return planned


def plan_import(path: Path) -> ImportPlan:
    """Read and check everything ``path`` holds; raise every problem found at once."""
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    problems = Problems()
    if path.is_dir():
        if (path / "summary.json").is_file():
            plan = ImportPlan(runs=tuple(_experiment_folder(path, problems)))
        elif (path / "evaluation.json").is_file():
            one = _variant_folder(path, problems)
            plan = ImportPlan(runs=() if one is None else (one,))
        else:
            raise InputError(
                "not a ragmeter output folder: expected summary.json (an experiment's output) "
                "or evaluation.json (one variant)",
                path=path,
            )
    elif path.suffix == ".jsonl":
        plan = ImportPlan(ledger=tuple(ledger_entries(path, problems)))
    else:
        plan = ImportPlan(runs=tuple(_evaluation_file(path, problems)))
    for r in plan.runs:
        if len(r.spec["file"]) > PATH_LIMIT:
            problems.add(f"a path of more than {PATH_LIMIT} characters cannot be recorded", path)
            break
    problems.raise_if_any(path)
    return plan


# -- files of JSON -------------------------------------------------------------------------------
def _json(path: Path, problems: Problems) -> Any:
    """The JSON in ``path``; None (and a problem) when it cannot be read."""
    from ..io import read_json

    try:
        return read_json(path)
    except InputError as exc:
        problems.error(exc, path)
        return None


def _model(model: Any, data: Any, path: Path, problems: Problems) -> Any:
    """``data`` validated as ``model``; None (and a problem per key) when it is not one."""
    from pydantic import ValidationError as PydanticError

    if not isinstance(data, dict):
        problems.add(f"must hold a JSON object, got {_json_type(data)}", path)
        return None
    try:
        return model.model_validate(data)
    except PydanticError as exc:
        problems.schema(exc, data, path)
        return None


def _json_type(x: Any) -> str:
    from ..metrics._evaluation_file import _json_type as name

    return name(x)


# -- evaluations ---------------------------------------------------------------------------------
def _evaluations(path: Path, problems: Problems, *, one: bool) -> list[Any]:
    """The evaluations in ``path`` (``one``: the file must hold exactly one), each checked
    beyond what :meth:`Evaluation.from_dict` checks: the counts and means it states agree with
    its per-question values, and its names fit the store."""
    from ..metrics import Evaluation
    from ..metrics._evaluation_file import pick_record, read_records

    display = str(path)
    try:
        records = read_records(path)
        if one:
            records = [pick_record(records, None, display)]
    except InputError as exc:
        problems.error(exc, path)
        return []
    out = []
    for i, d in enumerate(records):
        prefix = f"[{i}]." if len(records) > 1 else ""
        before = len(problems.items)
        try:
            e = Evaluation.from_dict(d, source=display)
        except InputError as exc:
            problems.add(exc.message, path, field=prefix + (exc.field or "") or None)
            continue
        _stated_numbers(d, e, path, prefix, problems)
        if len(problems.items) == before:
            out.append(e)
    return out


#: the keys :meth:`Evaluation.to_dict` always writes (``from_dict`` supplies defaults for some:
#: an import must not, or a file that lost its missing ids would be stored without them)
WRITTEN_KEYS = (
    "run",
    "n_queries",
    "n_missing",
    "n_no_relevant",
    "aggregate",
    "per_query",
    "missing_ids",
    "no_relevant_ids",
    "golden_version",
    "config",
)


def _stated_numbers(d: Mapping[str, Any], e: Any, path: Path, prefix: str, ps: Problems) -> None:
    for key in WRITTEN_KEYS:
        if key not in d:
            ps.add(f"'{key}' is required (ragmeter writes it)", path, field=prefix + key)
    for key, actual in (
        ("n_queries", e.n_queries),
        ("n_missing", e.n_missing),
        ("n_no_relevant", e.n_no_relevant),
    ):
        said = d.get(key, actual)
        if isinstance(said, bool) or said != actual:
            ps.add(f"says {said!r}, but the file holds {actual}", path, field=prefix + key)
    agg = d.get("aggregate") or {}
    means = e.aggregate
    for (name, said), metric in zip(agg.items(), e.metrics, strict=False):
        mean = means[str(metric)]
        if not _same_mean(said, mean):
            ps.add(
                f"{name} is {said!r}, but the per-query values average {mean!r}",
                path,
                field=prefix + "aggregate",
            )
    for key, value, limit in (("run", e.run, 500), ("golden_version", e.golden_version, 64)):
        if value is not None and (len(value) > limit or "\x00" in value or not value.strip()):
            ps.add(
                f"must be a non-blank string of at most {limit} characters without NUL",
                path,
                field=prefix + key,
            )


def _same_mean(said: Any, mean: float | None) -> bool:
    if mean is None or said is None:
        return said is None and mean is None
    if isinstance(said, bool) or not isinstance(said, int | float) or not math.isfinite(said):
        return False
    return abs(float(said) - mean) <= MEAN_TOLERANCE


def _evaluation_file(path: Path, problems: Problems) -> list[RunImport]:
    """``ragmeter eval --per-query --format json`` output: one run per evaluation record."""
    runs = []
    for e in _evaluations(path, problems, one=False):
        runs.append(
            RunImport(
                spec=dict(
                    experiment="imported",
                    name=e.run,
                    config=dict(e.config),
                    golden_version=e.golden_version,
                    kind="import",
                    file=str(path),
                ),
                evaluations={"eval": e},
                ranked=None,
                fields={"metrics": e.aggregate, "source": str(path)},
            )
        )
    return runs


# -- an experiment's output folder ---------------------------------------------------------------
def _experiment_folder(folder: Path, problems: Problems) -> list[RunImport]:
    from ..experiments import slug
    from ..experiments._output_schema import ExperimentSummary

    path = folder / "summary.json"
    data = _json(path, problems)
    summary = None if data is None else _model(ExperimentSummary, data, path, problems)
    if summary is None:
        return []
    folders: dict[str, str] = {}
    for i, v in enumerate(summary.variants):
        other = folders.setdefault(slug(v.name), v.name)
        if other != v.name:
            problems.add(
                f"variants {other!r} and {v.name!r} have one folder, {slug(v.name)}/",
                path,
                field=f"variants[{i}].name",
            )
    if sum(v.baseline for v in summary.variants) > 1:
        problems.add("names more than one baseline", path, field="variants")
    runs = []
    for v in summary.variants:
        sub = folder / slug(v.name)
        if not (sub / "evaluation.json").is_file():
            problems.add(f"variant {v.name!r} has no evaluation.json", sub / "evaluation.json")
            continue
        one = _variant_folder(sub, problems, summary=summary, variant=v)
        if one is not None:
            runs.append(one)
    return runs


# -- one variant's folder ------------------------------------------------------------------------
def _variant_folder(
    folder: Path, problems: Problems, *, summary: Any = None, variant: Any = None
) -> RunImport | None:
    """One variant: ``ragmeter run``'s folder (``config.json``), or ``runs export``'s (with
    ``run.json``, the store's record, whose fields then come back as they were)."""
    from ..experiments._output_schema import VariantConfig
    from ._run_file import RunFile

    before = len(problems.items)
    record = None
    if (folder / "run.json").is_file():
        data = _json(folder / "run.json", problems)
        record = None if data is None else _model(RunFile, data, folder / "run.json", problems)
        if record is None:
            return None  # which files to expect is not known: the other checks would mislead
    config: dict[str, Any] = {}
    settings = None  # config.json as ``ragmeter run`` writes it (when there is no run.json)
    cpath = folder / "config.json"
    if cpath.is_file():
        data = _json(cpath, problems)
        if data is not None and not isinstance(data, dict):
            problems.add(f"must hold a JSON object, got {_json_type(data)}", cpath)
        if not isinstance(data, dict):
            return None  # what the evaluation is (its level, its variant) is not known
        config = data
        if record is None:
            settings = _model(VariantConfig, data, cpath, problems)
            if settings is None:
                return None
    elif record is not None:
        problems.add("is missing (runs export writes it beside run.json)", cpath)

    if record is not None:
        levels = list(record.levels)
    else:
        level = settings.level if settings is not None else (summary.level if summary else "span")
        levels = [level, *(["chunk"] if (folder / "chunk_evaluation.json").is_file() else [])]
    primary = next(x for x in levels if x != "chunk")
    evaluations: dict[str, Any] = {}
    for level in levels:
        path = folder / ("chunk_evaluation.json" if level == "chunk" else "evaluation.json")
        if not path.is_file():
            problems.add(f"is missing: run.json names a {level}-level evaluation", path)
            continue
        found = _evaluations(path, problems, one=True)
        said = found[0].config.get("level") if found else None
        if found and level != "eval" and said is not None and said != level:
            problems.add(
                f"holds a {said!r}-level evaluation, not the {level} level the folder says",
                path,
                field="config.level",
            )
        elif found:
            evaluations[level] = found[0]
    if "chunk" not in levels and (folder / "chunk_evaluation.json").is_file():
        problems.add(
            "run.json names no chunk-level evaluation, yet the file is here",
            folder / "chunk_evaluation.json",
        )
    ranked = _variant_ranked(folder, record, primary, problems)
    if len(problems.items) > before or primary not in evaluations:
        return None
    main = evaluations[primary]

    _agree(
        "golden_version",
        [
            *((folder / _file_of(lvl), e.golden_version) for lvl, e in evaluations.items()),
            *([(cpath, settings.golden_version)] if settings is not None else []),
            *([(folder / "run.json", record.golden_version)] if record is not None else []),
            *(
                [(folder.parent / "summary.json", summary.golden_version)]
                if summary is not None
                else []
            ),
        ],
        problems,
    )
    computed = {k: v for e in evaluations.values() for k, v in e.aggregate.items()}
    if settings is not None:
        _same_means(cpath, "metrics", settings.metrics, computed, problems)
    if record is not None:
        _same_means(folder / "run.json", "metrics", record.metrics, computed, problems)
        if record.n_queries is not None and record.n_queries != main.n_queries:
            problems.add(
                f"says {record.n_queries}, but {_file_of(primary)} holds {main.n_queries}",
                folder / "run.json",
                field="n_queries",
            )
        if record.config != config:
            problems.add("differs from config.json", folder / "run.json", field="config")
    if variant is not None:
        spath = folder.parent / "summary.json"
        _same_means(spath, f"variants.{variant.name}.metrics", variant.metrics, computed, problems)
        if settings is not None:
            if summary is not None:
                _agree("level", [(spath, summary.level), (cpath, settings.level)], problems)
            _agree("variant name", [(spath, variant.name), (cpath, settings.variant)], problems)
            _agree("baseline", [(spath, variant.baseline), (cpath, settings.baseline)], problems)
    if ranked is not None:
        _ranked_questions(ranked, evaluations.values(), primary, folder, problems)
    chunking = _chunking(config, cpath, problems)
    if len(problems.items) > before:
        return None
    return _run_import(
        folder, config, settings, record, summary, variant, evaluations, ranked, chunking
    )


def _run_import(
    folder: Path,
    config: dict[str, Any],
    settings: Any,
    record: Any,
    summary: Any,
    variant: Any,
    evaluations: dict[str, Any],
    ranked: Any,
    chunking: dict[str, Any] | None,
) -> RunImport:
    """The run to insert: ``run.json``'s record where there is one, else ``config.json``'s
    fields as ``ragmeter run`` records them (``workflows.experiment.record_variant``), else the
    summary's entry, else what an evaluation alone says."""
    main = next(e for lvl, e in evaluations.items() if lvl != "chunk")
    provenance: dict[str, Any] = {}
    if record is not None:
        provenance = {
            "ragmeter": record.ragmeter_version,
            "git_commit": record.git_commit,
            "git_dirty": record.git_dirty,
        }
        name, experiment, baseline = record.name, record.experiment, record.is_baseline
        said = record
    elif settings is not None:
        name, baseline = settings.variant, settings.baseline
        experiment = Path(settings.experiment or folder.name).stem
        said = settings
    elif variant is not None:  # the summary names the experiment (below)
        name, experiment, baseline, said = variant.name, "", variant.baseline, variant
    else:  # an evaluation alone
        name, baseline, said = main.run or folder.name, False, None
        experiment = Path(folder.name).stem
    if summary is not None:
        experiment = summary.experiment
    label = None if said is None else said.label
    changes = [] if said is None else list(said.changes)
    timings = {} if said is None else dict(said.timings)
    seconds = record.seconds if record is not None else timings.get("total")
    tokens = None if said is None else said.context_tokens
    notes = [] if said is None else list(said.notes)
    metrics = {k: v for e in evaluations.values() for k, v in e.aggregate.items()}
    return RunImport(
        spec=dict(
            experiment=experiment,
            name=name,
            config=config,
            golden_version=main.golden_version,
            kind="import",
            label=label,
            is_baseline=baseline,
            file=str(folder),
            changes=changes,
        ),
        evaluations=evaluations,
        ranked=ranked,
        fields=dict(
            metrics=metrics,
            timings=timings,
            seconds=seconds,
            context_tokens=tokens,
            notes=notes,
            label=label,
        ),
        provenance=provenance,
        chunking=chunking,
        times=_times(record),
    )


def _times(record: Any) -> tuple[Any, Any]:
    import datetime as dt

    if record is None:
        return (None, None)

    def parse(text: str | None) -> dt.datetime | None:
        if text is None:
            return None
        t = dt.datetime.fromisoformat(text)  # the schema has checked it parses
        return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)

    return (parse(record.started_at), parse(record.finished_at))


def _file_of(level: str) -> str:
    return "chunk_evaluation.json" if level == "chunk" else "evaluation.json"


def _agree(what: str, said: Iterable[tuple[Path, Any]], problems: Problems) -> None:
    """Every file says the same ``what``; else one problem listing what each says."""
    said = list(said)
    if len({repr(v) for _, v in said}) > 1:
        where = "; ".join(f"{p.name}: {v!r}" for p, v in said)
        problems.add(
            f"the files of one variant disagree on the {what} ({where})", said[0][0].parent
        )


def _same_means(
    path: Path, field: str, said: Mapping[str, Any], computed: Mapping[str, Any], ps: Problems
) -> None:
    """The means a file states are the evaluations' means, metric for metric."""
    from ..metrics import parse

    canonical = {str(parse(k)): v for k, v in said.items()}  # the schema has parsed them
    if set(canonical) != set(computed):
        extra = sorted(set(canonical) - set(computed))
        lacking = sorted(set(computed) - set(canonical))
        ps.add(
            "names other metrics than the evaluations hold"
            + (f" (not evaluated: {', '.join(extra)})" if extra else "")
            + (f" (not named: {', '.join(lacking)})" if lacking else ""),
            path,
            field=field,
        )
        return
    for k, v in canonical.items():
        if not _same_mean(v, computed[k]):
            ps.add(f"{k} is {v!r}, but the evaluations say {computed[k]!r}", path, field=field)


def _chunking(config: Mapping[str, Any], cpath: Path, problems: Problems) -> dict[str, Any] | None:
    """The chunking's statistics in ``config.json``'s ``resolved`` (recorded as its chunking
    row); its name must fit the store's column."""
    resolved = config.get("resolved")
    stats = resolved.get("chunking") if isinstance(resolved, dict) else None
    if not isinstance(stats, dict) or not stats:
        return None
    name = stats.get("name") or stats.get("chunking") or "chunking"
    if not isinstance(name, str) or len(name) > 500 or "\x00" in name:
        problems.add(
            "must be a chunking's name (a string of at most 500 characters)",
            cpath,
            field="resolved.chunking.name",
        )
        return None
    return stats


# -- ranked lists --------------------------------------------------------------------------------
def _variant_ranked(folder: Path, record: Any, primary: str, problems: Problems) -> Any:
    """The ranked lists the variant's metrics were scored on, or None. An export's
    (``run.json``) are in ``run.trec``, whatever the level; ``ragmeter run`` writes
    ``document_run.*`` at document level and ``run.*`` otherwise (TREC or Parquet). The chunks'
    spans are not in these files, so ``doc``/``start``/``end`` stay null for chunk runs."""
    documents = primary == "document"
    if record is not None:
        trec = folder / "run.trec"
        if record.has_ranked and not trec.is_file():
            problems.add("is missing: run.json says the run has ranked lists", trec)
            return None
        if not record.has_ranked and trec.is_file():
            problems.add("run.json says the run has no ranked lists, yet the file is here", trec)
            return None
        return read_ranked(trec, documents, problems) if record.has_ranked else None
    stem = "document_run" if documents else "run"
    there = [folder / f"{stem}.{ext}" for ext in ("trec", "parquet")]
    there = [p for p in there if p.is_file()]
    if len(there) > 1:
        problems.add(f"both {stem}.trec and {stem}.parquet are here: which one was scored?", folder)
        return None
    return read_ranked(there[0], documents, problems) if there else None


def read_ranked(path: Path, documents: bool, problems: Problems) -> Any:
    """A run file as the store's ranked table; None (and the problems) when it is not one
    ragmeter wrote: a TREC run read strictly (a repeated item is an error, as the writer never
    writes one), or a Parquet file with string ``qid`` and item columns and finite scores."""
    from ..experiments import ranked_table
    from ..io import Run

    try:
        if path.suffix == ".trec":
            if path.stat().st_size == 0:  # a run that retrieved nothing
                import pyarrow as pa

                run = Run(pa.array([], pa.string()), pa.array([], pa.string()), _empty(), path.name)
            else:
                from ..io.trec import read_run

                run = read_run(path, duplicates="error", name=path.name)
        else:
            run = _parquet_run(path, documents)
        return ranked_table(run, None, documents=documents)
    except RagmeterError as exc:
        problems.error(exc, path)
        return None


def _empty() -> Any:
    import numpy as np

    return np.zeros(0, dtype=np.float64)


def _parquet_run(path: Path, documents: bool) -> Any:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from ..io import Run

    try:
        t = pq.read_table(path)
        t.validate(full=True)  # e.g. text that is not UTF-8
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"not a Parquet run file ragmeter can read ({exc})", path=path) from None
    item = "doc" if documents or "doc" in t.column_names else "chunk_id"
    missing = {"qid", item, "score"} - set(t.column_names)
    if missing:
        raise InputError(f"run file lacks column(s) {', '.join(sorted(missing))}", path=path)
    for name in ("qid", item):
        col = t.column(name)
        if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            raise InputError(f"must hold strings, got {col.type}", path=path, field=name)
        if col.null_count:
            raise InputError("holds a null id", path=path, field=name)
    score = t.column("score")
    if not (pa.types.is_floating(score.type) or pa.types.is_integer(score.type)) or (
        score.null_count
    ):
        raise InputError(
            f"must hold numbers (no nulls), got {score.type}", path=path, field="score"
        )
    values = score.to_numpy().astype(np.float64)
    if not np.isfinite(values).all():
        raise InputError("scores must be finite", path=path, field="score")
    qid = pc.cast(t.column("qid"), pa.string()).combine_chunks()
    doc = pc.cast(t.column(item), pa.string()).combine_chunks()
    pairs = pa.table({"q": qid, "d": doc}).group_by(["q", "d"]).aggregate([])
    if pairs.num_rows != t.num_rows:
        raise InputError("lists an item twice for one question", path=path, field=item)
    return Run(qid=qid, doc=doc, score=values, name=path.name)


def _ranked_questions(
    ranked: Any, evaluations: Iterable[Any], primary: str, folder: Path, ps: Problems
) -> None:
    """The ranked lists are those the evaluation was scored on: a run file of other questions
    stored beside an evaluation would be read back as what was scored. Every question scored
    from the run (not listed missing) has its list; and no list is of a question the
    evaluation does not know, except at document level, where a question without evidence
    is in the run but in no document label (so in no list of the evaluation)."""
    import pyarrow.compute as pc

    known: set[str] = set()
    scored: set[str] = set()
    for e in evaluations:
        known.update(e.query_ids, e.missing_ids, e.no_relevant_ids)
        scored.update(set(e.query_ids) - set(e.missing_ids))
    asked = set(pc.unique(ranked.column("qid")).to_pylist())
    for ids, what in (
        (scored - asked, "lacks the ranked lists of {n} question(s) the evaluation scored"),
        (
            set() if primary == "document" else asked - known,
            "ranks {n} question(s) the evaluation does not hold",
        ),
    ):
        if ids:
            first = sorted(ids)
            shown = ", ".join(repr(q) for q in first[:3]) + (" ..." if len(first) > 3 else "")
            ps.add(what.format(n=len(ids)) + f" ({shown}): not the run that was scored", folder)


# -- the selection ledger ------------------------------------------------------------------------
def ledger_entries(path: Path, problems: Problems) -> list[dict[str, Any]]:
    """The entries of a JSONL selection ledger, each validated as ``Ledger.record`` writes
    one (a torn last line, a writer killed mid-line, is skipped as the ledger skips it)."""
    from pydantic import ValidationError as PydanticError

    from ..io import iter_jsonl
    from ..paired._ledger_schema import LedgerEntry

    bad: list[Problem] = []
    out = []
    for line, entry in iter_jsonl(
        path, bad, what="ledger entries", allow_empty=True, torn_tail=True
    ):
        try:
            LedgerEntry.model_validate(entry)
        except PydanticError as exc:
            problems.schema(exc, entry, path, line=line)
        else:
            out.append(entry)
    problems.items.extend(bad)
    return out
