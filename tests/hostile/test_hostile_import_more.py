"""``runs import`` of several PATHs is one transaction; what the store holds is not stored twice.

- ``ragmeter runs import A B C`` (and ``Store.import_paths``) plans every PATH before anything
  is written and stores all of them in one transaction: with any PATH refused, the store is
  exactly as it was (before, ``A`` and ``B`` stayed imported when ``C`` was refused), and the
  error names the PATH;
- a run the store already holds (an experiment folder or an export imported again, the same
  PATH twice in one command, an export imported back into the store it came from) is skipped,
  saying "already in the store as run N"; a ledger entry the store holds (or met earlier in the
  import) is skipped too, so the selection ledger's counts (``n_comparisons``, ``n_variants``)
  do not change on a re-import;
- properties over generated imports (sources of every kind, copied to new places, some changed
  in one recorded field, imported in any order and grouping): the store ends with the same runs
  and ledger entries whatever the order and grouping, one per distinct run or entry; a run that
  differs in any recorded field is not skipped; importing anything again changes no table.

Store tests run on SQLite and, with RAGMETER_TEST_DATABASE_URL set, on PostgreSQL
(``store_url``).
"""

from __future__ import annotations

import itertools
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_hostile_import as base
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile_import import Sources, cli, copy, dump, edit, set_key, source

from ragmeter._errors import RagmeterError
from ragmeter.paired import Ledger
from ragmeter.store import Store

#: every source kind: ragmeter run's output (span + chunk; document level), runs export of a
#: span, document and eval run, an eval JSON file of two runs, a JSONL ledger
KINDS = ["experiment", "documents", "span", "document", "eval", "eval_file", "ledger"]


