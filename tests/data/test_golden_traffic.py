"""`ragmeter golden sample` and `golden compare-traffic`: reading logs, stratified sampling with
proportional allocation, and the share comparison with its flags (hand-computed on
tests/fixtures/traffic)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragmeter import InputError, UsageError, ValidationError
from ragmeter.cli import app
from ragmeter.data import GoldenSet, Question, compare_traffic, load_golden, read_log, sample_log
from ragmeter.data.traffic import LogLine, TrafficLog, allocate, dedupe, normalise_question

FIX = Path(__file__).parents[1] / "fixtures" / "traffic"
LOG, GOLDEN = FIX / "log.jsonl", FIX / "golden.jsonl"
runner = CliRunner()

# log.jsonl: 20 lines; slice fees 8 (line 4 repeats line 1 up to case and spaces), refunds 6,
# baggage 4, no slice 2 -> distinct strata fees 7, refunds 6, baggage 4, (none) 2 = 19.
# golden.jsonl: 10 questions; fees 1, refunds 6, changes 2, unanswerable 1.


def _golden(*args: object) -> tuple[int, str, str]:
    r = runner.invoke(app, ["golden", *map(str, args)], env={"COLUMNS": "120"})
    return r.exit_code, r.stdout, r.stderr


def _log(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _memory_log(strata: list[str | None]) -> TrafficLog:
    lines = [
        LogLine(i + 1, {"question": f"question {i}", **({} if s is None else {"s": s})})
        for i, s in enumerate(strata)
    ]
    return TrafficLog(tuple(lines), "<memory>")


# --- reading and de-duplicating ------------------------------------------------------------------


def test_bad_log_lines_all_named_with_file_line_and_field(tmp_path: Path) -> None:
    path = _log(
        tmp_path,
        '{"question": "fine"}',
        "[1, 2]",
        '{"question": ',
        '{"slice": "x"}',
        '{"question": "   "}',
        '{"question": 3}',
    )
    with pytest.raises(ValidationError) as info:
        read_log(path)
    assert [str(p) for p in info.value.problems] == [
        f"{path}:2: expected a JSON object, got list",
        f"{path}:3: invalid JSON: Expecting value (column 14)",
        f"{path}:4: field 'question': missing required field (each log line is "
        '{"question": ..., ...metadata})',
        f"{path}:5: field 'question': must be a non-empty string (got '   ')",
        f"{path}:6: field 'question': must be a non-empty string (got 3)",
    ]
    with pytest.raises(InputError, match="no questions"):
        read_log(_log(tmp_path, "", "  "))
    with pytest.raises(InputError, match="file not found"):
        read_log(tmp_path / "absent.jsonl")


def test_repeats_are_dropped_after_normalising_case_and_whitespace() -> None:
    log = read_log(LOG)
    assert len(log) == 20
    kept, dropped = dedupe(log)
    assert (len(kept), dropped) == (19, 1)
    assert 4 not in [line.line for line in kept]  # line 1 came first and is kept
    assert normalise_question("  how much is the   CHANGE\tfee? ") == "how much is the change fee?"


# --- allocation and sampling ---------------------------------------------------------------------


def test_largest_remainder_allocation_hand_computed() -> None:
    # n = 10 over 19: fees 70/19 = 3 r13, refunds 60/19 = 3 r3, baggage 40/19 = 2 r2,
    # none 20/19 = 1 r1; 9 placed, the 10th goes to the largest remainder (fees)
    assert allocate({"fees": 7, "refunds": 6, "baggage": 4, None: 2}, 10) == {
        "fees": 4,
        "refunds": 3,
        "baggage": 2,
        None: 1,
    }
    # n = 2 over 4: c 4/4 = 1 r0, a and b 2/4 = 0 r2; the last place: equal remainders and
    # sizes, so the name decides (a)
    assert allocate({"b": 1, "a": 1, "c": 2}, 2) == {"a": 1, "b": 0, "c": 1}
    # equal remainders, different sizes: n = 3 over 10: x(6) 18/10 = 1 r8, y(2) 6/10 = 0 r6,
    # z(2) 0 r6; 1 placed, 2 left: x (r8), then y before z by name
    assert allocate({"z": 2, "y": 2, "x": 6}, 3) == {"x": 2, "y": 1, "z": 0}
    assert allocate({"x": 3, "y": 2}, 50) == {"x": 3, "y": 2}  # more than the log: everything


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=8), st.integers(1, 200))
def test_allocation_is_proportional_within_one(sizes: list[int], n: int) -> None:
    strata = {f"s{i}": size for i, size in enumerate(sizes)}
    total = sum(sizes)
    got = allocate(strata, n)
    assert sum(got.values()) == min(n, total)
    for name, size in strata.items():
        share = min(n, total) * size / total
        assert abs(got[name] - share) < 1 and got[name] <= size, (name, got, share)


def test_sample_hand_computed_on_the_fixture() -> None:
    s = sample_log(read_log(LOG), 10, by="slice", seed=0)
    assert (s.read, s.duplicates, len(s.lines)) == (20, 1, 10)
    assert [(st.name, st.lines, st.sampled) for st in s.strata] == [
        ("fees", 7, 4),
        ("refunds", 6, 3),
        ("baggage", 4, 2),
        (None, 2, 1),
    ]
    assert [st.expected for st in s.strata] == pytest.approx([70 / 19, 60 / 19, 40 / 19, 20 / 19])
    numbers = [line.line for line in s.lines]
    assert numbers == sorted(numbers) and 4 not in numbers  # log order, repeat never drawn


def test_sampling_is_deterministic_and_proportional_over_many_seeds() -> None:
    strata = ["a"] * 23 + ["b"] * 11 + ["c"] * 5 + [None] * 3 + ["d"] * 1
    log = _memory_log(strata)
    sizes = {"a": 23, "b": 11, "c": 5, None: 3, "d": 1}
    samples = set()
    for seed in range(200):
        s = sample_log(log, 17, by="s", seed=seed)
        again = sample_log(log, 17, by="s", seed=seed)
        assert [line.line for line in s.lines] == [line.line for line in again.lines]
        counts = {k: 0 for k in sizes}
        for line in s.lines:
            counts[line.record.get("s")] += 1
        for k, size in sizes.items():
            assert abs(counts[k] - 17 * size / 43) < 1, (seed, k, counts)
        assert len({line.line for line in s.lines}) == 17
        samples.add(tuple(line.line for line in s.lines))
    assert len(samples) > 150  # different seeds draw different questions


def test_same_seed_same_sample_across_processes() -> None:
    """String hashing is randomised per process; the draws must not depend on it."""
    code = (
        "import sys; from ragmeter.data import read_log, sample_log; "
        f"s = sample_log(read_log({str(LOG)!r}), 7, by='channel', seed=5); "
        "print([line.line for line in s.lines])"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": h},
        ).stdout
        for h in ("1", "2")
    }
    assert len(outs) == 1 and len(json.loads(outs.pop())) == 7


def test_without_by_a_simple_sample_and_more_than_the_log(tmp_path: Path) -> None:
    log = _memory_log([None] * 30)
    s = sample_log(log, 7, seed=3)
    assert len(s.lines) == 7 and [st.name for st in s.strata] == ["all"]
    assert len(sample_log(log, 99).lines) == 30
    with pytest.raises(UsageError, match="at least 1"):
        sample_log(log, 0)


def test_a_list_or_object_cannot_name_a_stratum(tmp_path: Path) -> None:
    path = _log(
        tmp_path,
        '{"question": "a", "s": ["x"]}',
        '{"question": "b", "s": {"k": 1}}',
        '{"question": "c", "s": 3}',
        '{"question": "d", "s": null}',
    )
    with pytest.raises(ValidationError) as info:
        sample_log(read_log(path), 2, by="s")
    assert [(p.line, p.field) for p in info.value.problems] == [(1, "s"), (2, "s")]
    assert "a list cannot name one stratum" in str(info.value)
    assert "an object cannot name one stratum" in str(info.value)


def test_cli_sample_stdout_file_and_force(tmp_path: Path) -> None:
    code, out, err = _golden("sample", LOG, "-n", "10", "--by", "slice")
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == 10 and all("question" in r for r in records)
    assert sum(r.get("slice") == "fees" for r in records) == 4
    flat = " ".join(err.split())
    assert "read 20 lines" in flat and "dropped 1 repeated question(s)" in flat
    assert "sampled 10 of 19 distinct (seed 0)" in flat and "(no slice)" in flat
    target = tmp_path / "next.jsonl"
    assert _golden("sample", LOG, "-n", "10", "--by", "slice", "-o", target)[0] == 0
    assert target.read_text() == out
    code, _, err = _golden("sample", LOG, "-n", "3", "-o", target)
    assert code == 2 and "already exists; pass --force" in err
    assert target.read_text() == out  # untouched
    assert _golden("sample", LOG, "-n", "3", "-o", target, "--force")[0] == 0
    assert len(target.read_text().splitlines()) == 3
    code, out2, _ = _golden("sample", LOG, "-n", "10", "--by", "slice", "--seed", "1")
    assert code == 0 and out2 != out


def test_cli_sample_bad_log_is_a_clean_error(tmp_path: Path) -> None:
    path = _log(tmp_path, '{"question": "ok"}', '{"text": "no question"}')
    code, out, err = _golden("sample", path, "-n", "1")
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"{path}:2: field 'question': missing required field" in err


# --- compare-traffic -----------------------------------------------------------------------------


def test_compare_traffic_hand_computed_flags() -> None:
    golden, log = load_golden(GOLDEN), read_log(LOG)
    c = compare_traffic(golden, log)
    rows = {s.name: (s.golden, s.log, s.ratio, s.status(c.factor)) for s in c.slices}
    # fees 1/10 vs 8/20: 0.25 < 1/2 -> under; refunds 6/10 vs 6/20: 2.0, not above 2 -> ok
    assert rows == {
        "fees": (1, 8, 0.25, "under"),
        "refunds": (6, 6, 2.0, "ok"),
        "baggage": (0, 4, 0.0, "not in golden"),
        "changes": (2, 0, None, "not in log"),
        "unanswerable": (1, 0, None, "not in log"),
    }
    assert [s.name for s in c.slices] == ["fees", "refunds", "baggage", "changes", "unanswerable"]
    assert (c.golden_questions, c.log_lines, c.log_unsliced, c.golden_unsliced) == (10, 20, 2, 0)
    d = compare_traffic(golden, log, factor=1.5).to_dict()
    assert (d["over"], d["under"]) == (["refunds"], ["fees"])
    assert (d["not_in_golden"], d["not_in_log"]) == (["baggage"], ["changes", "unanswerable"])


def test_ratio_exactly_at_one_over_factor_is_not_flagged(tmp_path: Path) -> None:
    # golden: 1 of 4 in "x" (0.25); log: 1 of 2 in "x" (0.5): ratio exactly 1/2
    golden = GoldenSet(
        [
            Question(id=str(i), question="?", answerable=False, slices=["x"] if i == 0 else ["y"])
            for i in range(4)
        ]
    )
    log = read_log(
        _log(tmp_path, '{"question": "a", "slice": "x"}', '{"question": "b", "slice": ["y", "y"]}')
    )
    c = compare_traffic(golden, log)
    # y: 3/4 vs 1/2 = 1.5; ordered by log lines, then golden questions
    assert [(s.name, s.status(2.0)) for s in c.slices] == [("y", "ok"), ("x", "ok")]
    assert c.slices[0].log == 1  # a list names each slice once
    assert compare_traffic(golden, log, factor=1.9).to_dict()["under"] == ["x"]
    with pytest.raises(UsageError, match="above 1"):
        compare_traffic(golden, log, factor=1.0)


def test_field_option_and_bad_field_values(tmp_path: Path) -> None:
    golden = load_golden(GOLDEN)
    c = compare_traffic(golden, read_log(LOG), field="channel")
    assert {s.name: s.status(2.0) for s in c.slices}["web"] == "not in golden"
    path = _log(tmp_path, '{"question": "a", "slice": 3}', '{"question": "b", "slice": [1]}')
    with pytest.raises(ValidationError) as info:
        compare_traffic(golden, read_log(path))
    assert [(p.line, p.field) for p in info.value.problems] == [(1, "slice"), (2, "slice")]


def test_cli_compare_traffic_outputs(tmp_path: Path) -> None:
    code, out, err = _golden("compare-traffic", GOLDEN, LOG, "--factor", "1.5")
    assert code == 0, err
    assert "over-represented in the golden set: refunds" in out
    assert "under-represented in the golden set: fees" in out
    assert "in the log but not in the golden set: baggage" in out
    assert "in the golden set but not in the log: changes, unanswerable" in out
    assert "2 log line(s) have no 'slice' field" in out
    code, out, _ = _golden("compare-traffic", GOLDEN, LOG, "--format", "json")
    data = json.loads(out)
    assert data["under"] == ["fees"] and data["over"] == [] and data["factor"] == 2.0
    assert data["slices"][2] == {
        "slice": "baggage",
        "golden": 0,
        "golden_share": 0.0,
        "log": 4,
        "log_share": 0.2,
        "ratio": 0.0,
        "status": "not in golden",
    }
    code, out, _ = _golden("compare-traffic", GOLDEN, LOG, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[0] == {
        "slice": "fees",
        "golden": "1",
        "golden_share": "0.1",
        "log": "8",
        "log_share": "0.4",
        "ratio": "0.25",
        "status": "under",
    }
    assert rows[3]["ratio"] == ""
    code, _, err = _golden("compare-traffic", GOLDEN, LOG, "--factor", "0.5")
    assert code == 2 and "the factor must be a number above 1" in err


def test_cli_prints_slice_names_literally(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        '{"question": "a", "slice": "[bold]x[/bold]"}',
        '{"question": "b", "slice": ":smile:"}',
    )
    code, out, _ = _golden("compare-traffic", GOLDEN, log)
    assert code == 0
    assert "[bold]x[/bold]" in out and ":smile:" in out
    code, _, err = _golden("sample", log, "-n", "2", "--by", "slice")
    assert code == 0 and "[bold]x[/bold]" in err and ":smile:" in err
