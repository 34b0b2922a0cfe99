"""Where the demo finds the fare-rules example, and where it writes.

In a checkout the example is ``examples/fare-rules`` (the current folder's, else the source
tree's) and the demo's caches sit beside it, as they always have. Installed from a wheel there
is no checkout: the example ships inside the package (``ragmeter/_resources/examples/fare-rules``,
copied there at build time by setup.py from the repository's examples/, its only copy in git).
The installed package is never written to, nor is the current folder: the demo copies the
example into its cache folder (``--cache-dir``, else the platform's cache folder: Linux
``$XDG_CACHE_HOME/ragmeter`` or ``~/.cache/ragmeter``, macOS ``~/Library/Caches/ragmeter``,
Windows ``%LOCALAPPDATA%\\ragmeter\\Cache``) and runs it there, so its chunkings, indexes,
``demo --lab``'s store and anything the lab writes beside the experiment stay in that folder.
The example's embeddings ship beside it (``demo-embeddings.npz``, see ``_embeddings``): the demo
copies them into the experiment's cache folder (:func:`experiment_cache`) before it runs.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from ..._errors import InputError

#: the example's folder name, in a checkout's examples/ and in the demo's cache folder
EXAMPLE = "fare-rules"
#: the example inside the installed package (absent from an editable install: see setup.py)
PACKAGED = ("_resources", "examples", EXAMPLE)


@dataclass(frozen=True)
class DemoExample:
    """The example folder the demo runs, and the cache folder it passes on (``None``: the
    experiment's own default, ``.ragmeter-cache`` beside it, as in a checkout)."""

    folder: Path
    cache_dir: Path | None
    packaged: bool = False


def user_cache_dir(env: dict[str, str] | None = None, platform: str | None = None) -> Path:
    """The platform's cache folder for ragmeter (``env``/``platform``: for tests)."""
    env = dict(os.environ) if env is None else env
    platform = sys.platform if platform is None else platform
    home = Path(env.get("HOME") or Path.home())
    if platform.startswith("win"):
        local = env.get("LOCALAPPDATA")
        return (Path(local) if local else home / "AppData" / "Local") / "ragmeter" / "Cache"
    if platform == "darwin":
        return home / "Library" / "Caches" / "ragmeter"
    xdg = env.get("XDG_CACHE_HOME")
    # the XDG rule: a relative value is ignored
    return (Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".cache") / "ragmeter"


def packaged_example() -> Traversable | None:
    """The example's files inside the installed package, or None (an editable install)."""
    where = files("ragmeter").joinpath(*PACKAGED)
    return where if where.joinpath("experiment.toml").is_file() else None


def checkout_example() -> Path | None:
    """./examples/fare-rules, else the source tree's (an editable install or a checkout)."""
    for c in (
        Path.cwd() / "examples" / EXAMPLE,
        Path(__file__).resolve().parents[4] / "examples" / EXAMPLE,
    ):
        if (c / "experiment.toml").is_file():
            return c
    return None


def find_example(explicit: Path | None = None, cache_dir: Path | None = None) -> DemoExample:
    """The example the demo runs: ``explicit`` (``--example``), else a checkout's, else the
    package's, copied into the cache folder (``cache_dir``, else :func:`user_cache_dir`)."""
    if explicit is not None:
        if (explicit / "experiment.toml").is_file():
            return DemoExample(explicit, cache_dir)
        raise InputError(
            "the fare-rules example was not found here (no experiment.toml); pass --example "
            "PATH/TO/examples/fare-rules, or leave --example out to use the one ragmeter ships",
            path=explicit,
        )
    found = checkout_example()
    if found is not None:
        return DemoExample(found, cache_dir)
    shipped = packaged_example()
    if shipped is None:
        raise InputError(
            "the fare-rules example was not found: this ragmeter was installed without it; "
            "reinstall from a wheel or pass --example PATH/TO/examples/fare-rules",
            path=Path.cwd() / "examples" / EXAMPLE,
        )
    root = cache_dir if cache_dir is not None else user_cache_dir()
    return DemoExample(copy_example(shipped, root / EXAMPLE), root, packaged=True)


def experiment_cache(found: DemoExample) -> Path:
    """The cache folder the demo's experiment reads and writes: the demo's (an installed
    package, ``--cache-dir``), else the experiment file's ``cache``, else ``.ragmeter-cache``
    beside it (``run_experiment``'s rule)."""
    if found.cache_dir is not None:
        return found.cache_dir
    from ...experiments import load_experiment

    exp = load_experiment(found.folder / "experiment.toml")
    return exp.cache or found.folder / ".ragmeter-cache"


def copy_example(source: Traversable, target: Path) -> Path:
    """The packaged example's files into ``target`` (a file already equal is left alone, one
    that differs is replaced: the folder is the demo's cache, not the user's work); ``target``."""
    stack: list[tuple[Traversable, Path]] = [(source, target)]
    while stack:
        src, dst = stack.pop()
        dst.mkdir(parents=True, exist_ok=True)
        for item in src.iterdir():
            if item.is_dir():
                stack.append((item, dst / item.name))
                continue
            data = item.read_bytes()
            out = dst / item.name
            if out.is_file() and out.read_bytes() == data:
                continue
            # a demo running beside this one reads whole files, never half-written ones
            fd, tmp = tempfile.mkstemp(dir=dst, prefix=f".{item.name}.")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, out)
    return target
