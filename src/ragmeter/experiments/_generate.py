"""Generation in an experiment: after a variant retrieves, assemble, generate, check and compare.

For a variant with a ``[generator]`` (:class:`Answering`, called by the runner after retrieval):

1. **assemble** each golden question's context from the variant's ranked run
   (:func:`ragmeter.generation.assemble`): cut at the prompt k (else the token budget) the
   retrieval metrics are reported at, duplicates removed, in the variant's order, with passage
   headers the model cites by number;
2. **generate** one answer per question through the variant's generator, cached by (generator,
   prompt version, context hash, params) in the experiment's cache folder: a re-run of an
   unchanged experiment makes no model call. A question the generator fails on is recorded with
   its error (an empty answer that is *not* an abstention, so it counts as failed) and counted;
3. **write** ``OUTPUT/<variant>/answers.jsonl`` (ragmeter's answers format, each answer with its
   ``context`` chunk ids in prompt order and the exact ``context_text`` the model read),
   ``generations.jsonl`` (per answer: the generator, prompt, params, context hash, usage, time,
   cache hit, error) and ``chunks.jsonl`` (the chunking the ids refer to), so ``ragmeter answers
   check``, ``answers compare``, ``answers position`` and ``diagnose`` reproduce every number;
4. **check** the answers with :func:`ragmeter.answers.check_answers` (correctness against the
   reference, each citation against the cited passage and the prompt context, abstention);
5. **tabulate** the retrieval-by-answer table (:func:`ragmeter.diagnosis.table_from_report`),
   evidence in context meaning every required span is in the context the model was given;
6. **compare** with the baseline's answers, question by question, on "answer correct and
   supported" (:func:`ragmeter.answers.compare_answers`), and, when the experiment varies the
   context order, the position-of-evidence table of the generated answers
   (:func:`ragmeter.diagnosis.position_table`, positions in prompt order).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import InputError, UsageError

if TYPE_CHECKING:  # pragma: no cover
    from ..answers.paired import AnswerComparison
    from ..answers.report import AnswerReport
    from ..diagnosis._position import PositionReport
    from ..diagnosis._table import RetrievalAnswerTable
    from ..generation import AssembledContext, Generation
    from ._config import Experiment, Settings, Variant

ANSWERS_FILE = "answers.jsonl"
GENERATIONS_FILE = "generations.jsonl"
CHUNKS_FILE = "chunks.jsonl"
CHECK_FILE = "answer_check.json"
JUDGE_FILE = "judgements.jsonl"
#: errors listed by name in results and output (the count covers all of them)
SHOWN_ERRORS = 5
#: an answer's usage keys that are only measured with its token counts (cost is priced from them)
_TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens", "cost_usd")


def _has_token_counts(usage: Mapping[str, Any]) -> bool:
    """Whether an answer's usage holds its prompt and completion token counts (integers)."""
    return all(
        isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool)
        for k in ("prompt_tokens", "completion_tokens")
    )


