#!/usr/bin/env python3
"""Hostile-input probe: several hundred broken files, hostile options and faults thrown at every
``ragmeter`` subcommand and at the main Python API, each case in its own subprocess.

Why a separate tool and not a test: it measures, it does not assert. It runs against any
checkout (``--src`` puts another ``src`` first on PYTHONPATH, e.g. the commit before a fix), so
the same cases give the "before" and "after" figures of docs/reliability.md. The regression
tests that pin each fix live in tests/hostile/test_hostile_*.py.

Every case is generated from a family x a variant (a consumer of a file x a way to break the
file, an option x a hostile value, ...) and declares its oracle. The experiment store's families
(store, import, urls, ids, usercode; issue 22) live in tools/hostile_probe_store.py, with the
second world they run in. Outcomes:

- clean: exit 2 with an error message and no traceback (the API: a RagmeterError), or, for an
  input that is valid but odd, a run that exits 0 and passes the case's checks;
- traceback: a Python traceback anywhere in the output (the API: an exception other than
  RagmeterError escaped), or an exit code that is neither 0, 1 nor 2;
- wrong: the oracle was violated without a traceback: a bad input accepted (exit 0 where exit
  2 was due), a metric outside [0, 1] or NaN printed, an existing file overwritten, a file
  written or read outside the folder it must stay in, a credential sent across origins, a valid
  input refused, or a result that differs from the same input without the oddity;
- hang: the 60 s wall limit or the 4 GB address-space limit was hit (MemoryError).

Usage::

    python tools/hostile_probe.py                      # the current tree, summary table
    python tools/hostile_probe.py -o probe.json        # also every case as JSON
    python tools/hostile_probe.py --src /tmp/pre10/src # another checkout's src
    python tools/hostile_probe.py --only numbers --list
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WALL_S = 60
#: address space, not memory in use: a full `ragmeter run` reserves about 2 GB of address space
#: (pyarrow's allocator, numba, thread stacks) while keeping about 250 MB resident, so 2 GB
#: (the limit until issue 22) failed valid runs as "hangs"; 4 GB still stops a runaway
MEM_BYTES = 4 * 1024**3
OUTCOMES = ("clean", "traceback", "wrong", "hang")

# --------------------------------------------------------------------------------------------
# The fixture world: a tiny corpus, golden set, chunking, runs, answers, labels and logs.
# Written by plain Python (no ragmeter) so that it is the same for every checkout probed.
# --------------------------------------------------------------------------------------------

DOCS = {
    "fees": "Change fees by fare family.\n\nBasic fares cannot be changed. Standard fares: $75 "
    "per change. Flex fares change for free.\n",
    "refunds": "Refunds: Flex fares are refundable up to 24 hours before departure. Basic fares "
    "are not refundable; taxes are refunded on request.\n",
    "bags": "Baggage: one carry-on bag is free. A checked bag costs $35 each way.\n",
}
# (doc, start, end, n_tokens) of `ragmeter chunk corpus.jsonl -c tokens:8:0 --tokenizer regex-words`
CHUNKS = [
    ("fees", 0, 40, 8),
    ("fees", 41, 77, 8),
    ("fees", 77, 113, 8),
    ("fees", 114, 119, 1),
    ("refunds", 0, 40, 8),
    ("refunds", 41, 83, 8),
    ("refunds", 84, 129, 8),
    ("refunds", 129, 130, 1),
    ("bags", 0, 28, 8),
    ("bags", 29, 58, 8),
    ("bags", 59, 68, 2),
]
SECRET = "PROBE-SECRET-7f3a: this file lies outside the corpus folder"


def _span(doc: str, text: str, grade: int = 2) -> dict:
    start = DOCS[doc].index(text)
    return {"doc": doc, "start": start, "end": start + len(text), "grade": grade, "text": text}


GOLDEN = [
    {
        "id": "q1",
        "question": "What is the change fee for a Standard fare?",
        "evidence": [_span("fees", "Standard fares: $75")],
        "answer": "$75",
        "answerable": True,
        "slices": ["fees"],
        "split": "tune",
    },
    {
        "id": "q2",
        "question": "Can I get a refund on a Basic fare?",
        "evidence": [_span("refunds", "Basic fares are not refundable")],
        "answer": "No",
        "answerable": True,
        "slices": ["refunds"],
        "split": "tune",
    },
    {
        "id": "q3",
        "question": "How much is a checked bag?",
        "evidence": [
            _span("bags", "A checked bag costs $35 each way."),
            _span("fees", "Change fees by fare family.", 1),
        ],
        "answer": "$35",
        "answerable": True,
        "slices": ["fees", "bags"],
        "split": "tune",
    },
    {
        "id": "q4",
        "question": "Can I bring my pet snake?",
        "evidence": [],
        "answerable": False,
        "slices": ["unanswerable"],
        "split": "heldout",
    },
]


def _jsonl(rows: Iterable[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _chunk_id(doc: str, s: int, e: int) -> str:
    return f"{doc}#{s}-{e}"


def _span_runs() -> tuple[str, str, list[dict]]:
    ids = [_chunk_id(d, s, e) for d, s, e, _ in CHUNKS]
    hits = {
        "q1": ["fees#41-77", "fees#77-113"],
        "q2": ["refunds#41-83", "refunds#84-129"],
        "q3": ["bags#29-58", "bags#59-68", "fees#0-40"],
        "q4": [],
    }
    base, cand, rows = [], [], []
    for qid, good in hits.items():
        rot = ids[3:] + ids[:3]  # baseline: evidence found, but not first
        for rank, cid in enumerate(rot, 1):
            base.append(f"{qid} Q0 {cid} {rank} {20 - rank}.0 base\n")
            rows.append({"qid": qid, "doc": cid, "score": 20.0 - rank})
        order = good + [c for c in ids if c not in good]
        for rank, cid in enumerate(order, 1):
            cand.append(f"{qid} Q0 {cid} {rank} {20 - rank}.0 cand\n")
    return "".join(base), "".join(cand), rows


TOML = """\
name = "tiny"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "runs"
k = 2
headroom_k = 5
metrics = ["R", "RR"]

[baseline]
name = "baseline"
chunker = "tokens:8:0"
retriever = "bm25"
depth = 10

