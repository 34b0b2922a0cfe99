"""Human verdicts on both sides of a comparison, read from labels files, for the paired
prediction-powered interval (``ragmeter compare --human-labels``;
:func:`ragmeter.paired.ppi_compare`).

Two file shapes are read, JSON Lines, one verdict per line:

- the labels file ``ragmeter judge validate`` reads, with the run each verdict is on:
  ``{"id": "q1", "run": "hybrid", "label": "pass"}``; one file holds both sides, matched by run
  name to the compared sides' names (lines of other runs are left out);
- the answer review export of the workbench (``human-correctness.jsonl``: ``{"id", "label"}``,
  one variant's answers per file): given twice, the baseline's file then the candidate's. A
  ``run`` on a line of such a file must not name the other side.

Labels are the words of :data:`ragmeter.answers.judge_validation.LABEL_WORDS` (JSON booleans
too), read as numbers: pass, correct, supported, yes -> 1; fail, incorrect, unsupported, no ->
0; partly -> 0.5. A pairwise preference (a, b, tie) is no verdict on one answer and is refused.
Every problem (a missing field, a word that is no label, a second verdict for the same
question and side, a labelled question that was not compared, a question labelled on one side
only) is reported at once, naming the file, line and field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .._errors import Problem, UsageError, ValidationError

__all__ = [
    "LABEL_VALUES",
    "HumanLabels",
    "LabelFiles",
    "Verdict",
    "load_label_files",
    "read_human_labels",
]

#: canonical label -> the number a human verdict counts as
LABEL_VALUES: Mapping[str, float] = {
    "pass": 1.0,
    "correct": 1.0,
    "supported": 1.0,
    "yes": 1.0,
    "partly": 0.5,
    "fail": 0.0,
    "incorrect": 0.0,
    "unsupported": 0.0,
    "no": 0.0,
}
_SIDES = ("baseline", "candidate")


@dataclass(frozen=True)
class HumanLabels:
    """Human verdicts per side: ``{question id: value}`` for the baseline and the candidate,
    and where each came from (``(file, line)``) for messages."""

    baseline: Mapping[str, float]
    candidate: Mapping[str, float]
    where: Mapping[tuple[str, str], tuple[str, int]]
    files: tuple[str, ...]

    def check(self, qids: Sequence[str]) -> None:
        """Every labelled question is among ``qids`` (the compared ones) and has both sides'
        verdicts; a :class:`ValidationError` naming file, line and field otherwise."""
        known = set(qids)
        problems: list[Problem] = []
        for side, other, values, others in (
            ("baseline", "candidate", self.baseline, self.candidate),
            ("candidate", "baseline", self.candidate, self.baseline),
        ):
            for q in values:
                path, line = self.where[(side, q)]
                if q not in known:
                    if side == "baseline" or q not in self.baseline:  # once per question
                        problems.append(
                            Problem(
                                f"'{q}' is not among the {len(known)} compared questions",
                                path,
                                line,
                                "id",
                            )
                        )
                elif q not in others:
                    problems.append(
                        Problem(
                            f"'{q}' has the {side}'s human verdict but not the {other}'s "
                            "(label both answers of a question)",
                            path,
                            line,
                            "id",
                        )
                    )
        if problems:
            raise ValidationError(problems, what="human labels " + ", ".join(self.files))


def read_human_labels(files: Sequence[str | Path], names: tuple[str, str]) -> HumanLabels:
    """The human verdicts of the two sides named ``names`` (baseline, candidate): from one file
    whose lines name their run, or from two files, the baseline's then the candidate's (module
    docstring)."""
    return load_label_files(files).sides(names)


@dataclass(frozen=True)
class Verdict:
    """One line of a labels file: the question, the run it names (None: none), its value."""

    qid: str
    run: str | None
    value: float
    path: str
    line: int


@dataclass(frozen=True)
class LabelFiles:
    """Labels files read and checked line by line, not yet matched to the compared sides (so a
    malformed file is reported before any comparison is made)."""

    files: tuple[str, ...]
    verdicts: tuple[tuple[Verdict, ...], ...]  # per file

    def sides(self, names: tuple[str, str]) -> HumanLabels:
        """The verdicts on the baseline named ``names[0]`` and the candidate named
        ``names[1]``: by each line's run (one file) or by file (two)."""
        problems: list[Problem] = []
        values: dict[str, dict[str, float]] = {"baseline": {}, "candidate": {}}
        where: dict[tuple[str, str], tuple[str, int]] = {}

        def put(side: str, v: Verdict) -> None:
            if (side, v.qid) in where:
                first = where[(side, v.qid)]
                problems.append(
                    Problem(
                        f"second {side} verdict for '{v.qid}' (the first is in {first[0]} line "
                        f"{first[1]}); keep one",
                        v.path,
                        v.line,
                        "id",
                    )
                )
            else:
                values[side][v.qid] = v.value
                where[(side, v.qid)] = (v.path, v.line)

        if len(self.files) == 1:
            if names[0] == names[1]:
                raise UsageError(
                    f"both sides are named '{names[0]}', so one labels file cannot say which "
                    "side a verdict is on: give --human-labels twice, the baseline's file then "
                    "the candidate's"
                )
            for v in self.verdicts[0]:
                if v.run in names:  # a labels file may hold other runs too
                    put(_SIDES[names.index(v.run)], v)
            runs = sorted({v.run for v in self.verdicts[0] if v.run is not None})
            for side, name in zip(_SIDES, names, strict=True):
                if not values[side]:
                    problems.append(
                        Problem(
                            f"no line is on the {side} run '{name}' (runs in the file: "
                            f"{', '.join(runs) or 'none'}); a line's run must be a compared "
                            "side's name",
                            self.files[0],
                            None,
                            "run",
                        )
                    )
        else:
            for i, (side, verdicts) in enumerate(zip(_SIDES, self.verdicts, strict=True)):
                other = names[1 - i]
                for v in verdicts:
                    if v.run is not None and v.run == other and v.run != names[i]:
                        problems.append(
                            Problem(
                                f"names the {_SIDES[1 - i]} run '{v.run}' in the {side}'s labels "
                                f"file (the {('first', 'second')[i]} --human-labels)",
                                v.path,
                                v.line,
                                "run",
                            )
                        )
                    else:
                        put(side, v)
        if problems:
            raise ValidationError(problems, what="human labels " + ", ".join(self.files))
        return HumanLabels(values["baseline"], values["candidate"], where, self.files)


