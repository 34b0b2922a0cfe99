"""Generation variants as experiments: ``ragmeter run`` retrieves, assembles, generates (cached),
writes answers with their exact contexts, checks them, tabulates them and compares them with the
baseline's, and every number equals what the answers/diagnosis commands say on the written files.

The generator is a deterministic Python function (``answer`` below): it copies the first
sentence holding a digit of the first passage of its context, citing that passage. So the
context order decides the answer, which is what an order-only variant must show.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from _experiment_files import FARE_RULES, fare_rules_experiment
from typer.testing import CliRunner

from ragmeter import ValidationError
from ragmeter.cli import app
from ragmeter.experiments import load_experiment, run_experiment
from ragmeter.paired import context_budget

GOLDEN = FARE_RULES / "golden.jsonl"
#: what the module's run stored: {"ids": {variant: run id}, "rows": answer_sets rows}
STORED: dict[str, Any] = {}
CORPUS = FARE_RULES / "corpus.jsonl"

GENERATOR_MODULE = '''
import re


def answer(question, passages):
    """The first sentence with a digit of the first passage that has one, citing it."""
    for p in passages:
        for sentence in re.split(r"(?<=[.!?])\\s+", p.text):
            if re.search(r"\\d", sentence):
                return sentence.strip(), [p.id]
    return "I cannot find the answer in the provided passages."


def flaky(question, passages):
    """Fails on every question that mentions a child (the others as ``answer``)."""
    if "child" in question.lower():
        raise RuntimeError("backend down")
    return answer(question, passages)
'''

EXPERIMENT = f"""
name = "context order"
golden = "{GOLDEN}"
corpus = "{CORPUS}"
output = "runs"
k = 4
metrics = ["R", "AllR"]
headroom_k = 20

[generator]
kind = "python"
target = "g4_answers:answer"

[baseline]
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50

[[variant]]
name = "reverse"
order = "reverse"