[[variant]]
name = "small"
chunker = "tokens:4:0"
k = 4
"""


def build_world(d: Path) -> None:
    """Write every valid fixture into ``d``."""
    toy = ROOT / "tests" / "fixtures" / "toy"
    (d / "qrels.txt").write_bytes((toy / "qrels.txt").read_bytes())
    (d / "base.run").write_bytes((toy / "baseline.run").read_bytes())
    (d / "cand.run").write_bytes((toy / "reranked.run").read_bytes())
    qrels_rows = [
        dict(zip(("qid", "doc", "rel"), (p[0], p[2], int(p[3])), strict=True))
        for p in (ln.split() for ln in (toy / "qrels.txt").read_text().splitlines())
        if p
    ]
    (d / "qrels.jsonl").write_text(_jsonl(qrels_rows))
    run_rows = [
        {"qid": p[0], "doc": p[2], "score": float(p[4])}
        for p in (ln.split() for ln in (toy / "baseline.run").read_text().splitlines())
        if p
    ]
    (d / "base.jsonl").write_text(_jsonl(run_rows))
    corpus = _jsonl({"id": k, "title": k.title(), "text": v} for k, v in DOCS.items())
    golden = _jsonl(GOLDEN)
    (d / "corpus.jsonl").write_text(corpus)
    (d / "golden.jsonl").write_text(golden)
    chunks = [
        {
            "id": _chunk_id(doc, s, e),
            "doc": doc,
            "start": s,
            "end": e,
            "text": DOCS[doc][s:e],
            "n_tokens": n,
            "chunking": "tokens:8:0",
            "tokenizer": "regex-words",
        }
        for doc, s, e, n in CHUNKS
    ]
    (d / "chunks.jsonl").write_text(_jsonl(chunks))
    base, cand, rows = _span_runs()
    (d / "srun_base.trec").write_text(base)
    (d / "srun_cand.trec").write_text(cand)
    (d / "srun_base.jsonl").write_text(_jsonl(rows))
    b = [dict(g) for g in GOLDEN]
    b[0] = dict(b[0], evidence=[_span("fees", "Standard fares: $75 per change")])
    (d / "golden_b.jsonl").write_text(_jsonl(b))
    (d / "answers").mkdir()
    cite = {
        q["id"]: [
            {"doc": e["doc"], "start": e["start"], "end": e["end"]} for e in q["evidence"][:1]
        ]
        for q in GOLDEN
    }
    base_ans = [
        {
            "id": "q1",
            "answer": 'The fee is $75: "Standard fares: $75 per change" [1]',
            "abstained": False,
            "citations": cite["q1"],
            "variant": "base",
        },
        {
            "id": "q2",
            "answer": "No, Basic fares are not refundable.",
            "abstained": False,
            "citations": cite["q2"],
            "variant": "base",
        },
        {
            "id": "q3",
            "answer": "A checked bag costs $35 each way.",
            "abstained": False,
            "citations": cite["q3"],
            "variant": "base",
        },
        {
            "id": "q4",
            "answer": "I don't know.",
            "abstained": True,
            "citations": [],
            "variant": "base",
        },
    ]
    cand_ans = [dict(a, variant="cand") for a in base_ans]
    cand_ans[0] = dict(cand_ans[0], answer="The fee is $100.", citations=[])
    (d / "answers" / "base.jsonl").write_text(_jsonl(base_ans))
    (d / "answers" / "cand.jsonl").write_text(_jsonl(cand_ans))
    ctx = {
        "q1": ["fees#41-77", "fees#77-113"],
        "q2": ["refunds#41-83", "refunds#84-129"],
        "q3": ["bags#29-58", "bags#59-68"],
        "q4": ["fees#0-40"],
    }
    (d / "answers" / "ctx.jsonl").write_text(
        _jsonl(dict(a, context=ctx[a["id"]]) for a in base_ans)
    )
    human = ["supported", "unsupported", "supported", "supported", "unsupported", "supported"]
    judge = ["supported", "unsupported", "unsupported", "supported", "unsupported", "supported"]
    (d / "human.jsonl").write_text(_jsonl({"id": f"a{i}", "label": v} for i, v in enumerate(human)))
    (d / "judge.jsonl").write_text(_jsonl({"id": f"a{i}", "label": v} for i, v in enumerate(judge)))
    table = [
        {"id": f"t{i}", "evidence_in_context": i % 3 != 0, "answer_ok": i % 2 == 0}
        for i in range(12)
    ]
    (d / "table.jsonl").write_text(_jsonl(table))
    qs = [
        "How much is the change fee?",
        "Can I get a refund?",
        "What does a bag cost?",
        "Is Flex refundable?",
        "Change fee for Basic?",
        "Pet snake allowed?",
        "Carry-on free?",
        "Refund taxes?",
    ]
    sl = ["fees", "refunds", "bags", "refunds", "fees", "unanswerable", "bags", "refunds"]
    (d / "log.jsonl").write_text(
        _jsonl({"question": q, "slice": s} for q, s in zip(qs, sl, strict=True))
    )
    cdir = d / "corpus_dir"
    cdir.mkdir()
    for k, v in DOCS.items():
        (cdir / f"{k}.md").write_text(v)
    (d / "secret.txt").write_text(SECRET + "\n")
    exp = d / "exp"
    exp.mkdir()
    (exp / "exp.toml").write_text(TOML)
    (exp / "golden.jsonl").write_text(golden)
    (exp / "corpus.jsonl").write_text(corpus)
    shutil.copytree(ROOT / "tests" / "fixtures" / "data" / "beir", d / "beir")
    shutil.copy(ROOT / "tests" / "fixtures" / "data" / "squad.json", d / "squad.json")


# Files made by the probed checkout itself in each world (their layout may change between
# versions, so they are never written by hand).
SETUP = [
    (
        "eval.json",
        [
            "eval",
            "qrels.txt",
            "base.run",
            "cand.run",
            "-m",
            "nDCG@10,R@100,Hit@5",
            "--per-query",
            "-f",
            "json",
        ],
    ),
    (
        "span_eval.json",
        [
            "eval",
            "srun_base.trec",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--corpus",
            "corpus.jsonl",
            "-m",
            "AllR@3,AllR@10",
            "--per-query",
            "-f",
            "json",
        ],
    ),
    (
        "cmp.json",
        [
            "compare",
            "eval.json#base.run",
            "eval.json#cand.run",
            "-m",
            "Hit@5",
            "--no-ledger",
            "-f",
            "json",
        ],
    ),
]


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------

Check = Callable[["Result", Path], "str | None"]


@dataclass
class Case:
    id: str
    family: str
    argv: list[str] | None = None  # CLI arguments after `python -m ragmeter`
    code: str | None = None  # Python snippet for API cases (see API_PRELUDE)
    expect: str = "reject"  # reject | ok | either
    codes: tuple[int, ...] = (0,)  # exit codes of a successful run
    prepare: Callable[[Path], None] | None = None
    checks: tuple[Check, ...] = ()
    same_as: str | None = None  # id of a valid case whose output this one must reproduce
    fsize: int | None = None  # RLIMIT_FSIZE in bytes: a full disk
    env: dict[str, str] = field(default_factory=dict)
    note: str = ""
    world: str = "world"  # the template folder copied for the case (store cases: store-world)
    unprivileged: bool = False  # run without the capability to override file modes (root too)

    def command(self) -> str:
        if self.argv is not None:
            return "ragmeter " + " ".join(_q(a) for a in self.argv)
        return "python -c " + _q((self.code or "").strip().splitlines()[0] + " ...")


def _q(a: str) -> str:
    a = a if len(a) < 60 else a[:40] + f"...<{len(a)} chars>"
    return a if re.fullmatch(r"[\w@%+=:,./#-]+", a) else json.dumps(a)


@dataclass
class Result:
    rc: int | None
    stdout: str
    stderr: str
    wall: float
    timed_out: bool


# ---- file mutations ------------------------------------------------------------------------
# A format is one of: trec (qrels/run text), tsv, jsonl, json, toml. A mutation takes the
# valid bytes and returns the broken ones, or None when it does not apply to the format.

JSONISH = ("jsonl", "json")


def _first_string_value(data: bytes) -> int | None:
    """Offset just inside the first JSON/TOML string value (after its opening quote)."""
    m = re.search(rb'(?:": |= )"', data)
    return None if m is None else m.end()


def _inject(data: bytes, fmt: str, payload: bytes) -> bytes | None:
    if not data:
        return None
    if fmt in ("trec", "tsv"):
        start = data.index(b"\n") + 1 if fmt == "tsv" else 0  # tsv: keep the header
        return data[: start + 1] + payload + data[start + 1 :]
    pos = _first_string_value(data)
    return None if pos is None else data[: pos + 1] + payload + data[pos + 1 :]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def m_empty(data: bytes, fmt: str) -> bytes:
    return b""


def m_garbage(data: bytes, fmt: str) -> bytes:
    rng = random.Random(11)
    return bytes(rng.randrange(256) for _ in range(3000))


def m_nonutf8(data: bytes, fmt: str) -> bytes | None:
    return _inject(data, fmt, b"\xe9")


def m_nul(data: bytes, fmt: str) -> bytes | None:
    return _inject(data, fmt, b"\x00")


def m_surrogate(data: bytes, fmt: str) -> bytes | None:
    # JSON/TOML: the escape of a lone surrogate; text formats: its (invalid) UTF-8 bytes.
    return _inject(data, fmt, b"\\ud800" if fmt in (*JSONISH, "toml") else b"\xed\xa0\x80")


def m_bom_mid(data: bytes, fmt: str) -> bytes | None:
    ls = _lines(data)
    if len(ls) < 3 or fmt == "json":
        return None
    ls[2] = b"\xef\xbb\xbf" + ls[2]  # what `cat a b` makes when b starts with a BOM
    return b"".join(ls)


def m_cr_inside(data: bytes, fmt: str) -> bytes | None:
    return _inject(data, fmt, b"\r")


def m_truncated(data: bytes, fmt: str) -> bytes | None:
    if fmt in ("trec", "tsv"):
        ls = _lines(data)
        last = ls[-1].split()
        return b"".join(ls[:-1]) + b" ".join(last[:2])  # a short last line, no newline
    if fmt == "toml":
        pos = data.rindex(b'"')
        return data[:pos]  # cut inside the last string
    stripped = data.rstrip()
    return stripped[: len(stripped) - max(3, len(_lines(stripped)[-1]) // 2)]


def m_trailing_garbage(data: bytes, fmt: str) -> bytes | None:
    return data + (b"}{ ]\n" if fmt != "toml" else b"= = =\n")


def m_crlf(data: bytes, fmt: str) -> bytes | None:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def m_cr_eol(data: bytes, fmt: str) -> bytes | None:
    return None if fmt == "toml" else data.replace(b"\n", b"\r")


def m_bom_start(data: bytes, fmt: str) -> bytes | None:
    return b"\xef\xbb\xbf" + data


def _replace_first_id(data: bytes, fmt: str, new: bytes) -> bytes | None:
    if fmt == "trec":
        ls = _lines(data)
        first = ls[0].split(b" ", 1)[0]
        # the same query id everywhere, so runs and qrels stay consistent
        return b"".join(
            ln.replace(first + b" ", new + b" ", 1) if ln.startswith(first + b" ") else ln
            for ln in ls
        )
    if fmt in JSONISH:
        m = re.search(rb'"(?:id|_id|qid)": "([^"]*)"', data)
        if m is None:
            return None
        return data.replace(b'"' + m.group(1) + b'"', b'"' + new + b'"')
    return None


def m_long_id(data: bytes, fmt: str) -> bytes | None:
    return _replace_first_id(data, fmt, b"x" * 100_000)


def m_markup_id(data: bytes, fmt: str) -> bytes | None:
    return _replace_first_id(data, fmt, b"[/x][bold]q:100:[/bold]")


def m_dupkey(data: bytes, fmt: str) -> bytes | None:
    if fmt not in JSONISH:
        return None
    m = re.search(rb'\{\s*"([^"]+)": ', data)
    if m is None:
        return None
    return data[: m.start()] + b'{"' + m.group(1) + b'": "zz-duplicate", ' + data[m.start() + 1 :]


def m_wrongtype(data: bytes, fmt: str) -> bytes | None:
    if fmt not in JSONISH:
        return None
    m = re.search(rb'": ("[^"]*")', data)
    if m is None:
        return None
    return data[: m.start(1)] + b"[1, {}]" + data[m.end(1) :]


def m_not_object(data: bytes, fmt: str) -> bytes | None:
    if fmt != "jsonl":
        return None
    ls = _lines(data)
    ls[0] = b'["not", "an", "object"]\n'
    return b"".join(ls)


def m_nan_number(data: bytes, fmt: str) -> bytes | None:
    if fmt not in JSONISH:
        return None
    m = re.search(rb'": (-?\d+(?:\.\d+)?)', data)
    return None if m is None else data[: m.start(1)] + b"NaN" + data[m.end(1) :]


def m_huge_int(data: bytes, fmt: str) -> bytes | None:
    if fmt in JSONISH:
        m = re.search(rb'": (\d+)[,}]', data)
        return None if m is None else data[: m.start(1)] + b"1" + b"0" * 30 + data[m.end(1) :]
    if fmt == "trec":
        ls = _lines(data)
        p = ls[0].split()
        p[3] = b"1" + b"0" * 30
        ls[0] = b" ".join(p) + b"\n"
        return b"".join(ls)
    return None


def m_negative(data: bytes, fmt: str) -> bytes | None:
    if fmt in JSONISH:
        m = re.search(rb'"(?:start|end|n_tokens|rel|grade|n|n_queries)": (\d+)', data)
        return None if m is None else data[: m.start(1)] + b"-7" + data[m.end(1) :]
    return None


def m_extra_field_space(data: bytes, fmt: str) -> bytes | None:
    """A document id with a space in it: every later column shifts by one."""
    if fmt != "trec":
        return None
    ls = _lines(data)
    p = ls[0].split()
    p[2] = p[2] + b" extra"
    ls[0] = b" ".join(p) + b"\n"
    return b"".join(ls)


def m_nan_field(data: bytes, fmt: str) -> bytes | None:
    """The last numeric column (run score, qrels grade) as nan."""
    if fmt != "trec":
        return None
    ls = _lines(data)
    p = ls[0].split()
    idx = 4 if len(p) >= 6 else 3
    p[idx] = b"nan"
    ls[0] = b" ".join(p) + b"\n"
    return b"".join(ls)


def m_inf_field(data: bytes, fmt: str) -> bytes | None:
    out = m_nan_field(data, fmt)
    return None if out is None else out.replace(b" nan", b" inf", 1)


def m_dup_line(data: bytes, fmt: str) -> bytes | None:
    if fmt not in ("jsonl", "trec"):
        return None
    ls = _lines(data)
    ls.insert(1, ls[0] if ls[0].endswith(b"\n") else ls[0] + b"\n")
    return b"".join(ls)


# name -> (function, expectation, same_as_valid)
#   reject: must exit 2; ok: must run and reproduce the valid case's output; either: exit 2 or a
#   run whose output passes the checks.
MUTATIONS: dict[str, tuple[Callable[[bytes, str], bytes | None], str, bool]] = {
    "empty": (m_empty, "reject", False),
    "garbage": (m_garbage, "reject", False),
    "non-utf8": (m_nonutf8, "reject", False),
    "nul": (m_nul, "reject", False),
    "lone-surrogate": (m_surrogate, "reject", False),
    "bom-mid-file": (m_bom_mid, "reject", False),
    "lone-cr-inside": (m_cr_inside, "reject", False),
    "truncated": (m_truncated, "reject", False),
    "trailing-garbage": (m_trailing_garbage, "reject", False),
    "crlf": (m_crlf, "ok", True),
    "cr-line-ends": (m_cr_eol, "ok", True),
    "bom-start": (m_bom_start, "ok", True),
    "100k-id": (m_long_id, "either", False),
    "markup-id": (m_markup_id, "either", False),
    "duplicate-key": (m_dupkey, "reject", False),
    "wrong-type": (m_wrongtype, "reject", False),
    "not-object": (m_not_object, "reject", False),
    "nan-literal": (m_nan_number, "reject", False),
    "huge-int": (m_huge_int, "reject", False),
    "negative": (m_negative, "reject", False),
    "id-with-space": (m_extra_field_space, "reject", False),
    "nan-field": (m_nan_field, "reject", False),
}
# kept for --only experiments, left out of the default set (the same paths as nan-field/non-utf8)
EXTRA_MUTATIONS = {
    "inf-field": (m_inf_field, "reject", False),
    "duplicate-line": (m_dup_line, "either", False),
}
# the short list used for a consumer's secondary files
SECONDARY = ("empty", "non-utf8", "crlf")
# a consumer's other files, the first time a consumer reads them
MIDDLE = ("empty", "non-utf8", "bom-mid-file", "truncated", "crlf", "duplicate-key")

# Per-format exceptions to the expectations above.
FORMAT_EXPECT: dict[tuple[str, str], str] = {
    # trec_eval reads a huge grade or a huge rank as a number; a huge grade must not make NaN.
    ("trec", "huge-int"): "either",
    ("trec", "cr-line-ends"): "either",  # not every TREC reader takes old-Mac line ends
    ("tsv", "cr-line-ends"): "either",
    ("json", "huge-int"): "either",
    ("json", "negative"): "either",
    ("toml", "bom-start"): "either",  # TOML says nothing of a byte-order mark; tomllib refuses it
}


# ---- output checks -------------------------------------------------------------------------

BOUNDED = re.compile(
    r"^(nDCG|R|RR|P|AP|Hit|AllR|MRR|Recall|Precision|NDCG|MAP|Success)"
    r"(\(.*\))?(@.*)?$"
)
# a printed NaN/inf value; not one inside an echoed option or metric ("R@nan", "gains=1:inf")
NAN_TEXT = re.compile(r"(?<![\w.@=:])(nan|NaN|-?inf|-?Infinity)(?![\w])")


def _walk(obj, key=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, str(k))
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk(v, key)
    else:
        yield key, obj


def check_numbers(res: Result, d: Path) -> str | None:
    """No NaN/inf printed; metric values (JSON keys that are bounded metrics) within [0, 1].
    A refused run (exit 2) printed no result, whatever it echoed first."""
    if res.rc == 2:
        return None
    m = NAN_TEXT.search(res.stdout)
    if m:
        return f"non-finite value printed: {res.stdout[max(0, m.start() - 30) : m.end() + 5]!r}"
    text = res.stdout.strip()
    if text[:1] in "[{":
        try:
            obj = json.loads(text)
        except ValueError:
            return None
        for key, v in _walk(obj):
            metricish = BOUNDED.match(key) or key in ("baseline_mean", "candidate_mean")
            if metricish and isinstance(v, float) and not (0.0 <= v <= 1.0):
                return f"{key} = {v} outside [0, 1]"
    return None


def check_literal(text: str) -> Check:
    def check(res: Result, d: Path) -> str | None:
        if res.rc == 0 and text not in res.stdout + res.stderr:
            return f"{text!r} not printed literally"
        return None

    return check


def check_unchanged(rel: str, content: bytes) -> Check:
    def check(res: Result, d: Path) -> str | None:
        p = d / rel
        if p.is_file() and p.read_bytes() != content:
            return f"{rel} was overwritten"
        return None

    return check


def check_absent(rel: str) -> Check:
    def check(res: Result, d: Path) -> str | None:
        return f"{rel} was created" if (d / rel).exists() else None

    return check


def check_no_secret(res: Result, d: Path) -> str | None:
    for p in d.rglob("*"):
        if p.is_file() and not p.is_symlink() and p.name != "secret.txt":
            try:
                if SECRET.encode() in p.read_bytes():
                    return f"text of a file outside the folder copied into {p.relative_to(d)}"
            except OSError:
                pass
    if SECRET in res.stdout:
        return "text of a file outside the folder printed"
    return None


def check_no_litter(res: Result, d: Path) -> str | None:
    """No temporary file and no 0-byte output left behind (a failed write must leave nothing)."""
    for p in d.rglob("*"):
        if p.is_file() and not p.is_symlink():
            if ".tmp" in p.name or p.name.endswith("~"):
                return f"temporary file left: {p.relative_to(d)}"
            # the store's own files: its lock is empty on purpose (an flock target), and SQLite
            # leaves an empty write-ahead log when the disk is full; neither is a failed output
            store_file = p.parent.name == ".ragmeter" and p.name.endswith(
                (".migrate-lock", ".db-wal", ".db-shm")
            )
            empty_ok = p.name.startswith("probe-empty") or store_file
            if p.stat().st_size == 0 and not empty_ok:
                return f"0-byte file left: {p.relative_to(d)}"
    return None


# --------------------------------------------------------------------------------------------
# Consumers of files: every command (and API call) that reads a file, with its file slots.
# --------------------------------------------------------------------------------------------


@dataclass
class Consumer:
    name: str
    argv: list[str]
    slots: dict[str, str]  # file (relative) -> format; the first is the main one
    codes: tuple[int, ...] = (0,)
    overrides: dict[str, str] = field(default_factory=dict)  # mutation -> expectation


J = ["-f", "json"]
CONSUMERS = [
    Consumer(
        "eval-trec",
        ["eval", "qrels.txt", "base.run", "cand.run", "--per-query", *J],
        {"qrels.txt": "trec", "base.run": "trec"},
    ),
    Consumer(
        "eval-jsonl",
        ["eval", "qrels.jsonl", "base.jsonl", "--per-query", *J],
        {"base.jsonl": "jsonl", "qrels.jsonl": "jsonl"},
    ),
    Consumer(
        "eval-span",
        [
            "eval",
            "srun_base.trec",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--corpus",
            "corpus.jsonl",
            "--k",
            "3",
            *J,
        ],
        {
            "golden.jsonl": "jsonl",
            "chunks.jsonl": "jsonl",
            "srun_base.trec": "trec",
            "corpus.jsonl": "jsonl",
        },
    ),
    Consumer(
        "eval-span-nocorpus",
        [
            "eval",
            "srun_base.jsonl",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--k",
            "3",
            *J,
        ],
        {"srun_base.jsonl": "jsonl", "golden.jsonl": "jsonl"},
    ),
    Consumer(
        "golden-validate",
        ["golden", "validate", "golden.jsonl", "-c", "corpus.jsonl", *J],
        {"golden.jsonl": "jsonl", "corpus.jsonl": "jsonl"},
    ),
    Consumer("golden-stats", ["golden", "stats", "golden.jsonl", *J], {"golden.jsonl": "jsonl"}),
    Consumer(
        "golden-freeze",
        ["golden", "freeze", "golden.jsonl", "-c", "corpus.jsonl", *J],
        {"corpus.jsonl": "jsonl", "golden.jsonl": "jsonl"},
    ),
    Consumer(
        "golden-relocate",
        ["golden", "relocate", "golden.jsonl", "-c", "corpus.jsonl", "-o", "relocated.jsonl", *J],
        {"golden.jsonl": "jsonl"},
        codes=(0, 1),
    ),
    Consumer(
        "golden-import-squad",
        ["golden", "import", "squad", "squad.json", "-o", "imp"],
        {"squad.json": "json"},
        overrides={"wrong-type": "either"},
    ),  # 'version': unused
    Consumer(
        "golden-import-beir",
        ["golden", "import", "beir", "beir", "-o", "imp"],
        {"beir/corpus.jsonl": "jsonl", "beir/queries.jsonl": "jsonl", "beir/qrels/test.tsv": "tsv"},
    ),
    Consumer(
        "golden-agree",
        ["golden", "agree", "golden.jsonl", "golden_b.jsonl", "-c", "corpus.jsonl", *J],
        {"golden_b.jsonl": "jsonl"},
    ),
    Consumer(
        "golden-sample",
        ["golden", "sample", "log.jsonl", "-n", "3", "--by", "slice"],
        {"log.jsonl": "jsonl"},
    ),
    Consumer(
        "golden-traffic",
        ["golden", "compare-traffic", "golden.jsonl", "log.jsonl", *J],
        {"log.jsonl": "jsonl"},
    ),
    Consumer(
        "chunk",
        [
            "chunk",
            "corpus.jsonl",
            "-c",
            "tokens:8:0",
            "--tokenizer",
            "regex-words",
            "-o",
            "out.jsonl",
            *J,
        ],
        {"corpus.jsonl": "jsonl"},
    ),
    Consumer(
        "labels-export",
        [
            "labels",
            "export",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--corpus",
            "corpus.jsonl",
            "-o",
            "out.qrels",
        ],
        {"chunks.jsonl": "jsonl", "golden.jsonl": "jsonl"},
    ),
    Consumer(
        "answers-check",
        [
            "answers",
            "check",
            "answers/base.jsonl",
            "--golden",
            "golden.jsonl",
            "--corpus",
            "corpus.jsonl",
            "--chunks",
            "chunks.jsonl",
            *J,
        ],
        {"answers/base.jsonl": "jsonl", "golden.jsonl": "jsonl"},
    ),
    Consumer(
        "answers-compare",
        [
            "answers",
            "compare",
            "answers/base.jsonl",
            "answers/cand.jsonl",
            "--golden",
            "golden.jsonl",
            "--corpus",
            "corpus.jsonl",
            *J,
        ],
        {"answers/cand.jsonl": "jsonl"},
    ),
    Consumer(
        "answers-position",
        [
            "answers",
            "position",
            "--golden",
            "golden.jsonl",
            "--answers",
            "answers/base.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--run",
            "srun_base.trec",
            "--k",
            "3",
            "--corpus",
            "corpus.jsonl",
            *J,
        ],
        {"srun_base.trec": "trec", "answers/base.jsonl": "jsonl"},
    ),
    Consumer(
        "judge-validate",
        ["judge", "validate", "--human", "human.jsonl", "--judge", "judge.jsonl", *J],
        {"judge.jsonl": "jsonl", "human.jsonl": "jsonl"},
    ),
    Consumer(
        "diagnose-table", ["diagnose", "--table", "table.jsonl", *J], {"table.jsonl": "jsonl"}
    ),
    Consumer(
        "diagnose-eval",
        [
            "diagnose",
            "--golden",
            "golden.jsonl",
            "--corpus",
            "corpus.jsonl",
            "--answers",
            "answers/base.jsonl",
            "--eval",
            "span_eval.json",
            "--prompt-metric",
            "AllR@3",
            "--headroom-metric",
            "AllR@10",
            *J,
        ],
        {"span_eval.json": "json", "answers/base.jsonl": "jsonl"},
    ),
    Consumer(
        "diagnose-run",
        [
            "diagnose",
            "--golden",
            "golden.jsonl",
            "--corpus",
            "corpus.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--run",
            "srun_base.trec",
            "--k",
            "3",
            "--large-k",
            "10",
            "--answers",
            "answers/base.jsonl",
            *J,
        ],
        {"srun_base.trec": "trec", "chunks.jsonl": "jsonl"},
    ),
    Consumer(
        "compare-evaljson",
        ["compare", "eval.json#base.run", "eval.json#cand.run", "-m", "nDCG@10", "--no-ledger", *J],
        {"eval.json": "json"},
    ),
    Consumer(
        "compare-runs",
        [
            "compare",
            "base.run",
            "cand.run",
            "--qrels",
            "qrels.txt",
            "-m",
            "nDCG@10",
            "--no-ledger",
            *J,
        ],
        {"cand.run": "trec"},
    ),
    Consumer(
        "gate-evaljson",
        ["gate", "eval.json#base.run", "eval.json#cand.run", "-m", "nDCG@10", "--max-broken", "10"],
        {"eval.json": "json"},
        codes=(0, 1),
    ),
    Consumer(
        "plan-evaljson",
        ["plan", "eval.json#base.run", "eval.json#cand.run", "-m", "Hit@5", *J],
        {"eval.json": "json"},
    ),
    Consumer(
        "plan-from",
        ["plan", "--from", "cmp.json", *J],
        {"cmp.json": "json"},
        overrides={"wrong-type": "either"},
    ),  # the first string, 'baseline', is unused
    Consumer(
        "sweep-runs",
        ["sweep", "base.run", "cand.run", "--qrels", "qrels.txt", "--k", "1..5", *J],
        {"base.run": "trec", "qrels.txt": "trec"},
    ),
    Consumer(
        "sweep-span",
        [
            "sweep",
            "srun_base.trec",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--k",
            "1..5",
            *J,
        ],
        {"chunks.jsonl": "jsonl", "golden.jsonl": "jsonl"},
    ),
    Consumer(
        "run-experiment",
        ["run", "exp/exp.toml", *J],
        {"exp/exp.toml": "toml", "exp/golden.jsonl": "jsonl", "exp/corpus.jsonl": "jsonl"},
    ),
]

API_CONSUMERS = [
    # name, file, format, snippet using P (the path)
    ("api-load_golden", "golden.jsonl", "jsonl", "ragmeter.load_golden(P, 'corpus.jsonl')"),
    ("api-load_corpus", "corpus.jsonl", "jsonl", "ragmeter.load_corpus(P)"),
    ("api-load_chunking", "chunks.jsonl", "jsonl", "ragmeter.load_chunking(P)"),
    ("api-read_qrels", "qrels.txt", "trec", "ragmeter.read_qrels(P)"),
    ("api-read_run", "base.run", "trec", "ragmeter.read_run(P)"),
    (
        "api-load_answers",
        "answers/base.jsonl",
        "jsonl",
        "ragmeter.load_answers(P, golden=ragmeter.load_golden('golden.jsonl'))",
    ),
    ("api-Evaluation.load", "eval.json", "json", "evaluation_load(P)"),
    ("api-read_log", "log.jsonl", "jsonl", "ragmeter.read_log(P)"),
]
API_MUTATIONS = ("empty", "non-utf8", "nul", "lone-surrogate", "bom-mid-file", "truncated", "crlf")


def _write_mutation(rel: str, fn: Callable[[bytes, str], bytes | None], fmt: str):
    def prepare(d: Path) -> None:
        p = d / rel
        out = fn(p.read_bytes(), fmt)
        assert out is not None
        p.write_bytes(out)
        if out == b"":  # an empty input is on purpose: keep check_no_litter quiet about it
            p.rename(p.with_name("probe-empty-" + p.name))
            p.symlink_to(p.with_name("probe-empty-" + p.name).name)

    return prepare


def gen_files(world: Path) -> list[Case]:
    cases: list[Case] = []
    done: set[str] = set()  # files already given every mutation by an earlier consumer
    for c in CONSUMERS:
        base_id = f"files/{c.name}/valid"
        cases.append(
            Case(base_id, "files", argv=c.argv, expect="ok", codes=c.codes, checks=(check_numbers,))
        )
        for i, (rel, fmt) in enumerate(c.slots.items()):
            data = (world / rel).read_bytes() if (world / rel).exists() else None
            names = SECONDARY if rel in done else MUTATIONS if i == 0 else MIDDLE
            done.add(rel)
            for mname in names:
                fn, expect, same = MUTATIONS[mname]
                expect = c.overrides.get(mname, FORMAT_EXPECT.get((fmt, mname), expect))
                if data is not None and fn(data, fmt) is None:
                    continue
                checks: tuple[Check, ...] = (check_numbers,)
                if mname == "markup-id" and rel == "qrels.txt":  # qrels ids are printed
                    checks += (check_literal("[/x][bold]q:100:[/bold]"),)
                cases.append(
                    Case(
                        f"files/{c.name}/{rel}/{mname}",
                        "files",
                        argv=c.argv,
                        expect=expect,
                        codes=c.codes,
                        prepare=_write_mutation(rel, fn, fmt),
                        checks=checks,
                        same_as=base_id if same else None,
                    )
                )
    for name, rel, fmt, call in API_CONSUMERS:
        base_id = f"api-files/{name}/valid"
        cases.append(Case(base_id, "api-files", code=f"P = {rel!r}\nout = {call}", expect="ok"))
        for mname in API_MUTATIONS:
            fn, expect, same = MUTATIONS[mname]
            expect = FORMAT_EXPECT.get((fmt, mname), expect)
            data = (world / rel).read_bytes() if (world / rel).exists() else None
            if data is not None and fn(data, fmt) is None:
                continue
            cases.append(
                Case(
                    f"api-files/{name}/{mname}",
                    "api-files",
                    code=f"P = {rel!r}\nout = {call}",
                    expect=expect,
                    prepare=_write_mutation(rel, fn, fmt),
                    same_as=base_id if same else None,
                )
            )
    return cases


# ---- semantic breakage of particular fields (what a mutation by bytes cannot express) -------


def _edit_jsonl(rel: str, line: int, edit: Callable[[dict], dict | list | str]):
    def prepare(d: Path) -> None:
        p = d / rel
        rows = [json.loads(x) for x in p.read_text().splitlines() if x.strip()]
        rows[line] = edit(rows[line])
        p.write_text("".join(json.dumps(r) + "\n" for r in rows))

    return prepare


def _edit_json(rel: str, edit: Callable[[object], object]):
    def prepare(d: Path) -> None:
        p = d / rel
        p.write_text(json.dumps(edit(json.loads(p.read_text()))))

    return prepare


def _set_ev(**kw):
    def edit(row: dict) -> dict:
        row = json.loads(json.dumps(row))
        row["evidence"][0].update(kw)
        return row

    return edit


def _append_lines(rel: str, text: str):
    def prepare(d: Path) -> None:
        with open(d / rel, "a") as f:
            f.write(text)

    return prepare


def _first_run(obj):
    """The first evaluation record of an eval JSON (a list of runs, or one run)."""
    return obj[0] if isinstance(obj, list) else obj


def _eval_edit(fn):
    def edit(obj):
        fn(_first_run(obj))
        return obj

    return edit


def gen_fields(world: Path) -> list[Case]:
    C: list[Case] = []
    span_cmds = {
        "golden-validate": ["golden", "validate", "golden.jsonl", "-c", "corpus.jsonl", *J],
        "eval-span": [
            "eval",
            "srun_base.trec",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--corpus",
            "corpus.jsonl",
            "--k",
            "3",
            *J,
        ],
        "eval-span-nocorpus": [
            "eval",
            "srun_base.trec",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--k",
            "3",
            *J,
        ],
        "labels-export": [
            "labels",
            "export",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "-o",
            "out.qrels",
        ],
    }
    golden_edits = {
        "negative-start": _set_ev(start=-5),
        "end-past-document": _set_ev(end=10_000),
        "huge-end": _set_ev(end=10**30),
        "start-after-end": _set_ev(start=70, end=65),
        "grade-0": _set_ev(grade=0),
        "grade-negative": _set_ev(grade=-2),
        "grade-float": _set_ev(grade=1.5),
        "grade-string": _set_ev(grade="2"),
        "grade-bool": _set_ev(grade=True),
        "offset-float": _set_ev(start=60.5),
        "offset-string": _set_ev(start="60"),
        "slices-string": lambda r: dict(r, slices="fees"),
        "answerable-string": lambda r: dict(r, answerable="yes"),
        "evidence-object": lambda r: dict(r, evidence=r["evidence"][0]),
        "split-unknown": lambda r: dict(r, split="test"),
        "id-empty": lambda r: dict(r, id=""),
        "id-number": lambda r: dict(r, id=1),
        "unknown-doc": _set_ev(doc="nope"),
    }
    # pydantic's lax mode reads "2" as 2, true as 1 and "yes" as true: exact, so not refused
    lax = {"grade-string", "grade-bool", "offset-string", "answerable-string"}
    for cname, argv in span_cmds.items():
        if cname == "eval-span":
            continue  # the same reader as eval-span-nocorpus plus a corpus: see golden-validate
        for ename, edit in golden_edits.items():
            expect = "either" if ename in lax else "reject"
            C.append(
                Case(
                    f"fields/{cname}/golden/{ename}",
                    "fields",
                    argv=argv,
                    expect=expect,
                    prepare=_edit_jsonl("golden.jsonl", 0, edit),
                    checks=(check_numbers,),
                )
            )
        C.append(
            Case(
                f"fields/{cname}/golden/duplicate-question",
                "fields",
                argv=argv,
                prepare=_append_lines("golden.jsonl", json.dumps(GOLDEN[0]) + "\n"),
            )
        )
    chunk_edits = {
        "negative-start": lambda r: dict(r, start=-3),
        "huge-end": lambda r: dict(r, end=10**30),
        "end-past-document": lambda r: dict(r, end=5000),
        "text-mismatch": lambda r: dict(r, text="something else entirely"),
        "n_tokens-negative": lambda r: dict(r, n_tokens=-1),
        "n_tokens-nan-string": lambda r: dict(r, n_tokens="nan"),
        "id-duplicate": lambda r: dict(r, id="fees#41-77"),
        "doc-unknown": lambda r: dict(r, doc="nope"),
    }
    for cname in ("eval-span", "labels-export"):
        argv = span_cmds[cname] + (["--corpus", "corpus.jsonl"] if cname == "labels-export" else [])
        for ename, edit in chunk_edits.items():
            C.append(
                Case(
                    f"fields/{cname}/chunks/{ename}",
                    "fields",
                    argv=argv,
                    prepare=_edit_jsonl("chunks.jsonl", 0, edit),
                    checks=(check_numbers,),
                )
            )
    # the span past the end of its document, without --corpus (issue 11, item 4)
    ans_argv = [
        "answers",
        "check",
        "answers/base.jsonl",
        "--golden",
        "golden.jsonl",
        "--corpus",
        "corpus.jsonl",
        "--chunks",
        "chunks.jsonl",
        *J,
    ]
    cite = lambda **kw: lambda r: dict(r, citations=[dict(r["citations"][0], **kw)])  # noqa: E731
    ans_edits = {
        "citation-negative": cite(start=-4),
        "citation-past-end": cite(end=99_999),
        "citation-huge": cite(end=10**30),
        "citation-both": cite(chunk="fees#41-77"),
        "citation-unknown-chunk": lambda r: dict(r, citations=[{"chunk": "nope#1-2"}]),
        "answer-number": lambda r: dict(r, answer=75),
        "abstained-string": lambda r: dict(r, abstained="maybe"),
        "id-unknown": lambda r: dict(r, id="q999"),
        "context-unknown": lambda r: dict(r, context=["nope#0-1"]),
    }
    for ename, edit in ans_edits.items():
        C.append(
            Case(
                f"fields/answers-check/answers/{ename}",
                "fields",
                argv=ans_argv,
                prepare=_edit_jsonl("answers/base.jsonl", 0, edit),
                checks=(check_numbers,),
            )
        )
    C.append(
        Case(
            "fields/answers-check/answers/duplicate-id",
            "fields",
            argv=ans_argv,
            prepare=_append_lines(
                "answers/base.jsonl",
                (world / "answers/base.jsonl").read_text().splitlines()[1].replace('"q2"', '"q1"')
                + "\n",
            ),
        )
    )
    jv = ["judge", "validate", "--human", "human.jsonl", "--judge", "judge.jsonl", *J]
    C += [
        Case(
            "fields/judge-validate/duplicate-human-id",
            "fields",
            argv=jv,
            prepare=_append_lines("human.jsonl", '{"id": "a0", "label": "unsupported"}\n'),
        ),
        Case(
            "fields/judge-validate/duplicate-judge-id",
            "fields",
            argv=jv,
            prepare=_append_lines("judge.jsonl", '{"id": "a2", "label": "supported"}\n'),
        ),
        Case(
            "fields/judge-validate/no-overlap",
            "fields",
            argv=jv,
            prepare=_edit_jsonl("judge.jsonl", 0, lambda r: r)
            if False
            else (lambda d: (d / "judge.jsonl").write_text('{"id": "zz", "label": "supported"}\n')),
        ),
        Case(
            "fields/judge-validate/label-list",
            "fields",
            argv=jv,
            prepare=_edit_jsonl("human.jsonl", 0, lambda r: dict(r, label=["supported"])),
        ),
        Case(
            "fields/judge-validate/label-null",
            "fields",
            argv=jv,
            expect="either",
            prepare=_edit_jsonl("judge.jsonl", 0, lambda r: dict(r, label=None)),
        ),
        Case(
            "fields/judge-validate/bool-vs-string",
            "fields",
            argv=jv,
            expect="either",
            checks=(check_numbers,),
            prepare=lambda d: (
                (d / "human.jsonl").write_text(
                    _jsonl({"id": f"b{i}", "label": v} for i, v in enumerate([True, False, True]))
                ),
                (d / "judge.jsonl").write_text(
                    _jsonl(
                        {"id": f"b{i}", "label": v} for i, v in enumerate(["True", "false", "true"])
                    )
                ),
            ),
        ),
    ]
    dt = ["diagnose", "--table", "table.jsonl", *J]
    C += [
        Case(
            "fields/diagnose-table/duplicate-id",
            "fields",
            argv=dt,
            prepare=_append_lines(
                "table.jsonl", '{"id": "t1", "evidence_in_context": false, "answer_ok": false}\n'
            ),
        ),
        Case(
            "fields/diagnose-table/bool-as-string",
            "fields",
            argv=dt,
            prepare=_edit_jsonl("table.jsonl", 0, lambda r: dict(r, answer_ok="false")),
        ),
        Case(
            "fields/diagnose-table/missing-field",
            "fields",
            argv=dt,
            prepare=_edit_jsonl("table.jsonl", 0, lambda r: {"id": r["id"]}),
        ),
    ]
    cj = ["compare", "eval.json#base.run", "eval.json#cand.run", "-m", "nDCG@10", "--no-ledger", *J]

    def pq(value):
        def f(rec):
            first = next(iter(rec["per_query"]))
            rec["per_query"][first]["nDCG@10"] = value

        return f

    eval_edits = {
        "per-query-above-1": (pq(1.5), "reject"),
        "per-query-negative": (pq(-0.5), "reject"),
        "per-query-string": (pq("0.5"), "reject"),
        "per-query-null": (pq(None), "reject"),
        "aggregate-list": (lambda rec: rec.__setitem__("aggregate", [1, 2]), "reject"),
        "per-query-list": (lambda rec: rec.__setitem__("per_query", [1, 2]), "reject"),
        "n_queries-negative": (lambda rec: rec.__setitem__("n_queries", -3), "either"),
        "config-string": (lambda rec: rec.__setitem__("config", "x"), "either"),
    }
    for cmd, argv in (
        ("compare", cj),
        (
            "gate",
            [
                "gate",
                "eval.json#base.run",
                "eval.json#cand.run",
                "-m",
                "nDCG@10",
                "--min-delta",
                "-1",
            ],
        ),
    ):
        for ename, (fn, expect) in eval_edits.items():
            C.append(
                Case(
                    f"fields/{cmd}-evaljson/{ename}",
                    "fields",
                    argv=argv,
                    expect=expect,
                    codes=(0, 1) if cmd == "gate" else (0,),
                    prepare=_edit_json("eval.json", _eval_edit(fn)),
                    checks=(check_numbers,),
                )
            )
    # per-query value outside [0, 1] through the API
    for ename, (fn, expect) in eval_edits.items():
        C.append(
            Case(
                f"fields/api-compare-evaljson/{ename}",
                "fields",
                expect=expect,
                prepare=_edit_json("eval.json", _eval_edit(fn)),
                code="ev = evaluation_load_all('eval.json')\n"
                "out = ragmeter.compare(ev[0], ev[1], 'nDCG@10').to_dict()\n"
                "bounded(out.get('baseline_mean'), out.get('candidate_mean'))",
            )
        )
    pf = ["plan", "--from", "cmp.json", *J]
    for key, val in (
        ("n", -5),
        ("n", 0),
        ("n", 10**30),
        ("baseline_mean", 7.5),
        ("fixed", "x"),
        ("n", "12"),
        ("broken", -1),
        ("fixed", 10**30),
    ):
        C.append(
            Case(
                f"fields/plan-from/{key}={val!r}",
                "fields",
                argv=pf,
                expect="reject",
                prepare=_edit_json(
                    "cmp.json",
                    lambda o, k=key, v=val: {
                        **{a: b for a, b in o.items() if a != "per_query"},
                        k: v,
                    },
                ),
                checks=(check_numbers,),
            )
        )
    # TREC specifics: a doc id with a space, disjoint query ids, a run with no rows of a query
    C += [
        Case(
            "fields/eval-trec/run-disjoint-qids",
            "fields",
            argv=["eval", "qrels.txt", "base.run", *J],
            expect="either",
            checks=(check_numbers, _warned),
            prepare=lambda d: (d / "base.run").write_text(
                "".join("zz" + ln + "\n" for ln in (d / "base.run").read_text().splitlines())
            ),
        ),
        Case(
            "fields/eval-trec/qrels-all-grade-0",
            "fields",
            argv=["eval", "qrels.txt", "base.run", *J],
            expect="either",
            checks=(check_numbers, _no_mean_over_zero),
            prepare=lambda d: (d / "qrels.txt").write_text(
                "".join(
                    " ".join([*ln.split()[:3], "0"]) + "\n"
                    for ln in (d / "qrels.txt").read_text().splitlines()
                )
            ),
        ),
        Case(
            "fields/eval-span/run-disjoint-qids",
            "fields",
            argv=span_cmds["eval-span"],
            expect="either",
            checks=(check_numbers, _warned),
            prepare=lambda d: (d / "srun_base.trec").write_text(
                "".join("zz" + ln + "\n" for ln in (d / "srun_base.trec").read_text().splitlines())
            ),
        ),
        Case(
            "fields/eval-trec/exp-gain-grade-1024",
            "fields",
            argv=["eval", "qrels.txt", "base.run", "-m", "nDCG(gain=exp)@10", *J],
            expect="either",
            checks=(check_numbers,),
            prepare=lambda d: (d / "qrels.txt").write_text(
                (d / "qrels.txt").read_text().replace(" 2\n", " 1024\n", 1)
            ),
        ),
        Case(
            "fields/eval-trec/grade-huge-exp-gain",
            "fields",
            argv=["eval", "qrels.txt", "base.run", "-m", "nDCG(gain=exp)@10", *J],
            expect="either",
            checks=(check_numbers,),
            prepare=lambda d: (d / "qrels.txt").write_text(
                (d / "qrels.txt").read_text().replace(" 2\n", " 99999999999999999999\n", 1)
            ),
        ),
        Case(
            "fields/golden-import-squad/no-answers",
            "fields",
            argv=["golden", "import", "squad", "squad.json", "-o", "imp"],
            expect="either",
            checks=(_squad_no_unanswerable,),
            prepare=_squad_strip_answers,
        ),
    ]
    return C


def _warned(res: Result, d: Path) -> str | None:
    if res.rc == 0 and not re.search(r"warn|no .*match|none of|0 of|not in", res.stderr, re.I):
        return "no query id of the run matches the labels, and nothing says so"
    return None


def _no_mean_over_zero(res: Result, d: Path) -> str | None:
    if res.rc != 0:
        return None
    try:
        obj = json.loads(res.stdout)
    except ValueError:
        return None
    for _, v in _walk(_first_run(obj).get("aggregate", {})):
        if isinstance(v, (int, float)):
            return f"a mean over zero scorable queries printed as {v}"
    return None


def _squad_strip_answers(d: Path) -> None:
    p = d / "squad.json"
    obj = json.loads(p.read_text())
    for art in obj["data"]:
        for par in art["paragraphs"]:
            for qa in par["qas"]:
                qa["answers"] = []
                qa.pop("is_impossible", None)
    p.write_text(json.dumps(obj))


def _squad_no_unanswerable(res: Result, d: Path) -> str | None:
    g = d / "imp" / "golden.jsonl"
    if res.rc == 0 and g.exists() and '"answerable": false' in g.read_text():
        return "a SQuAD question without answers (and no is_impossible) became 'unanswerable'"
    return None


# ---- numeric options --------------------------------------------------------------------------

VALUES = ("nan", "inf", "-1", "0", "1e308", str(10**20))


def _dom(lo: float, hi: float, lo_open=False, hi_open=False) -> Callable[[float], bool]:
    def ok(x: float) -> bool:
        if not math.isfinite(x):
            return False
        if x < lo or x > hi:
            return False
        return not ((lo_open and x == lo) or (hi_open and x == hi))

    return ok


# an OpenAI-compatible judge on a port nothing listens on: every judgement a recorded failure
CLOSED_JUDGE = [
    "--judge",
    "openai",
    "--judge-url",
    "http://127.0.0.1:9/v1",
    "--judge-model",
    "m",
    "--judge-cache",
    "jc",
]
INT_POS = _dom(1, 10**7)  # a positive count; a huge one may be refused or capped
PROB = _dom(0, 1)
PROB_OPEN = _dom(0, 1, lo_open=True, hi_open=True)
ANY = _dom(-math.inf, math.inf)

NUMERIC: list[tuple[str, list[str], str, Callable[[float], bool], bool, tuple[int, ...]]] = [
    # name, argv, option, valid domain, integer option, exit codes of a run
    (
        "eval-cover",
        [
            "eval",
            "srun_base.trec",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--k",
            "3",
            *J,
        ],
        "--cover",
        _dom(0, 1, lo_open=True),
        False,
        (0,),
    ),
    (
        "eval-k",
        ["eval", "srun_base.trec", "--golden", "golden.jsonl", "--chunks", "chunks.jsonl", *J],
        "--k",
        INT_POS,
        True,
        (0,),
    ),
    (
        "eval-budget",
        ["eval", "srun_base.trec", "--golden", "golden.jsonl", "--chunks", "chunks.jsonl", *J],
        "--budget",
        INT_POS,
        True,
        (0,),
    ),
    (
        "compare-resamples",
        ["compare", "eval.json#base.run", "eval.json#cand.run", "-m", "nDCG@10", "--no-ledger", *J],
        "--resamples",
        _dom(1, 10**6),
        True,
        (0,),
    ),
    (
        "compare-seed",
        ["compare", "eval.json#base.run", "eval.json#cand.run", "-m", "nDCG@10", "--no-ledger", *J],
        "--seed",
        _dom(0, 2**63),
        True,
        (0,),
    ),
    (
        "compare-confidence",
        ["compare", "eval.json#base.run", "eval.json#cand.run", "-m", "nDCG@10", "--no-ledger", *J],
        "--confidence",
        PROB_OPEN,
        False,
        (0,),
    ),
    (
        "compare-movers",
        ["compare", "eval.json#base.run", "eval.json#cand.run", "-m", "nDCG@10", "--no-ledger", *J],
        "--movers",
        _dom(0, 10**7),
        True,
        (0,),
    ),
    (
        "compare-cover",
        [
            "compare",
            "srun_base.trec",
            "srun_cand.trec",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "-m",
            "R@3",
            "--no-ledger",
            *J,
        ],
        "--cover",
        _dom(0, 1, lo_open=True),
        False,
        (0,),
    ),
    (
        "sweep-headroom-k",
        ["sweep", "base.run", "--qrels", "qrels.txt", "--k", "1..5", *J],
        "--headroom-k",
        _dom(0, 10**7),
        True,
        (0,),
    ),
    (
        "sweep-cover",
        [
            "sweep",
            "srun_base.trec",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--k",
            "1..3",
            *J,
        ],
        "--cover",
        _dom(0, 1, lo_open=True),
        False,
        (0,),
    ),
    (
        "gate-max-broken",
        ["gate", "eval.json#base.run", "eval.json#cand.run", "-m", "nDCG@10"],
        "--max-broken",
        _dom(0, 10**7),
        True,
        (0, 1),
    ),
    (
        "gate-min-delta",
        ["gate", "eval.json#base.run", "eval.json#cand.run", "-m", "nDCG@10"],
        "--min-delta",
        _dom(-1, 1),
        False,
        (0, 1),
    ),
    (
        "gate-require-ci-above",
        ["gate", "eval.json#base.run", "eval.json#cand.run", "-m", "nDCG@10"],
        "--require-ci-above",
        _dom(-1, 1),
        False,
        (0, 1),
    ),
    (
        "gate-min-slice",
        [
            "gate",
            "eval.json#base.run",
            "eval.json#cand.run",
            "-m",
            "nDCG@10",
            "--max-broken",
            "9",
            "--per-slice",
        ],
        "--min-slice",
        _dom(0, 10**7),
        True,
        (0, 1),
    ),
    (
        "plan-baseline-rate",
        ["plan", "--discordance", "0.2", *J],
        "--baseline-rate",
        PROB,
        False,
        (0,),
    ),
    (
        "plan-discordance",
        ["plan", "--baseline-rate", "0.7", *J],
        "--discordance",
        _dom(0, 1),
        False,
        (0,),
    ),
    (
        "plan-difference",
        ["plan", "--baseline-rate", "0.7", "--discordance", "0.2", *J],
        "--difference",
        _dom(-0.2, 0.2),
        False,
        (0,),
    ),
    (
        "plan-target",
        ["plan", "--baseline-rate", "0.7", "--discordance", "0.2", *J],
        "--target",
        _dom(0, 1, lo_open=True),
        False,
        (0,),
    ),
    (
        "plan-confidence",
        ["plan", "--baseline-rate", "0.7", "--discordance", "0.2", *J],
        "--confidence",
        PROB_OPEN,
        False,
        (0,),
    ),
    (
        "plan-n",
        ["plan", "--baseline-rate", "0.7", "--discordance", "0.2", *J],
        "--n",
        _dom(1, 10**9),
        True,
        (0,),
    ),
    (
        "answers-check-k",
        [
            "answers",
            "check",
            "answers/base.jsonl",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--run",
            "srun_base.trec",
            *J,
        ],
        "--k",
        INT_POS,
        True,
        (0,),
    ),
    (
        "answers-check-judge-timeout",
        [
            "answers",
            "check",
            "answers/ctx.jsonl",
            "--golden",
            "golden.jsonl",
            "--corpus",
            "corpus.jsonl",
            "--chunks",
            "chunks.jsonl",
            *CLOSED_JUDGE,
            *J,
        ],
        "--judge-timeout",
        _dom(0, 10**6, lo_open=True),
        False,
        (0, 1),
    ),
    (
        "answers-check-judge-retries",
        [
            "answers",
            "check",
            "answers/ctx.jsonl",
            "--golden",
            "golden.jsonl",
            "--corpus",
            "corpus.jsonl",
            "--chunks",
            "chunks.jsonl",
            *CLOSED_JUDGE,
            *J,
        ],
        "--judge-retries",
        _dom(0, 100),
        True,
        (0, 1),
    ),
    (
        "answers-position-k",
        [
            "answers",
            "position",
            "--golden",
            "golden.jsonl",
            "--answers",
            "answers/base.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--run",
            "srun_base.trec",
            "--corpus",
            "corpus.jsonl",
            *J,
        ],
        "--k",
        INT_POS,
        True,
        (0,),
    ),
    (
        "answers-position-cover",
        [
            "answers",
            "position",
            "--golden",
            "golden.jsonl",
            "--answers",
            "answers/base.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--run",
            "srun_base.trec",
            "--k",
            "3",
            "--corpus",
            "corpus.jsonl",
            *J,
        ],
        "--cover",
        _dom(0, 1, lo_open=True),
        False,
        (0,),
    ),
    (
        "golden-agree-worst",
        ["golden", "agree", "golden.jsonl", "golden_b.jsonl", *J],
        "--worst",
        _dom(0, 10**7),
        True,
        (0,),
    ),
    ("golden-sample-size", ["golden", "sample", "log.jsonl"], "-n", _dom(1, 8), True, (0,)),
    (
        "golden-sample-seed",
        ["golden", "sample", "log.jsonl", "-n", "3"],
        "--seed",
        _dom(0, 2**63),
        True,
        (0,),
    ),
    (
        "golden-traffic-factor",
        ["golden", "compare-traffic", "golden.jsonl", "log.jsonl", *J],
        "--factor",
        _dom(1, 1e308, lo_open=True),
        False,
        (0,),
    ),
    (
        "labels-export-cover",
        [
            "labels",
            "export",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "-o",
            "out.qrels",
        ],
        "--cover",
        _dom(0, 1, lo_open=True),
        False,
        (0,),
    ),
    (
        "labels-budget-tolerance",
        ["labels", "budget", "300x4", "100x12", *J],
        "--tolerance",
        _dom(0, 1e6),
        False,
        (0,),
    ),
    (
        "diagnose-k",
        [
            "diagnose",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--run",
            "srun_base.trec",
            "--large-k",
            "10",
            *J,
        ],
        "--k",
        _dom(1, 10),
        True,
        (0,),
    ),
    (
        "diagnose-large-k",
        [
            "diagnose",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--run",
            "srun_base.trec",
            "--k",
            "2",
            *J,
        ],
        "--large-k",
        _dom(2, 10**7),
        True,
        (0,),
    ),
    (
        "diagnose-headroom-threshold",
        ["diagnose", "--counts", "41,9,6,14", *J],
        "--headroom-threshold",
        PROB,
        False,
        (0,),
    ),
    (
        "diagnose-prompt-threshold",
        ["diagnose", "--counts", "41,9,6,14", *J],
        "--prompt-threshold",
        PROB,
        False,
        (0,),
    ),
    (
        "diagnose-answer-threshold",
        ["diagnose", "--counts", "41,9,6,14", *J],
        "--answer-threshold",
        PROB,
        False,
        (0,),
    ),
    ("rank-curve-k", ["explain", "rank-curve", *J], "--k", _dom(1, 10**4), True, (0,)),
    ("rank-curve-depth", ["explain", "rank-curve", *J], "--depth", _dom(1, 10**4), True, (0,)),
]


def _numeric_expect(value: str, ok: Callable[[float], bool], integer: bool) -> str:
    try:
        x = float(value)
    except ValueError:
        return "reject"
    if integer and math.isfinite(x) and x != int(x):
        return "reject"
    if integer and value == "1e308":
        return "reject"  # not an integer literal
    if value == str(10**20):
        return "either"  # refuse, or run in bounded time and memory
    return "either" if ok(x) else "reject"


def gen_numbers() -> list[Case]:
    C: list[Case] = []
    for name, argv, opt, ok, integer, codes in NUMERIC:
        for v in VALUES:
            if integer and v == "1e308":
                continue  # not an integer: the option parser refuses it before ragmeter runs
            C.append(
                Case(
                    f"numbers/{name}/{v}",
                    "numbers",
                    argv=[*argv, opt, v],
                    expect=_numeric_expect(v, ok, integer),
                    codes=codes,
                    checks=(check_numbers,),
                )
            )
    # numbers inside strings: chunker sizes, budget variants, counts, k lists
    chunk = ["chunk", "corpus.jsonl", "--tokenizer", "regex-words", "-o", "out.jsonl", *J, "-c"]
    for spec, exp in (
        ("tokens:0:0", "reject"),
        ("tokens:-5:0", "reject"),
        ("tokens:nan:0", "reject"),
        ("tokens:8:8", "reject"),
        ("tokens:8:-1", "reject"),
        ("tokens:99999999999999999999:0", "either"),
        ("sentences:0", "reject"),
        ("sections:-1", "reject"),
        ("recursive:8:9", "reject"),
        ("tokens:8", "either"),
        ("tokens:1e3:0", "reject"),
        ("bogus:1", "reject"),
    ):
        C.append(Case(f"numbers/chunker/{spec}", "numbers", argv=[*chunk, spec], expect=exp))
    for variants, exp in (
        (["300x4", "NaNx4"], "reject"),
        (["0x4", "300x4"], "reject"),
        (["-300x4", "300x4"], "reject"),
        (["300x4", "300x0"], "reject"),
        (["300x99999999999999999999", "300x4"], "either"),
        (["x"], "reject"),
        (["300x4", "infx1"], "reject"),
        (["300x4", "1e308x1"], "reject"),
    ):
        C.append(
            Case(
                f"numbers/labels-budget/{'_'.join(variants)}",
                "numbers",
                argv=["labels", "budget", *variants, *J],
                expect=exp,
                checks=(check_numbers,),
            )
        )
    for counts, exp in (
        ("99999999999999999999,1,1,1", "either"),
        ("-1,1,1,1", "reject"),
        ("nan,1,1,1", "reject"),
        ("0,0,0,0", "either"),
        ("1,1", "reject"),
        ("1e308,1,1,1", "reject"),
        ("1.5,1,1,1", "reject"),
        ("10000000000,10000000000,1,1", "either"),
        (",,,", "reject"),
        ("inf,1,1,1", "reject"),
    ):
        C.append(
            Case(
                f"numbers/diagnose-counts/{counts}",
                "numbers",
                argv=["diagnose", "--counts", counts, *J],
                expect=exp,
                checks=(check_numbers,),
            )
        )
    for others, exp in (
        ("0", "reject"),
        ("-1", "reject"),
        ("99999999999", "either"),
        ("nan", "reject"),
        ("1,1", "reject"),
    ):
        C.append(
            Case(
                f"numbers/rank-curve-others-at/{others}",
                "numbers",
                argv=["explain", "rank-curve", "--grades", "2,1", "--others-at", others, *J],
                expect=exp,
                checks=(check_numbers,),
            )
        )
    return C


# ---- metric strings and ranges ---------------------------------------------------------------

METRICS_HOSTILE = {
    "nDCG(gains=0:5)@10": "reject",
    "nDCG(gains=1:nan)@10": "reject",
    "nDCG(gains=1:inf)@10": "reject",
    "nDCG(gains=1:-5)@10": "either",
    "nDCG(gains=2:1e308)@10": "either",
    "nDCG(gain=exp,gain=linear)@10": "reject",
    "R@0": "reject",
    "R@-1": "reject",
    "R@99999999999": "either",
    "R@nan": "reject",
    "P@1e3": "reject",
    "R@budget=-5": "reject",
    "R@budget=nan": "reject",
    "[/x]@10": "reject",
    ":100:@5": "reject",
    "": "either",  # an empty list: the default metrics
    "ＲＲ@10": "reject",
    "R@" + "9" * 5000: "either",
}


def gen_metrics() -> list[Case]:
    C: list[Case] = []
    cmds = {
        "eval": ["eval", "qrels.txt", "base.run", *J, "-m"],
        "eval-span": [
            "eval",
            "srun_base.trec",
            "--golden",
            "golden.jsonl",
            "--chunks",
            "chunks.jsonl",
            *J,
            "-m",
        ],
        "gate": ["gate", "base.run", "cand.run", "--qrels", "qrels.txt", "--max-broken", "9", "-m"],
    }
    for cname, argv in cmds.items():
        for metric, exp in METRICS_HOSTILE.items():
            if cname == "eval-span" and "gain" in metric:
                continue
            C.append(
                Case(
                    f"metrics/{cname}/{metric[:40]}",
                    "metrics",
                    argv=[*argv, metric],
                    expect=exp,
                    codes=(0, 1) if cname == "gate" else (0,),
                    checks=(check_numbers,),
                )
            )
    for metric, exp in METRICS_HOSTILE.items():
        C.append(
            Case(
                f"metrics/api-evaluate/{metric[:40]}",
                "metrics",
                expect=exp,
                code=f"out = ragmeter.evaluate(QRELS, RUN, [{metric!r}])\n"
                "bounded(*out.aggregate.values())",
            )
        )
    for names in (["[/x]"], [":100:"], ["R@-1"], ["nDCG(gains=0:5)"]):
        C.append(
            Case(
                f"metrics/metrics-cmd/{names[0]}",
                "metrics",
                argv=["metrics", *names],
                expect="either",
            )
        )
    # sweep ranges
    sw = ["sweep", "base.run", "cand.run", "--qrels", "qrels.txt", *J, "--k"]
    for k, exp in (
        ("1..100000000", "either"),
        ("100000000..1", "either"),
        ("0..5", "reject"),
        ("-5..5", "reject"),
        ("1..20:0", "reject"),
        ("1..20:-1", "reject"),
        ("nan..5", "reject"),
        ("1..99999999999999999999", "either"),
        ("1,1,1", "either"),
        ("", "either"),
        ("1..", "reject"),
        ("5,3,99999999999", "either"),
    ):
        C.append(
            Case(
                f"ranges/sweep-k/{k}", "ranges", argv=[*sw, k], expect=exp, checks=(check_numbers,)
            )
        )
    swb = [
        "sweep",
        "srun_base.trec",
        "--golden",
        "golden.jsonl",
        "--chunks",
        "chunks.jsonl",
        *J,
        "--budget",
    ]
    for b, exp in (
        ("1..100000000:1", "either"),
        ("400..2000:0", "reject"),
        ("-5..5", "reject"),
        ("nan", "reject"),
        ("0", "reject"),
        ("99999999999999999999", "either"),
    ):
        C.append(
            Case(
                f"ranges/sweep-budget/{b}",
                "ranges",
                argv=[*swb, b],
                expect=exp,
                checks=(check_numbers,),
            )
        )
    ev = ["eval", "srun_base.trec", "--golden", "golden.jsonl", "--chunks", "chunks.jsonl", *J]
    for opt, v, exp in (
        ("--k", "1,0", "reject"),
        ("--k", "3,3", "either"),
        ("--k", "99999999999999999999", "either"),
        ("--budget", "0", "reject"),
        ("--budget", "1e308", "reject"),
        ("--k", "1..100000000", "either"),
    ):
        C.append(
            Case(
                f"ranges/eval-span{opt}/{v}",
                "ranges",
                argv=[*ev, opt, v],
                expect=exp,
                checks=(check_numbers,),
            )
        )
    return C


# ---- API cases with hostile Python values -----------------------------------------------------

API_PRELUDE = """
import json, math, sys, traceback, warnings
warnings.simplefilter("ignore")
import ragmeter
from ragmeter import RagmeterError

