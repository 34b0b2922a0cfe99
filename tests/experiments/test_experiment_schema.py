"""Experiment-file validation: every field error names the TOML line and the dotted field, and
every problem of a file is reported at once.

The property test builds valid experiment files (keys shuffled, blank lines, comments, a
multi-line string holding decoy ``[baseline]`` / ``k = 0`` lines), plants one or more faults at
known lines and expects exactly those (line, field) pairs back. The table-driven test covers the
other ways TOML spells a key: dotted keys, sub-table headers, inline tables, quoted keys,
multi-line arrays, a table written inline at the top level, and a missing key (its table's
header line).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter import ValidationError
from ragmeter.experiments import load_experiment

REPO = Path(__file__).resolve().parents[2]

# -- faults: (key, bad TOML value, dotted field below the table, message fragment) --------------
TOP_FAULTS = [
    ("colour", '"blue"', "colour", "unknown key 'colour'"),
    ("k", "0", "k", "'k' must be a positive integer, got 0"),
    ("budget", "0", "budget", "'budget' must be a positive integer"),
    ("headroom_k", '"x"', "headroom_k", "'headroom_k' must be a positive integer, got 'x'"),
    ("cover", "1.5", "cover", "'cover' must be a number in (0, 1], got 1.5"),
    ("cover", '"half"', "cover", "'cover' must be a number in (0, 1]"),
    ("metrics", '["R", "Recal"]', "metrics", "metric 'Recal'"),
    ("metrics", "[]", "metrics", "'metrics' must be a list of metric names"),
    ("run_format", '"csv"', "run_format", "'run_format' must be one of trec, parquet"),
    ("level", '"pages"', "level", "'level' must be one of span, document"),
]
TABLE_FAULTS = [
    ("colour", "1", "colour", "unknown key 'colour'; a variant may set: chunker"),
    ("depth", "0", "depth", "'depth' must be a positive integer, got 0"),
    ("depth", '"deep"', "depth", "'depth' must be a positive integer, got 'deep'"),
    ("k", "-3", "k", "'k' must be a positive integer, got -3"),
    ("budget", "0", "budget", "'budget' must be a positive integer"),
    ("chunker", '"tokenz:100:0"', "chunker", "bad chunker name 'tokenz:100:0'"),
    ("chunker", "3", "chunker", "'chunker' must be a chunker name such as \"tokens:300:0\""),
    (
        "retriever",
        '{ kind = "bm25", colour = 1 }',
        "retriever.colour",
        "unknown option 'colour' for kind 'bm25'",
    ),
    (
        "retriever",
        '{ kind = "bm25", k1 = "high" }',
        "retriever.k1",
        "'k1' must be int or float, got 'high'",
    ),
    ("retriever", '"splade"', "retriever", "unknown name 'splade'"),
    (
        "reranker",
        '{ kind = "bi-encoder", top = 0 }',
        "reranker.top",
        "'top' must be a positive integer",
    ),
]

TOP = [
    'name = "property"',
    'golden = "golden.jsonl"',
    'corpus = "corpus.jsonl"',
    "k = 4",
    "budget = 1200",
    "headroom_k = 20",
    'metrics = ["R", "nDCG"]',
]
BASELINE = ['chunker = "tokens:300:0"', 'retriever = "bm25"', "depth = 50"]
DECOY = ['description = """', "[baseline]", "k = 0", '[[variant]]"""']


def _variant(i: int) -> list[str]:
    return [f'name = "v{i}"', f"k = {4 + i}"]


@st.composite
def experiments(draw: st.DrawFn) -> tuple[str, set[tuple[int, str]], list[str]]:
    """A file with 1-3 faults: the text, the expected (line, field) pairs, message fragments."""
    n_variants = draw(st.integers(1, 3))
    tables: list[tuple[str, str, list[str]]] = [
        ("", "", list(TOP)),
        ("[baseline]", "baseline.", list(BASELINE)),
    ]
    tables += [("[[variant]]", f"variant[{i}].", _variant(i)) for i in range(1, n_variants + 1)]
    slots = [(0, f) for f in range(len(TOP_FAULTS))] + [
        (t, f) for t in range(1, len(tables)) for f in range(len(TABLE_FAULTS))
    ]
    chosen = draw(
        st.lists(
            st.sampled_from(slots),
            min_size=1,
            max_size=3,
            unique_by=lambda s: (s[0], (TOP_FAULTS if s[0] == 0 else TABLE_FAULTS)[s[1]][0]),
        )
    )
    planted: dict[int, list[tuple[str, str, str]]] = {}
    for t, f in chosen:
        key, value, field, fragment = (TOP_FAULTS if t == 0 else TABLE_FAULTS)[f]
        body = tables[t][2]
        line = f"{key} = {value}"
        same = [i for i, ln in enumerate(body) if ln.startswith(f"{key} =")]
        if same:  # TOML keys are unique per table: replace the valid line
            body[same[0]] = line
        else:
            body.insert(draw(st.integers(0, len(body))), line)
        planted.setdefault(t, []).append((line, tables[t][1] + field, fragment))
    lines: list[str] = []
    expected: set[tuple[int, str]] = set()
    fragments: list[str] = []
    for t, (header, _, body) in enumerate(tables):
        if header:
            lines += [""] * draw(st.integers(0, 1)) + [header]
        if t > 0 and draw(st.booleans()):
            lines += DECOY  # a multi-line string whose lines look like a table and a key
        for ln in draw(st.permutations(body)):
            if draw(st.integers(0, 4)) == 0:
                lines.append("# " + ln)  # a commented-out copy must not be taken for the key
            lines.append(ln + (" # note" if draw(st.booleans()) else ""))
            for bad, field, fragment in planted.get(t, []):
                if ln == bad:
                    expected.add((len(lines), field))
                    fragments.append(fragment)
    return "\n".join(lines) + "\n", expected, fragments


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=experiments())
def test_every_planted_fault_is_reported_at_its_line_and_field(tmp_path, case) -> None:
    text, expected, fragments = case
    path = tmp_path / "experiment.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        load_experiment(path, warn=False)
    problems = info.value.problems
    assert {(p.line, p.field) for p in problems} == expected, text
    messages = " | ".join(p.message for p in problems)
    for fragment in fragments:
        assert fragment in messages, (fragment, text)
    assert all(p.path == str(path) for p in problems)


def test_a_clean_generated_file_loads(tmp_path) -> None:
    """The property's base file is valid: every reported problem comes from a planted fault."""
    text = (
        "\n".join(
            [
                *TOP,
                "[baseline]",
                *BASELINE,
                "[[variant]]",
                *DECOY,
                *_variant(1),
                "[[variant]]",
                *_variant(2),
            ]
        )
        + "\n"
    )
    path = tmp_path / "experiment.toml"
    path.write_text(text, encoding="utf-8")
    exp = load_experiment(path, warn=False)
    assert [v.settings.k for v in exp.all_variants] == [4, 5, 6]
    assert exp.variants[0].description.startswith("[baseline]\nk = 0")