#: the sources test_hostile_import's tests import (module-scoped: made once for this module)
sources = base.sources


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url, migrate=True) as s:
        yield s


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite store, migrated once: the property copies it for each store it needs."""
    path = tmp_path_factory.mktemp("empty-store") / "empty.db"
    Store.open(f"sqlite:///{path}").close()
    return path


def fresh(empty: Path, path: Path) -> Store:
    shutil.copyfile(empty, path)
    return Store.open(f"sqlite:///{path}")


def broken(sources: Sources, into: Path) -> Path:
    """A copy of the experiment folder one of whose files the importer refuses."""
    target = copy(sources.experiment, into)
    edit(target / "shallow" / "config.json", set_key("resolved", value="x"))
    return target


def placed(sources: Sources, tmp_path: Path, *kinds: str) -> list[Path]:
    """A fresh copy of each source kind, each in its own folder."""
    return [copy(source(sources, k), Path(tempfile.mkdtemp(dir=tmp_path))) for k in kinds]


# -- several PATHs: one plan, one transaction -----------------------------------------------------
def test_several_paths_are_imported_in_one_transaction(
    store: Store, sources: Sources, tmp_path: Path
) -> None:
    """The third PATH refused: nothing of the first two is stored, and the error names the
    third; a PATH that does not exist, and two refused PATHs, the same."""
    good = placed(sources, tmp_path, "experiment", "ledger")
    bad = broken(sources, tmp_path / "third")
    before = dump(store)
    with pytest.raises(RagmeterError) as info:
        store.import_paths([*good, bad])
    assert dump(store) == before
    assert str(bad) in str(info.value) and "resolved" in str(info.value)

    with pytest.raises(RagmeterError, match="no such file or folder") as info:
        store.import_paths([*good, tmp_path / "nowhere"])
    assert str(tmp_path / "nowhere") in str(info.value)
    assert dump(store) == before

    other = broken(sources, tmp_path / "fourth")
    with pytest.raises(RagmeterError) as info:
        store.import_paths([good[0], bad, other])
    assert str(bad) in str(info.value) and str(other) in str(info.value)
    assert "nothing of any PATH was imported" in str(info.value)
    assert dump(store) == before

    done = store.import_paths(good)
    assert len(done.new) == 3 and [p.ledger for p in done.paths] == [0, 4]
    assert store.ledger.summary(store.run(done.new[0]).golden_version).n_comparisons == 4


def test_the_command_line_imports_several_paths_all_or_nothing(
    store_url: str, sources: Sources, tmp_path: Path
) -> None:
    Store.open(store_url, migrate=True).close()  # a server database is migrated once
    good = placed(sources, tmp_path, "experiment", "eval_file")
    bad = broken(sources, tmp_path / "third")
    code, out, err = cli("runs", "import", *map(str, [*good, bad]), "--db", store_url)
    assert code == 2 and "Traceback" not in out + err, (out, err)
    errors = [x for x in err.splitlines() if x.startswith("error:")]
    assert errors == [err.splitlines()[0]] and str(bad) in errors[0]
    code, out, err = cli("runs", "list", "--db", store_url, "--format", "json")
    assert code == 0 and json.loads(out) == [], err

    code, out, err = cli("runs", "import", *map(str, good), "--db", store_url)
    assert code == 0, err
    assert out.splitlines() == [f"{good[0]}: runs 1-3", f"{good[1]}: runs 4-5"]


# -- the same thing again --------------------------------------------------------------------------
def test_a_folder_imported_again_is_not_stored_again(
    store: Store, sources: Sources, tmp_path: Path
) -> None:
    """Every kind of source imported a second time (from another copy) adds nothing: the same
    ids come back and every table is as it was; the result says which run each one is."""
    for kind in KINDS:
        first, again = placed(sources, tmp_path, kind, kind)
        ids = store.import_path(first)
        before = dump(store)
        done = store.import_paths([again])
        assert dump(store) == before, kind
        (path,) = done.paths
        assert list(path.ids) == ids and path.new == () and path.ledger == 0, kind
        assert [run_id for _, run_id in path.skipped] == ids, kind
        if kind == "ledger":
            assert path.ledger_skipped == 4


def test_the_same_path_twice_in_one_import_is_stored_once(
    store: Store, sources: Sources, tmp_path: Path
) -> None:
    for kind in ("experiment", "eval_file", "ledger"):
        one, other = placed(sources, tmp_path, kind, kind)
        before = len(dump(store)["runs"]), len(dump(store)["ledger"])
        done = store.import_paths([one, other, one])
        a, b, c = done.paths
        assert a.ids == b.ids == c.ids and b.new == c.new == (), kind
        assert len(dump(store)["runs"]) == before[0] + len(a.new), kind
        assert len(dump(store)["ledger"]) == before[1] + a.ledger, kind
        assert b.ledger == c.ledger == 0 and b.ledger_skipped == c.ledger_skipped == a.ledger


def test_a_reimported_ledger_does_not_change_the_selection_counts(
    store: Store, sources: Sources, tmp_path: Path
) -> None:
    """The ledger's summary (comparisons counted, variants tried) is the same after the same
    ledger is imported again, from another copy, in one import with itself, or with a line
    repeated in the file; an entry that differs in its time is another comparison."""
    (ledger,) = placed(sources, tmp_path, "ledger")
    store.import_path(ledger)
    golden = Ledger(ledger).entries()[0]["golden_version"]
    summary = store.ledger.summary(golden)
    assert (summary.n_comparisons, summary.n_variants) == (4, 2)
    lines = ledger.read_text(encoding="utf-8").splitlines()
    repeated = tmp_path / "repeated.jsonl"
    repeated.write_text("\n".join([*lines, lines[0], lines[2]]) + "\n", encoding="utf-8")
    for paths in ([ledger], placed(sources, tmp_path, "ledger") * 2, [repeated]):
        store.import_paths(paths)
        assert store.ledger.summary(golden) == summary
    later = json.loads(lines[0])
    later["time"] = "2030-01-01T00:00:00+00:00"
    changed = tmp_path / "later.jsonl"
    changed.write_text(json.dumps(later) + "\n", encoding="utf-8")
    (done,) = store.import_paths([changed]).paths
    assert (done.ledger, done.ledger_skipped) == (1, 0)
    assert store.ledger.summary(golden).n_comparisons == 5


def test_an_export_imported_into_its_own_store_is_the_run_it_came_from(
    store: Store, sources: Sources, tmp_path: Path
) -> None:
    """``runs export`` then ``runs import`` into the same store: skipped, naming the run it
    is; the same export with one recorded field changed (its label) is another run."""
    (folder,) = placed(sources, tmp_path, "span")
    (run_id,) = store.import_path(folder)
    out = tmp_path / "exported"
    store.export_run(run_id, out)
    assert store.import_path(out) == [run_id]
    edit(out / "run.json", set_key("label", value="another label"))
    (other,) = store.import_path(out)
    assert other != run_id and store.run(other).label == "another label"


def test_the_command_line_says_what_it_skipped(
    store_url: str, sources: Sources, tmp_path: Path
) -> None:
    Store.open(store_url, migrate=True).close()
    folder, ledger = placed(sources, tmp_path, "experiment", "ledger")
    code, out, err = cli("runs", "import", str(folder), str(ledger), "--db", store_url)
    assert code == 0, err
    assert out.splitlines() == [f"{folder}: runs 1-3", f"{ledger}: 4 ledger entries"]
    code, out, err = cli("runs", "import", str(folder), str(ledger), "--db", store_url)
    assert code == 0, err
    assert out.splitlines() == [
        f"{folder}: runs (none); 3 already in the store, skipped",
        f"{ledger}: 0 ledger entries; 4 already in the store, skipped",
    ]
    notes = [x for x in err.splitlines() if x.startswith("note:")]
    assert notes == [
        f"note: {folder}: toy spans / {name} is already in the store as run {i}; skipped"
        for i, name in enumerate(["baseline", "small chunks", "shallow"], 1)
    ] + [
        f"note: {ledger}: 4 ledger entries are already in the store; skipped (a comparison is "
        "counted once)"
    ]
    code, out, err = cli("runs", "list", "--db", store_url, "--format", "json")
    assert code == 0 and len(json.loads(out)) == 3


# -- properties ------------------------------------------------------------------------------------
def content(store: Store) -> tuple[list[Any], list[str]]:
    """What the store holds, whatever the ids: every run's recorded fields and values, and
    every ledger entry, sorted."""
    runs = []
    for r in store.runs():
        values = {lvl: store.evaluation(r.id, lvl).values.tobytes() for lvl in r.levels}
        ranked = store.ranked(r.id).num_rows if r.has_ranked else None
        runs.append(
            repr(
                (r.experiment, r.name, r.label, r.is_baseline, r.config, r.timings, values, ranked)
            )
        )
    entries = [json.dumps(e, sort_keys=True) for e in store.ledger.entries()]
    return sorted(runs), sorted(entries)


def _relabel(path: Path) -> None:
    """The same source with one recorded field changed: another run (or another entry)."""
    if path.suffix == ".jsonl":
        lines = path.read_text(encoding="utf-8").splitlines()
        entry = json.loads(lines[-1])
        entry["time"] = "2031-02-03T04:05:06+00:00"
        path.write_text("\n".join([*lines, json.dumps(entry)]) + "\n", encoding="utf-8")
    elif path.is_file():  # an eval file: its first record's run name
        edit(path, lambda d: d[0].update(run="renamed"))
    elif (path / "summary.json").is_file():  # an experiment: its last variant's label
        last = sorted(path.glob("*/config.json"))[-1]
        edit(last, set_key("label", value="relabelled"))
    else:  # an export: its record's label
        edit(path / "run.json", set_key("label", value="relabelled"))


@st.composite
def imports(draw: Any) -> tuple[list[tuple[str, bool]], list[int]]:
    """Sources (kind, changed or not), repeats allowed, and a grouping into calls."""
    picks = draw(st.lists(st.tuples(st.sampled_from(KINDS), st.booleans()), min_size=1, max_size=5))
    cuts = draw(st.lists(st.integers(1, len(picks)), max_size=3, unique=True))
    return picks, sorted(cuts)


def _import(store: Store, paths: list[Path], cuts: list[int]) -> None:
    bounds = [0, *[c for c in cuts if c < len(paths)], len(paths)]
    for a, b in itertools.pairwise(bounds):
        if b > a:
            store.import_paths(paths[a:b])


@settings(
    max_examples=15,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=imports(), order=st.randoms(use_true_random=False))
def test_the_store_holds_each_distinct_run_once_whatever_the_order(
    sources: Sources,
    empty: Path,
    tmp_path: Path,
    plan: tuple[list[tuple[str, bool]], list[int]],
    order: Any,
) -> None:
    """Importing the drawn sources in the drawn grouping, and again shuffled one PATH per
    call, gives the same runs and ledger entries; importing everything once more changes no
    table; each source's runs are in the store, and nothing else."""
    picks, cuts = plan
    work = Path(tempfile.mkdtemp(dir=tmp_path))
    paths = []
    for kind, changed in picks:
        (path,) = placed(sources, work, kind)
        if changed:
            _relabel(path)
        paths.append(path)
    with fresh(empty, work / "a.db") as a, fresh(empty, work / "b.db") as b:
        _import(a, paths, cuts)
        shuffled = list(paths)
        order.shuffle(shuffled)
        for p in shuffled:
            b.import_paths([p])
        assert content(a) == content(b)
        before = dump(a)
        done = a.import_paths(paths)
        assert dump(a) == before and done.new == []
        # each source alone: the union of what they hold is what the store holds
        alone: set[str] = set()
        entries: set[str] = set()
        for pick in set(picks):
            runs, ledger = _alone(sources, empty, tmp_path, *pick)
            alone.update(runs)
            entries.update(ledger)
        runs, ledger = content(a)
        assert sorted(set(runs)) == sorted(alone) and len(set(runs)) == len(runs)
        assert ledger == sorted(entries)