QRELS = {"a": {"d1": 2, "d2": 0, "d3": 1}, "b": {"d4": 1}}
RUN = {"a": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "b": {"d4": 0.5, "d5": 0.7}}
RUN2 = {"a": {"d3": 3.0, "d1": 2.0}, "b": {"d5": 0.5, "d4": 0.7}}

class ProbeWrong(Exception):
    pass

def wrong(msg):
    raise ProbeWrong(msg)

def bounded(*values):
    for v in values:
        if v is None:
            continue
        if not isinstance(v, (int, float)) or not (0.0 <= v <= 1.0):
            wrong(f"value {v!r} is not within [0, 1]")

def finite(*values):
    for v in values:
        if isinstance(v, float) and not math.isfinite(v):
            wrong(f"non-finite value {v!r}")

def evaluation_load_all(path):
    E = ragmeter.Evaluation
    if hasattr(E, "load_all"):
        return E.load_all(path)
    obj = json.load(open(path))
    return [E.from_dict(o) for o in (obj if isinstance(obj, list) else [obj])]

def evaluation_load(path):
    E = ragmeter.Evaluation
    if hasattr(E, "load"):
        return E.load(path, run="base.run")
    return evaluation_load_all(path)[0]
"""

API_WRAP = """
try:
{body}
except RagmeterError as exc:
    first = str(exc).splitlines()[0] if str(exc) else ""
    print("error:", type(exc).__name__, first, file=sys.stderr)
    sys.exit(2)
