"""Generation in an experiment: after a variant retrieves, assemble, generate, check and compare.

For a variant with a ``[generator]`` (:class:`Answering`, called by the runner after retrieval):

1. **assemble** each golden question's context from the variant's ranked run
   (:func:`ragmeter.generation.assemble`): cut at the prompt k (else the token budget) the
   retrieval metrics are reported at, duplicates removed, in the variant's order, with passage
   headers the model cites by number. A variant whose ``context.source`` is an ablation
   (:func:`ragmeter.generation.source_context`) reads instead the question's labelled evidence
   extended to the retrieved context's token budget and passage count (``oracle``), nothing
   (``none``), or the labelled spans followed by the retrieved passages that hold no evidence
   (``oracle+distractors``); its passages join the chunking as ``<chunking>+<source>``;
2. **generate** one answer per question through the variant's generator, cached by (generator,
   prompt version, context hash, params) in the experiment's cache folder: a re-run of an
   unchanged experiment makes no model call. A question the generator fails on is recorded with
   its error (an empty answer that is *not* an abstention, so it counts as failed) and counted,
   an answer whose text no UTF-8 file can hold included; a generator that fails on every
   question stops the run once the files are written (there is nothing to check);
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
   supported" (:func:`ragmeter.answers.compare_answers`; an ablation on the questions with
   labelled spans only, :func:`compare_on`), and, when the experiment varies the
   context order, the position-of-evidence table of the generated answers
   (:func:`ragmeter.diagnosis.position_table`, positions in prompt order).

With ``repeat`` over 1 (:mod:`._repeats`), steps 2-4 run again for repeats 1 .. N-1 (the
generator asked with ``seed`` + r and/or the judge with ``seed = r``, each cached apart, the
files in ``OUTPUT/<variant>/repeats/<r>/``); repeat 0 is the run's headline, unchanged.

This module runs the steps; the result is a :class:`._variant_answers.VariantAnswers`, the
files are written by :mod:`._answer_files` and the generation's usage is summed by
:mod:`._generation_usage`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import InputError, UsageError
from ._answer_files import (
    ANSWERS_FILE,
    CHECK_FILE,
    CHUNKS_FILE,
    GENERATIONS_FILE,
    JUDGE_FILE,
    answer_record,
    write_answer_files,
    write_jsonl,
)
from ._generation_settings import RETRIEVED
from ._variant_answers import SHOWN_ERRORS, VariantAnswers

if TYPE_CHECKING:  # pragma: no cover
    from ..answers.report import AnswerReport
    from ._config import Experiment, Settings, Variant
    from ._repeats import Repeats

__all__ = [
    "ANSWERS_FILE",
    "CHECK_FILE",
    "CHUNKS_FILE",
    "GENERATIONS_FILE",
    "JUDGE_FILE",
    "SAMPLING",
    "SHOWN_ERRORS",
    "Answering",
    "VariantAnswers",
    "context_chunking",
    "ranked_passages",
]


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
        #: the baseline's verdicts in each repeat (repeat 0 first; an experiment's ``repeat``)
        self._baseline_repeats: list[Mapping[str, float | None]] = []
        self._repeat_judges: dict[int, Any] = {}
        self._documents: dict[str, str] | None = None
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

    # -- the contexts --------------------------------------------------------------------
    def contexts(
        self, s: Settings, spec: Any, passages: dict[str, list[Any]], chunking: Any
    ) -> tuple[dict[str, Any], Any]:
        """Each question's context from its ranked passages, and the chunking its passage ids
        resolve in: the variant's own for the retrieved source; for an ablation, that chunking
        plus every passage a context holds that it lacks (the oracle passages), named
        ``<chunking>+<source>`` (see :func:`context_chunking`).

        An ablation gets the retrieved context's token budget and passage count, question by
        question: the variant's ``budget`` when set, else the tokens of the context the
        retrieved source would have given (at the variant's k), and at most k passages."""
        from dataclasses import replace

        from ..generation import assemble

        questions = self.golden.questions
        if spec.source == RETRIEVED:
            return {q.id: assemble(q.id, passages.get(q.id, ()), spec) for q in questions}, chunking
        from ..generation import source_context

        retrieved = replace(spec, source=RETRIEVED)
        documents = self.documents()
        out: dict[str, Any] = {}
        for q in questions:
            ranked = passages.get(q.id, ())
            budget = (
                s.budget if s.budget is not None else assemble(q.id, ranked, retrieved).n_tokens
            )
            out[q.id] = source_context(
                q.id,
                ranked,
                spec,
                evidence=tuple((e.doc, e.start, e.end) for e in q.evidence),
                documents=documents,
                tokenizer=chunking.tokenizer,
                budget=budget,
                max_passages=spec.k,
            )
        return out, context_chunking(chunking, out, spec.source)

    def documents(self) -> dict[str, str]:
        """Document id -> text, built once (the oracle passages are cut from it)."""
        if self._documents is None:
            self._documents = {d.id: d.text for d in self.corpus}
        return self._documents

    def judge_metrics(self) -> tuple[str, ...]:
        """The judge metrics each answer is judged on (``claims`` expanded), () without one."""
        if self.exp.judge is None:
            return ()
        from ..answers.judged import expand_metrics

        return tuple(expand_metrics(self.exp.judge.metrics))

    def no_oracle_passage(self, source: str) -> tuple[str, ...]:
        """Under an oracle source, the questions without a labelled span (unanswerable, or not
        labelled): their context holds no oracle passage, so they are reported apart."""
        if source not in ORACLE_SOURCES:
            return ()
        return tuple(q.id for q in self.golden.questions if not q.evidence)

    # -- one variant ---------------------------------------------------------------------
    def generate_all(
        self, gen: Any, requests: Sequence[Any], step: str, which: str = ""
    ) -> tuple[Any, ...]:
        """Every request through the engine under one progress ``step``, each answer checked,
        and the count checked (``which`` names the repeat in the error)."""
        from ..generation import checked

        with self.progress.step(step, len(requests)) as advance:
            done = [0]

            def report(n: int, total: int) -> None:
                advance(n - done[0])
                done[0] = n

            # every backend's answers pass the same check before anything is written: text no
            # UTF-8 file can hold is that question's recorded error, never a crashed run
            generations = tuple(map(checked, self.engine.generate(gen, requests, report)))
        if len(generations) != len(requests):
            raise UsageError(
                f"generator {gen.name} returned {len(generations)} answers for "
                f"{len(requests)} questions{which}"
            )
        return generations

    def answer(self, v: Variant, run: Any, chunking: Any, write: bool) -> VariantAnswers:
        """Assemble, generate, write, check and compare the answers of variant ``v``."""
        from ..answers import answers_from_records, check_answers, compare_answers
        from ..answers.judges import usage_between, usage_reading
        from ..diagnosis import contexts_run, evidence_positions, position_table, table_from_report
        from ..generation import load_prompt, make_request

        s = v.settings
        t0 = time.perf_counter()
        prompt = load_prompt(s.prompt or "answer-v1", base_dir=self.exp.path.parent)
        spec = s.context_spec()
        gen_table = s.generator or {}
        params = {k: gen_table[k] for k in SAMPLING if k in gen_table}
        contexts, chunking = self.contexts(s, spec, ranked_passages(run, chunking), chunking)
        requests = [
            make_request(q.id, q.question, contexts[q.id], prompt, params)
            for q in self.golden.questions
        ]
        gen = self.generator(s)
        generations = self.generate_all(
            gen, requests, f"generate {v.name} ({len(requests)} answers)"
        )
        unknown = {g.question_id: g.unknown_citations for g in generations if g.unknown_citations}
        records = tuple(answer_record(v.name, g, contexts[g.question_id]) for g in generations)
        seconds = time.perf_counter() - t0
        folder = self.exp.output / _slug(v.name) if write else None
        if folder is not None:
            write_answer_files(
                folder, records, generations, contexts, gen, prompt, params, chunking
            )
        failed = [g for g in generations if g.error is not None]
        if generations and len(failed) == len(generations):
            # nothing to check or compare; the errors stay written in generations.jsonl
            written = f"; each error is in {folder / GENERATIONS_FILE}" if folder else ""
            raise UsageError(
                f"the generator {gen.name} failed on every one of the {len(generations)} "
                f"questions of {v.name}, so there is no answer to check (first: "
                f"{failed[0].question_id}: {failed[0].error}){written}"
            )
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
            ran = contexts_run(answers)
            if spec.source != RETRIEVED:  # a question given no passage ranked nothing
                ran = {q.id: ran.get(q.id, {}) for q in self.golden.questions}
            positions = evidence_positions(self.golden, chunking, ran, cover=self.exp.cover)
            table = table_from_report(
                {qid: p.in_context for qid, p in positions.items()},
                rep,
                evidence_label="evidence in the prompt context (every required span)",
            )
        comparison = None
        if v.is_baseline:
            self._baseline = rep
        elif self._baseline is not None and spec.source == RETRIEVED:
            comparison = compare_answers(self._baseline, rep)
        elif self._baseline is not None:  # an ablation: unlabelled questions stay apart
            labelled = [q.id for q in self.golden.questions if q.evidence]
            comparison = compare_on(self._baseline, rep, labelled)
        position = None
        if self.order_varies:
            position = position_table(
                positions, rep, context="the generated answers' contexts, in prompt order"
            )
        repeats = None
        if self.exp.repeats > 1:
            repeats = self.repeats(
                v, requests, generations, rep, gen, prompt, params, contexts, chunking, folder
            )
            if v.is_baseline:
                self._baseline_repeats = list(repeats.verdicts)
            elif self._baseline_repeats and comparison is not None:
                from dataclasses import replace

                from ._repeats import noise

                compared = list(comparison.comparison.query_ids)
                repeats = replace(
                    repeats, vs_baseline=noise(self._baseline_repeats, repeats.verdicts, compared)
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
            no_oracle_passage=self.no_oracle_passage(spec.source),
            judge_metrics=self.judge_metrics(),
            repeats=repeats,
            messages={q.question_id: q.messages for q in requests},
        )
        if folder is not None:
            from ._outputs import write_json

            if result.judge is not None:
                write_jsonl(folder / JUDGE_FILE, result.judgements())
            write_json(result.to_dict(), folder / CHECK_FILE)
        return result

    # -- repeats -------------------------------------------------------------------------
    def repeat_judge(self, r: int) -> Any:
        """The judge of repeat ``r``: the run's judge unless the judge itself is repeated, then
        one sending ``seed = r`` (its replies cached apart), built once per repeat."""
        if self.exp.judge is None or self.exp.judge.repeat == 1 or r == 0:
            return self.judge
        if r not in self._repeat_judges:
            self._repeat_judges[r] = self.engine.wrap_judge(
                self.exp.judge.build(self.cache_root, repeat=r)
            )
        return self._repeat_judges[r]

    def repeats(
        self,
        v: Variant,
        requests: list[Any],
        generations: tuple[Any, ...],
        rep: AnswerReport,
        gen: Any,
        prompt: Any,
        params: dict[str, Any],
        contexts: dict[str, Any],
        chunking: Any,
        folder: Path | None,
    ) -> Repeats:
        """Repeats 1 .. N-1 of variant ``v`` (repeat 0 is the run's own ``rep``): the answers
        made again with ``seed`` + r when the generator is repeated (cached per repeat),
        checked, and judged by :meth:`repeat_judge`; each repeat's files are written in
        ``OUTPUT/<variant>/repeats/<r>/``."""
        from dataclasses import replace as replaced

        from ..answers import answers_from_records, check_answers
        from ._repeats import REPEATS_DIR, repeats_of

        n, n_gen = self.exp.repeats, self.exp.repeat
        n_judge = 1 if self.exp.judge is None else self.exp.judge.repeat
        reports = [rep]
        calls = [sum(1 for g in generations if not g.cached)]
        base_seed = params.get("seed")
        seeds: list[int | None] = [base_seed if isinstance(base_seed, int) else None]
        for r in range(1, n):
            gens, params_r = generations, params
            if n_gen > 1:
                params_r = _seeded(params, r)
                todo = [replaced(q, params=_seeded(q.params, r), repeat=r) for q in requests]
                step = f"generate {v.name}, repeat {r + 1} of {n} ({len(todo)} answers)"
                gens = self.generate_all(gen, todo, step, f" (repeat {r + 1})")
            seed = params_r.get("seed")
            seeds.append(seed if isinstance(seed, int) else None)
            calls.append(0 if gens is generations else sum(1 for g in gens if not g.cached))
            records = tuple(answer_record(v.name, g, contexts[g.question_id]) for g in gens)
            sub = None if folder is None else folder / REPEATS_DIR / str(r)
            if sub is not None and gens is not generations:
                write_answer_files(sub, records, gens, contexts, gen, prompt, params_r, chunking)
            answers = answers_from_records(
                records,
                variant=v.name,
                path=None if sub is None or gens is generations else sub / ANSWERS_FILE,
            )
            judge = self.repeat_judge(r)
            judging: dict[str, Any] = {}
            if judge is not None and self.exp.judge is not None:
                judging = dict(
                    judge=judge,
                    judge_metrics=self.exp.judge.metrics,
                    judge_prompts=self.exp.judge.prompt,
                    judge_skip_missing=True,
                )
            with self.progress.step(f"check {v.name}'s answers, repeat {r + 1} of {n}", None):
                rep_r = check_answers(
                    answers, self.golden, corpus=self.corpus, chunks=chunking, **judging
                )
            if sub is not None and judging:
                judged = [x.to_dict() for c in rep_r.checks for x in c.judged.values()]
                write_jsonl(sub / JUDGE_FILE, judged)
            reports.append(rep_r)
        return repeats_of(
            reports,
            questions=[q.id for q in self.golden.questions],
            generator_repeat=n_gen,
            judge_repeat=n_judge,
            seeds=seeds,
            model_calls=calls,
        )


def _seeded(params: Mapping[str, Any], r: int) -> dict[str, Any]:
    """``params`` with ``seed`` + r (repeat r); unchanged when they carry no integer seed."""
    seed = params.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool):
        return dict(params)
    return {**params, "seed": seed + r}