@dataclass(frozen=True)
class VariantAnswers:
    """One variant's generated answers and everything measured on them."""

    variant: str
    generator: str  # e.g. "python mypkg.rag:answer"
    fingerprint: str
    prompt: Mapping[str, str]  # PromptTemplate.to_dict(): id, name, version, hash
    context: Mapping[str, Any]  # the ContextSpec as a dict
    params: Mapping[str, Any]
    records: tuple[Mapping[str, Any], ...]  # the lines of answers.jsonl
    generations: tuple[Generation, ...]
    report: AnswerReport
    table: RetrievalAnswerTable
    #: the paired comparison with the baseline's answers (None for the baseline)
    comparison: AnswerComparison | None = None
    #: answer outcomes by evidence position (when the experiment varies the context order)
    position: PositionReport | None = None
    seconds: float = 0.0  # wall time of the generation step
    folder: Path | None = None
    #: the assembled contexts by question id (not serialised: the records hold their text)
    contexts: Mapping[str, AssembledContext] = field(default_factory=dict, repr=False)
    #: passages cited by number or id that the context does not hold, per question
    unknown_citations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: the judge's label (None when the experiment has no [judge])
    judge: str | None = None
    #: what judging this variant's answers cost: the judge's counters' gain over this
    #: variant (HTTP requests, cache hits, retries, failures, prompt and completion tokens,
    #: cost or None without prices, replies of unknown usage: ``answers check``'s
    #: ``judge_usage``); None without a judge or for one that counts nothing (the fake judge)
    judge_usage: Mapping[str, Any] | None = None

    def judged(self) -> dict[str, dict[str, Any]]:
        """Per judge metric: answers judged, failed judgements and the mean score of the
        judgements that succeeded (a failed one counts as failed, never as a pass); answers
        not judged (a failed generation: no answer to judge) are counted apart."""
        out: dict[str, dict[str, Any]] = {}
        for name, s in (self.report.summary().get("judged") or {}).items():
            out[name] = {
                "n": s["n"],
                "failed": s["failed"],
                "mean": s["mean"],
                "not_judged": len(self.report.checks) - s["n"],
            }
        return out

    @property
    def errors(self) -> dict[str, str]:
        """Question id -> the generator's error, for the questions it failed on."""
        return {g.question_id: g.error for g in self.generations if g.error is not None}

    @property
    def model_calls(self) -> int:
        """Answers that reached the model in this run (0 on a fully cached re-run)."""
        return sum(1 for g in self.generations if not g.cached)

    @property
    def cache_hits(self) -> int:
        return sum(1 for g in self.generations if g.cached)

    def usage(self) -> dict[str, Any]:
        """Tokens, cost and attempts summed over the answers made in this run (cache hits cost
        nothing), by the judge usage's rule: an answer made without token counts (a python
        generator measures none; a server may send no ``usage``) adds no token and no cost (its
        cost would be priced from 0 tokens) and is counted in ``unknown_usage``, so the sums
        are a floor; when no answer had counts, the tokens (and the cost, with prices) are None,
        never a 0 nobody measured. A failed answer is an error, not an unknown usage."""
        out: dict[str, Any] = {}
        unknown = 0
        for g in self.generations:
            if g.cached:
                continue
            counted = _has_token_counts(g.usage)
            if not counted and g.error is None:
                unknown += 1
            for key, value in g.usage.items():
                if not counted and key in _TOKEN_KEYS:
                    continue
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    out[key] = out.get(key, 0) + value
        if unknown:
            priced = any("cost_usd" in g.usage for g in self.generations if not g.cached)
            for key in ("prompt_tokens", "completion_tokens", *("cost_usd",) * priced):
                out.setdefault(key, None)
            out["unknown_usage"] = unknown
        return out

    def seconds_per_answer(self) -> float | None:
        """Mean model time of the answers made in this run (None when all came from the cache)."""
        made = [g.seconds for g in self.generations if not g.cached and g.error is None]
        return sum(made) / len(made) if made else None

    def summary(self) -> dict[str, Any]:
        """The answer columns of the experiment's answers table (one row per variant)."""
        s = self.report.summary()
        comp = None if self.comparison is None else self.comparison.comparison
        errors = self.errors
        return {
            "variant": self.variant,
            "generator": self.generator,
            "prompt": self.prompt.get("id"),
            "order": self.context.get("order"),
            "answers": len(self.records),
            "correct": s["correct"],
            "correct_rate": s["correct_rate"],
            "ok": s["ok"],
            "ok_known": s["ok_known"],
            "ok_rate": s["ok_rate"],
            "correct_support_unknown": s["correct_support_unknown"],
            "abstained": sum(c.abstained for c in self.report.checks),
            "cites_outside_context": s["cites_outside_context"],
            "unknown_citations": sum(len(v) for v in self.unknown_citations.values()),
            "errors": len(errors),
            "model_calls": self.model_calls,
            "cache_hits": self.cache_hits,
            "seconds_per_answer": self.seconds_per_answer(),
            **self._judge_columns(),
            "vs_baseline_n": None if comp is None else comp.n,
            "delta_ok": None if comp is None else comp.mean_delta,
            "ci_low": None if comp is None else comp.ci[0],
            "ci_high": None if comp is None else comp.ci[1],
            "fixed": None if comp is None else comp.fixed,
            "broken": None if comp is None else comp.broken,
            "sign_p": None if comp is None else comp.sign_test_p,
            "verdict": None if comp is None else comp.verdict,
        }

    def _judge_columns(self) -> dict[str, Any]:
        """``judge``, ``judge_failed`` and ``judge_<metric>`` (the mean score) when judged."""
        if self.judge is None:
            return {}
        judged = self.judged()
        return {
            "judge": self.judge,
            "judge_failed": sum(j["failed"] for j in judged.values()),
            **{f"judge_{name}": j["mean"] for name, j in judged.items()},
        }

    def to_dict(self) -> dict[str, Any]:
        errors = self.errors
        return {
            "variant": self.variant,
            "generator": self.generator,
            "fingerprint": self.fingerprint,
            "prompt": dict(self.prompt),
            "context": dict(self.context),
            "params": dict(self.params),
            "summary": self.summary(),
            "check": self.report.summary(),
            "table": self.table.to_dict(),
            "vs_baseline": None if self.comparison is None else self.comparison.to_dict(),
            "position": None if self.position is None else self.position.to_dict(),
            "errors": {"count": len(errors), "first": dict(list(errors.items())[:SHOWN_ERRORS])},
            "unknown_citations": {k: list(v) for k, v in self.unknown_citations.items()},
            "judge": None if self.judge is None else {"label": self.judge, **self.judged()},
            "usage": self.usage(),
            "judge_usage": None if self.judge_usage is None else dict(self.judge_usage),
            "seconds": round(self.seconds, 3),
            "files": None
            if self.folder is None
            else {
                "answers": str(self.folder / ANSWERS_FILE),
                "generations": str(self.folder / GENERATIONS_FILE),
                "chunks": str(self.folder / CHUNKS_FILE),
                **({"judgements": str(self.folder / JUDGE_FILE)} if self.judge else {}),
            },
        }

    def judgements(self) -> list[dict[str, Any]]:
        """Every judged score (one per answer and judge metric), as judgements.jsonl holds
        them and the store keeps them with the run."""
        return [s.to_dict() for c in self.report.checks for s in c.judged.values()]


