"""Where an experiment may write: one folder per variant, and nothing outside its own folder.

Two rules an experiment file is checked against before anything runs:

- **one folder per variant**: each variant's outputs go to ``output/<slug>/`` (:func:`slug`
  lower-cases the name and turns runs of other characters into ``-``), so two names that
  reduce to one folder name ("Baseline" and "baseline", "small" and "Small!") would overwrite
  each other's run, config and evaluation, and ``summary.json`` would point both at one run.
  Such a file is refused, naming both variants and their lines.
- **writes stay inside the experiment's folder**: ``output`` and ``cache`` (what ``ragmeter run``
  writes) must resolve, symbolic links followed, to the folder of the experiment file or below
  it; an experiment file from elsewhere cannot make ragmeter write to ``/etc`` or ``~``. The
  user allows it explicitly (``ragmeter run --allow-outside``, ``run_experiment(...,
  allow_outside=True)``); a ``--cache-dir`` given on the command line is the user's own choice
  and is not checked. Reads (``golden``, ``corpus``, ``beir``, ``run``, ``chunks``, a model
  ``path``) may point anywhere: data often lives beside, not below, the experiment.
- **never over the experiment store**, ``--allow-outside`` or not: ``output``, its
  ``summary.json`` and variant folders, and ``cache`` may not be the store's database (or a
  companion file of it) nor lie in its artifacts folder (:func:`check_store_writes`, called by
  the command that knows the store: ``ragmeter run``; :mod:`ragmeter.store._protect` says which
  places a store has).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from .._errors import InputError
from ._outputs import slug

#: the keys whose paths ragmeter writes to
WRITE_KEYS = ("output", "cache")


class _Checker(Protocol):
    def add(self, message: str, field: str) -> None: ...

    def line(self, field: str) -> int | None: ...


def inside(target: Path, folder: Path) -> bool:
    """True when ``target`` (resolved, links followed) is ``folder`` or below it."""
    root = Path(os.path.realpath(folder))
    resolved = Path(os.path.realpath(target))
    return resolved == root or root in resolved.parents


class _Guard(Protocol):
    """The experiment store's places (``ragmeter.store._protect.Protected``: a layer above, so
    named by what it does)."""

    def clash(self, target: Path) -> str | None: ...

    def holding(self, folder: Path) -> str | None: ...


def check_store_writes(exp: Any, guard: _Guard, *, cache: Path | None = None) -> None:
    """Raise :class:`InputError` at the field (``output`` or ``cache``) when a folder or file
    the experiment ``exp`` would write is a place of the store ``guard`` protects: ``output``,
    ``output/summary.json``, each variant's folder (nor may a variant folder hold the store),
    and the cache folder (``cache``: a folder given on the command line instead of the file's,
    checked by that option already)."""
    output = Path(exp.output)
    hits: list[tuple[str, Path, str | None]] = [
        ("output", output, guard.clash(output)),
        ("output", output / "summary.json", guard.clash(output / "summary.json")),
    ]
    for v in exp.all_variants:
        folder = output / slug(v.name)
        hits.append(("output", folder, guard.clash(folder) or guard.holding(folder)))
    if cache is None and exp.cache is not None:
        hits.append(("cache", Path(exp.cache), guard.clash(Path(exp.cache))))
    for key, where, what in hits:
        if what is None:
            continue
        from ._toml_lines import key_lines, line_of

        try:
            line = line_of(key_lines(Path(exp.path).read_text(encoding="utf-8")), (key,))
        except (OSError, UnicodeDecodeError):
            line = None
        raise InputError(
            f"'{key}' would write {where}, which {what}: ragmeter never writes over the "
            "experiment store; choose another folder",
            path=exp.path,
            line=line,
            field=key,
        )


def check_writes(
    values: dict[str, str | None], base: Path, ck: _Checker, *, allow_outside: bool
) -> None:
    """Each set write key (``output``, ``cache``) must name a folder (not an existing file) and,
    unless ``allow_outside``, stay inside ``base``; see the module doc."""
    for key in WRITE_KEYS:
        value = values.get(key)
        if value is None:
            continue
        target = base / value
        if target.exists() and not target.is_dir():
            ck.add(f"'{key}' = {value!r} names a file ({target}); it must name a folder", key)
        elif not allow_outside and not inside(target, base):
            ck.add(
                f"'{key}' = {value!r} is outside the experiment's folder ({base.resolve()}): "
                "ragmeter writes only inside it unless allowed (ragmeter run --allow-outside, "
                "or run_experiment(..., allow_outside=True))",
                key,
            )


def check_folders(named: list[tuple[str, str]], ck: _Checker) -> None:
    """``named``: (field of the name, variant name) in file order, the baseline first. Two
    names with one folder name are reported at the later one, naming both and their lines."""
    first: dict[str, tuple[str, str]] = {}
    for field, name in named:
        folder = slug(name)
        if folder not in first:
            first[folder] = (field, name)
            continue
        other_field, other = first[folder]
        if other == name:
            continue  # the same name twice is reported as such
        where = ck.line(other_field)
        at = f" (line {where})" if where is not None else ""
        ck.add(
            f"variant names '{other}'{at} and '{name}' both write to the folder "
            f"'{folder}/': rename one so each variant has its own outputs",
            field,
        )
