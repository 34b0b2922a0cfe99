"""Stored runs to and from the files ragmeter wrote before the store (nothing made is lost).

``export_run`` writes a run folder as ``ragmeter run`` writes one: ``config.json``,
``evaluation.json`` (and ``chunk_evaluation.json``), ``run.trec`` when the ranked lists were
stored, plus ``run.json`` (the store's record). ``import_path`` reads back:

* an experiment's output folder (``summary.json`` and one folder per variant);
* one variant folder (``config.json`` + ``evaluation.json`` [+ ``chunk_evaluation.json``,
  ``run.trec``]);
* a JSON file of evaluation records (``ragmeter eval --per-query --format json``);
* a selection ledger (``ledger.jsonl``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import InputError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ._store import Store

#: evaluation file name per stored level
FILES = {
    "span": "evaluation.json",
    "document": "evaluation.json",
    "eval": "evaluation.json",
    "chunk": "chunk_evaluation.json",
}


def export_run(store: Store, run_id: int, out: Path) -> list[Path]:
    from ..experiments._outputs import write_json
    from ..io._atomic import write_text_lines

    rec = store.run(run_id)
    if rec.status != "finished":
        raise UsageError(f"run {run_id} is {rec.status}: only a finished run can be exported")
    written: list[Path] = []
    for level in rec.levels:
        e = store.evaluation(run_id, level)
        written.append(write_json(e.to_dict(), out / FILES[level]))
    written.append(write_json(dict(rec.config), out / "config.json"))
    written.append(write_json(rec.to_dict(), out / "run.json"))
    if rec.has_ranked:
        t = store.ranked(run_id)
        tag = "".join(ch if not ch.isspace() else "_" for ch in rec.name) or "run"
        rows = zip(
            t.column("qid").to_pylist(),
            t.column("item").to_pylist(),
            t.column("rank").to_pylist(),
            t.column("score").to_pylist(),
            strict=True,
        )
        written.append(
            write_text_lines(
                out / "run.trec", (f"{q} Q0 {d} {r} {s!r} {tag}" for q, d, r, s in rows)
            )
        )
    return written


def import_path(store: Store, path: Path) -> list[int]:
    """Import what ``path`` holds (see the module docstring); returns the new run ids."""
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    if path.is_dir():
        if (path / "summary.json").is_file():
            return _experiment_folder(store, path)
        if (path / "evaluation.json").is_file():
            return [_variant_folder(store, path, experiment=None)]
        raise InputError(
            "not a ragmeter output folder: expected summary.json (an experiment's output) or "
            "evaluation.json (one variant)",
            path=path,
        )
    if path.suffix == ".jsonl":
        import_ledger(store, path)
        return []
    from ..metrics._evaluation import Evaluation

    return [
        store.record_evaluation(e, experiment="imported", source=str(path), kind="import")
        for e in Evaluation.load_all(path)
    ]


def _experiment_folder(store: Store, folder: Path) -> list[int]:
    from ..io._reading import read_json

    summary = read_json(folder / "summary.json")
    if not isinstance(summary, dict) or not isinstance(summary.get("variants"), list):
        raise InputError("summary.json has no 'variants' list", path=folder / "summary.json")
    name = str(summary.get("experiment") or folder.name)
    ids = []
    from ..experiments._outputs import slug

    for v in summary["variants"]:
        sub = folder / slug(str(v.get("name", "")))
        if not (sub / "evaluation.json").is_file():
            raise InputError(
                f"variant {v.get('name')!r} has no evaluation.json", path=sub / "evaluation.json"
            )
        ids.append(_variant_folder(store, sub, experiment=name, summary=v))
    return ids


def _variant_folder(
    store: Store, folder: Path, *, experiment: str | None, summary: dict[str, Any] | None = None
) -> int:
    from ..io._reading import read_json
    from ..metrics._evaluation import Evaluation

    config: dict[str, Any] = {}
    if (folder / "config.json").is_file():
        loaded = read_json(folder / "config.json")
        if isinstance(loaded, dict):
            config = loaded
    evals: dict[str, Any] = {}
    span = Evaluation.load(folder / "evaluation.json")
    level = str(config.get("level") or "span")
    evals["document" if level == "document" else "span"] = span
    if (folder / "chunk_evaluation.json").is_file():
        evals["chunk"] = Evaluation.load(folder / "chunk_evaluation.json")
    ranked = _ranked(folder, level)
    exported: dict[str, Any] = {}  # run.json: the store's record, written by export_run
    if (folder / "run.json").is_file():
        loaded = read_json(folder / "run.json")
        if isinstance(loaded, dict):
            exported = loaded
    exp_name = (
        experiment
        or (str(exported["experiment"]) if exported.get("experiment") else None)
        or str(Path(str(config.get("experiment") or folder.name)).stem)
    )
    name = str(config.get("variant") or span.run or folder.name)
    run_id = store.start_run(
        experiment=exp_name,
        name=name,
        config=config.get("settings", config),
        golden_version=span.golden_version,
        kind="import",
        label=config.get("label"),
        is_baseline=bool(config.get("baseline", False)),
        file=str(folder),
        changes=[str(c) for c in config.get("changes") or ()],
    )
    metrics = {k: v for e in evals.values() for k, v in e.aggregate.items()}
    store.finish_run(
        run_id,
        evaluations=evals,
        ranked=ranked,
        metrics=metrics,
        timings=(summary or config).get("timings") or {},
        context_tokens=config.get("context_tokens"),
        notes=[str(n) for n in config.get("notes") or ()],
        chunking=(config.get("resolved") or {}).get("chunking"),
    )
    return run_id


def _ranked(folder: Path, level: str) -> Any:
    """The ranked lists the variant's metrics were scored on, from the run file it wrote
    (``document_run.*`` at document level, else ``run.*``; TREC or Parquet); None if absent.
    The chunks' spans are not in these files, so ``doc``/``start``/``end`` stay null for chunk
    runs (``ragmeter run`` stores them when it records a run itself)."""
    from ..experiments._ranked import ranked_table

    stem = "document_run" if level == "document" else "run"
    if (folder / f"{stem}.trec").is_file():
        from ..io.trec import read_run

        return ranked_table(read_run(folder / f"{stem}.trec"), None, documents=stem != "run")
    if (folder / f"{stem}.parquet").is_file():
        import pyarrow.parquet as pq

        from ..io._tables import Run

        path = folder / f"{stem}.parquet"
        t = pq.read_table(path)
        item = "doc" if "doc" in t.column_names else "chunk_id"
        missing = {"qid", item, "score"} - set(t.column_names)
        if missing:
            raise InputError(f"run file lacks column(s) {', '.join(sorted(missing))}", path=path)
        run = Run(
            qid=t.column("qid").combine_chunks(),
            doc=t.column(item).combine_chunks(),
            score=t.column("score").to_numpy().astype("float64"),
            name=folder.name,
        )
        return ranked_table(run, None, documents=stem != "run")
    return None


def import_ledger(store: Store, path: Path) -> int:
    """Append a JSONL selection ledger's entries to the store's ledger; returns how many."""
    from ..paired._ledger import Ledger

    entries = Ledger(path).entries()
    book = store.ledger
    for e in entries:
        book.append(e)
    return len(entries)
