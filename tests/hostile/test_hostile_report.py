"""A variant that changes k without a budget (issue 22, item 7): ``ragmeter run`` handles it
("no shared k or budget with the baseline"), and so must everything that reads the stored runs:
``report`` by run ids and by experiment name, ``gate --report`` on a metric both runs carry, and
the lab's comparison page. Each shows every run's metrics at its own k and, where the variant
shares no cutoff with the baseline, says what ``run`` says and which comparisons remain (the
headroom R@50 here), instead of refusing the whole report.

The choice of the comparison metric for stored runs is ``run``'s own rule
(``experiments._table.shared_metric``): a property over generated experiments checks that the
lab and the report find no shared cutoff exactly when ``run`` does, and otherwise compare at
``run``'s cutoff on a metric both runs carry.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from _database import PG_HINT, fresh_schema, server_url
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

# justified: jinja2 is a core dependency; the guard names it if an install lacks it
pytest.importorskip("jinja2")  # justified: a core dependency, named if missing

from ragmeter.cli import app
from ragmeter.experiments import Experiment, Settings, Variant
from ragmeter.experiments._table import primary_metric
from ragmeter.metrics import Metric, parse
from ragmeter.store import Store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fare-rules"
#: what ``ragmeter run``'s comparison table says of such a variant
NO_SHARED_CUTOFF = "no shared k or budget with the baseline"

#: the issue's experiment, plus a variant that shares k = 4 (its comparison must still render)
EXPERIMENT = """\
name = "k change"
golden = "golden.jsonl"
corpus = "corpus.jsonl"
output = "runs"
k = 4
metrics = ["R", "RR"]

[baseline]
name = "baseline"
chunker = "tokens:300:0"
retriever = "bm25"
depth = 50

[[variant]]
name = "k2"
k = 2