#: the generator table's sampling keys (passed per request, not to the generator factory)
SAMPLING = ("temperature", "seed", "max_tokens")
#: the context sources that give the labelled evidence (a question without spans gets none)
ORACLE_SOURCES = ("oracle", "oracle+distractors")


def compare_on(baseline: Any, candidate: Any, questions: list[str]) -> Any:
    """:func:`ragmeter.answers.compare_answers` on ``questions`` only: an ablation is compared
    with the retrieved baseline on the questions with labelled spans, where an oracle context
    exists (an unanswerable one, given none, abstains "right" by construction). None when
    neither side scored any of them."""
    from ..answers import compare_answers
    from ..answers.paired import outcomes

    if not set(outcomes(baseline)) & set(outcomes(candidate)) & set(questions):
        return None
    return compare_answers(baseline, candidate, questions=questions)


def context_chunking(chunking: Any, contexts: Mapping[str, Any], source: str) -> Any:
    """``chunking`` plus every context passage it does not hold (an oracle passage: a labelled
    span, extended or not), as the chunking ``<name>+<source>``: the ids of the answers'
    contexts and citations resolve in it, and every evidence document keeps its chunks, so the
    answer check and the evidence positions read the written files as they read a retrieved
    variant's. A passage id the chunking holds with other offsets is a conflict, not a match."""
    from ..chunking import Chunking

    extra: dict[str, Any] = {}
    for ctx in contexts.values():
        for placed in ctx.passages:
            p = placed.passage
            known = chunking.get(p.id)
            if known is None:
                extra.setdefault(p.id, p)
            elif (known.doc, known.start, known.end) != (p.doc, p.start, p.end):
                raise UsageError(
                    f"context passage {p.id} ({p.doc} {p.start}-{p.end}) has the id of chunk "
                    f"{known.id} ({known.doc} {known.start}-{known.end}) of {chunking.name}"
                )
    added = list(extra.values())
    return Chunking(
        name=f"{chunking.name}+{source}",
        tokenizer=chunking.tokenizer,
        ids=[*chunking.ids, *(p.id for p in added)],
        doc=[*chunking.doc, *(p.doc for p in added)],
        start=[*chunking.start.tolist(), *(p.start for p in added)],
        end=[*chunking.end.tolist(), *(p.end for p in added)],
        text=[*chunking.text, *(p.text for p in added)],
        n_tokens=[*chunking.n_tokens.tolist(), *(p.n_tokens for p in added)],
    )


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
