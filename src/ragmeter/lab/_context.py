"""What the lab needs besides the store to show a run: its corpus, golden set and chunking.

A stored run records the experiment file it came from (``config["experiment"]`` for a run
``ragmeter run`` recorded, or the variant folder ``runs import`` read, whose ``config.json``
names the file). The lab reads that file again, with the same loaders and the same chunking
cache as ``ragmeter run``, so the chunk texts and token counts it shows are the ones the run was
scored on. Loaded experiments are kept in-process, keyed by the files and their modification
times: an edited file is read again, an unchanged one costs nothing.

When the file (or its corpus) has moved, the lab says so in one sentence and falls back to what
the store itself holds: the golden-set version the run was scored on, and the chunks' documents
and character offsets from the stored ranked lists (no chunk text, no token counts: the token
budget and nDCG, which need the whole chunking, are then unavailable). The same happens when
the path the store records lies outside the lab's folder or is not an experiment file: paths
from the store are opened only inside that folder (see :mod:`._paths`).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import RagmeterError
from ._paths import OutsideRoot, root_of

if TYPE_CHECKING:  # pragma: no cover
    from ..chunking import Chunking
    from ..data import Corpus, GoldenSet
    from ..experiments import Experiment
    from ..store import RunRecord, Store

#: default cover and headroom when the experiment file cannot be read (the experiment
#: schema's defaults)
DEFAULT_HEADROOM_K = 20


@dataclass
class LoadedExperiment:
    """An experiment file read with its corpus and golden set; chunkings built on demand."""

    experiment: Experiment
    corpus: Corpus
    golden: GoldenSet
    _chunkings: dict[str, Chunking] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def chunking(
        self, settings: Mapping[str, Any], root: Path, run_id: int | None = None
    ) -> Chunking | None:
        """The chunking a variant with these stored ``settings`` was scored on (from the runner's
        cache when it holds it, else built and cached exactly as ``ragmeter run`` does); None
        for a run imported as spans (no chunker, no chunk file). A chunk file the settings name
        is read only inside ``root`` (:class:`~._paths.OutsideRoot` otherwise)."""
        from ..experiments import Settings
        from ._paths import CHUNKS, contained

        chunker = settings.get("chunker")
        chunks = settings.get("chunks")
        if not chunker and not chunks:
            return None
        path = contained(chunks, root, CHUNKS, run_id) if chunks else None
        key = f"{chunker}|{path}"
        with self._lock:
            if key not in self._chunkings:
                s = Settings(chunker=str(chunker) if chunker else None, chunks=path)
                from ..experiments import variant_chunking

                exp, corpus, golden = self.experiment, self.corpus, self.golden
                chunking: Chunking = variant_chunking(exp, corpus, golden, s)
                self._chunkings[key] = chunking
            return self._chunkings[key]


@dataclass(frozen=True)
class RunContext:
    """Everything the recomputation of one stored run needs, and what is missing.

    ``chunking`` is the real chunking (texts and token counts) or None; ``problem`` is one
    sentence saying what could not be loaded and what is shown instead (None when all is there).
    """

    run: RunRecord
    golden: GoldenSet
    chunking: Chunking | None
    corpus: Corpus | None
    cover: float
    headroom_k: int
    level: str
    experiment_path: Path | None
    problem: str | None = None
    #: the files read and their modification times (see :meth:`is_current`)
    stamp: tuple[tuple[str, int | None], ...] = ()

    def is_current(self) -> bool:
        """False once a file this context was read from has changed (or appeared, or gone)."""
        path = self.experiment_path
        if self.stamp:
            return all(_mtime(Path(f)) == t for f, t in self.stamp)
        return path is None or not path.is_file()

    @property
    def settings(self) -> Mapping[str, Any]:
        return settings_of(self.run)


def settings_of(run: RunRecord) -> Mapping[str, Any]:
    """A stored run's variant settings (chunker, retriever, k, budget...): ``config["settings"]``
    for a run ``ragmeter run`` recorded, the config itself for an imported variant folder."""
    config = run.config or {}
    inner = config.get("settings")
    if isinstance(inner, Mapping):
        return inner
    return config


def experiment_file_of(run: RunRecord, root: Path) -> Path | None:
    """The experiment file a stored run came from, resolved inside ``root`` (it may no longer
    exist); None when the run records none. A recorded path the lab does not open (outside
    ``root``, not a ``.toml`` file, not a file name at all) raises
    :class:`~._paths.OutsideRoot` naming it."""
    from ._paths import EXPERIMENT, RECORD, contained

    config = run.config or {}
    if isinstance(config.get("experiment"), str):  # every run `ragmeter run` recorded
        return contained(config["experiment"], root, EXPERIMENT, run.id)
    if not isinstance(run.source, str) or not run.source:
        return None
    if run.source.lower().endswith(".toml"):
        return contained(run.source, root, EXPERIMENT, run.id)
    # an imported variant folder: its config.json names the file; else the experiment's
    # summary.json one folder up. Only a folder inside the root is looked into (a source
    # elsewhere, such as an evaluation file's, names no experiment the lab could open)
    from ..io import read_json

    try:
        source = contained(run.source, root, RECORD, run.id, folder=True)
    except OutsideRoot:
        return None
    for candidate, key in (
        (source / "config.json", "experiment"),
        (source.parent / "summary.json", "file"),
    ):
        try:
            found = contained(str(candidate), root, RECORD, run.id)
        except OutsideRoot:  # a link out of the root, or the root's own parent
            continue
        if found.is_file():
            try:
                data = read_json(found)
            except RagmeterError:
                continue
            if isinstance(data, dict) and isinstance(data.get(key), str):
                return contained(data[key], root, EXPERIMENT, run.id)
    return None


def _mtime(path: Path | None) -> int | None:
    try:
        return None if path is None else path.stat().st_mtime_ns
    except OSError:
        return None


def _stamp(exp: Experiment) -> tuple[tuple[str, int | None], ...]:
    """The experiment file and the files it reads, each with its modification time."""
    files = [exp.path, exp.golden, exp.corpus, exp.beir]
    return tuple((str(f), _mtime(Path(f))) for f in files if f is not None)


def load_experiment_files(
    exp_path: Path, cache: MutableMapping[Any, Any] | None = None
) -> LoadedExperiment:
    """Read an experiment file with its corpus and golden set. Kept in ``cache`` (default: one
    for the process) under the file's path with the modification times of the experiment,
    golden and corpus files: while none of them changes, the loaded copy is reused."""
    from ..data import load_corpus, load_golden
    from ..experiments import load_experiment

    cache = _DEFAULT_CACHE if cache is None else cache
    key = ("experiment", str(exp_path))
    found = cache.get(key)
    if found is not None:
        was: tuple[tuple[str, int | None], ...] = found[0]
        cached: LoadedExperiment = found[1]
        if _mtime(exp_path) == was[0][1] and _stamp(cached.experiment) == was:
            return cached
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the one-change warnings were shown when it ran
        exp = load_experiment(exp_path, warn=False, allow_outside=True)
        stamp = _stamp(exp)
        if exp.beir is not None:
            from ..data import load_beir

            corpus, golden = load_beir(exp.beir, exp.beir_split)
        else:
            corpus = load_corpus(exp.corpus)
            golden = load_golden(exp.golden, corpus)
    loaded = LoadedExperiment(exp, corpus, golden)
    cache[key] = (stamp, loaded)
    return loaded


_DEFAULT_CACHE: MutableMapping[Any, Any] = {}


def run_context(
    store: Store, run: RunRecord, cache: MutableMapping[Any, Any] | None = None
) -> RunContext:
    """Load what the lab needs to recompute ``run`` (see the module docstring). Raises
    :class:`UsageError` only when neither the experiment file nor the store has the run's
    golden set."""
    from .._errors import NotFoundError, UsageError

    root = root_of(cache)
    problem: str | None = None
    loaded: LoadedExperiment | None = None
    try:
        exp_path = experiment_file_of(run, root)
    except OutsideRoot as exc:  # never opened: the stored golden set and offsets are shown
        exp_path, problem = None, str(exc)
    else:
        if exp_path is None:
            problem = f"run {run.id} records no experiment file"
        elif not exp_path.is_file():
            problem = (
                f"the experiment file {exp_path} that run {run.id} came from is not there any more"
            )
        else:
            try:
                loaded = load_experiment_files(exp_path, cache)
            except (RagmeterError, OSError) as exc:
                problem = f"the experiment file {exp_path} could not be read ({_one_line(exc)})"
    golden = None
    if loaded is not None:
        from ..data import golden_version_of

        file_version = golden_version_of(loaded.golden)
        if run.golden_version is None or file_version == run.golden_version:
            golden = loaded.golden
        else:
            try:
                golden = store.golden(run.golden_version)
                problem = (
                    f"the golden set {loaded.experiment.golden} changed since run {run.id} "
                    f"(now {file_version}); its stored version {run.golden_version} is used"
                )
            except NotFoundError:
                problem = (
                    f"the golden set {loaded.experiment.golden} changed since run {run.id} "
                    f"(now {file_version}, the run used {run.golden_version}) and the store "
                    "does not hold that version: the numbers below may differ from the stored ones"
                )
                golden = loaded.golden
    if golden is None:
        if run.golden_version is None:
            raise UsageError(
                f"{problem}, and the run records no golden-set version to fall back on"
            )
        try:
            golden = store.golden(run.golden_version)
        except NotFoundError:
            raise UsageError(
                f"{problem}, and the store holds no golden-set version {run.golden_version}: "
                "put the experiment file back where it was to see this run"
            ) from None
        problem = (
            f"{problem}: showing the stored golden set ({run.golden_version}) and the chunks' "
            "offsets from the stored ranked lists, without chunk text; the token budget and "
            "nDCG need the chunking"
        )
    chunking = None
    if loaded is not None:
        try:
            chunking = loaded.chunking(settings_of(run), root, run.id)
        except OutsideRoot as exc:
            problem = f"{exc}: showing the chunks' offsets from the stored ranked lists"
        except (RagmeterError, OSError) as exc:
            problem = f"the chunking of run {run.id} could not be rebuilt ({_one_line(exc)})"
    exp = loaded.experiment if loaded is not None else None
    return RunContext(
        run=run,
        golden=golden,
        chunking=chunking,
        corpus=loaded.corpus if loaded is not None else None,
        cover=float(exp.cover) if exp is not None else _stored_cover(run),
        headroom_k=int(exp.headroom_k) if exp is not None else _stored_headroom(run),
        level=str(exp.level) if exp is not None else str((run.config or {}).get("level", "span")),
        experiment_path=exp_path,
        problem=problem,
        stamp=_stamp(exp) if exp is not None else (),
    )


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _stored_cover(run: RunRecord) -> float:
    from ..labels import DEFAULT_COVER

    resolved = (run.config or {}).get("resolved") or {}
    try:
        return float(resolved.get("cover", DEFAULT_COVER))
    except (TypeError, ValueError):
        return DEFAULT_COVER


def _stored_headroom(run: RunRecord) -> int:
    """The headroom k the run recorded (``resolved.headroom`` = ``R@20``), else the default."""
    from ..metrics import parse

    resolved = (run.config or {}).get("resolved") or {}
    try:
        k = parse(str(resolved["headroom"])).k
    except (KeyError, RagmeterError, ValueError):
        k = None
    return int(k) if k else DEFAULT_HEADROOM_K