[[variant]]
name = "depth 60"
depth = 60
"""


@dataclass
class KChange:
    root: Path
    url: str
    ids: dict[str, int]
    run_json: dict[str, Any]


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


def record(root: Path, url: str) -> KChange:
    """The experiment (on the example's first 30 questions) run and recorded by ``ragmeter
    run`` into the store at ``url`` (migrated first, as a server database is)."""
    lines = (EXAMPLE / "golden.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (root / "golden.jsonl").write_text("".join(lines[:30]), encoding="utf-8")
    shutil.copy(EXAMPLE / "corpus.jsonl", root / "corpus.jsonl")
    (root / "exp.toml").write_text(EXPERIMENT, encoding="utf-8")
    migrated = invoke("db", "upgrade", "--db", url)  # as a team migrates a server database
    assert migrated.exit_code == 0, migrated.output
    result = invoke("run", root / "exp.toml", "--db", url, "-f", "json")
    assert result.exit_code == 0, result.output
    out = result.stdout
    with Store.open(url) as store:
        ids = {r.name: r.id for r in store.runs(status="finished")}
    assert set(ids) == {"baseline", "k2", "depth 60"}
    return KChange(root, url, ids, json.loads(out[out.index("{") :]))


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def kchange(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One recording per backend, shared by the module's tests (as the ``store_url`` fixture
    makes them: a SQLite file, then a private PostgreSQL schema; the artifacts in a folder of
    their own while the module runs)."""
    root = tmp_path_factory.mktemp(f"kchange-{request.param}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGMETER_ARTIFACTS", str(root / "artifacts"))
        if request.param == "sqlite":
            yield record(root, f"sqlite:///{root / 'store.db'}")
            return
        base = server_url()
        if base is None:
            # justified: a PostgreSQL server is outside the repo; .ci/run starts one
            pytest.skip(PG_HINT)
        with fresh_schema(base) as url:
            yield record(root, url)


def text_of(html: str) -> str:
    """The visible text of a page (tags dropped, entities decoded, spaces collapsed)."""
    html = re.sub(r"<script\b.*?</script>", " ", html, flags=re.S | re.I)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def section(html: str, anchor: str) -> str:
    """The text of the element with id ``anchor`` up to the next report article/section."""
    start = html.index(f'id="{anchor}"')
    end = re.compile(r"<(article|section) ").search(html, start + 1)
    return text_of(html[start : end.start() if end else len(html)])


def assert_runs_at_their_own_k(html: str, k: KChange) -> None:
    """Each run's lab section holds its own metrics at its own k, as ``run`` printed them."""
    table = {row["variant"]: row for row in k.run_json["table"]}
    for name, rid, cut in (("baseline", k.ids["baseline"], 4), ("k2", k.ids["k2"], 2)):
        text = section(html, f"run-{rid}")
        assert f"(k = {cut})" in text, name
        for metric in ("R", "RR"):
            value = table[name][f"{metric}@k"]
            assert f"{metric}@{cut} {value:.3f}" in text, (name, metric, text[:400])


def assert_k2_note(html: str, k: KChange) -> None:
    text = section(html, f"cmp-{k.ids['k2']}")
    assert NO_SHARED_CUTOFF in text
    assert "baseline at k = 4, k2 at k = 2" in text
    # what can still be compared: the shared headroom depth, as a command (no link leaves a
    # file) naming the store, so that it runs as printed
    assert f"ragmeter compare {k.ids['baseline']} {k.ids['k2']} -m R@50 --db " in text
    assert "R@50 (headroom, not quality)" in text
    assert "was not computed" not in text


def test_run_itself_handles_the_pair(kchange: KChange) -> None:
    """The premise: ``run`` compares the k2 variant on nothing and says why; depth 60 on R@4."""
    rows = {r["variant"]: r for r in kchange.run_json["vs_baseline"]}
    assert rows["k2"]["metric"] is None and rows["k2"]["note"] == NO_SHARED_CUTOFF
    assert rows["depth 60"]["metric"] == "R@4"


def test_report_by_run_ids_and_by_experiment_name(kchange: KChange, tmp_path: Path) -> None:
    k = kchange
    by_ids = tmp_path / "ids.html"
    result = invoke("report", k.ids["baseline"], k.ids["k2"], "-o", by_ids, "--db", k.url)
    assert result.exit_code == 0, result.output
    html = by_ids.read_text(encoding="utf-8")
    assert_runs_at_their_own_k(html, k)
    assert_k2_note(html, k)

    by_name = tmp_path / "name.html"
    result = invoke("report", "k change", "-o", by_name, "--db", k.url)
    assert result.exit_code == 0, result.output
    html = by_name.read_text(encoding="utf-8")
    assert_runs_at_their_own_k(html, k)
    assert_k2_note(html, k)
    # the variant that shares k = 4 is compared on R@4, as run compared it
    shared = section(html, f"cmp-{k.ids['depth 60']}")
    assert "R@4: difference" in shared and NO_SHARED_CUTOFF not in shared
    assert f"{k.run_json['vs_baseline'][1]['delta']:+.4f}" in shared


def test_gate_report_on_a_metric_both_runs_carry(kchange: KChange, tmp_path: Path) -> None:
    k = kchange
    base, cand = f"run:{k.ids['baseline']}", f"run:{k.ids['k2']}"
    out = tmp_path / "gate.html"
    result = invoke("gate", base, cand, "-m", "R@50", "--max-broken", 2, "--report", out,
                    "--db", k.url, "-f", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    gate = json.loads(result.stdout[result.stdout.index("{") :])
    assert gate["passed"] is True and gate["comparison"]["metric"] == "R@50"
    html = out.read_text(encoding="utf-8")
    assert_runs_at_their_own_k(html, k)
    # the report's comparison is the gate's: on R@50, with run's note about the cutoffs
    text = section(html, f"cmp-{k.ids['k2']}")
    assert "R@50: difference +0.0000" in text
    assert f"{NO_SHARED_CUTOFF} (baseline at k = 4, k2 at k = 2): compared on R@50" in text


@pytest.mark.parametrize("metric", ["R@4", "RR@2"])
def test_gate_on_a_metric_one_side_lacks_is_one_clear_refusal(
    kchange: KChange, metric: str, tmp_path: Path
) -> None:
    k = kchange
    out = tmp_path / "refused.html"
    result = invoke("gate", k.ids["baseline"], k.ids["k2"], "-m", metric, "--max-broken", 2,
                    "--report", out, "--db", k.url)  # fmt: skip
    assert result.exit_code == 2, result.output
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and f"metric {metric} was not computed" in errors[0]
    assert "Traceback" not in result.output
    assert not out.exists()


def test_lab_comparison_pages(kchange: KChange) -> None:
    pytest.importorskip("fastapi")  # justified: the lab is the web extra
    from starlette.testclient import TestClient

    from ragmeter.lab import create_app

    k = kchange
    base, k2, d60 = k.ids["baseline"], k.ids["k2"], k.ids["depth 60"]
    with Store.open(k.url) as store:
        client = TestClient(create_app(store=store), base_url="http://127.0.0.1:8765")
        # the experiments page links every variant to its comparison: none of them may fail
        home = client.get("/")
        assert home.status_code == 200
        links = [unescape(u) for u in re.findall(r'href="(/compare\?[^"]*)"', home.text)]
        assert len(links) == 2
        for url in links:
            assert client.get(url).status_code == 200, url
        page = client.get(f"/compare?base={base}&cand={k2}")
        assert page.status_code == 200
        text = text_of(page.text)
        assert NO_SHARED_CUTOFF in text and "baseline at k = 4, k2 at k = 2" in text
        assert "R@50 (headroom, not quality)" in text
        assert f"/compare?base={base}&amp;cand={k2}&amp;metric=R@50" in page.text
        asked = client.get(f"/compare?base={base}&cand={k2}&metric=R@50")
        assert asked.status_code == 200
        assert "compared on R@50, the metric asked for" in text_of(asked.text)
        shared = client.get(f"/compare?base={base}&cand={d60}")
        assert shared.status_code == 200 and "R@4: difference" in text_of(shared.text)
        # each run's lab at its own k
        for rid, cut in ((base, 4), (k2, 2)):
            lab = client.get(f"/lab?run={rid}&baseline={base}")
            assert lab.status_code == 200 and f"R@{cut}" in text_of(lab.text)


# -- the property: the stored runs' choice is run's ---------------------------------------------
CUT = st.one_of(st.none(), st.integers(1, 6))
BUDGET = st.one_of(st.none(), st.sampled_from([300, 600, 1200]))
METRICS = st.lists(
    st.sampled_from(["R", "RR", "nDCG", "AllR", "R@10", "RR@3", "AllR@budget=900"]),
    min_size=1,
    max_size=5,
    unique=True,
)


def stored(exp: Experiment, v: Variant, rid: int) -> tuple[Any, Any]:
    """What the store holds for one of ``run``'s variants: its record (name and the config
    ``run`` writes: settings, level, the resolved prompt metrics and the headroom) and its
    evaluation's metric columns (the prompt metrics and the headroom)."""
    prompt = [str(m) for m in exp.prompt_metrics(v.settings)]
    head = str(exp.headroom_metric())
    record = SimpleNamespace(
        id=rid,
        name=v.name,
        config={
            "settings": {"k": v.settings.k, "budget": v.settings.budget},
            "level": exp.level,
            "resolved": {
                "metrics": prompt,
                "headroom": head,
                # the experiment's headline, as `run` records it (config_record_of)
                **({"headline": str(exp.headline_metric)} if exp.headline_metric else {}),
            },
        },
    )
    return record, SimpleNamespace(metrics=[parse(n) for n in dict.fromkeys([*prompt, head])])


def at(name: str) -> tuple[int | None, int | None]:
    m = parse(name)
    return m.k, m.budget


@settings(max_examples=200)
@given(base_k=CUT, base_b=BUDGET, var_k=CUT, var_b=BUDGET, names=METRICS, documents=st.booleans())
def test_the_stored_pair_is_compared_where_run_compares_it(
    base_k: int | None,
    base_b: int | None,
    var_k: int | None,
    var_b: int | None,
    names: list[str],
    documents: bool,
) -> None:
    from ragmeter.lab._data_comparison import pair_choice

    if base_k is None and base_b is None:
        base_k = 4  # a variant has a k or a budget (the runner's default k)
    if var_k is None and var_b is None:
        var_k = 4
    metrics: tuple[Metric, ...] = tuple(parse(n) for n in names)
    base = Variant("baseline", Settings(k=base_k, budget=base_b), is_baseline=True)
    var = Variant("variant", Settings(k=var_k, budget=var_b), changes=("k",))
    exp = Experiment(
        path=Path("exp.toml"), name="x", golden=Path("g"), corpus=Path("c"), output=Path("o"),
        metrics=metrics, headroom_k=50, cover=0.5, run_format="trec", baseline=base,
        variants=(var,), level="document" if documents else "span",
    )  # fmt: skip
    (rb, a), (rc, b) = stored(exp, base, 1), stored(exp, var, 2)
    store = SimpleNamespace(run=lambda rid: {1: rb, 2: rc}[rid])
    choice = pair_choice(store, 1, 2, a, b, None)
    # run's own decision, through the function its comparison table calls
    result = SimpleNamespace(experiment=exp, baseline=SimpleNamespace(settings=base.settings))
    expected = primary_metric(result, SimpleNamespace(settings=var.settings))  # type: ignore[arg-type]
    if expected is None:
        assert choice.metric is None and choice.no_shared_cutoff
        assert choice.note is not None and choice.note.startswith(NO_SHARED_CUTOFF)
        assert "R@50" in choice.shared and "R@50" in choice.headroom
        return
    assert not choice.no_shared_cutoff and choice.metric is not None
    # at run's cutoff, on a metric both stored evaluations carry
    assert at(choice.metric) == (expected.k, expected.budget)
    assert choice.metric in {str(m) for m in a.metrics} & {str(m) for m in b.metrics}
    # run's metric (the lab prefers AllR at a shared budget), unless an explicit cutoff equal
    # to the baseline's own makes the recorded list ambiguous (RR@4 and RR at k = 4)
    ambiguous = any(
        (m.k is not None and m.k == base_k) or (m.budget is not None and m.budget == base_b)
        for m in metrics
    )
    if not ambiguous:
        assert choice.metric in (str(expected), f"AllR@budget={expected.budget}")