def load_label_files(files: Sequence[str | Path]) -> LabelFiles:
    """Read one labels file whose lines name their run, or two (the baseline's, the
    candidate's), checking every line (module docstring); nothing is matched to sides yet."""
    paths = [Path(f) for f in files]
    if len(paths) not in (1, 2):
        raise UsageError(
            "give --human-labels once (a file whose lines name their run) or twice (the "
            f"baseline's labels, then the candidate's); got {len(paths)}"
        )
    problems: list[Problem] = []
    verdicts = tuple(_read(p, problems, need_run=len(paths) == 1) for p in paths)
    if problems:
        raise ValidationError(problems, what="human labels " + ", ".join(map(str, paths)))
    return LabelFiles(tuple(str(p) for p in paths), verdicts)


def _read(path: Path, problems: list[Problem], *, need_run: bool) -> tuple[Verdict, ...]:
    """The verdicts of one file; its bad lines added to ``problems``."""
    from ..answers.judge_validation import normalize_label
    from ..io import iter_jsonl

    file = str(path)
    out: list[Verdict] = []
    seen: dict[tuple[str | None, str], int] = {}
    for line, rec in iter_jsonl(path, problems, what="human labels"):
        qid, run, lab = rec.get("id"), rec.get("run"), rec.get("label")
        if not isinstance(qid, str) or not qid:
            problems.append(Problem("needs the question id, a non-empty string", file, line, "id"))
            continue
        if run is not None and (not isinstance(run, str) or not run):
            problems.append(Problem("must be a run name, a non-empty string", file, line, "run"))
            continue
        if run is None and need_run:
            problems.append(
                Problem(
                    "names no run: lines of one labels file must say which run they label "
                    "(or give --human-labels twice, the baseline's file then the candidate's)",
                    file,
                    line,
                    "run",
                )
            )
            continue
        if "label" not in rec:
            problems.append(Problem("is missing", file, line, "label"))
            continue
        try:
            word = normalize_label(lab)
        except ValueError as exc:
            problems.append(Problem(str(exc), file, line, "label"))
            continue
        if word not in LABEL_VALUES:
            problems.append(
                Problem(
                    f"{json.dumps(lab)} is a pairwise preference, not a verdict on one answer; "
                    "use pass/fail (correct/incorrect, supported/unsupported, yes/partly/no)",
                    file,
                    line,
                    "label",
                )
            )
            continue
        key = (run if need_run else None, qid)  # one verdict per question and side
        if key in seen:
            side = f"'{run}'" if need_run else "this file's"
            problems.append(
                Problem(
                    f"second verdict for '{qid}' on run {side} (the first is on line "
                    f"{seen[key]}); keep one",
                    file,
                    line,
                    "id",
                )
            )
            continue
        seen[key] = line
        out.append(Verdict(qid, run, LABEL_VALUES[word], file, line))
    return tuple(out)
