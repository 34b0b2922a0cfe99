"""The public surface: every exported name resolves, extras named in errors exist, imports are
light."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import ragmeter
from ragmeter import MissingExtraError
from ragmeter._extras import EXTRAS, require

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ragmeter.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(ragmeter, name) is not None


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        ragmeter.no_such_thing  # noqa: B018


def test_extras_named_in_errors_exist_in_pyproject() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for module, (extra, package) in EXTRAS.items():
        assert extra in extras, f"{module}: extra [{extra}] is not in pyproject.toml"
        listed = " ".join(extras[extra]).lower()
        assert package.lower() in listed or any(e.startswith("ragmeter[") for e in extras[extra]), (
            f"{package} not in [{extra}]"
        )


def test_missing_extra_names_the_install_command() -> None:
    EXTRAS["_ragmeter_absent_module_"] = ("dense", "absent-package")
    try:
        with pytest.raises(MissingExtraError, match=r"pip install 'ragmeter\[dense\]'"):
            require("_ragmeter_absent_module_", "a test")
    finally:
        del EXTRAS["_ragmeter_absent_module_"]


def test_import_loads_nothing_heavy() -> None:
    code = (
        "import sys, ragmeter; heavy = [m for m in ('numpy', 'pyarrow', 'scipy', 'pydantic', "
        "'rich', 'typer', 'onnxruntime', 'bm25s') if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
