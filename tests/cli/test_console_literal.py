"""Names that come from users or files print literally on every console output.

rich reads ``[...]`` as markup and ``:name:`` as an emoji code: unguarded, a chunker called
``tokens:100:0`` prints as ``tokens💯0``, a question id ``[red]`` vanishes into a colour and
``[/x]`` raises ``MarkupError``. Every command below is fed such names (ids, run names, slice
names, question text, document text, paths, config values, experiment and variant names) and
must print each of them character for character, with no emoji anywhere.
"""

from __future__ import annotations

import io
import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from ragmeter.cli import app

#: markup-like names: a chunker spec (":100:" is an emoji code), a tag pair, an emoji code, a
#: closing tag with no opening one (MarkupError), a style tag
HOSTILE = ["tokens:100:0", "[bold]x[/bold]", ":smile:", "[/x]", "[red]"]
#: emoji and pictographs; box drawing (U+2500..U+257F) and ellipsis are not in these ranges
EMOJI = re.compile("[\U0001f000-\U0001ffff\u2600-\u27bf\u2b00-\u2bff\ufe0f]")
runner = CliRunner()


def cli(*args: str | Path, columns: int = 200) -> tuple[int, str, str]:
    r = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": str(columns)})
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def assert_literal(text: str, *names: str) -> None:
    """Every name appears as written (a long title or caption may wrap at the table's width, so
    line breaks are ignored); no emoji and no rich error anywhere."""
    for name in names:
        assert name in text or squash(name) in squash(text), (
            f"{name!r} not printed literally in:\n{text}"
        )
    assert not EMOJI.search(text), f"emoji in:\n{text}"
    assert "MarkupError" not in text and "Traceback" not in text


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# -- a small span-labelled data set whose every name is hostile ----------------------------------
DOC = "fees[/x]"
TEXT = (
    "The change fee for a Standard fare is 75 dollars per passenger. Basic fares pay 150 "
    "dollars. Notes: [bold]x[/bold] :smile: tokens:100:0 [red] [/x] end."
)
ANSWER = "75 dollars"


def golden_records() -> list[dict]:
    start = TEXT.index(ANSWER)
    return [
        {
            "id": h,
            "question": f"What is the fee {h}?",
            "answer": ANSWER,
            "evidence": [{"doc": DOC, "start": start, "end": start + len(ANSWER), "grade": 2}],
            "slices": [HOSTILE[(i + 1) % len(HOSTILE)], "[/x]"],
            "split": "tune" if i % 2 else "heldout",
        }
        for i, h in enumerate(HOSTILE)
    ]


@pytest.fixture()
def data(tmp_path: Path) -> dict[str, Path]:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": DOC, "text": TEXT}])
    golden = write_jsonl(tmp_path / "[red]" / "golden.jsonl", golden_records())
    return {"corpus": corpus, "golden": golden, "dir": tmp_path}


def answers_file(path: Path, variant: str, quote: str) -> Path:
    """Answers citing the document; the quote is not in it, so it is listed as failed."""
    recs = [
        {
            "id": h,
            "answer": f'It is {ANSWER} {h}: "{quote} {h} per passenger"',
            "citations": [{"doc": DOC}],
            "variant": variant,
        }
        for h in HOSTILE
    ]
    return write_jsonl(path, recs)


