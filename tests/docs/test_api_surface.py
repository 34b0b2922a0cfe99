"""The public surface is exactly what docs/api.md documents (the httpx pattern).

docs/api.md has one ``## `module` `` section per public namespace and one ``- `name`: ...`` line
per public name. Each section must list exactly that module's ``__all__``; every listed name must
resolve; every top-level name must be the very object its layer exports; no deliberate error
escapes the exception tree.
"""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

import ragmeter

API = Path(__file__).resolve().parents[2] / "docs" / "api.md"
SECTION = re.compile(r"^## `(ragmeter(?:\.[a-z_.]+)?)`\s*$")
ENTRY = re.compile(r"^- `([A-Za-z_][A-Za-z0-9_]*)`: \S")


def documented() -> dict[str, list[str]]:
    """module -> names in its section, in page order (duplicates kept so a test can see them)."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    for line in API.read_text(encoding="utf-8").splitlines():
        if m := SECTION.match(line):
            current = m.group(1)
            assert current not in out, f"docs/api.md: two sections for {current}"
            out[current] = []
        elif line.startswith("## "):
            current = None
        elif current and (m := ENTRY.match(line)):
            out[current].append(m.group(1))
    return out


DOCS = documented()


def test_the_page_documents_every_public_package() -> None:
    expected = {
        "ragmeter",
        "ragmeter.io",
        "ragmeter.metrics",
        "ragmeter.data",
        "ragmeter.chunking",
        "ragmeter.labels",
        "ragmeter.retrieval",
        "ragmeter.paired",
        "ragmeter.explain",
        "ragmeter.answers",
        "ragmeter.answers.judges",
        "ragmeter.diagnosis",
        "ragmeter.experiments",
        "ragmeter.engines",
        "ragmeter.store",
    }
    assert set(DOCS) == expected


@pytest.mark.parametrize("module", sorted(DOCS))
def test_all_is_exactly_the_documented_surface(module: str) -> None:
    mod = importlib.import_module(module)
    names = DOCS[module]
    assert len(names) == len(set(names)), f"{module}: a name is listed twice in docs/api.md"
    exported = list(mod.__all__)
    assert len(exported) == len(set(exported)), f"{module}.__all__ lists a name twice"
    missing_from_docs = sorted(set(exported) - set(names))
    not_exported = sorted(set(names) - set(exported))
    assert not missing_from_docs and not not_exported, (
        f"{module}: in __all__ but not in docs/api.md: {missing_from_docs}; "
        f"in docs/api.md but not in __all__: {not_exported}"
    )


@pytest.mark.parametrize("module", sorted(DOCS))
def test_every_listed_name_resolves(module: str) -> None:
    mod = importlib.import_module(module)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, f"{module}.{name}"
    assert sorted(dir(ragmeter)) == sorted(ragmeter.__all__)


def test_top_level_names_are_the_objects_their_layer_exports() -> None:
    """``ragmeter.X`` is ``ragmeter.<layer>.X``: one object, whichever door a user takes."""
    aliases = {"parse_metric": ("ragmeter.metrics", "parse")}
    layer_of: dict[str, str] = {}
    for module, names in DOCS.items():
        if module != "ragmeter":
            for n in names:
                layer_of.setdefault(n, module)
    errors = {
        "RagmeterError",
        "InputError",
        "ValidationError",
        "UsageError",
        "NotFoundError",
        "MissingExtraError",
        "VersionMismatchError",
        "StoreSchemaError",
        "RagmeterWarning",
        "Problem",
    }
    for name in ragmeter.__all__:
        if name == "__version__" or name in errors:
            continue
        module, attr = aliases.get(name, (layer_of.get(name), name))
        assert module is not None, f"ragmeter.{name} is listed in no layer's section"
        assert getattr(ragmeter, name) is getattr(importlib.import_module(module), attr), name


def test_the_error_tree() -> None:
    """Every deliberate error is a RagmeterError; the compatibility bases are documented."""
    from ragmeter import (
        InputError,
        MissingExtraError,
        NotFoundError,
        RagmeterError,
        RagmeterWarning,
        UsageError,
        ValidationError,
        VersionMismatchError,
    )

    for cls in (
        InputError,
        ValidationError,
        UsageError,
        NotFoundError,
        MissingExtraError,
        VersionMismatchError,
    ):
        assert issubclass(cls, RagmeterError)
    assert issubclass(ValidationError, InputError) and issubclass(NotFoundError, UsageError)
    assert issubclass(NotFoundError, KeyError) and issubclass(MissingExtraError, ImportError)
    assert not issubclass(UsageError, ValueError) and not issubclass(InputError, ValueError)
    assert issubclass(RagmeterWarning, UserWarning)
    # a NotFoundError prints its message, not KeyError's quoted repr
    assert (
        str(NotFoundError("document 'x' is not in the corpus"))
        == "document 'x' is not in the corpus"
    )


def test_lookups_and_bad_counts_raise_the_tree_not_bare_builtins(tmp_path: Path) -> None:
    from ragmeter import Corpus, Document, GoldenSet, NotFoundError, Question, UsageError
    from ragmeter.answers.judges import FakeJudge, JudgeRequest
    from ragmeter.paired import sign_test

    corpus = Corpus([Document(id="d", text="x")])
    with pytest.raises(NotFoundError, match="document 'nope' is not in the corpus"):
        corpus["nope"]
    golden = GoldenSet([Question(id="q", question="?", answerable=False)])
    with pytest.raises(NotFoundError, match="question 'nope' is not in the golden set"):
        golden["nope"]
    with pytest.raises(UsageError, match="non-negative"):
        sign_test(-1, 2)
    with pytest.raises(UsageError, match="no rule for task 'summarise'"):
        FakeJudge().judge([JudgeRequest("summarise", (), {"answer": "a"})])
    # a missing input is still a failed reply, not an exception
    reply = FakeJudge().judge([JudgeRequest("correctness", (), {"answer": "a"})])[0]
    assert not reply.ok and "missing input" in (reply.error or "")


def test_ragmeter_warning_is_what_accepted_input_warns_with() -> None:
    from ragmeter import RagmeterWarning
    from ragmeter.io import to_run

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        to_run({"q": {"a": 1.0}}, duplicates="best")
        to_run(pa.table({"qid": ["q", "q"], "doc": ["a", "a"], "score": [1.0, 2.0]}))  # repeated
    assert len(caught) == 1 and issubclass(caught[0].category, RagmeterWarning)


def test_asking_a_result_for_what_it_does_not_hold_names_what_it_has() -> None:
    from ragmeter import InputError, NotFoundError, evaluate
    from ragmeter.paired import sweep_values

    e = evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, "RR")
    with pytest.raises(InputError, match=r"P@3 was not computed.*have: RR"):
        e.mean("P@3")
    s = sweep_values({"A": [1.0, 2.0], "B": [2.0, 1.0]}, [1, 2], "R")
    with pytest.raises(NotFoundError, match=r"no run 'C'.*A, B"):
        s.at("C", 1)
    with pytest.raises(NotFoundError, match=r"no cutoff 5.*1, 2"):
        s.at("A", 5)
