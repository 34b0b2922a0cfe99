"""Hostile files, folders and paths: every case a clean error naming the path, nothing lost.

One test per case (the hostile-input probe reuses them). Families:

- variant folders: two names with one folder name are refused (property over random names);
- where an experiment writes: ``output``/``cache`` naming a file, or outside the folder;
- writer commands: never a folder, never their own input, never a user's file without --force;
- faults while writing (full disk, read-only folder, failed rename) across every writer: a
  clean error naming the path and no 0-byte, partial or temporary file; also on a real tmpfs;
- damaged cache entries: a miss, recomputed and rewritten, with a warning naming the file;
- symbolic links out of a corpus folder;
- embedding progress saved on time (an injected clock and a simulated ``kill -9``).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import tempfile
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from _experiment_files import TEXTS, toy_experiment, write_toy_data
from _retrieval_fakes import HashingEncoder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter._errors import InputError, RagmeterWarning, ValidationError
from ragmeter.cli import app
from ragmeter.data import Document, Question, load_corpus, write_corpus, write_golden
from ragmeter.experiments import load_experiment, run_experiment

runner = CliRunner()
TOY = Path(__file__).parents[1] / "fixtures" / "toy"

EXPERIMENT = """\
golden = "golden.jsonl"
corpus = "corpus.jsonl"
k = 2
headroom_k = 8
{top}
[baseline]
chunker = "tokens:20:0"
retriever = "bm25"
depth = 10
{variants}"""


def cli(*args: str) -> tuple[int, str]:
    r = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    assert not (r.exc_info and not isinstance(r.exc_info[1], SystemExit)), r.exc_info
    return r.exit_code, r.output


def experiment(folder: Path, top: str = 'output = "out"', variants: str = "") -> Path:
    return toy_experiment(folder, EXPERIMENT.format(top=top, variants=variants))


def quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def listing(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too) and its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


# -- one folder per variant ---------------------------------------------------------------------


def test_variant_names_that_share_a_folder_are_refused_naming_both(tmp_path: Path) -> None:
    variants = '[[variant]]\nname = "Baseline"\nk = 3\n\n[[variant]]\nname = "small"\nk = 4\n'
    variants += '\n[[variant]]\nname = "Small!"\nk = 5\n'
    path = experiment(tmp_path, variants=variants)
    with pytest.raises(ValidationError) as err:
        quiet(load_experiment, path)
    text = str(err.value)
    # [baseline] is on line 6, "Baseline" on line 11, "small" on 15, "Small!" on 19
    assert f"{path}:11: field 'variant[1].name'" in text
    assert "'baseline' (line 6) and 'Baseline' both write to the folder 'baseline/'" in text
    assert f"{path}:19: field 'variant[3].name'" in text
    assert "'small' (line 15) and 'Small!' both write to the folder 'small/'" in text
    assert not (tmp_path / "out").exists()


NAME = st.text(alphabet="aAbB -!_1", min_size=1, max_size=5).filter(lambda s: s.strip())


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(names=st.lists(NAME, min_size=1, max_size=4))
def test_no_two_variants_ever_share_a_folder(tmp_path: Path, names: list[str]) -> None:
    from ragmeter.experiments import slug

    variants = "".join(
        f"[[variant]]\nname = {json.dumps(n)}\nk = {i + 3}\n\n" for i, n in enumerate(names)
    )
    path = tmp_path / "experiment.toml"
    path.write_text(EXPERIMENT.format(top="", variants=variants))
    everyone = ["baseline", *names]
    try:
        exp = quiet(load_experiment, path)
    except ValidationError as exc:
        folders = [slug(n) for n in everyone]
        assert len(set(folders)) < len(everyone), str(exc)  # refused only for a real clash
        return
    folders = [slug(v.name) for v in exp.all_variants]
    assert len(set(folders)) == len(folders) == len(everyone)


def test_every_variant_writes_its_own_folder(tmp_path: Path) -> None:
    variants = '[[variant]]\nname = "Small"\nk = 3\n\n[[variant]]\nname = "small chunks"\nk = 4\n'
    path = experiment(tmp_path, variants=variants)
    result = quiet(run_experiment, path)
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "baseline",
        "small",
        "small-chunks",
        "summary.json",
    ]
    for v, folder in zip(result.variants, ["baseline", "small", "small-chunks"], strict=True):
        config = json.loads((out / folder / "config.json").read_text())
        assert config["variant"] == v.name


# -- where an experiment writes -----------------------------------------------------------------


@pytest.mark.parametrize("key", ["output", "cache"])
def test_output_or_cache_naming_an_existing_file_is_refused_at_load(
    tmp_path: Path, key: str
) -> None:
    path = experiment(tmp_path, top=f'{key} = "notes.txt"')
    (tmp_path / "notes.txt").write_text("precious")
    with pytest.raises(ValidationError) as err:
        quiet(run_experiment, path)
    assert f"{path}:5: field '{key}': '{key}' = 'notes.txt' names a file" in str(err.value)
    assert (tmp_path / "notes.txt").read_text() == "precious"


@pytest.mark.parametrize(
    ("top", "key", "line"),
    [
        ('output = "../escaped"', "output", 5),
        ('output = "{outside}/escaped"', "output", 5),
        ('output = "out"\ncache = "../../escaped-cache"', "cache", 6),
        ('cache = "{outside}/escaped-cache"', "cache", 5),
    ],
)
def test_writes_outside_the_experiment_folder_are_refused(
    tmp_path: Path, top: str, key: str, line: int
) -> None:
    outside = tmp_path / "elsewhere"
    path = experiment(tmp_path / "a" / "b", top=top.format(outside=outside))
    before = sorted(p for p in tmp_path.rglob("*") if "escaped" in p.name)
    with pytest.raises(ValidationError) as err:
        quiet(run_experiment, path)
    text = str(err.value)
    assert f"{path}:{line}: field '{key}'" in text and "outside the experiment's folder" in text
    assert "--allow-outside" in text
    assert sorted(p for p in tmp_path.rglob("*") if "escaped" in p.name) == before == []


def test_a_link_inside_the_folder_that_leads_out_is_outside(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    path = experiment(tmp_path / "exp", top='output = "out"')
    os.symlink(tmp_path / "elsewhere", tmp_path / "exp" / "out")
    with pytest.raises(ValidationError, match="'output' = 'out' is outside"):
        quiet(run_experiment, path)
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_allow_outside_lets_the_user_write_elsewhere(tmp_path: Path) -> None:
    path = experiment(tmp_path / "exp", top='output = "../runs"\ncache = "../cache"')
    quiet(run_experiment, path, allow_outside=True)
    assert (tmp_path / "runs" / "baseline" / "config.json").is_file()
    assert (tmp_path / "cache" / "chunkings").is_dir()
    code, out = cli("run", str(path))
    assert code == 2 and "field 'output'" in out
    code, out = cli("run", str(path), "--allow-outside", "--format", "json")
    assert code == 0, out


def test_reads_outside_the_experiment_folder_are_allowed(tmp_path: Path) -> None:
    write_toy_data(tmp_path / "data")
    folder = tmp_path / "exp"
    folder.mkdir()
    path = folder / "experiment.toml"
    text = EXPERIMENT.format(top='output = "out"', variants="")
    text = text.replace('"golden.jsonl"', '"../data/golden.jsonl"')
    path.write_text(text.replace('"corpus.jsonl"', f'"{tmp_path / "data" / "corpus.jsonl"}"'))
    result = quiet(run_experiment, path)
    assert result.baseline.value("R@2") == pytest.approx(0.8)


# -- commands that write a file the user names ---------------------------------------------------


def test_relocate_into_a_folder_is_a_clean_error(tmp_path: Path, monkeypatch) -> None:
    write_toy_data(tmp_path)
    monkeypatch.chdir(tmp_path)
    before = listing(tmp_path)
    for extra in ((), ("--force",)):
        code, out = cli(
            "golden", "relocate", "golden.jsonl", "-c", "corpus.jsonl", "-o", ".", *extra
        )
        assert code == 2 and "--out . is a folder" in out
    assert listing(tmp_path) == before


def test_relocate_never_writes_over_its_corpus(tmp_path: Path) -> None:
    write_toy_data(tmp_path)
    before = listing(tmp_path)
    g, c = tmp_path / "golden.jsonl", tmp_path / "corpus.jsonl"
    code, out = cli("golden", "relocate", str(g), "-c", str(c), "-o", str(c), "--force")
    assert code == 2 and f"would overwrite the input {c}" in out
    assert listing(tmp_path) == before
    # nor over the golden set it re-anchors, --force or not (issue 22: never an input)
    for force in ((), ("--force",)):
        code, out = cli("golden", "relocate", str(g), "-c", str(c), "-o", str(g), *force)
        assert code == 2 and f"would overwrite the input {g}" in out
        assert listing(tmp_path) == before


def test_chunk_never_writes_over_its_corpus(tmp_path: Path) -> None:
    corpus = write_toy_data(tmp_path) / "corpus.jsonl"
    before = corpus.read_bytes()
    code, out = cli("chunk", str(corpus), "-c", "tokens:20:0", "-o", str(corpus), "--force")
    assert code == 2 and "would overwrite the input" in out
    assert corpus.read_bytes() == before


def test_labels_export_never_writes_over_its_golden_set(tmp_path: Path) -> None:
    write_toy_data(tmp_path)
    chunks = tmp_path / "chunks.jsonl"
    assert (
        cli("chunk", str(tmp_path / "corpus.jsonl"), "-c", "tokens:20:0", "-o", str(chunks))[0] == 0
    )
    golden = tmp_path / "golden.jsonl"
    before = golden.read_bytes()
    code, out = cli(
        "labels",
        "export",
        "--golden",
        str(golden),
        "--chunks",
        str(chunks),
        "-o",
        str(golden),
        "--force",
    )
    assert code == 2 and "would overwrite the input" in out
    assert golden.read_bytes() == before


def test_golden_import_never_writes_over_the_beir_folder_it_reads(tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "fare rules"}\n')
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "fares"}\n')
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    before = listing(beir)
    code, out = cli("golden", "import", "beir", str(beir), "-o", str(beir), "--force")
    assert code == 2 and "would overwrite the input" in out
    assert listing(beir) == before


def test_golden_sample_never_writes_over_its_log(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"question": f"q {i}"}) + "\n" for i in range(5)))
    before = log.read_bytes()
    code, out = cli("golden", "sample", str(log), "-n", "2", "-o", str(log), "--force")
    assert code == 2 and "would overwrite the input" in out
    assert log.read_bytes() == before


def gate(*extra: str) -> tuple[int, str]:
    base, cand, qrels = TOY / "baseline.run", TOY / "reranked.run", TOY / "qrels.txt"
    return cli(
        "gate", str(base), str(cand), "--qrels", str(qrels), "-m", "nDCG@3",
        "--resamples", "50", "--min-delta", "-1", *extra,
    )  # fmt: skip


def test_gate_reports_never_replace_a_users_file_without_force(tmp_path: Path) -> None:
    mine = tmp_path / "notes.md"
    mine.write_text("my notes\n")
    code, out = gate("--markdown", str(mine))
    assert code == 2 and f"--markdown {mine} already exists; pass --force" in out
    assert mine.read_text() == "my notes\n"
    report, xml = tmp_path / "gate.md", tmp_path / "gate.xml"
    report.write_text("## ragmeter gate FAILED: an earlier report\n")
    xml.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="ragmeter gate">')
    assert gate("--markdown", str(report), "--junit", str(xml))[0] == 0  # a re-run replaces
    assert report.read_text().startswith("## ragmeter gate PASSED")
    assert "<testcase" in xml.read_text()
    assert gate("--markdown", str(mine), "--force")[0] == 0
    assert mine.read_text().startswith("## ragmeter gate PASSED")


def test_gate_reports_never_replace_an_input_or_a_folder(tmp_path: Path) -> None:
    run = tmp_path / "cand.run"
    shutil.copy(TOY / "reranked.run", run)
    before = run.read_bytes()
    base, qrels = TOY / "baseline.run", TOY / "qrels.txt"
    code, out = cli(
        "gate", str(base), str(run), "--qrels", str(qrels), "-m", "nDCG@3", "--min-delta", "-1",
        "--junit", str(run), "--force",
    )  # fmt: skip
    assert code == 2 and "would overwrite the input" in out
    assert run.read_bytes() == before
    code, out = gate("--markdown", str(tmp_path))
    assert code == 2 and "is a folder" in out


def test_a_lock_path_that_is_a_folder_is_a_clean_error(tmp_path: Path) -> None:
    write_toy_data(tmp_path)
    (tmp_path / "golden.lock.json").mkdir()
    g, c = str(tmp_path / "golden.jsonl"), str(tmp_path / "corpus.jsonl")
    for args in (
        ("freeze", g, "-c", c),
        ("freeze", g, "-c", c, "--check"),
        ("validate", g, "-c", c),
    ):
        code, out = cli("golden", *args)
        assert code == 2 and f"{tmp_path / 'golden.lock.json'}: not a regular file" in out
    assert (tmp_path / "golden.lock.json").is_dir()


# -- faults while writing -------------------------------------------------------------------------


def _writers() -> dict[str, Callable[[Path], Path]]:
    """Each writer of ragmeter, writing into ``folder``; returns the target it writes."""
    from ragmeter.chat import DiskCache
    from ragmeter.chunking import chunk_corpus
    from ragmeter.experiments import write_json
    from ragmeter.experiments._outputs import write_cached_run, write_run
    from ragmeter.io import Run
    from ragmeter.paired import Ledger
    from ragmeter.retrieval import Cache, encode_cached
    from ragmeter.retrieval.bm25 import BM25Retriever

    docs = [Document(id=k, text=v) for k, v in TEXTS.items()]
    chunking = chunk_corpus(load_corpus_from(docs), "tokens:20:0")
    run = Run(pa.array(["q1", "q1"]), pa.array(["d1", "d2"]), np.array([1.0, 0.5]), "r")

    def shard(f: Path) -> Path:
        encode_cached(HashingEncoder(), ["a", "b"], role="passage", cache=Cache(f))
        return f / "embeddings"

    def bm25(f: Path) -> Path:
        BM25Retriever(cache=Cache(f)).fit(["a", "b"], ["fare rules", "refund fees"])
        return f / "bm25"

    def judge(f: Path) -> Path:
        DiskCache(f).put("ab" * 32, {"reply": "x"})
        return f / "ab" / f"{'ab' * 32}.json"

    def cache_json(f: Path) -> Path:
        Cache(f).write_json("runs", "cd" * 32, {"a": 1})
        return f / "runs"

    def cached_run(f: Path) -> Path:
        write_cached_run(run, f / "run.parquet")
        return f / "run.parquet"

    def ledger(f: Path) -> Path:
        Ledger(f / "ledger.jsonl").append({"metric": "R@2", "n": 5})
        return f / "ledger.jsonl"

    return {
        "embedding shard": shard,
        "cache json": cache_json,
        "cached run": cached_run,
        "bm25 index": bm25,
        "chunks parquet": lambda f: chunking.save(f / "chunks.parquet"),
        "chunks jsonl": lambda f: chunking.save(f / "chunks.jsonl"),
        "corpus": lambda f: write_corpus(docs, f / "corpus.jsonl"),
        "golden": lambda f: write_golden(
            [Question(id="q1", question="why?", evidence=[])], f / "golden.jsonl"
        ),
        "judge cache": judge,
        "ledger": ledger,
        "run file": lambda f: write_run(run, f / "run.trec", "trec"),
        "summary json": lambda f: write_json({"a": 1}, f / "summary.json"),
    }


def load_corpus_from(docs: list[Document]) -> Any:
    from ragmeter.data import Corpus

    return Corpus(docs)


WRITERS = _writers()


def _fault_os(**overrides: Callable[..., Any]) -> types.SimpleNamespace:
    """``os`` as io/_atomic.py sees it, with some calls replaced."""
    return types.SimpleNamespace(
        **{**{k: getattr(os, k) for k in dir(os) if not k.startswith("__")}, **overrides}
    )


def _raise(exc: OSError) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise exc

    return fail


def _half_write(fd: int, data: bytes) -> int:
    """A full disk: half the bytes land, then the write stops short."""
    return os.write(fd, data[: len(data) // 2])


FAULTS: dict[str, Callable[[pytest.MonkeyPatch], object]] = {
    # the disk fills up: fsync (where delayed allocation reports it) fails, a write stops short
    "full disk": lambda mp: mp.setattr(
        "ragmeter.io._atomic.os",
        _fault_os(
            fsync=_raise(OSError(errno.ENOSPC, "No space left on device")), write=_half_write
        ),
    ),
    # a read-only folder: no temporary file or folder can be created there
    "read-only folder": lambda mp: (
        mp.setattr(
            "ragmeter.io._atomic.tempfile",
            types.SimpleNamespace(
                mkstemp=_raise(PermissionError(errno.EACCES, "Permission denied")),
                mkdtemp=_raise(PermissionError(errno.EACCES, "Permission denied")),
            ),
        ),
        mp.setattr(
            "ragmeter.io._atomic.os",
            _fault_os(open=_raise(PermissionError(errno.EACCES, "Permission denied"))),
        ),
    ),
    # the file system turns read-only under the writer: the final rename fails
    "rename fails": lambda mp: mp.setattr(
        "ragmeter.io._atomic.os",
        _fault_os(
            replace=_raise(OSError(errno.EROFS, "Read-only file system")),
            write=_raise(OSError(errno.EROFS, "Read-only file system")),
        ),
    ),
}


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_failed_write_is_a_clean_error_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writer: str, fault: str
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "keep.txt").write_text("the user's file")
    before = listing(folder)
    with monkeypatch.context() as mp:
        FAULTS[fault](mp)
        with pytest.raises(InputError) as err:
            WRITERS[writer](folder)
    assert "cannot write the" in str(err.value) and str(folder) in str(err.value)
    assert listing(folder) == before  # no 0-byte, partial or temporary file
    assert not [p for p in folder.rglob(".*")]  # no temporary file or folder either


def test_the_ledger_is_cut_back_when_the_disk_fills_mid_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragmeter.paired import Ledger

    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.append({"metric": "R@2", "n": 5})
    before = (tmp_path / "ledger.jsonl").read_bytes()
    with monkeypatch.context() as mp:
        mp.setattr("ragmeter.io._atomic.os", _fault_os(write=_half_write))
        with pytest.raises(InputError, match="cannot write the ledger"):
            ledger.append({"metric": "nDCG@10", "n": 5})
    assert (tmp_path / "ledger.jsonl").read_bytes() == before  # no half line
    ledger.append({"metric": "RR@2", "n": 5})
    assert [
        json.loads(x)["metric"] for x in (tmp_path / "ledger.jsonl").read_text().splitlines()
    ] == [
        "R@2",
        "RR@2",
    ]


@pytest.fixture
def small_tmpfs() -> Iterator[Path]:
    """A real 64 KiB tmpfs (root only): writes that do not fit fail with ENOSPC."""
    folder = Path(tempfile.mkdtemp(prefix="ragmeter-tmpfs-"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        folder.rmdir()
        # justified: a full disk needs a tmpfs mount, which unprivileged machines refuse
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'not permitted'})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
        folder.rmdir()


# more than the 64 KiB tmpfs holds, even compressed (random words)
BIG = " ".join(
    "".join(chr(97 + c) for c in word)
    for word in np.random.default_rng(7).integers(0, 26, size=(40_000, 6))
)


@pytest.mark.parametrize(
    "writer",
    [
        lambda f: write_corpus([Document(id="big", text=BIG)], f / "corpus.jsonl"),
        lambda f: write_golden([Question(id="q", question=BIG, evidence=[])], f / "golden.jsonl"),
        lambda f: __import__("ragmeter.experiments._outputs", fromlist=["write_json"]).write_json(
            {"big": BIG}, f / "summary.json"
        ),
        lambda f: (
            __import__("ragmeter.paired._ledger", fromlist=["Ledger"])
            .Ledger(f / "ledger.jsonl")
            .append({"big": BIG})
        ),
        lambda f: (
            __import__("ragmeter.chunking", fromlist=["chunk_corpus"])
            .chunk_corpus(load_corpus_from([Document(id="big", text=BIG)]), "tokens:20:0")
            .save(f / "chunks.parquet")
        ),
    ],
    ids=["corpus", "golden", "summary json", "ledger", "chunks parquet"],
)
def test_a_real_full_disk_is_a_clean_error_and_leaves_nothing(
    small_tmpfs: Path, writer: Callable[[Path], Any]
) -> None:
    (small_tmpfs / "keep.txt").write_text("the user's file")
    before = listing(small_tmpfs)
    with pytest.raises(InputError) as err:
        writer(small_tmpfs)
    assert "No space left on device" in str(err.value) and str(small_tmpfs) in str(err.value)
    assert listing(small_tmpfs) == before  # no 0-byte, partial or temporary file


def test_gate_reports_on_a_real_full_disk_leave_no_empty_file(small_tmpfs: Path) -> None:
    with open(small_tmpfs / "filler", "wb", buffering=0) as fh:  # fill the disk
        try:
            while True:
                fh.write(b"x" * 4096)
        except OSError:
            pass
    code, out = gate(
        "--markdown", str(small_tmpfs / "gate.md"), "--junit", str(small_tmpfs / "g.xml")
    )
    assert code == 2 and f"{small_tmpfs / 'gate.md'}: cannot write the file" in out
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["filler"]


def test_a_real_read_only_folder_is_a_clean_error(small_tmpfs: Path) -> None:
    from ragmeter.paired import Ledger

    (small_tmpfs / "corpus.jsonl").write_text("old\n")
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    for write in (
        lambda: write_corpus([Document(id="a", text="b")], small_tmpfs / "corpus.jsonl"),
        lambda: Ledger(small_tmpfs / "ledger.jsonl").append({"n": 1}),
        lambda: write_golden(
            [Question(id="q", question="x", evidence=[])], small_tmpfs / "g.jsonl"
        ),
    ):
        with pytest.raises(InputError, match="Read-only file system") as err:
            write()
        assert str(small_tmpfs) in str(err.value)
    assert listing(small_tmpfs) == {"corpus.jsonl": b"old\n"}


# -- damaged cache entries ------------------------------------------------------------------------


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: max(1, p.stat().st_size // 2)])


def _wrong_shape(p: Path) -> None:
    with open(p, "wb") as fh:
        np.savez(fh, keys=np.zeros((3, 16), np.uint8), vecs=np.zeros((3, 64), np.float32))


def _wrong_width(p: Path) -> None:
    with np.load(p) as z:
        keys = z["keys"]
    with open(p, "wb") as fh:
        np.savez(fh, keys=keys, vecs=np.ones((len(keys), 3), np.float32))


def _not_finite(p: Path) -> None:
    with np.load(p) as z:
        keys, vecs = z["keys"], z["vecs"].copy()
    vecs[0, 0] = np.nan
    with open(p, "wb") as fh:
        np.savez(fh, keys=keys, vecs=vecs)


SHARD_DAMAGE = {
    "truncated": _truncate,
    "zero bytes": lambda p: p.write_bytes(b""),
    "not an npz": lambda p: p.write_bytes(b"PK\x03\x04 not really"),
    "wrong key shape": _wrong_shape,
    "wrong width": _wrong_width,
    "not finite": _not_finite,
}


@pytest.mark.parametrize("damage", list(SHARD_DAMAGE))
def test_a_damaged_embedding_shard_is_recomputed_with_a_warning(
    tmp_path: Path, damage: str
) -> None:
    from ragmeter.retrieval import Cache, encode_cached

    texts = [f"passage {i} about fares {i % 3}" for i in range(40)]
    encode_cached(HashingEncoder(), texts[:10], role="passage", cache=Cache(tmp_path))
    first = next(tmp_path.rglob("shard-*.npz"))  # the shard of texts[:10]
    encode_cached(HashingEncoder(), texts, role="passage", cache=Cache(tmp_path))  # 30 more
    assert len(list(tmp_path.rglob("shard-*.npz"))) == 2
    SHARD_DAMAGE[damage](first)
    enc = HashingEncoder()
    with pytest.warns(RagmeterWarning, match=f"{first}: unreadable cache entry"):
        out = encode_cached(enc, texts, role="passage", cache=Cache(tmp_path))
    assert enc.texts_encoded == 10
    assert np.array_equal(out, HashingEncoder().encode(texts))
    again = HashingEncoder()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rewritten: no warning, nothing encoded
        encode_cached(again, texts, role="passage", cache=Cache(tmp_path))
    assert again.calls == 0


def _damage_parquet(p: Path) -> None:
    _truncate(p)


def _foreign_parquet(p: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1, 2]}), p)


def _bm25_lost_file(p: Path) -> None:
    next(p.glob("*.npy")).unlink()


def _bm25_wrong_shape(p: Path) -> None:
    for f in p.glob("indptr*.npy"):
        np.save(f, np.array([0, 99], np.int64))


CACHE_DAMAGE: dict[str, tuple[str, Callable[[Path], object]]] = {
    "chunking truncated": ("chunkings", _damage_parquet),
    "chunking zero bytes": ("chunkings", lambda p: p.write_bytes(b"")),
    "chunking foreign columns": ("chunkings", _foreign_parquet),
    "run truncated": ("runs", _damage_parquet),
    "run foreign columns": ("runs", _foreign_parquet),
    "bm25 lost a file": ("bm25", _bm25_lost_file),
    "bm25 wrong shape": ("bm25", _bm25_wrong_shape),
}


@pytest.mark.parametrize("case", list(CACHE_DAMAGE))
def test_a_damaged_cache_entry_is_a_miss_recomputed_and_rewritten(
    tmp_path: Path, case: str
) -> None:
    kind, damage = CACHE_DAMAGE[case]
    path = experiment(tmp_path)
    first = quiet(run_experiment, path, write=False)
    if kind == "bm25":  # a cached run would spare the index: drop it so the index is read
        shutil.rmtree(tmp_path / ".ragmeter-cache" / "runs")
    entries = sorted((tmp_path / ".ragmeter-cache" / kind).glob("*/*"))
    assert len(entries) == 1
    damage(entries[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        second = run_experiment(path, write=False)
    messages = [str(w.message) for w in caught if issubclass(w.category, RagmeterWarning)]
    assert any(m.startswith(f"{entries[0]}: unreadable cache entry") for m in messages), messages
    assert second.baseline.evaluation.aggregate == first.baseline.evaluation.aggregate
    assert second.cache_misses.get(kind) == 1
    if kind == "bm25":
        shutil.rmtree(tmp_path / ".ragmeter-cache" / "runs")
    third = quiet(run_experiment, path, write=False)  # the entry was rewritten
    assert third.cache_misses.get(kind, 0) == 0 and third.cache_hits.get(kind) == 1


def test_a_damaged_json_cache_entry_is_a_miss_with_a_warning(tmp_path: Path) -> None:
    from ragmeter.retrieval import Cache

    Cache(tmp_path).write_json("runs", "ab" * 32, {"a": 1})
    entry = tmp_path / "runs" / "ab" / f"{'ab' * 32}.json"
    entry.write_text('{"a": ')
    cache = Cache(tmp_path)
    with pytest.warns(RagmeterWarning, match="unreadable cache entry"):
        assert cache.read_json("runs", "ab" * 32) is None
    assert cache.misses == {"runs": 1} and cache.hits == {"runs": 0}


# -- symbolic links out of a corpus folder ---------------------------------------------------------


def test_a_linked_file_outside_the_corpus_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("api key")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("fare rules")
    os.symlink(tmp_path / "secret.txt", docs / "link.txt")
    with pytest.raises(ValidationError) as err:
        load_corpus(docs)
    assert f"{docs / 'link.txt'}: a symbolic link to a file outside the corpus folder" in str(
        err.value
    )


def test_a_linked_folder_outside_the_corpus_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "notes.md").write_text("private")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("fare rules")
    os.symlink(tmp_path / "home", docs / "sub")
    with pytest.raises(
        ValidationError, match="a symbolic link to a folder outside the corpus folder"
    ):
        load_corpus(docs)


def test_links_inside_the_corpus_folder_are_read_once(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "rules").mkdir(parents=True)
    (docs / "rules" / "a.txt").write_text("fare rules")
    os.symlink(docs / "rules" / "a.txt", docs / "alias.txt")  # a file link: read as its own id
    os.symlink(docs / "rules", docs / "again")  # a folder link: not descended into
    assert load_corpus(docs).ids == ["alias.txt", "rules/a.txt"]


# -- embedding progress saved on time --------------------------------------------------------------


class Killed(BaseException):
    """The process died: nothing after this reaches the disk."""


class SlowEncoder(HashingEncoder):
    """Costs ``seconds`` per text on a fake clock; the process is killed at ``kill_at``."""

    def __init__(self, clock: list[float], seconds: float, kill_at: float | None) -> None:
        super().__init__()
        self.clock, self.seconds, self.kill_at = clock, seconds, kill_at
        self.dead = False

    def encode(self, texts: Sequence[str], *, role: str = "passage") -> np.ndarray:
        for _ in texts:
            self.clock[0] += self.seconds
            if self.kill_at is not None and self.clock[0] > self.kill_at:
                self.dead = True
                raise Killed
        return super().encode(texts, role=role)


def _killed_run(
    folder: Path, texts: list[str], seconds: float, kill_at: float, monkeypatch: pytest.MonkeyPatch
) -> SlowEncoder:
    """Encode until the fake clock passes ``kill_at``; after the kill no shard is written
    (``kill -9``: the ``finally`` that saves on Ctrl-C never runs)."""
    from ragmeter.retrieval import Cache, encode_cached
    from ragmeter.retrieval._cache import EmbeddingStore

    clock = [0.0]
    enc = SlowEncoder(clock, seconds, kill_at)
    real = EmbeddingStore._write_shard

    def write_unless_dead(self: EmbeddingStore, keys: np.ndarray, vecs: np.ndarray) -> None:
        if not enc.dead:
            real(self, keys, vecs)

    with monkeypatch.context() as mp:
        mp.setattr(EmbeddingStore, "_write_shard", write_unless_dead)
        with pytest.raises(Killed):
            encode_cached(enc, texts, role="passage", cache=Cache(folder), clock=lambda: clock[0])
    return enc


def test_a_slow_model_saves_every_30_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2 s a text, killed at 91 s. Batches: 16 texts (32 s, saved: 16), then batches of 3
    (7.5 s / 2 s), 6 s each, ending at 38, 44, 50, 56, 62 (30 s since the save: 15 more
    saved, 31 in all), 68, 74, 80, 86; the batch that would end at 92 is killed."""
    from ragmeter.retrieval import Cache, encode_cached

    texts = [f"text {i}" for i in range(100)]
    _killed_run(tmp_path, texts, 2.0, 91.0, monkeypatch)
    again = HashingEncoder()
    out = encode_cached(again, texts, role="passage", cache=Cache(tmp_path))
    assert again.texts_encoded == 100 - 31
    assert np.array_equal(out, HashingEncoder().encode(texts))


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seconds=st.sampled_from([0.01, 0.3, 1.0, 1.7, 4.0, 11.0, 29.0]),
    kill_at=st.floats(0.5, 900.0),
    n=st.integers(1, 200),
)
def test_a_kill_at_any_moment_loses_at_most_the_interval_and_one_batch(
    tmp_path_factory: pytest.TempPathFactory, seconds: float, kill_at: float, n: int
) -> None:
    from ragmeter.retrieval import Cache, encode_cached

    folder = tmp_path_factory.mktemp("kill")
    texts = [f"text {i}" for i in range(n)]
    if n * seconds <= kill_at:
        return  # finished before the kill
    with pytest.MonkeyPatch.context() as mp:
        _killed_run(folder, texts, seconds, kill_at, mp)
    again = HashingEncoder()
    out = encode_cached(again, texts, role="passage", cache=Cache(folder))
    assert np.array_equal(out, HashingEncoder().encode(texts))
    finished = int(kill_at // seconds)  # texts fully encoded before the kill
    lost_texts = finished - (n - again.texts_encoded)  # encoded before the kill, not saved
    # lost: the texts of under 30 s since the last save plus the batch in flight (the first
    # batch is 16 texts, later ones about 7.5 s or one text when a text takes longer), at
    # `seconds` per text on the fake clock _killed_run injects: nothing here is timed
    assert lost_texts < (30.0 + max(16 * seconds, 7.5, seconds)) / seconds
    shutil.rmtree(folder)