# -- eval -----------------------------------------------------------------------------------------
def toy_qrels_and_run(folder: Path, qids: list[str], run_path: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    qrels = folder / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 d{i} 1\n" for i, q in enumerate(qids)))
    run_path.parent.mkdir(parents=True, exist_ok=True)
    run_path.write_text("".join(f"{q} Q0 d{i} 1 1.0 r\n" for i, q in enumerate(qids[:-1])))
    return qrels, run_path


def test_eval_prints_hostile_query_ids_and_run_paths(tmp_path: Path) -> None:
    # the run's path holds "[/x]" (a folder "[" and a file "x].run") and the qrels "[bold]...[/"
    run_path = tmp_path / "[bold]x[" / "bold]" / "tokens:100:0[" / "x].run"
    qrels, run = toy_qrels_and_run(tmp_path / "[red]:smile:[", HOSTILE, run_path)
    code, out, err = cli("eval", qrels, run, "-m", "Hit@3", "--per-query")
    assert code == 0, err
    assert_literal(out + err, *HOSTILE, str(run), "[bold]x[/bold]/tokens:100:0[/x].run")
    # the last id is missing from the run: the caption names the run
    assert squash(f"{run}: 1 labelled queries missing from the run") in squash(out)


def test_eval_error_message_is_literal(tmp_path: Path) -> None:
    code, _out, err = cli(
        "eval", tmp_path / "[/x]:smile:" / "qrels.txt", tmp_path / "tokens:100:0.run"
    )
    assert code == 2
    assert_literal(err, "[/x]:smile:")


# -- compare / gate / sweep ---------------------------------------------------------------------
def eval_json(path: Path, run: str, values: list[float], config: dict) -> Path:
    qids = [f"{h}#{i}" for i in range(4) for h in HOSTILE]
    d = {
        "run": run,
        "aggregate": {"Hit@3": sum(values) / len(values)},
        "per_query": {q: {"Hit@3": v} for q, v in zip(qids, values, strict=True)},
        "config": config,
        "golden_version": "g-[red]",
        "slices": {q: [HOSTILE[i % len(HOSTILE)]] for i, q in enumerate(qids)},
        "splits": {q: "heldout" if i % 2 else "tune" for i, q in enumerate(qids)},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(d))
    return path


@pytest.fixture()
def pair(tmp_path: Path) -> tuple[Path, Path]:
    n = 4 * len(HOSTILE)
    base = [1.0 if i % 3 else 0.0 for i in range(n)]
    cand = [1.0 if i % 4 else 0.0 for i in range(n)]
    a = eval_json(
        tmp_path / "[/x]" / "base.json",
        "[bold]x[/bold]",
        base,
        {"chunker": "tokens:100:0", "retriever": "[red]"},
    )
    b = eval_json(
        tmp_path / "cand.json", ":smile:", cand, {"chunker": "tokens:200:0", "retriever": "[/x]"}
    )
    return a, b


def test_compare_prints_run_names_config_values_slices_and_ids(pair, tmp_path: Path) -> None:
    a, b = pair
    code, out, err = cli("compare", a, b, "-m", "Hit@3", "--ledger", tmp_path / "l.jsonl")
    assert code == 0, err
    assert_literal(out + err, *HOSTILE, "tokens:200:0", "[bold]x[/bold]", "g-[red]")
    assert "slice [/x]" in out and "slice tokens:100:0" in out
    # the settings that differ, old -> new, as written
    assert squash("tokens:100:0 -> tokens:200:0") in squash(out)
    assert squash("[red] -> [/x]") in squash(out)


def test_compare_unknown_run_error_is_literal(pair) -> None:
    a, b = pair
    code, _, err = cli("compare", f"{a}#[/x]:smile:", b, "--no-ledger")
    assert code == 2
    assert_literal(err, "[/x]:smile:", "[bold]x[/bold]")


def test_gate_prints_names_literally(pair, tmp_path: Path) -> None:
    a, b = pair
    code, out, err = cli("gate", a, b, "-m", "Hit@3", "--max-broken", "100", "--per-slice")
    assert code in (0, 1), err
    assert_literal(out + err, *HOSTILE)


def test_sweep_prints_run_names_literally(tmp_path: Path) -> None:
    qrels, _ = toy_qrels_and_run(tmp_path, HOSTILE, tmp_path / "unused.run")
    runs = []
    for i, name in enumerate(["tokens:100:0", ":smile:[red]", "[bold]x[", "[/x]"]):
        p = tmp_path / f"{i}" / f"{name}.run"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(f"{q} Q0 d{(j + i) % 5} 1 1.0 r\n" for j, q in enumerate(HOSTILE)))
        runs.append(p)
    code, out, err = cli(
        "sweep", *runs, "--qrels", qrels, "--k", "1,3", "-m", "R", "--headroom-k", "5"
    )
    assert code == 0, err
    # stems: "tokens:100:0", ":smile:[red]", "[bold]x[", "x]" (the last file sits in "[")
    assert_literal(out + err, "tokens:100:0", ":smile:[red]", "[bold]x[")


# -- golden ---------------------------------------------------------------------------------------
def test_golden_stats_prints_slices_and_paths(data) -> None:
    code, out, err = cli("golden", "stats", data["golden"], "--corpus", data["corpus"])
    assert code == 0, err
    assert_literal(out + err, *HOSTILE, str(data["golden"]))
    assert "warning: slice '[/x]' has 5 question(s)" in " ".join(err.split())


def test_golden_validate_lists_problems_with_hostile_ids(data) -> None:
    bad = golden_records()
    bad[3]["evidence"][0]["doc"] = "[/x]:smile:"  # a document the corpus lacks
    path = write_jsonl(data["dir"] / "tokens:100:0[" / "x].jsonl", bad)
    code, out, err = cli("golden", "validate", path, "--corpus", data["corpus"])
    assert code == 2
    assert_literal(out + err, "[/x]:smile:", str(path))
    code, out, err = cli("golden", "validate", data["golden"], "--corpus", data["corpus"])
    assert code == 0, err
    assert_literal(out + err, str(data["golden"]))