HEAD = """\
golden = "golden.jsonl"
corpus = "corpus.jsonl"
k = 4
headroom_k = 20
"""  # 4 lines: each case's own text starts at line 5

LAYOUTS = [
    # dotted keys inside a table
    (
        '[baseline]\nchunker = "tokens:300:0"\nretriever.kind = "bm25"\nretriever.colour = 1\n',
        8,
        "baseline.retriever.colour",
        "unknown option 'colour'",
    ),
    # a sub-table header for the retriever
    (
        '[baseline]\nchunker = "tokens:300:0"\n\n[baseline.retriever]\nkind = "bm25"\n'
        'k1 = "high"\n',
        10,
        "baseline.retriever.k1",
        "'k1' must be int or float",
    ),
    # a sub-table of the 2nd [[variant]]
    (
        '[baseline]\nchunker = "tokens:300:0"\nretriever = "bm25"\n[[variant]]\nname = "a"\nk = 5\n'
        '[[variant]]\nname = "b"\n[variant.reranker]\nkind = "bi-encoder"\ntop = 0\n',
        15,
        "variant[2].reranker.top",
        "'top' must be a positive integer",
    ),
    # an inline table nested in an inline array spread over lines
    (
        '[baseline]\nchunker = "tokens:300:0"\nretriever = { kind = "bm25" }\n[[variant]]\n'
        'name = "h"\nretriever = { kind = "hybrid", of = [\n  "bm25",\n'
        '  { kind = "dense", colour = 1 },\n] }\n',
        12,
        "variant[1].retriever.of[1].colour",
        "unknown option 'colour' for kind 'dense'",
    ),
    # the whole baseline written inline at the top level (before any header)
    (
        'baseline = { chunker = "tokens:300:0", retriever = "bm25", depth = 0 }\n',
        5,
        "baseline.depth",
        "'depth' must be a positive integer",
    ),
    # a quoted key
    (
        '[baseline]\nchunker = "tokens:300:0"\nretriever = "bm25"\n"colour" = 1\n',
        8,
        "baseline.colour",
        "unknown key 'colour'",
    ),
    # a bad metric in a multi-line array is reported at its own line, field 'metrics'
    (
        'metrics = [\n  "R",\n  "Recal",\n]\n[baseline]\nchunker = "tokens:300:0"\n'
        'retriever = "bm25"\n',
        7,
        "metrics",
        "metric 'Recal'",
    ),
    # a missing key is reported at its table's header line
    (
        '[baseline]\nchunker = "tokens:300:0"\nretriever = "bm25"\n\n[[variant]]\nk = 5\n'
        "[[variant]]\ndepth = 60\n",
        11,
        "variant[2].name",
        "every variant needs a name",
    ),
    # a string value that holds '=' and '[' is not taken for a key or a header
    (
        '[baseline]\nchunker = "tokens:300:0"\nretriever = "bm25"\ndescription = "k = 0 [x]"\n'
        "k = 0\n",
        9,
        "baseline.k",
        "'k' must be a positive integer",
    ),
]