except ProbeWrong as exc:
    print("PROBE-WRONG:", exc)
    sys.exit(0)
except MemoryError:
    print("MemoryError", file=sys.stderr)
    sys.exit(3)
except BaseException:
    traceback.print_exc()
    sys.exit(1)
"""


def gen_api() -> list[Case]:
    C: list[Case] = []
    ev = [
        ("evaluate-empty", "out = ragmeter.evaluate({}, {}, ['nDCG@10'])\nno_mean(out)", "either"),
        (
            "evaluate-only-grade-0",
            "out = ragmeter.evaluate({'a': {'d1': 0}}, {'a': {'d1': 1.0}}, ['R@5'])\nno_mean(out)",
            "either",
        ),
        ("evaluate-metrics-int", "out = ragmeter.evaluate(QRELS, RUN, [5])", "reject"),
        ("evaluate-metrics-none", "out = ragmeter.evaluate(QRELS, RUN, None)", "reject"),
        (
            "evaluate-grade-nan",
            "out = ragmeter.evaluate({'a': {'d1': float('nan')}}, RUN, ['nDCG@10'])",
            "reject",
        ),
        (
            "evaluate-grade-float",
            "out = ragmeter.evaluate({'a': {'d1': 1.5}}, RUN, ['nDCG@10'])",
            "reject",
        ),
        (
            "evaluate-grade-string",
            "out = ragmeter.evaluate({'a': {'d1': '2'}}, RUN, ['R@5'])",
            "reject",
        ),
        (
            "evaluate-grade-huge",
            "out = ragmeter.evaluate({'a': {'d1': 10**30}}, RUN,"
            " ['nDCG(gain=exp)@10'])\nbounded(*out.aggregate.values())",
            "either",
        ),
        (
            "evaluate-grade-1024-exp",
            "out = ragmeter.evaluate({'a': {'d1': 1024, 'd3': 1}}, RUN,"
            " ['nDCG(gain=exp)@10'])\nbounded(*out.aggregate.values())",
            "either",
        ),
        (
            "evaluate-score-nan",
            "out = ragmeter.evaluate(QRELS, {'a': {'d1': float('nan')}}, ['R@5'])",
            "reject",
        ),
        (
            "evaluate-score-inf",
            "out = ragmeter.evaluate(QRELS, {'a': {'d1': float('inf'), 'd2': 1.0}}, ['RR@5'])",
            "reject",
        ),
        (
            "evaluate-score-string",
            "out = ragmeter.evaluate(QRELS, {'a': {'d1': 'x'}}, ['R@5'])",
            "reject",
        ),
        (
            "evaluate-int-ids",
            "out = ragmeter.evaluate({1: {2: 1}}, {1: {2: 1.0}}, ['R@5'])",
            "either",
        ),
        ("evaluate-none-run", "out = ragmeter.evaluate(QRELS, None, ['R@5'])", "reject"),
        ("evaluate-list-run", "out = ragmeter.evaluate(QRELS, [1, 2, 3], ['R@5'])", "reject"),
        ("evaluate-nested-wrong", "out = ragmeter.evaluate({'a': ['d1']}, RUN, ['R@5'])", "reject"),
        (
            "evaluate-markup-id",
            "out = ragmeter.evaluate({'[/x]': {':100:': 1}},"
            " {'[/x]': {':100:': 1.0}}, ['R@5'])\nbounded(*out.aggregate.values())",
            "either",
        ),
        (
            "evaluate-missing-bogus",
            "out = ragmeter.evaluate(QRELS, RUN, ['R@5'], missing='x')",
            "reject",
        ),
        ("evaluate-ties-bogus", "out = ragmeter.evaluate(QRELS, RUN, ['R@5'], ties='x')", "reject"),
        (
            "evaluate-nul-id",
            "out = ragmeter.evaluate({'a\\x00': {'d1': 1}}, {'a\\x00': {'d1': 1.0}}, ['R@5'])",
            "either",
        ),
    ]
    cmp = [
        (
            "compare-disjoint",
            "a = ragmeter.evaluate(QRELS, RUN, ['R@5'])\n"
            "b = ragmeter.evaluate({'z': {'d1': 1}}, {'z': {'d1': 1.0}}, ['R@5'])\n"
            "out = ragmeter.compare(a, b, 'R@5')",
            "reject",
        ),
        (
            "compare-confidence-nan",
            "a = ragmeter.evaluate(QRELS, RUN, ['R@5'])\n"
            "b = ragmeter.evaluate(QRELS, RUN2, ['R@5'])\n"
            "out = ragmeter.compare(a, b, 'R@5', confidence=float('nan'))",
            "reject",
        ),
        (
            "compare-confidence-2",
            "a = ragmeter.evaluate(QRELS, RUN, ['R@5'])\n"
            "b = ragmeter.evaluate(QRELS, RUN2, ['R@5'])\n"
            "out = ragmeter.compare(a, b, 'R@5', confidence=2.0)",
            "reject",
        ),
        (
            "compare-resamples-0",
            "a = ragmeter.evaluate(QRELS, RUN, ['R@5'])\n"
            "b = ragmeter.evaluate(QRELS, RUN2, ['R@5'])\n"
            "out = ragmeter.compare(a, b, 'R@5', n_resamples=0)",
            "reject",
        ),
        (
            "compare-seed-negative",
            "a = ragmeter.evaluate(QRELS, RUN, ['R@5'])\n"
            "b = ragmeter.evaluate(QRELS, RUN2, ['R@5'])\n"
            "out = ragmeter.compare(a, b, 'R@5', seed=-1)",
            "reject",
        ),
        (
            "compare-metric-absent",
            "a = ragmeter.evaluate(QRELS, RUN, ['R@5'])\n"
            "b = ragmeter.evaluate(QRELS, RUN2, ['R@5'])\n"
            "out = ragmeter.compare(a, b, 'nDCG@3')",
            "reject",
        ),
        (
            "compare-dict-above-1",
            "out = ragmeter.compare({'a': 0.5, 'b': 1.7}, {'a': 0.2, 'b': 0.1}, 'R@5')",
            "reject",
        ),
        (
            "compare-dict-nan",
            "out = ragmeter.compare({'a': float('nan'), 'b': 0.5}, {'a': 0.2, 'b': 0.1}, 'R@5')",
            "reject",
        ),
        (
            "compare-dict-negative",
            "out = ragmeter.compare({'a': -0.5, 'b': 0.5}, {'a': 0.2, 'b': 0.1}, 'R@5')",
            "reject",
        ),
        ("compare-empty", "out = ragmeter.compare({}, {}, 'R@5')", "reject"),
        (
            "compare-dict-strings",
            "out = ragmeter.compare({'a': '0.5'}, {'a': 0.2}, 'R@5')",
            "reject",
        ),
        (
            "compare-max-movers-negative",
            "a = ragmeter.evaluate(QRELS, RUN, ['R@5'])\n"
            "b = ragmeter.evaluate(QRELS, RUN2, ['R@5'])\n"
            "out = ragmeter.compare(a, b, 'R@5', max_movers=-1)",
            "reject",
        ),
    ]
    misc = [
        (
            "paired_bootstrap-nan",
            "out = ragmeter.paired_bootstrap([0.1, float('nan'), 0.2])\nfinite(out.low, out.high)",
            "reject",
        ),
        ("paired_bootstrap-empty", "out = ragmeter.paired_bootstrap([])", "reject"),
        ("paired_bootstrap-inf", "out = ragmeter.paired_bootstrap([float('inf'), 1.0])", "reject"),
        ("plan_size-nan", "out = ragmeter.plan_size(float('nan'), 0.2)", "reject"),
        ("plan_size-rate-2", "out = ragmeter.plan_size(2.0, 0.2)", "reject"),
        ("plan_size-sizes-0", "out = ragmeter.plan_size(0.7, 0.2, sizes=[0, -5])", "reject"),
        ("plan_size-target-0", "out = ragmeter.plan_size(0.7, 0.2, target=0.0)", "reject"),
        ("plan_size-sizes-huge", "out = ragmeter.plan_size(0.7, 0.2, sizes=[10**30])", "either"),
        ("budget_table-nan", "out = ragmeter.budget_table(['300x4', 'nanx4'])", "reject"),
        (
            "budget_table-tolerance-nan",
            "out = ragmeter.budget_table(['300x4', '100x12'], tolerance=float('nan'))",
            "reject",
        ),
        (
            "sample_log-negative",
            "out = ragmeter.sample_log(ragmeter.read_log('log.jsonl'), -3)",
            "reject",
        ),
        (
            "sample_log-huge",
            "out = ragmeter.sample_log(ragmeter.read_log('log.jsonl'), 10**30)",
            "either",
        ),
        (
            "compare_traffic-factor-nan",
            "out = ragmeter.compare_traffic(ragmeter.load_golden("
            "'golden.jsonl'), ragmeter.read_log('log.jsonl'), factor=float('nan'))",
            "reject",
        ),
        (
            "compare_traffic-factor-0",
            "out = ragmeter.compare_traffic(ragmeter.load_golden("
            "'golden.jsonl'), ragmeter.read_log('log.jsonl'), factor=0)",
            "reject",
        ),
        (
            "sweep-ks-huge",
            "out = ragmeter.sweep(QRELS, {'r': RUN}, 'R', ks=range(1, 10**8))",
            "either",
        ),
        ("sweep-ks-zero", "out = ragmeter.sweep(QRELS, {'r': RUN}, 'R', ks=[0])", "reject"),
        ("load_golden-missing", "out = ragmeter.load_golden('nope.jsonl')", "reject"),
        ("load_golden-directory", "out = ragmeter.load_golden('answers')", "reject"),
        ("load_corpus-missing", "out = ragmeter.load_corpus('nope')", "reject"),
        (
            "load_corpus-symlink-out",
            "out = ragmeter.load_corpus('corpus_dir')\nsecret_check(out)",
            "either",
        ),
        (
            "evaluate_spans-cover-nan",
            "g = ragmeter.load_golden('golden.jsonl')\n"
            "c = ragmeter.load_chunking('chunks.jsonl')\n"
            "out = ragmeter.evaluate_spans(g, c, ragmeter.read_run('srun_base.trec'), 'R@3',"
            " cover=float('nan'))",
            "reject",
        ),
        (
            "evaluate_spans-cover-0",
            "g = ragmeter.load_golden('golden.jsonl')\n"
            "c = ragmeter.load_chunking('chunks.jsonl')\n"
            "out = ragmeter.evaluate_spans(g, c, ragmeter.read_run('srun_base.trec'), 'R@3',"
            " cover=0)",
            "reject",
        ),
        (
            "chunk_qrels-cover-2",
            "g = ragmeter.load_golden('golden.jsonl')\n"
            "c = ragmeter.load_chunking('chunks.jsonl')\n"
            "out = ragmeter.chunk_qrels(g, c, cover=2.0)",
            "reject",
        ),
    ]
    for n, code, exp in ev + cmp + misc:
        prep = _symlink_out if "symlink" in n else None
        C.append(Case(f"api/{n}", "api", code=code, expect=exp, prepare=prep))
    return C


API_HELPERS = """
def no_mean(ev):
    for k, v in (ev.aggregate or {}).items():
        if isinstance(v, (int, float)) and math.isfinite(v):
            wrong(f"a mean over zero scorable queries: {k} = {v}")