# -- answers / diagnose / judge -----------------------------------------------------------------
def test_answers_check_prints_ids_answers_and_quotes(data) -> None:
    quote = "the change fee is 99 dollars [red] :smile: [/x]"
    ans = answers_file(data["dir"] / "answers.jsonl", ":smile:[/x]", quote)
    code, out, err = cli(
        "answers",
        "check",
        ans,
        "--golden",
        data["golden"],
        "--corpus",
        data["corpus"],
        "--per-answer",
    )
    assert code == 0, err
    assert_literal(out + err, *HOSTILE, ":smile:[/x]", DOC)
    assert quote in " ".join(out.split())


def test_answers_compare_prints_variants_and_ids(data) -> None:
    a = answers_file(data["dir"] / "a.jsonl", "[bold]x[/bold]", "the change fee is 75 dollars")
    recs = [json.loads(x) for x in a.read_text().splitlines()]
    for r in recs:
        r["variant"], r["answer"] = "tokens:100:0", "150 dollars"
    b = write_jsonl(data["dir"] / "b.jsonl", recs)
    code, out, err = cli(
        "answers", "compare", a, b, "--golden", data["golden"], "--corpus", data["corpus"]
    )
    assert code == 0, err
    assert_literal(out + err, "[bold]x[/bold]", "tokens:100:0")


def test_diagnose_prints_report_and_table_literally(data) -> None:
    quote = "the change fee is 99 dollars [red]"
    ans = answers_file(data["dir"] / "answers.jsonl", "[/x]", quote)
    code, out, err = cli(
        "diagnose",
        "--golden",
        data["golden"],
        "--corpus",
        data["corpus"],
        "--answers",
        ans,
        "--counts",
        "1,2,3,4",
    )
    assert code == 0, err
    assert_literal(out + err, *HOSTILE)


def test_judge_validate_prints_labels_and_ids(tmp_path: Path) -> None:
    # labels are a fixed vocabulary (pass/fail, yes/partly/no, ...), so hostile text can only
    # reach the console as an id or inside the error naming a label that is not one
    human = write_jsonl(tmp_path / "h.jsonl", [{"id": h, "label": "pass"} for h in HOSTILE])
    judged = write_jsonl(
        tmp_path / "j.jsonl",
        [{"id": h, "label": "fail" if i % 2 else "pass"} for i, h in enumerate(HOSTILE)],
    )
    code, out, err = cli("judge", "validate", "--human", human, "--judge", judged)
    assert code == 0, err
    # the two disagreements (odd positions) listed by id
    assert_literal(out + err, "[bold]x[/bold]", "[/x]")
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "a", "label": h} for h in HOSTILE])
    code, out, err = cli("judge", "validate", "--human", human, "--judge", bad)
    assert code == 2
    assert_literal(out + err, *HOSTILE)


# -- chunk / labels / run ------------------------------------------------------------------------
def test_chunk_prints_chunker_and_path(data) -> None:
    out_path = data["dir"] / "[bold]x[" / "bold]:smile:.jsonl"
    out_path.parent.mkdir()
    code, out, err = cli(
        "chunk",
        data["corpus"],
        "--chunker",
        "tokens:100:0",
        "-o",
        out_path,
        "--tokenizer",
        "regex-words",
    )
    assert code == 0, err
    assert_literal(out + err, "tokens:100:0", "[bold]x[/bold]:smile:.jsonl")


def test_chunker_error_message_is_literal(data) -> None:
    code, _, err = cli(
        "chunk", data["corpus"], "--chunker", "tokens:[/x]:smile:", "-o", data["dir"] / "c.jsonl"
    )
    assert code == 2
    assert_literal(err, "tokens:[/x]:smile:")


def test_labels_export_and_budget_print_literally(data) -> None:
    chunks = data["dir"] / "chunks.jsonl"
    assert (
        cli(
            "chunk",
            data["corpus"],
            "--chunker",
            "tokens:100:0",
            "-o",
            chunks,
            "--tokenizer",
            "regex-words",
        )[0]
        == 0
    )
    out_path = data["dir"] / "[red]:smile:[" / "x].qrels"
    out_path.parent.mkdir()
    code, out, err = cli(
        "labels", "export", "--golden", data["golden"], "--chunks", chunks, "-o", out_path
    )
    assert code == 0, err
    assert_literal(out + err, "tokens:100:0", str(out_path))
    code, _, err = cli("labels", "budget", "300x4", "tokens:100:0", "[/x]")
    assert code == 2
    assert_literal(err, "tokens:100:0")


EXPERIMENT = """\
name = "[bold]exp[/bold] :smile: [/x]"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "out"
k = 2
budget = 40
headroom_k = 4
metrics = ["R"]

[baseline]
chunker = "tokens:20:0"
retriever = "bm25"
depth = 10

[[variant]]
name = "[red]"
chunker = "tokens:100:0"

[[variant]]
name = "[/x]:smile:"
k = 3
"""