[[variant]]
name = "flaky"
generator = {{target = "g4_answers:flaky", cache = false}}
"""


def _run(path: Path, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_experiment(path, **kw)


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("generation")
    (root / "g4_answers.py").write_text(GENERATOR_MODULE)
    # the example's chunking and BM25 run (built before the suite) seed the cache, so only
    # generation runs here; answers are never in it
    path = fare_rules_experiment(root, EXPERIMENT, files=(), cache=["chunkings", "runs", "bm25"])
    # run as `ragmeter run` does with a store: every variant recorded as it completes
    from ragmeter.store import Store
    from ragmeter.workflows.experiment import run_and_record

    with Store.open(f"sqlite:///{root / 'store.db'}") as store:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result, ids = run_and_record(store, path)
        with store.engine.connect() as conn:
            rows = conn.execute(
                sa.text("select run_id, name, n_answers, source from answer_sets order by id")
            ).fetchall()
    STORED.update(ids=ids, rows=rows)
    return path, result


def cli(*args: str) -> Any:
    result = CliRunner().invoke(app, [*map(str, args), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def files(path: Path, variant: str) -> dict[str, Path]:
    folder = path.parent / "runs" / variant
    return {name: folder / f"{name}.jsonl" for name in ("answers", "chunks", "generations")} | {
        "run": folder / "run.trec"
    }


def test_answers_are_written_with_their_exact_contexts(done) -> None:
    path, _ = done
    base = [json.loads(x) for x in files(path, "baseline")["answers"].read_text().splitlines()]
    rev = [json.loads(x) for x in files(path, "reverse")["answers"].read_text().splitlines()]
    assert len(base) == len(rev) == 90
    b = {r["id"]: r for r in base}["change-fee-standard"]
    r = {r["id"]: r for r in rev}["change-fee-standard"]
    # BM25's top 4 for the Standard change fee (the superseded 2024 schedule is 4th)
    top4 = ["changes#0-1435", "rule-16-cancellations#0-1331", "rule-31-changes#0-1399"]
    assert b["context"] == [*top4, "fees-2024#0-1300"]
    assert r["context"] == ["fees-2024#0-1300", *reversed(top4)]
    # reversed, the 2024 schedule comes first and its first sentence with a digit is copied
    assert r["answer"] == "# Northwind Air change fee schedule 2024\n\nEffective 1 January 2024."
    assert r["citations"] == [{"chunk": "fees-2024#0-1300"}]
    chunks = {c["id"]: c for c in map(json.loads, files(path, "reverse")["chunks"].open())}
    expected = "\n\n".join(
        f"[{i}] {chunks[c]['doc']} (chars {chunks[c]['start']}-{chunks[c]['end']})\n"
        f"{chunks[c]['text']}"
        for i, c in enumerate(r["context"], 1)
    )
    assert r["context_text"] == expected
    gens = [json.loads(x) for x in files(path, "reverse")["generations"].open()]
    assert [g["id"] for g in gens] == [x["id"] for x in rev]
    assert all(g["prompt"].startswith("answer-v1#") for g in gens)


def test_every_rank_context_is_the_runs_top_k(done) -> None:
    path, result = done
    from ragmeter.answers.contexts import prompt_contexts
    from ragmeter.chunking import load_chunking

    f = files(path, "baseline")
    top = prompt_contexts(str(f["run"]), load_chunking(f["chunks"]), k=4)
    for v in result.variants:
        for rec in v.answers.records:
            ids = top[rec["id"]]
            assert rec["context"] == (list(ids) if v.name != "reverse" else list(ids)[::-1])


def test_an_order_only_variant_is_one_change_at_the_same_budget(done) -> None:
    _, result = done
    exp = result.experiment
    rev = next(v for v in exp.variants if v.name == "reverse")
    assert rev.changes == ("context",)  # the raw listing: the context table changed
    assert result.variant("reverse").changes == ("order",)  # the one-change rule: order
    assert result.variant("flaky").changes == ("generator",)
    assert not any("changes" in w and "reverse" in w for w in exp.warnings)
    from ragmeter.experiments import settings_config

    assert context_budget(settings_config(exp.baseline.settings)) == context_budget(
        settings_config(rev.settings)
    )
    base, other = result.baseline.answers.contexts, result.variant("reverse").answers.contexts
    for qid, ctx in base.items():
        assert sorted(ctx.ids) == sorted(other[qid].ids)
        assert ctx.n_tokens == other[qid].n_tokens


def test_tables_equal_the_answers_and_diagnose_commands(done) -> None:
    path, result = done
    f = files(path, "baseline")
    checked = cli(
        "answers",
        "check",
        f["answers"],
        "--golden",
        GOLDEN,
        "--corpus",
        CORPUS,
        "--chunks",
        f["chunks"],
        "--no-store",
    )
    assert checked["summary"] == json.loads(json.dumps(result.baseline.answers.report.summary()))
    for v in result.variants:
        f = files(path, v.name)
        d = diagnose(f)
        assert d["answers"] == json.loads(json.dumps(v.answers.report.summary()))
        mine = v.answers.table.to_dict()
        assert [c["count"] for c in d["table"]["cells"]] == [c["count"] for c in mine["cells"]]
        assert [c["ids"] for c in d["table"]["cells"]] == [c["ids"] for c in mine["cells"]]
        assert [c["count"] for c in d["table"]["other"]] == [c["count"] for c in mine["other"]]
    counts = [c["count"] for c in result.baseline.answers.table.to_dict()["cells"]]
    assert counts == [7, 54, 0, 16]  # working, generation failure, memory, retrieval failure


def test_the_paired_comparison_equals_answers_compare(done) -> None:
    path, result = done
    base = files(path, "baseline")
    for name in ("reverse", "flaky"):
        f = files(path, name)
        out = cli(
            "answers",
            "compare",
            base["answers"],
            f["answers"],
            "--golden",
            GOLDEN,
            "--corpus",
            CORPUS,
            "--chunks",
            base["chunks"],
        )
        mine = result.variant(name).answers.comparison.to_dict()
        for key in ("n", "mean_delta", "ci", "fixed", "broken", "sign_test_p", "verdict"):
            if key in out:
                assert out[key] == json.loads(json.dumps(mine[key])), key
        assert out == json.loads(json.dumps(mine))
    rev = result.variant("reverse").answers.summary()
    assert (rev["fixed"], rev["broken"]) == (2, 7)


def test_the_position_table_comes_from_the_generated_answers(done) -> None:
    path, result = done
    for v in result.variants:
        f = files(path, v.name)
        out = cli(
            "answers",
            "position",
            "--golden",
            GOLDEN,
            "--answers",
            f["answers"],
            "--chunks",
            f["chunks"],
            "--corpus",
            CORPUS,
        )
        mine = v.answers.position.to_dict()
        assert out["bins"] == mine["bins"]
        assert out["questions"] == mine["questions"]
    bins = {b.key: (b.ok, b.ok_known) for b in result.baseline.answers.position.bins}
    assert bins == {"first": (7, 47), "middle": (0, 13), "last": (0, 1)}


def diagnose(f: dict[str, Path]) -> Any:
    """``ragmeter diagnose --run`` on one variant's written files, at the experiment's k."""
    return cli(
        "diagnose", "--golden", GOLDEN, "--corpus", CORPUS, "--chunks", str(f["chunks"]),
        "--run", str(f["run"]), "--k", "4", "--answers", str(f["answers"]),
    )  # fmt: skip


def test_diagnose_on_the_outputs_names_the_next_experiment(done) -> None:
    path, _ = done
    f = files(path, "baseline")
    d = diagnose(f)
    assert d["table"]["largest_bad_cell"] == "generation_failure"
    assert d["failing_link"] == "generation"
    assert "context" in d["experiment"]["change"]
    assert d["experiment"]["refutation"]


def test_generator_errors_are_recorded_per_question_and_counted_as_failed(done) -> None:
    path, result = done
    a = result.variant("flaky").answers
    failing = {q.id for q in result.golden.questions if "child" in q.question.lower()}
    assert failing and set(a.errors) == failing
    assert all(e == "RuntimeError: backend down" for e in a.errors.values())
    by_id = a.report.by_id
    for qid in failing:
        rec = next(r for r in a.records if r["id"] == qid)
        assert rec["answer"] == "" and rec["abstained"] is False
        assert by_id[qid].abstained is False and by_id[qid].ok is not True
    assert a.summary()["errors"] == len(failing)
    gens = {g["id"]: g for g in map(json.loads, files(path, "flaky")["generations"].open())}
    assert {q for q, g in gens.items() if g["error"]} == failing


def test_a_rerun_makes_no_model_call_and_the_same_answers(done) -> None:
    path, result = done
    again = _run(path, write=False)
    for v, w in zip(result.variants[:2], again.variants[:2], strict=True):
        assert v.answers.model_calls == 90 and v.answers.cache_hits == 0
        assert w.answers.model_calls == 0 and w.answers.cache_hits == 90
        assert w.answers.records == v.answers.records
    # cache = false: every answer made again
    assert again.variant("flaky").answers.model_calls == 90


def test_failures_are_never_cached(tmp_path) -> None:
    from ragmeter.generation import (
        CachedGenerator,
        CallableGenerator,
        ContextSpec,
        assemble,
        load_prompt,
        make_request,
    )

    calls: list[str] = []

    def fails_once(question: str, passages: list[Any]) -> str:
        calls.append(question)
        if len(calls) == 1:
            raise RuntimeError("timeout")
        return "42"

    gen = CachedGenerator(CallableGenerator(fails_once), tmp_path)
    ctx = assemble("q", [], ContextSpec(k=4))
    req = make_request("q", "how many?", ctx, load_prompt("answer-v1"))
    first, second, third = (gen.generate([req])[0] for _ in range(3))
    assert first.error == "RuntimeError: timeout" and second.text == third.text == "42"
    assert (second.cached, third.cached, len(calls)) == (False, True, 2)


def test_to_dict_carries_every_answer_table(done) -> None:
    _, result = done
    d = json.loads(json.dumps(result.to_dict()))
    assert [r["variant"] for r in d["answers"]] == ["baseline", "reverse", "flaky"]
    v = d["variants"][1]["answers"]
    assert v["vs_baseline"]["fixed"] == 2 and v["table"]["cells"][0]["count"] == 1
    assert v["position"]["bins"][0]["key"] == "first"
    assert v["context"] == {
        "k": 4,
        "budget": None,
        "order": "reverse",
        "dedupe": True,
        "headers": True,
        "source": "retrieved",
    }


def test_the_store_keeps_each_answer_set_with_its_run(done) -> None:
    assert done
    ids, rows = STORED["ids"], STORED["rows"]
    assert [(r[0], r[1], r[2]) for r in rows] == [(ids[n], n, 90) for n in ids]
    assert rows[0][3].endswith("baseline/answers.jsonl")


# -- the experiment file --------------------------------------------------------------------
HEAD = f"""
golden = "{GOLDEN}"
corpus = "{CORPUS}"
k = 4
headroom_k = 20
"""
BASE = """
[baseline]
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50
"""


def load(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "e.toml"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_experiment(path)


def problems(tmp_path: Path, text: str) -> list[tuple[str | None, str]]:
    with pytest.raises(ValidationError) as e:
        load(tmp_path, text)
    return [(p.field, p.message) for p in e.value.problems]


@pytest.mark.parametrize(
    ("variant", "change"),
    [
        ('order = "sandwich"', "order"),
        ('context = {order = "sandwich"}', "order"),
        ("context = {headers = false}", "context"),
        ('prompt = "my-prompt-v2.txt"', "prompt"),
        ("generator = {temperature = 0.7}", "generator"),
        (
            'generator = {kind = "openai", base_url = "http://127.0.0.1:9/v1", model = "m"}',
            "generator",
        ),
        ('chunker = "tokens:100:0"\nk = 12', "chunking"),
    ],
)
def test_each_generation_setting_is_one_change(tmp_path, variant, change) -> None:
    exp = load(
        tmp_path,
        HEAD
        + '[generator]\nkind = "python"\ntarget = "m:f"\n'
        + BASE
        + f'[[variant]]\nname = "v"\n{variant}\n',
    )
    from ragmeter.experiments import effective_changes

    assert effective_changes(exp.baseline.settings, exp.variants[0].settings) == (change,)
    assert not [w for w in exp.warnings if "things" in w]


def test_generation_defaults_and_inheritance(tmp_path) -> None:
    exp = load(
        tmp_path,
        HEAD
        + '[generator]\nkind = "python"\ntarget = "m:f"\nseed = 7\n'
        + BASE
        + '[[variant]]\nname = "hot"\ngenerator = {temperature = 0.5}\n',
    )
    b, v = exp.baseline.settings, exp.variants[0].settings
    assert b.generator == {
        "kind": "python",
        "target": "m:f",
        "temperature": 0.0,
        "seed": 7,
        "max_tokens": 256,
    }
    assert v.generator == {**b.generator, "temperature": 0.5}
    assert b.prompt == v.prompt == "answer-v1"
    assert b.context == {"order": "rank", "dedupe": True, "headers": True}
    assert b.context_spec().k == 4 and b.context_spec().budget is None


def test_a_retrieval_only_config_keeps_its_shape(tmp_path) -> None:
    exp = load(tmp_path, HEAD + BASE)
    assert set(exp.baseline.settings.to_dict()) == {
        "chunker",
        "chunks",
        "retriever",
        "reranker",
        "run",
        "depth",
        "k",
        "budget",
    }
    assert exp.baseline.settings.generates is False


def test_generation_settings_are_checked_with_their_fields(tmp_path) -> None:
    found = problems(
        tmp_path,
        HEAD
        + BASE
        + '[[variant]]\nname = "a"\norder = "middle"\n'
        + '[[variant]]\nname = "b"\ncontext = {k = 3}\n'
        + '[[variant]]\nname = "c"\ngenerator = {kind = "python", target = "m:f"}\n',
    )
    fields = [f for f, _ in found]
    assert "variant[1].order" in fields
    assert any(f == "variant[2].context.k" and "prompt k" in m for f, m in found)
    assert any(f == "variant[3].generator" and "baseline has no generator" in m for f, m in found)
    found = problems(
        tmp_path,
        HEAD + '[generator]\nkind = "openai"\nmodel = "m"\nbase_url = "http://x/v1"\n'
        'api_key = "sk-123"\n' + BASE,
    )
    assert any(f == "generator.api_key" and "never write an API key" in m for f, m in found)
    found = problems(tmp_path, HEAD + 'context = {order = "reverse"}\n' + BASE)
    assert any("needs a generator" in m for _, m in found)
