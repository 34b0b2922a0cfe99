"""A store recorded from the fare-rules example the way a user records it, shared by the lab's
view tests and the report's tests: ``ragmeter run`` (through ``run_and_record`` with the
example's retrieval cache, so the runs come back exactly as the example made them) and
``ragmeter answers check`` of the example's two answer sets, plus the ``ragmeter diagnose`` and
``ragmeter sweep`` lines whose printed numbers the pages must repeat."""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from ragmeter.cli import app as cli_app

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fare-rules"


def cli(*args: Any) -> Any:
    result = CliRunner().invoke(cli_app, [str(a) for a in args])
    assert result.exit_code == 0, (args, result.output)
    return result


def cli_json(*args: Any) -> Any:
    out = cli(*args).stdout
    return json.loads(out[out.index("{") if out.lstrip().startswith("{") else out.index("[") :])


@dataclass
class FareStore:
    """The recorded example: its store URL, ``{variant name: run id}`` and its files."""

    root: Path
    url: str
    ids: dict[str, int]
    chunks: Path  #: the baseline's 300-token chunking (``ragmeter chunk -c tokens:300:0``)
    answers: dict[str, int] = field(default_factory=dict)  #: answer-set name -> stored id

    def common(self, k: int = 4) -> list[Any]:
        """``--golden --corpus --chunks --k``, as ``answers check`` and ``diagnose`` take them."""
        r = self.root
        return ["--golden", r / "golden.jsonl", "--corpus", r / "corpus.jsonl",
                "--chunks", self.chunks, "--k", k]  # fmt: skip

    def run_file(self, variant: str) -> Path:
        return self.root / "runs" / variant.replace(" ", "-") / "run.trec"

    def diagnose(self, answers: str = "baseline", variant: str = "baseline") -> Any:
        """What ``ragmeter diagnose ... --large-k 20 --answers A -f json`` prints."""
        return cli_json(
            "diagnose", *self.common(), "--run", self.run_file(variant), "--large-k", 20,
            "--answers", EXAMPLE / "answers" / f"{answers}.jsonl", "-f", "json",
        )  # fmt: skip


def record_fare_rules(root: Path) -> FareStore:
    """Record the example into a fresh SQLite store under ``root``: its four runs, then the
    baseline's and the reranker's answers checked against their runs' prompts at k = 4."""
    from ragmeter import Store
    from ragmeter.workflows.experiment import run_and_record

    for name in ("golden.jsonl", "corpus.jsonl", "experiment.toml"):
        shutil.copy(EXAMPLE / name, root / name)
    url = f"sqlite:///{root / 'lab.db'}"
    with Store.open(url) as store, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, ids = run_and_record(
            store, root / "experiment.toml", cache_dir=EXAMPLE / ".ragmeter-cache"
        )
    chunks = root / "chunks-300.jsonl"
    cli("chunk", root / "corpus.jsonl", "-c", "tokens:300:0", "-o", chunks)
    fare = FareStore(root, url, ids, chunks)
    for n, (answers, variant) in enumerate((("baseline", "baseline"), ("rerank", "reranker")), 1):
        cli("answers", "check", EXAMPLE / "answers" / f"{answers}.jsonl", *fare.common(),
            "--run", fare.run_file(variant), "--db", url, "-f", "json")  # fmt: skip
        fare.answers[answers] = n
    return fare
