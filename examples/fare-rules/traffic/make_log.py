"""Make the fare-rules example's question log: 200 logged questions, as a fare-rules assistant
would see them in a week of traffic (SYNTHETIC: an invented airline, written for ragmeter).

    python examples/fare-rules/traffic/make_log.py            # rewrite the files here
    python examples/fare-rules/traffic/make_log.py --out DIR  # or write them under DIR

Writes, beside this script:

- ``log.jsonl``: one logged question a line, ``{"question", "slice", "channel", "ts",
  "session", "logged": {"retrieved": [{"id", "score"}], "answer"}}``: repeats (the same words
  asked again), the same need in varied wording (casual, terse, an agent's shorthand), slices
  with skew (fees are most of the traffic, identifier lookups a few), three channels (web, app,
  and call-centre agents), and some questions the fare rules do not answer. ``slice`` is the
  assistant's own topic router; ``logged`` is what it retrieved and answered: context shown
  beside a question in the lab, never a label.
- ``key.jsonl``: the answer key of a labeller who knows the fare rules, one line per distinct
  question: ``{"question", "golden"}``, the id of the question of ``../golden.jsonl`` that asks
  for the same thing (its evidence answers the logged question), or null when the corpus has no
  answer. tests/workflows/test_labelling_loop.py labels through the lab with it, finding each
  quote in the document text the lab serves.
- ``labels/ana.jsonl``, ``labels/bo.jsonl``, ``labels/bo-agreed.jsonl``: what two labellers
  saved for the 40 questions ``ragmeter golden sample log.jsonl -n 40 --by slice`` draws (seed
  0), as golden files: ana labels all of them but skips two; bo labels the questions the queue
  gives two labellers (``--double-share 0.2``, seed 0), one with a grade of its own, and
  ``bo-agreed.jsonl`` is bo's label of that question after the two talked it over.
  docs/labelling.md ("The loop, end to end") imports them with ``ragmeter label import``. The
  label files need ragmeter (the sample and the question ids are ragmeter's); the log and key
  need only the standard library.

Everything is drawn from ``random.Random(SEED)``: the committed files equal this script's
output byte for byte (tests/workflows/test_labelling_loop.py checks it).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent
SEED = 24
LINES = 200
#: the sample the label files are for (docs/labelling.md, the loop's `golden sample`)
SAMPLE_N, SAMPLE_BY, SAMPLE_SEED = 40, "slice", 0
DOUBLE_SHARE, QUEUE_SEED = 0.2, 0
CHANNELS = (("web", 0.5), ("app", 0.35), ("agent", 0.15))
#: ana skips these many questions (the first unanswerable one and one more, by sample order)
SKIPS = 2

#: (golden question id or None when the corpus has no answer, the router's slice, how often it
#: is asked (a weight), the wordings people use)
INTENTS: list[tuple[str | None, str, int, tuple[str, ...]]] = [
    # fees: most of the traffic, the change fees above all
    ("change-fee-standard", "fees", 14, (
        "What is the change fee for a Standard fare?",
        "how much is it to change a standard ticket",
        "Standard fare change fee?",
        "I want to move my flight to next week, I'm on a Standard fare. What's the fee?",
        "chg fee STD fare",
    )),
    ("change-fee-basic", "fees", 10, (
        "How much does it cost to change a Basic ticket?",
        "change fee basic fare",
        "Can I change my Basic ticket and how much will it cost me?",
    )),
    ("change-fee-flex", "fees", 6, (
        "What's the change fee on Flex?",
        "flex fare change fee",
    )),
    ("change-fee-business", "fees", 3, (
        "Do Business class tickets pay a change fee?",
        "business fare change fee?",
    )),
    ("same-day-fee-standard", "fees", 5, (
        "How much is a same-day change on a Standard ticket?",
        "same day flight change standard fare cost",
    )),
    ("no-show-fee-standard", "fees", 3, (
        "What's the no-show fee for Standard fares?",
        "no show fee standard",
    )),
    ("first-bag-fee", "fees", 7, (
        "How much is the first checked bag?",
        "first checked bag price",
        "What do I pay to check one suitcase on a Standard fare?",
    )),
    ("overweight-bag-fee", "fees", 3, (
        "My bag weighs 28 kg, how much extra do I pay?",
        "overweight bag fee",
    )),
    ("call-centre-fee", "fees", 3, (
        "Is there a fee for booking over the phone?",
        "call centre service fee per ticket",
    )),
    ("pet-fee", "fees", 4, (
        "How much does it cost to bring my dog in the cabin?",
        "pet in cabin fee",
    )),
    ("seat-fee-extra-legroom", "fees", 3, (
        "How much is an extra legroom seat?",
        "extra-legroom seat price",
    )),
    ("name-change-fee", "fees", 2, (
        "How much to put my ticket in my sister's name? It's a Standard fare.",
    )),
    ("unaccompanied-minor-fee", "fees", 2, (
        "What's the fee for the unaccompanied minor service?",
    )),
    # changes
    ("basic-change-count", "changes", 4, (
        "How many times can I change a Basic ticket?",
        "basic ticket number of changes allowed",
    )),
    ("same-day-basic", "changes", 3, (
        "Can I do a same-day change on a Basic fare?",
        "which fares can't do same day changes",
    )),
    ("no-show-return-flight", "changes", 3, (
        "I missed my outbound flight, is my return still valid?",
        "missed outbound without cancelling what happens to the return",
    )),
    ("flat-tyre-window", "changes", 2, (
        "I missed my flight by an hour on a Standard fare, can I fly standby for free?",
    )),
    ("name-correction-characters", "changes", 3, (
        "My name is misspelled on the ticket, how many letters can you fix for free?",
        "name correction free characters",
    )),
    ("transfer-fare-families", "changes", 2, (
        "Which fares let me give my ticket to someone else?",
    )),
    # refunds
    ("24h-rule-basic", "refunds", 5, (
        "Can I cancel a Basic ticket within 24 hours for a full refund?",
        "24 hour cancellation basic fare",
    )),
    ("refund-time-card", "refunds", 4, (
        "How long does a refund to my credit card take?",
        "refund to card how many days",
    )),
    ("travel-credit-validity", "refunds", 3, (
        "How long is my travel credit valid for?",
        "travel credit expiry",
    )),
    ("basic-cancellation", "refunds", 3, (
        "What do I get back if I cancel my Basic ticket?",
        "cancel basic fare refund?",
    )),
    ("chargeback-deadline", "refunds", 2, (
        "How many days do customers have to dispute a card charge?",
    )),
    ("voucher-validity", "refunds", 2, (
        "When does a goodwill voucher expire?",
    )),
    # ancillaries
    ("carry-on-weight", "ancillaries", 4, (
        "What's the weight limit for carry-on?",
        "carry on bag max kg",
    )),
    ("business-free-bags", "ancillaries", 2, (
        "How many bags are free in Business?",
    )),
    ("pet-weight", "ancillaries", 2, (
        "How heavy can my cat and its carrier be?",
    )),
    ("gold-status-miles", "ancillaries", 2, (
        "How many status miles do I need for Gold?",
    )),
    # infants and children
    ("lap-infant-share", "infants-children", 3, (
        "How much does a baby on my lap pay?",
        "lap infant fare percentage",
    )),
    ("infant-minimum-age", "infants-children", 2, (
        "How old does a newborn have to be to fly?",
    )),
    ("child-fare-share", "infants-children", 2, (
        "What do kids pay on a Standard fare?",
    )),
    ("unaccompanied-minor-ages", "infants-children", 2, (
        "At what ages must a child flying alone use the unaccompanied minor service?",
    )),
    # identifier lookups: agents, mostly
    ("code-q-family", "identifier-lookup", 2, (
        "booking code Q fare family",
        "Which fare family is code Q?",
    )),
    ("fare-basis-nr", "identifier-lookup", 2, (
        "what does NR mean in a fare basis",
    )),
    ("rule-16-topic", "identifier-lookup", 1, (
        "which rule is cancellations and no shows",
    )),
    ("flight-nw6120-operator", "identifier-lookup", 1, (
        "who operates NW 6120",
    )),
    # what the fare rules do not answer
    (None, "fees", 3, (
        "How much is wifi on board?",
        "in-flight wifi price",
    )),
    (None, "fees", 2, (
        "What does it cost to check a surfboard?",
    )),
    (None, "refunds", 2, (
        "How much compensation do I get for a 3 hour delay?",
    )),
    (None, "fees", 1, (
        "Do you sell lounge day passes and how much are they?",
    )),
    (None, "ancillaries", 1, (
        "Is there a student discount?",
    )),
]  # fmt: skip

#: what the assistant answered when it found nothing
NO_ANSWER = "I could not find that in the fare rules."


def _load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def golden_by_id() -> dict[str, dict[str, Any]]:
    return {q["id"]: q for q in _load(EXAMPLE / "golden.jsonl")}


def _channel(rng: random.Random) -> str:
    x, acc = rng.random(), 0.0
    for name, share in CHANNELS:
        acc += share
        if x < acc:
            return name
    return CHANNELS[-1][0]


def _logged(golden: dict[str, Any] | None, rng: random.Random) -> dict[str, Any]:
    """What the assistant retrieved (its evidence documents, with a near miss) and answered."""
    docs = [] if golden is None else list(dict.fromkeys(e["doc"] for e in golden["evidence"]))
    if golden is not None and "stale-policy" in golden["slices"]:
        docs.insert(0, "fees-2024")  # the superseded schedule outranks the current one
    if not docs:
        docs = ["agent-quick-reference"]
    score = round(rng.uniform(9.0, 14.0), 2)
    retrieved = []
    for doc in docs[:3]:
        retrieved.append({"id": doc, "score": score})
        score = round(score - rng.uniform(0.5, 2.5), 2)
    answer = NO_ANSWER if golden is None else str(golden["answer"])
    return {"retrieved": retrieved, "answer": answer}


def log_lines() -> list[dict[str, Any]]:
    """The 200 log lines, in time order (the same every run)."""
    gold = golden_by_id()
    rng = random.Random(SEED)
    weights = [w for _, _, w, _ in INTENTS]
    lines = []
    minute = 0
    for _ in range(LINES):
        gid, slice_, _, wordings = rng.choices(INTENTS, weights=weights)[0]
        # the first wording is the most common one; the others share the rest
        question = wordings[0] if rng.random() < 0.45 else rng.choice(wordings)
        minute += rng.randint(3, 90)
        day, rest = divmod(minute, 24 * 60)
        ts = f"2026-11-{2 + day:02d}T{rest // 60:02d}:{rest % 60:02d}:00Z"
        lines.append(
            {
                "question": question,
                "slice": slice_,
                "channel": _channel(rng),
                "ts": ts,
                "session": f"s-{rng.randrange(16**6):06x}",
                "logged": _logged(None if gid is None else gold[gid], rng),
            }
        )
    return lines


def key_lines() -> list[dict[str, Any]]:
    """One line per distinct wording: the golden question that asks for the same thing."""
    return [{"question": w, "golden": gid} for gid, _, _, wordings in INTENTS for w in wordings]


def _jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


# -- the label files (need ragmeter) -----------------------------------------------------------
def label_lines(log_path: Path) -> dict[str, list[dict[str, Any]]]:
    """ana's, bo's and bo's agreed labels of the sampled questions, as golden-file lines."""
    import hashlib

    from ragmeter.data import read_log, sample_log
    from ragmeter.data.traffic import normalise_question
    from ragmeter.workflows.labelling import is_double

    gold = golden_by_id()
    key = {normalise_question(k["question"]): k["golden"] for k in key_lines()}
    sample = sample_log(read_log(log_path), SAMPLE_N, by=SAMPLE_BY, seed=SAMPLE_SEED)

    def qid(text: str) -> str:
        return "q-" + hashlib.sha256(normalise_question(text).encode("utf-8")).hexdigest()[:12]

    ana: list[dict[str, Any]] = []
    bo: list[dict[str, Any]] = []
    agreed: list[dict[str, Any]] = []
    skipped = 0
    disagreed = False
    for line in sample.lines:
        text = line.question
        gid = key[normalise_question(text)]
        slices = [str(line.record["slice"])]
        if gid is None:
            label = {"id": qid(text), "question": text, "evidence": [], "answerable": False,
                     "slices": slices}  # fmt: skip
        else:
            g = gold[gid]
            spans = [
                {k: e[k] for k in ("doc", "start", "end", "grade", "text", "required") if k in e}
                for e in g["evidence"]
            ]
            label = {"id": qid(text), "question": text, "evidence": spans,
                     "answer": g["answer"], "answerable": True, "slices": slices}  # fmt: skip
        double = is_double(label["id"], QUEUE_SEED, DOUBLE_SHARE)
        if not double and skipped < SKIPS and (gid is None or skipped == 1):
            skipped += 1  # ana skips it (a golden file has no skip: it is left out)
        else:
            ana.append(label)
        if double:
            mine = json.loads(json.dumps(label))
            if not disagreed and len(mine["evidence"]) > 1:
                disagreed = True  # bo grades a helpful passage as answering
                mine["evidence"][-1]["grade"] = 2
                agreed.append(label)
            bo.append(mine)
    return {"ana.jsonl": ana, "bo.jsonl": bo, "bo-agreed.jsonl": agreed}


def write(out: Path) -> dict[str, int]:
    """Write the log, the key and the label files under ``out``; lines written per file."""
    out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for name, rows in (("log.jsonl", log_lines()), ("key.jsonl", key_lines())):
        (out / name).write_text(_jsonl(rows), encoding="utf-8")
        counts[name] = len(rows)
    (out / "labels").mkdir(exist_ok=True)
    for name, rows in label_lines(out / "log.jsonl").items():
        (out / "labels" / name).write_text(_jsonl(rows), encoding="utf-8")
        counts[f"labels/{name}"] = len(rows)
    return counts


def main(argv: Iterator[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write (default: here)")
    args = parser.parse_args(None if argv is None else list(argv))
    for name, n in write(args.out).items():
        print(f"{name}: {n} lines")


if __name__ == "__main__":
    main()
