"""The files a generating variant writes under ``OUTPUT/<variant>/``: its answers, how each was
made and the chunking the answers' ids refer to, so ``ragmeter answers check``, ``answers
compare``, ``answers position`` and ``diagnose`` reproduce every number from them.

- ``answers.jsonl``: ragmeter's answers format, each answer with its ``context`` chunk ids in
  prompt order and the exact ``context_text`` the model read;
- ``generations.jsonl``: per answer, the generator's fingerprint, the prompt, the params, the
  context hash, the duplicates dropped, the usage (null for a count the backend did not
  report), the seconds, the cache hit and the error;
- ``chunks.jsonl``: the chunking;
- ``answer_check.json`` and ``judgements.jsonl``: written by the caller once the answers are
  checked (and judged).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ..generation import AssembledContext, Generation

ANSWERS_FILE = "answers.jsonl"
GENERATIONS_FILE = "generations.jsonl"
CHUNKS_FILE = "chunks.jsonl"
CHECK_FILE = "answer_check.json"
JUDGE_FILE = "judgements.jsonl"


def answer_record(variant: str, g: Generation, ctx: AssembledContext) -> dict[str, Any]:
    """One line of answers.jsonl. A failed generation is an empty answer that is explicitly
    not an abstention, so it is scored as failed (and counted apart by its error)."""
    rec: dict[str, Any] = {"id": g.question_id, "answer": g.text}
    if g.error is not None:
        rec["abstained"] = False
    rec["citations"] = [{"chunk": cid} for cid in g.citations]
    rec["context"] = list(ctx.ids)
    rec["context_text"] = ctx.text
    rec["variant"] = variant
    return rec


def write_answer_files(
    folder: Path,
    records: tuple[Mapping[str, Any], ...],
    generations: tuple[Generation, ...],
    contexts: Mapping[str, AssembledContext],
    gen: Any,
    prompt: Any,
    params: Mapping[str, Any],
    chunking: Any,
) -> None:
    """answers.jsonl, generations.jsonl and chunks.jsonl of one variant in ``folder``."""
    fingerprint = gen.fingerprint()
    write_jsonl(folder / ANSWERS_FILE, records)
    write_jsonl(
        folder / GENERATIONS_FILE,
        [
            {
                "id": g.question_id,
                "generator": fingerprint,
                "prompt": prompt.key,
                "params": dict(params),
                "context_hash": contexts[g.question_id].hash,
                "dropped_duplicates": list(contexts[g.question_id].dropped),
                "usage": dict(g.usage),
                "seconds": round(g.seconds, 4),
                "cached": g.cached,
                "error": g.error,
            }
            for g in generations
        ],
    )
    chunking.save(folder / CHUNKS_FILE)


def write_jsonl(path: Path, records: Iterable[Any]) -> None:
    """One JSON object a line, written atomically (a killed run leaves the old file or none)."""
    import json

    from ..io import write_text_lines

    write_text_lines(path, (json.dumps(r, ensure_ascii=False) for r in records))