class Answering:
    """What every generating variant of one experiment run shares: the generators (one per
    distinct generator table, so a local model loads once), the cache and the baseline's
    report the others are compared with."""

    def __init__(
        self,
        exp: Experiment,
        golden: Any,
        corpus: Any,
        cache_root: Path | None,
        progress: Any,
        engine: Any = None,
    ) -> None:
        from ..engines import local

        self.exp, self.golden, self.corpus = exp, golden, corpus
        self.cache_root, self.progress = cache_root, progress
        #: where answers are made and judged (ragmeter.engines; caches stay here)
        self.engine = engine if engine is not None else local()
        self._generators: dict[str, Any] = {}
        self._baseline: AnswerReport | None = None
        orders = {(v.settings.context or {}).get("order") for v in exp.all_variants}
        self.order_varies = len(orders) > 1
        #: the experiment-wide judge (None without [judge]); replies cached under judge/
        self.judge = (
            None if exp.judge is None else self.engine.wrap_judge(exp.judge.build(cache_root))
        )

    # -- the generator -------------------------------------------------------------------
    def generator(self, s: Settings) -> Any:
        """The (cached) generator of a generator table; built once per distinct table."""
        import json

        from ..generation import make_generator

        assert s.generator is not None
        key = json.dumps(s.generator, sort_keys=True, default=str)
        if key not in self._generators:
            self._generators[key] = make_generator(
                s.generator,
                self.exp.path.parent,
                path=self.exp.path,
                cache_dir=self.cache_root,  # None: --no-cache, nothing read or written
            )
        return self._generators[key]

    # -- one variant ---------------------------------------------------------------------
    def answer(self, v: Variant, run: Any, chunking: Any, write: bool) -> VariantAnswers:
        """Assemble, generate, write, check and compare the answers of variant ``v``."""
        from ..answers import answers_from_records, check_answers, compare_answers
        from ..answers.judges._usage import usage_between, usage_reading
        from ..diagnosis._position import contexts_run, evidence_positions, position_table
        from ..diagnosis._table import table_from_report
        from ..generation import assemble, load_prompt, make_request

        s = v.settings
        t0 = time.perf_counter()
        prompt = load_prompt(s.prompt or "answer-v1", base_dir=self.exp.path.parent)
        spec = s.context_spec()
        gen_table = s.generator or {}
        params = {k: gen_table[k] for k in SAMPLING if k in gen_table}
        passages = ranked_passages(run, chunking)
        contexts = {
            q.id: assemble(q.id, passages.get(q.id, ()), spec) for q in self.golden.questions
        }
        requests = [
            make_request(q.id, q.question, contexts[q.id], prompt, params)
            for q in self.golden.questions
        ]
        gen = self.generator(s)
        with self.progress.step(f"generate {v.name} ({len(requests)} answers)", len(requests)) as (
            advance
        ):
            done = [0]

            def report(n: int, total: int) -> None:
                advance(n - done[0])
                done[0] = n

            generations = tuple(self.engine.generate(gen, requests, report))
        if len(generations) != len(requests):
            raise UsageError(
                f"generator {gen.name} returned {len(generations)} answers for "
                f"{len(requests)} questions"
            )
        unknown = {g.question_id: g.unknown_citations for g in generations if g.unknown_citations}
        records = tuple(_record(v.name, g, contexts[g.question_id]) for g in generations)
        seconds = time.perf_counter() - t0
        folder = self.exp.output / _slug(v.name) if write else None
        if folder is not None:
            _write(folder, records, generations, contexts, gen, prompt, params, chunking)
        answers = answers_from_records(
            records, variant=v.name, path=None if folder is None else folder / ANSWERS_FILE
        )
        judging: dict[str, Any] = {}
        if self.judge is not None and self.exp.judge is not None:
            judging = dict(
                judge=self.judge,
                judge_metrics=self.exp.judge.metrics,
                judge_prompts=self.exp.judge.prompt,
                judge_skip_missing=True,  # a failed generation has no answer to judge
            )
        what = "check and judge" if judging else "check"
        with self.progress.step(f"{what} {v.name}'s answers", None):
            # the judge serves every variant: this variant's usage is what its judging added
            before = usage_reading(self.judge) if judging else None
            rep = check_answers(
                answers, self.golden, corpus=self.corpus, chunks=chunking, **judging
            )
            judge_usage = usage_between(before, usage_reading(self.judge) if judging else None)
            positions = evidence_positions(
                self.golden, chunking, contexts_run(answers), cover=self.exp.cover
            )
            table = table_from_report(
                {qid: p.in_context for qid, p in positions.items()},
                rep,
                evidence_label="evidence in the prompt context (every required span)",
            )
        comparison = None
        if v.is_baseline:
            self._baseline = rep
        elif self._baseline is not None:
            comparison = compare_answers(self._baseline, rep)
        position = None
        if self.order_varies:
            position = position_table(
                positions, rep, context="the generated answers' contexts, in prompt order"
            )
        result = VariantAnswers(
            variant=v.name,
            generator=s.generation_label() or gen.name,
            fingerprint=gen.fingerprint(),
            prompt=prompt.to_dict(),
            context=spec.to_dict(),
            params=params,
            records=records,
            generations=generations,
            report=rep,
            table=table,
            comparison=comparison,
            position=position,
            seconds=seconds,
            folder=folder,
            contexts=contexts,
            unknown_citations=unknown,
            judge=None if self.judge is None else self.judge.info.label,
            judge_usage=judge_usage,
        )
        if folder is not None:
            from ._outputs import write_json

            if result.judge is not None:
                _jsonl(folder / JUDGE_FILE, result.judgements())
            write_json(result.to_dict(), folder / CHECK_FILE)
        return result