def test_run_prints_experiment_variant_and_chunker_names(data) -> None:
    folder = data["dir"] / "exp"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(data["corpus"].read_text())
    (folder / "golden.jsonl").write_text(data["golden"].read_text())
    (folder / "experiment.toml").write_text(EXPERIMENT)
    code, out, err = cli("run", folder / "experiment.toml", "--cache-dir", folder / "cache")
    assert code == 0, err
    assert_literal(
        out + err,
        "[bold]exp[/bold] :smile: [/x]",
        "[red]",
        "[/x]:smile:",
        "tokens:100:0",
        "tokens:20:0",
    )


# -- property: any markup-like name round-trips --------------------------------------------------
#: tags ("[a]", "[/]", "[@a]"), emoji codes (":a:" is an emoji), escapes ("\\[a]")
MARKUPISH = st.text(alphabet="[]/:#@ab01\\", min_size=1, max_size=12)


@settings(
    max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(names=st.lists(MARKUPISH, min_size=2, max_size=4, unique=True))
def test_eval_query_and_run_names_round_trip(names: list[str]) -> None:
    qids = [f"q{n}q" for n in names]
    with tempfile.TemporaryDirectory() as tmp:
        run_path = Path(tmp) / f"r{names[0].replace('/', '_')}r.run"
        qrels, run = toy_qrels_and_run(Path(tmp), qids, run_path)
        code, out, err = cli("eval", qrels, run, "-m", "Hit@3", "--per-query")
    assert code == 0, err
    assert_literal(out, *qids, run_path.name)


@settings(
    max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(names=st.lists(MARKUPISH, min_size=1, max_size=3, unique=True))
def test_golden_stats_slice_names_round_trip(names: list[str]) -> None:
    slices = [f"s{n}s" for n in names]
    recs = golden_records()
    for r in recs:
        r["slices"] = slices
    with tempfile.TemporaryDirectory() as tmp:
        path = write_jsonl(Path(tmp) / "g.jsonl", recs)
        code, out, err = cli("golden", "stats", path)
    assert code == 0, err
    assert_literal(out, *slices)


# -- renderers on any console: progress bars on a terminal, a library user's console ----------
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def terminal() -> tuple[Console, io.StringIO]:
    """A console as a user's terminal has it: markup and emoji codes on."""
    buf = io.StringIO()
    return Console(file=buf, force_terminal=True, width=160, emoji=True), buf


def test_progress_step_description_is_literal_on_a_terminal() -> None:
    from ragmeter.retrieval._progress import RichProgress

    con, buf = terminal()
    with RichProgress(con).step("score [/x] tokens:100:0 :smile: [red]", 3) as advance:
        advance(1)
    assert_literal(ANSI.sub("", buf.getvalue()), "score [/x] tokens:100:0 :smile: [red]")


def test_chunk_progress_bar_is_literal_on_a_terminal(data, monkeypatch) -> None:
    import ragmeter.cli._chunk as chunk_module

    con, buf = terminal()
    monkeypatch.setattr(chunk_module, "err_console", con)
    code, _, err = cli(
        "chunk",
        data["corpus"],
        "--chunker",
        "tokens:100:0",
        "-o",
        data["dir"] / "c.jsonl",
        "--tokenizer",
        "regex-words",
    )
    assert code == 0, err
    assert_literal(ANSI.sub("", buf.getvalue()), "chunking tokens:100:0")


def test_answer_renderers_are_literal_on_an_emoji_console(data) -> None:
    """The shared renderers take any console: data must not depend on its emoji setting."""
    from ragmeter.answers import load_answers
    from ragmeter.answers.report import check_answers
    from ragmeter.cli._render_answers import print_report
    from ragmeter.cli._render_diagnosis import print_diagnosis
    from ragmeter.data.corpus import load_corpus
    from ragmeter.data.golden import load_golden
    from ragmeter.diagnosis import diagnose

    corpus = load_corpus(data["corpus"])
    gold = load_golden(data["golden"], corpus)
    quote = "the change fee is 99 dollars [red] :smile:"
    path = answers_file(data["dir"] / "a.jsonl", "tokens:100:0", quote)
    report = check_answers(load_answers(path, golden=gold), gold, corpus=corpus)
    buf = io.StringIO()
    con = Console(file=buf, width=200, emoji=True)
    print_report(con, report, per_answer=True)
    print_diagnosis(con, diagnose(report=report))
    assert_literal(buf.getvalue(), *HOSTILE, "answers: tokens:100:0")
    assert quote in " ".join(buf.getvalue().split())