_ALONE: dict[tuple[str, bool], tuple[list[Any], list[str]]] = {}


def _alone(
    sources: Sources, empty: Path, tmp_path: Path, kind: str, changed: bool
) -> tuple[list[Any], list[str]]:
    """What one source imported alone into an empty store holds (its content does not depend
    on where the copy is: computed once per source)."""
    if (kind, changed) not in _ALONE:
        work = Path(tempfile.mkdtemp(dir=tmp_path))
        (path,) = placed(sources, work, kind)
        if changed:
            _relabel(path)
        with fresh(empty, work / "alone.db") as one:
            one.import_path(path)
            _ALONE[kind, changed] = content(one)
    return _ALONE[kind, changed]


def test_the_store_holds_each_distinct_run_once_on_every_database(
    store: Store, sources: Sources, tmp_path: Path
) -> None:
    """The property's fixed case on the store under test (PostgreSQL too): every kind, clean
    and changed, twice over in two calls, then once more: one run per distinct run."""
    paths = placed(sources, tmp_path, *KINDS)
    changed = placed(sources, tmp_path, *KINDS)
    for p in changed:
        _relabel(p)
    store.import_paths([*paths, *changed[:3]])
    store.import_paths([*changed, *paths])
    before = dump(store)
    assert store.import_paths([*changed, *paths]).new == []
    assert dump(store) == before
    runs, entries = content(store)
    assert len(set(runs)) == len(runs) and len(set(entries)) == len(entries)