def secret_check(corpus):
    for doc in corpus:
        text = getattr(doc, "text", "")
        if "PROBE-SECRET" in text:
            wrong("a symlink out of the corpus folder was followed")
"""


# ---- paths, outputs and full disks -------------------------------------------------------------


def _symlink_out(d: Path) -> None:
    (d / "corpus_dir" / "leak.md").symlink_to("../secret.txt")
    (d / "corpus_dir" / "linkdir").symlink_to("..", target_is_directory=True)


def _mk_existing(rel: str, content: bytes = b"PRECIOUS\n"):
    def prepare(d: Path) -> None:
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content)

    return prepare


def _mk_dir(rel: str):
    def prepare(d: Path) -> None:
        (d / rel).mkdir(parents=True, exist_ok=True)
        (d / rel / "keep.txt").write_text("keep\n")

    return prepare


def _combine(*fns):
    def prepare(d: Path) -> None:
        for f in fns:
            if f is not None:
                f(d)

    return prepare


# writer: name -> (argv with {OUT} for the output path, the default output, force flag or None,
#                  exit codes)
WRITERS = {
    "chunk": (
        ["chunk", "corpus.jsonl", "-c", "tokens:8:0", "--tokenizer", "regex-words", "-o", "{OUT}"],
        "out.jsonl",
        "--force",
        (0,),
    ),
    "labels-export": (
        ["labels", "export", "--golden", "golden.jsonl", "--chunks", "chunks.jsonl", "-o", "{OUT}"],
        "out.qrels",
        "--force",
        (0,),
    ),
    "golden-relocate": (
        ["golden", "relocate", "golden.jsonl", "-c", "corpus.jsonl", "-o", "{OUT}"],
        "relocated.jsonl",
        "--force",
        (0, 1),
    ),
    "golden-import": (
        ["golden", "import", "squad", "squad.json", "-o", "{OUT}"],
        "imp",
        "--force",
        (0,),
    ),
    "golden-sample": (
        ["golden", "sample", "log.jsonl", "-n", "3", "-o", "{OUT}"],
        "sample.jsonl",
        "--force",
        (0,),
    ),
    "gate-markdown": (
        [
            "gate",
            "eval.json#base.run",
            "eval.json#cand.run",
            "-m",
            "nDCG@10",
            "--max-broken",
            "9",
            "--markdown",
            "{OUT}",
        ],
        "gate.md",
        None,
        (0, 1),
    ),
    "gate-junit": (
        [
            "gate",
            "eval.json#base.run",
            "eval.json#cand.run",
            "-m",
            "nDCG@10",
            "--max-broken",
            "9",
            "--junit",
            "{OUT}",
        ],
        "gate.xml",
        None,
        (0, 1),
    ),
    "compare-ledger": (
        [
            "compare",
            "eval.json#base.run",
            "eval.json#cand.run",
            "-m",
            "nDCG@10",
            "--ledger",
            "{OUT}",
        ],
        "ledger.jsonl",
        None,
        (0,),
    ),
    "judge-cache": (
        [
            "answers",
            "check",
            "answers/ctx.jsonl",
            "--golden",
            "golden.jsonl",
            "--corpus",
            "corpus.jsonl",
            "--chunks",
            "chunks.jsonl",
            "--judge",
            "fake",
            "--judge-cache",
            "{OUT}",
        ],
        "jcache",
        None,
        (0,),
    ),
    "run-cache": (["run", "exp/exp.toml", "--cache-dir", "{OUT}"], "rcache", None, (0,)),
    "freeze-lock": (
        ["golden", "freeze", "golden.jsonl", "-c", "corpus.jsonl"],
        "golden.lock.json",
        "--force",
        (0,),
    ),
}


def gen_paths() -> list[Case]:
    C: list[Case] = []
    for name, (argv, default, force, codes) in WRITERS.items():
        sub = lambda out, a=argv: [x.replace("{OUT}", out) for x in a]  # noqa: E731
        fixed_out = "{OUT}" not in " ".join(argv)
        if not fixed_out:
            C.append(
                Case(
                    f"paths/{name}/under-a-file",
                    "paths",
                    argv=sub("corpus.jsonl/x/out"),
                    codes=codes,
                    checks=(check_no_litter,),
                    expect="either" if name == "judge-cache" else "reject",
                )
            )
            C.append(
                Case(
                    f"paths/{name}/existing-directory",
                    "paths",
                    argv=sub("adir"),
                    codes=codes,
                    prepare=_mk_dir("adir"),
                    expect="either"
                    if name in ("golden-import", "judge-cache", "run-cache")
                    else "reject",
                    checks=(check_unchanged("adir/keep.txt", b"keep\n"),),
                )
            )
            sfx = Path(default).suffix
            for label, out in (
                ("markup", f"[/x]:100:/o{sfx}"),
                ("markup-bracket", f"[bold]o[/bold]{sfx}"),
            ):
                C.append(
                    Case(
                        f"paths/{name}/{label}-in-path",
                        "paths",
                        argv=sub(out),
                        expect="ok",
                        codes=codes,
                        checks=(check_no_litter,),
                        prepare=lambda d, o=out: (d / o).parent.mkdir(parents=True, exist_ok=True),
                    )
                )
        if force is not None:
            C.append(
                Case(
                    f"paths/{name}/existing-file-no-force",
                    "paths",
                    argv=sub(default),
                    codes=codes,
                    prepare=_mk_existing(default)
                    if name != "golden-import"
                    else _mk_existing(default + "/golden.jsonl"),
                    expect="reject" if name != "freeze-lock" else "either",
                    checks=(
                        check_unchanged(
                            default if name != "golden-import" else default + "/golden.jsonl",
                            b"PRECIOUS\n",
                        ),
                    )
                    if name != "freeze-lock"
                    else (),
                )
            )
        # a full disk: any write past 64 bytes fails (RLIMIT_FSIZE); an old file stays intact
        old = default + ("/golden.jsonl" if name == "golden-import" else "")
        extra = [force] if force else []
        if name in ("compare-ledger", "judge-cache", "run-cache"):
            C.append(
                Case(
                    f"paths/{name}/full-disk",
                    "paths",
                    argv=sub(default),
                    codes=codes,
                    fsize=64,
                    checks=(check_no_litter,),
                    expect="either" if name == "judge-cache" else "reject",
                )
            )
        else:
            C.append(
                Case(
                    f"paths/{name}/full-disk-keeps-old",
                    "paths",
                    argv=[*sub(default), *extra],
                    codes=codes,
                    fsize=64,
                    prepare=_mk_existing(old, b"OLD\n"),
                    checks=(check_unchanged(old, b"OLD\n"), check_no_litter),
                )
            )
    # a lock file path that is a directory; the lock of freeze exists as a dir
    C.append(
        Case(
            "paths/freeze-lock/lock-is-directory",
            "paths",
            argv=["golden", "freeze", "golden.jsonl", "-c", "corpus.jsonl"],
            prepare=_mk_dir("golden.lock.json"),
        )
    )
    C.append(
        Case(
            "paths/golden-relocate/out-is-input",
            "paths",
            argv=["golden", "relocate", "golden.jsonl", "-c", "corpus.jsonl", "-o", ".", "--force"],
            codes=(0, 1),
        )
    )
    C.append(
        Case(
            "paths/golden-relocate/out-is-golden",
            "paths",
            expect="either",
            argv=[
                "golden",
                "relocate",
                "golden.jsonl",
                "-c",
                "corpus.jsonl",
                "-o",
                "golden.jsonl",
                "--force",
            ],
            codes=(0, 1),
            checks=(
                lambda res, d: (
                    None
                    if (d / "golden.jsonl").stat().st_size > 0
                    else "the golden set was emptied"
                ),
            ),
        )
    )
    C.append(
        Case(
            "paths/chunk/out-is-corpus",
            "paths",
            argv=[
                "chunk",
                "corpus.jsonl",
                "-c",
                "tokens:8:0",
                "--tokenizer",
                "regex-words",
                "-o",
                "corpus.jsonl",
                "--force",
            ],
            expect="reject",
        )
    )
    # symlinks out of a corpus folder
    for name, argv in (
        (
            "chunk",
            [
                "chunk",
                "corpus_dir",
                "-c",
                "tokens:8:0",
                "--tokenizer",
                "regex-words",
                "-o",
                "out.jsonl",
            ],
        ),
        ("golden-freeze", ["golden", "freeze", "golden.jsonl", "-c", "corpus_dir"]),
        ("golden-stats", ["golden", "stats", "golden.jsonl", "-c", "corpus_dir", *J]),
        ("golden-validate", ["golden", "validate", "golden.jsonl", "-c", "corpus_dir", *J]),
    ):
        C.append(
            Case(
                f"paths/symlink-out/{name}",
                "paths",
                argv=argv,
                expect="either",
                codes=(0, 1) if name == "golden-validate" else (0,),
                prepare=_symlink_out,
                checks=(check_no_secret,),
            )
        )
    return C


# ---- experiment TOML: containment, names ---------------------------------------------------


def _toml_edit(replace: dict[str, str] | None = None, append: str = ""):
    def prepare(d: Path) -> None:
        p = d / "exp" / "exp.toml"
        text = p.read_text()
        for a, b in (replace or {}).items():
            assert a in text, a
            text = text.replace(a, b, 1)
        p.write_text(text + append)
        (d / "outside").mkdir(exist_ok=True)
        (d / "outside" / "golden.jsonl").write_text((d / "golden.jsonl").read_text())
        (d / "outside" / "corpus.jsonl").write_text((d / "corpus.jsonl").read_text())

    return prepare


def _nothing_outside(res: Result, d: Path) -> str | None:
    made = [p for p in d.rglob("*") if p.is_file() and "PWN" in str(p)]
    if made:
        return f"written outside the experiment folder: {made[0].relative_to(d)}"
    return None


def _distinct_outputs(res: Result, d: Path) -> str | None:
    if res.rc != 0:
        return None
    runs = d / "exp" / "runs"
    dirs = [p for p in runs.iterdir() if p.is_dir()] if runs.is_dir() else []
    if len(dirs) < 3:
        return f"three variants share {len(dirs)} output folders: outputs overwritten"
    summary = runs / "summary.json"
    if summary.exists():
        text = summary.read_text()
        paths = re.findall(r'"[^"]*run\.trec"', text)
        if len(paths) != len(set(paths)):
            return "summary.json points two variants at one run file"
    return None


def gen_toml() -> list[Case]:
    C: list[Case] = []
    run = ["run", "exp/exp.toml", *J]
    contain = {
        "output-dotdot": {'output = "runs"': 'output = "../PWN-out"'},
        "output-absolute": {'output = "runs"': 'output = "{ABS}/PWN-abs"'},
        "cache-dotdot": {'output = "runs"': 'output = "runs"\ncache = "../PWN-cache"'},
        "golden-dotdot": {'golden = "golden.jsonl"': 'golden = "../outside/golden.jsonl"'},
        "corpus-absolute": {'corpus = "corpus.jsonl"': 'corpus = "{ABS}/outside/corpus.jsonl"'},
        "chunks-dotdot": {
            'chunker = "tokens:8:0"': 'chunker = "tokens:8:0"\nchunks = "../PWN-chunks.jsonl"'
        },
    }
    for name, rep in contain.items():

        def prep(d: Path, rep=rep) -> None:
            _toml_edit({a: b.replace("{ABS}", str(d)) for a, b in rep.items()})(d)

        # reads from outside the folder are allowed (the user's own files); writes are not
        expect = "either" if name in ("golden-dotdot", "corpus-absolute") else "reject"
        C.append(
            Case(
                f"toml/containment/{name}",
                "toml",
                argv=run,
                expect=expect,
                prepare=prep,
                checks=(_nothing_outside,),
            )
        )
    toml_vals = {
        "k-negative": ({"k = 2": "k = -1"}, "reject"),
        "k-zero": ({"k = 2": "k = 0"}, "reject"),
        "k-nan": ({"k = 2": "k = nan"}, "reject"),
        "k-inf": ({"k = 2": "k = inf"}, "reject"),
        "k-float": ({"k = 2": "k = 2.5"}, "reject"),
        "k-huge": ({"k = 2": "k = 9223372036854775807"}, "either"),
        "k-string": ({"k = 2": 'k = "2"'}, "reject"),
        "headroom-huge": ({"headroom_k = 5": "headroom_k = 99999999999"}, "either"),
        "depth-negative": ({"depth = 10": "depth = -10"}, "reject"),
        "chunker-zero": ({'chunker = "tokens:8:0"': 'chunker = "tokens:0:0"'}, "reject"),
        "chunker-nan": ({'chunker = "tokens:8:0"': 'chunker = "tokens:nan:0"'}, "reject"),
        "metric-hostile": ({'metrics = ["R", "RR"]': 'metrics = ["nDCG(gains=0:5)"]'}, "reject"),
        "metric-markup": ({'metrics = ["R", "RR"]': 'metrics = ["[/x]"]'}, "reject"),
        "name-markup": ({'name = "tiny"': 'name = "[/x] :100: [bold]"'}, "ok"),
        "unknown-key": ({'name = "tiny"': 'name = "tiny"\nbogus = 1'}, "reject"),
        "retriever-unknown": ({'retriever = "bm25"': 'retriever = "nope"'}, "reject"),
        "budget-nan": ({"k = 2": "k = 2\nbudget = nan"}, "reject"),
        "cover-2": ({"k = 2": "k = 2\ncover = 2.0"}, "reject"),
    }
    for name, (rep, exp) in toml_vals.items():
        C.append(
            Case(
                f"toml/values/{name}",
                "toml",
                argv=run,
                expect=exp,
                prepare=_toml_edit(rep),
                checks=(check_numbers, check_no_litter),
            )
        )
    for name, extra in (
        ("Baseline-vs-baseline", '\n[[variant]]\nname = "Baseline"\nchunker = "tokens:6:0"\n'),
        ("small-vs-Small!", '\n[[variant]]\nname = "Small!"\nchunker = "tokens:6:0"\n'),
        ("slash-in-name", '\n[[variant]]\nname = "../PWN-variant"\nchunker = "tokens:6:0"\n'),
    ):
        C.append(
            Case(
                f"toml/variant-names/{name}",
                "toml",
                argv=run,
                expect="either",
                prepare=_toml_edit(append=extra),
                checks=(_distinct_outputs, _nothing_outside),
            )
        )
    return C


# ---- the judge client against hostile servers ------------------------------------------------

SERVER = r"""
import http.server, socket, socketserver, threading, time, json as _json
SEEN = {"auth_other": False}
class Other(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        if self.headers.get("Authorization"):
            SEEN["auth_other"] = True
        self.send_response(500); self.end_headers()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def reply(self, content, usage=None, status=200):
        body = _json.dumps({"choices": [{"message": {"content": content}}],
                            "usage": usage or {"prompt_tokens": 10,
                                               "completion_tokens": 5}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers(); self.wfile.write(body)
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0)); self.rfile.read(n)
        mode = MODE
        if mode == "truncated":
            self.send_response(200); self.send_header("Content-Length", "5000"); self.end_headers()
            self.wfile.write(b'{"choices": [{"mess'); self.wfile.flush()
            self.close_connection = True; return
        if mode == "bad-status":
            self.wfile.write(b"HTTP/1.1 abc\r\n\r\n"); self.close_connection = True; return
        if mode == "drip":
            self.send_response(200); self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(100000):
                    self.wfile.write(b" "); self.wfile.flush(); time.sleep(0.25)
            except OSError:
                pass
            return
        if mode == "huge":
            self.send_response(200); self.end_headers(); self.close_connection = True
            try:
                chunk = b" " * (1 << 20)
                for _ in range(4000):
                    self.wfile.write(chunk)
            except OSError:
                pass
            return
        if mode == "redirect":
            self.send_response(307); self.send_header("Location",
            f"http://127.0.0.1:{OTHER}/v1/chat/completions") self.send_header("Content-Length",
            "0"); self.end_headers(); return
        if mode == "refusal":
            return self.reply('I cannot judge this. Example format: {"claims": []}')
        if mode == "empty-claims":
            return self.reply('{"claims": []}')
        if mode == "negative-usage":
            return self.reply('{"claims": [{"claim": "x", "supported": true}]}',
                              usage={"prompt_tokens": -1000000, "completion_tokens": -5})
        if mode == "not-json":
            return self.reply("sure! here you go")
        if mode == "nan-score":
            return self.reply('{"claims": [{"claim": "x", "supported": NaN}]}')
        if mode == "http-500":
            self.send_response(500); self.send_header("Content-Length", "0"); self.end_headers()
            return
        if mode == "markup":
            return self.reply('{"claims": [{"claim": "[/x] :100: [bold]", "supported": "[/x]"}]}')
        return self.reply('{"claims": [{"claim": "x", "supported": true}]}')
class TS(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
srv = TS(("127.0.0.1", 0), H); PORT = srv.server_address[1]
other = TS(("127.0.0.1", 0), Other); OTHER = other.server_address[1]
threading.Thread(target=srv.serve_forever, daemon=True).start()
threading.Thread(target=other.serve_forever, daemon=True).start()
"""

JUDGE_RUN = r"""
import os, sys, io, contextlib
os.environ["PROBE_KEY"] = "sk-probe-secret"
sys.argv = ["ragmeter", "answers", "check", "answers/ctx.jsonl", "--golden", "golden.jsonl",
            "--corpus", "corpus.jsonl", "--chunks", "chunks.jsonl", "--judge", "openai",
            "--judge-url",
            f"http://127.0.0.1:{PORT}/v1", "--judge-model", "m", "--judge-key-env", "PROBE_KEY",
            "--judge-cache", "jc", "--judge-retries", "0", "--judge-timeout", "2", "-f", "json"]
from ragmeter.cli import main
buf = io.StringIO()
code = 0
try:
    with contextlib.redirect_stdout(buf):
        main()
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
out = buf.getvalue()
sys.stdout.write(out)
if SEEN["auth_other"]:
    print("PROBE-WRONG: the API key was sent to another origin after a redirect")
CHECK(out, code)
sys.exit(code)
"""

JUDGE_CHECKS = {
    "ok": "def CHECK(out, code):\n    pass\n",
    "faith": (
        "def CHECK(out, code):\n"
        "    import re\n"
        "    for m in re.finditer(r'\"(faithfulness|faithful)\"\\s*:\\s*([0-9.]+)', out):\n"
        "        if float(m.group(2)) == 1.0:\n"
        "            print('PROBE-WRONG: a reply without claims scored faithfulness 1.0')\n"
        "            return\n"
    ),
    "usage": (
        "def CHECK(out, code):\n"
        "    import re\n"
        "    if re.search(r'\"(prompt_tokens|completion_tokens|tokens|cost)\"\\s*:\\s*-', out):\n"
        "        print('PROBE-WRONG: negative token counts summed into usage')\n"
    ),
}


def gen_judge() -> list[Case]:
    C: list[Case] = []
    for mode, check, exp in (
        ("valid", "ok", "ok"),
        ("truncated", "ok", "ok"),
        ("bad-status", "ok", "ok"),
        ("drip", "ok", "ok"),
        ("huge", "ok", "ok"),
        ("redirect", "ok", "ok"),
        ("refusal", "faith", "ok"),
        ("empty-claims", "faith", "ok"),
        ("negative-usage", "usage", "ok"),
        ("not-json", "ok", "ok"),
        ("nan-score", "ok", "ok"),
        ("http-500", "ok", "ok"),
        ("markup", "ok", "ok"),
    ):
        code = (
            SERVER.replace("mode = MODE", f"mode = {mode!r}")
            + "\n"
            + JUDGE_CHECKS[check]
            + JUDGE_RUN
        )
        C.append(Case(f"judge/{mode}", "judge", code=code, expect=exp, codes=(0, 1), note="raw"))
    return C


def all_cases(world: Path) -> list[Case]:
    import hostile_probe_store  # store, import, urls, ids, usercode (issue 22)

    cases = (
        gen_files(world)
        + gen_fields(world)
        + gen_numbers()
        + gen_metrics()
        + gen_api()
        + gen_paths()
        + gen_toml()
        + gen_judge()
        + hostile_probe_store.gen_all()
    )
    seen: set[str] = set()
    for c in cases:
        while c.id in seen:
            c.id += "'"
        seen.add(c.id)
    return cases


# --------------------------------------------------------------------------------------------
# Running and classifying
# --------------------------------------------------------------------------------------------


# CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER: without them root obeys file modes too
_FILE_MODE_CAPS = (1, 2, 3)
_PR_CAPBSET_DROP = 24


def _limits(fsize: int | None, unprivileged: bool = False):
    def pre() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEM_BYTES, MEM_BYTES))
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        if unprivileged and os.geteuid() == 0:
            # dropped from the bounding set, they are gone after the exec: a read-only store
            # is read-only for the probed command even when the probe runs as root
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            for cap in _FILE_MODE_CAPS:
                libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
        os.setsid()

    return pre


def _env(src: Path | None, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGMETER")}
    if src is not None:
        env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(
        {
            "COLUMNS": "120",
            "NO_COLOR": "1",
            "PYTHONHASHSEED": "0",
            "TERM": "dumb",
            "PYTHONWARNINGS": "ignore",
            "HF_HUB_OFFLINE": "1",
        }
    )
    env.update(extra)
    return env


def _run(
    cmd: list[str], cwd: Path, env: dict[str, str], fsize: int | None, unprivileged: bool = False
) -> Result:
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        preexec_fn=_limits(fsize, unprivileged),
    )
    try:
        out, err = proc.communicate(timeout=WALL_S)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        timed_out = True
    return Result(
        None if timed_out else proc.returncode,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        time.monotonic() - t0,
        timed_out,
    )


def setup_world(base: Path, src: Path | None) -> list[str]:
    """Build the world and the files the probed checkout makes itself; return problems."""
    build_world(base)
    problems = []
    env = _env(src, {})
    for name, argv in SETUP:
        res = _run([sys.executable, "-m", "ragmeter", *argv], base, env, None)
        if res.rc != 0:
            problems.append(f"setup {name}: exit {res.rc}: {res.stderr.strip()[:300]}")
            continue
        (base / name).write_text(res.stdout)
    import hostile_probe_store  # the store families' own world, made from this one

    problems += hostile_probe_store.setup(base.parent, base, src)
    return problems


def classify(case: Case, res: Result, d: Path) -> tuple[str, str]:
    text = res.stdout + "\n" + res.stderr
    if res.timed_out:
        return "hang", f"over {WALL_S} s"
    # a shared library that cannot be mapped is the address-space limit too
    out_of_memory = ("MemoryError", "Unable to allocate", "failed to map segment")
    if any(m in text for m in out_of_memory) or (res.rc == 3 and case.code):
        return "hang", f"over the {MEM_BYTES // 1024**3} GB memory limit"
    if res.rc is not None and res.rc < 0:
        return "hang" if res.rc == -9 else "traceback", f"killed by signal {-res.rc}"
    if "Traceback (most recent call last)" in text:
        return "traceback", _last_exception(res.stderr or res.stdout)
    if res.rc not in (0, 1, 2):
        return "traceback", f"exit code {res.rc}"
    if "PROBE-WRONG:" in res.stdout:
        return "wrong", res.stdout.split("PROBE-WRONG:", 1)[1].strip().splitlines()[0]
    run_ok = res.rc in case.codes
    for check in case.checks:
        try:
            why = check(res, d)
        except Exception as exc:  # a check must never crash the probe
            why = f"(check failed: {exc!r})"
        if why:
            return "wrong", why
    if case.expect == "reject":
        if res.rc == 2:
            return "clean", ""
        return "wrong", f"accepted (exit {res.rc}) where a clear error (exit 2) was due"
    if case.expect == "ok":
        if run_ok:
            return "clean", ""
        return "wrong", f"valid input refused (exit {res.rc})"
    if res.rc == 2 or run_ok:
        return "clean", ""
    return "wrong", f"exit {res.rc}"


def _last_exception(err: str) -> str:
    lines = [ln.strip(" │") for ln in err.strip().splitlines() if ln.strip(" │")]
    for ln in reversed(lines):
        if re.match(r"^[\w.]+(Error|Exception|Exit|Interrupt|Warning)\b", ln):
            return ln[:200]
    return lines[-1][:200] if lines else ""


def _first_line(s: str) -> str:
    for ln in s.splitlines():
        if ln.strip():
            return ln.strip()[:240]
    return ""


def run_case(case: Case, world: Path, tmp: Path, src: Path | None) -> dict:
    d = tmp / re.sub(r"[^\w.-]+", "_", case.id)[:120]
    if d.exists():
        shutil.rmtree(d)
    template = world if case.world == "world" else world.parent / case.world
    shutil.copytree(template, d, symlinks=True)
    if case.prepare is not None:
        case.prepare(d)
    env = _env(src, case.env)
    if case.argv is not None:
        cmd = [sys.executable, "-m", "ragmeter", *case.argv]
    else:
        if case.note == "raw":
            code = case.code or ""
        else:
            body = textwrap.indent(API_HELPERS + "\n" + (case.code or ""), "    ")
            code = API_PRELUDE + API_WRAP.format(body=body)
        cmd = [sys.executable, "-c", code]
    res = _run(cmd, d, env, case.fsize, case.unprivileged)
    outcome, why = classify(case, res, d)
    rec = {
        "id": case.id,
        "family": case.family,
        "command": case.command(),
        "expect": case.expect,
        "outcome": outcome,
        "why": why,
        "exit": res.rc,
        "seconds": round(res.wall, 2),
        "stderr": _first_line(res.stderr),
        "same_as": case.same_as,
        "_stdout": res.stdout.replace(str(d), "<dir>"),
    }
    for p in [d, *d.rglob("*")] if case.unprivileged else ():  # a read-only store, made writable
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)
    shutil.rmtree(d, ignore_errors=True)
    return rec


VOLATILE = {"frozen_at", "timings", "seconds", "elapsed", "created_at", "cached", "wall_s"}


def _normalise(stdout: str) -> str:
    """The output without what changes from run to run (times, timestamps, cache hits)."""

    def drop(obj):
        if isinstance(obj, dict):
            return {k: drop(v) for k, v in obj.items() if k not in VOLATILE}
        if isinstance(obj, list):
            return [drop(v) for v in obj]
        return obj

    try:
        return json.dumps(drop(json.loads(stdout)), sort_keys=True)
    except ValueError:
        text = re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z?", "<time>", stdout)
        return re.sub(r"\b\d+(\.\d+)?\s?s\b", "<seconds>", text)


def _same_pass(records: list[dict]) -> None:
    """A valid-but-odd input (CRLF, BOM, ...) must reproduce the valid file's output."""
    by_id = {r["id"]: r for r in records}
    for r in records:
        ref = by_id.get(r["same_as"] or "")
        if ref is None or r["outcome"] != "clean" or ref["outcome"] != "clean" or r["exit"] != 0:
            continue
        if _normalise(r["_stdout"]) != _normalise(ref["_stdout"]):
            r["outcome"], r["why"] = (
                "wrong",
                f"output differs from the same input without the oddity ({ref['id']})",
            )


def summarise(records: list[dict]) -> str:
    fams: dict[str, Counter] = defaultdict(Counter)
    for r in records:
        fams[r["family"]][r["outcome"]] += 1
    rows = [(f, c) for f, c in sorted(fams.items())]
    total = Counter()
    for _, c in rows:
        total.update(c)
    w = max(len(f) for f, _ in [*rows, ("**total**", 0)])
    head = f"| {'family':<{w}} | tried | clean | traceback | wrong | hang |"
    sep = f"|{'-' * (w + 2)}|------:|------:|----------:|------:|-----:|"
    lines = [head, sep]
    for f, c in [*rows, ("**total**", total)]:
        lines.append(
            f"| {f:<{w}} | {sum(c.values()):>5} | {c['clean']:>5} | "
            f"{c['traceback']:>9} | {c['wrong']:>5} | {c['hang']:>4} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--src", type=Path, help="a checkout's src folder to probe (PYTHONPATH)")
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        help="run only this family (or a case id prefix); repeatable",
    )
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("-o", "--output", type=Path, help="write every case here as JSON")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="parallel cases (default 2)")
    ap.add_argument(
        "--show",
        default="",
        help="print the cases with these outcomes, e.g. 'traceback,wrong,hang'",
    )
    args = ap.parse_args(argv)
    src = args.src.resolve() if args.src else None
    with tempfile.TemporaryDirectory(prefix="ragmeter-probe-") as t:
        tmp = Path(t)
        world = tmp / "world"
        world.mkdir()
        problems = setup_world(world, src)
        cases = all_cases(world)
        if args.only:
            cases = [
                c for c in cases if any(c.family == o or c.id.startswith(o) for o in args.only)
            ]
        if args.list:
            for c in cases:
                print(f"{c.id}\t{c.expect}\t{c.command()}")
            print(f"{len(cases)} cases", file=sys.stderr)
            return 0
        for p in problems:
            print("warning:", p, file=sys.stderr)
        t0 = time.monotonic()
        records: list[dict] = []
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futs = [pool.submit(run_case, c, world, tmp, src) for c in cases]
            for i, fut in enumerate(as_completed(futs), 1):
                records.append(fut.result())
                if i % 50 == 0:
                    print(
                        f"  {i}/{len(cases)} cases, {time.monotonic() - t0:.0f} s", file=sys.stderr
                    )
        _same_pass(records)
        records.sort(key=lambda r: r["id"])
    print(
        f"ragmeter hostile probe: {src or 'the installed ragmeter'}; "
        f"{len(records)} cases in {time.monotonic() - t0:.0f} s"
    )
    print(summarise(records))
    show = {s for s in args.show.split(",") if s}
    for r in records:
        if r["outcome"] in show:
            print(f"{r['outcome']:9} {r['id']}: {r['why'] or r['stderr']}")
    if args.output:
        out = [{k: v for k, v in r.items() if not k.startswith("_")} for r in records]
        args.output.write_text(
            json.dumps(
                {"src": str(src) if src else None, "setup_problems": problems, "cases": out},
                indent=1,
                ensure_ascii=False,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    # tools/hostile_probe_store.py imports this module by name: one module, not a second copy
    sys.modules.setdefault("hostile_probe", sys.modules[__name__])
    sys.exit(main())