@pytest.mark.parametrize(("body", "line", "field", "fragment"), LAYOUTS)
def test_each_toml_layout_reports_the_line_of_its_key(
    tmp_path, body, line, field, fragment
) -> None:
    path = tmp_path / "experiment.toml"
    path.write_text(HEAD + body, encoding="utf-8")
    with pytest.raises(ValidationError) as info:
        load_experiment(path, warn=False)
    found = [p for p in info.value.problems if p.field == field]
    assert found, info.value.problems
    assert found[0].line == line and fragment in found[0].message, found[0]


def test_several_problems_in_one_file_are_all_reported_in_file_order(tmp_path) -> None:
    path = tmp_path / "experiment.toml"
    path.write_text(
        """\
golden = "golden.jsonl"
corpus = "corpus.jsonl"
k = 4
cover = 2
metrics = ["R", "Recal", "nDCG@x"]

[baseline]
chunker = "tokenz:300"
retriever = { kind = "bm25", b = 3 }
depth = 0

[[variant]]
name = "a"
budget = -1

[[variant]]
name = "b"
reranker = { kind = "cross-encoder" }
shape = "round"
""",
        encoding="utf-8",
    )
    with pytest.raises(ValidationError) as info:
        load_experiment(path, warn=False)
    got = [(p.line, p.field) for p in info.value.problems]
    assert got == [
        (4, "cover"),
        (5, "metrics"),
        (5, "metrics"),
        (8, "baseline.chunker"),
        (9, "baseline.retriever.b"),
        (10, "baseline.depth"),
        (14, "variant[1].budget"),
        (18, "variant[2].reranker.path"),
        (19, "variant[2].shape"),
    ]
    text = str(info.value)
    assert "9 problem(s)" in text and f"{path}:18: field 'variant[2].reranker.path'" in text


SCHEMAS = ("ragmeter.experiments._schema", "ragmeter.retrieval._spec_schema")


def test_the_schema_models_load_with_load_experiment_not_with_import_ragmeter() -> None:
    """``import ragmeter`` loads neither pydantic nor the schema models; importing the
    retrieval and experiments packages does not build the models either."""
    code = (
        "import sys, ragmeter; a = 'pydantic' in sys.modules; "
        "import ragmeter.retrieval, ragmeter.experiments; "
        f"print(a, [m for m in {SCHEMAS!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False []"
    code = (
        "import sys, ragmeter.experiments as e; e.load_experiment('examples/fare-rules/"
        f"experiment.toml', warn=False); print(all(m in sys.modules for m in {SCHEMAS!r}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout
    assert out.strip() == "True"