#: the generator table's sampling keys (passed per request, not to the generator factory)
SAMPLING = ("temperature", "seed", "max_tokens")


def _slug(name: str) -> str:
    from ._outputs import slug

    return slug(name)


def ranked_passages(run: Any, chunking: Any) -> dict[str, list[Any]]:
    """Each question's ranked passages (rank 1 = best, ranked as the metrics rank them)."""
    import numpy as np

    from ..generation import Passage
    from ._ranked import ranked_rows

    r = ranked_rows(run)
    items = r.item.to_pylist()
    qids = r.qid.to_pylist()
    rows = chunking.index_of(items) if items else np.zeros(0, np.int64)
    missing = [cid for cid, i in zip(items, rows, strict=True) if i < 0]
    if missing:
        raise InputError(
            f"the run ranks {len(set(missing))} id(s) that are not chunks of "
            f"{chunking.name} (e.g. '{missing[0]}'): contexts are built from chunks"
        )
    out: dict[str, list[Any]] = {}
    for qid, cid, row, rank, score in zip(qids, items, rows, r.rank, r.score, strict=True):
        i = int(row)
        out.setdefault(str(qid), []).append(
            Passage(
                cid,
                chunking.doc[i],
                int(chunking.start[i]),
                int(chunking.end[i]),
                chunking.text[i],
                int(chunking.n_tokens[i]),
                int(rank),
                float(score),
            )
        )
    return out


def _record(variant: str, g: Generation, ctx: AssembledContext) -> dict[str, Any]:
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


def _write(
    folder: Path,
    records: tuple[Mapping[str, Any], ...],
    generations: tuple[Generation, ...],
    contexts: Mapping[str, AssembledContext],
    gen: Any,
    prompt: Any,
    params: Mapping[str, Any],
    chunking: Any,
) -> None:
    fingerprint = gen.fingerprint()
    _jsonl(folder / ANSWERS_FILE, records)
    _jsonl(
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


def _jsonl(path: Path, records: Any) -> None:
    """One JSON object a line, written atomically (a killed run leaves the old file or none)."""
    import json

    from ..io._atomic import write_text_lines

    write_text_lines(path, (json.dumps(r, ensure_ascii=False) for r in records))
