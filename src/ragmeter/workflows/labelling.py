"""The golden-set workbench's jobs (docs/labelling.md): make a labelling queue from logged or
written questions, a golden set to review or generated answers to review; hand each labeller
their next question; save, edit and delete labels under revision checks; measure two
labellers' agreement exactly as ``ragmeter golden agree`` does; adjudicate; freeze the final
labels into a golden-set version with its parent; export what ``golden agree`` and ``judge
validate --human`` read; search the queue's corpus with the experiments' retrievers.

``ragmeter label ...`` (cli/_label.py) and the lab's label view call these functions; none
prints, asks or exits. Labellers are named by their name (the lab's current labeller).

Rules, each written once here:

- **double items**: an item is labelled by two labellers when
  ``sha256(f"{seed}:{qid}")``'s first 8 bytes, read as a number in [0, 1), fall below the
  queue's ``double_share``: stable for a question id, whatever else the queue holds.
- **next item** of a labeller: the first item (by position) this labeller has not labelled or
  skipped, with no adjudication, and with fewer labels (skips left out) than it needs (2 for a
  double item, else 1).
- **agreement**: over the items two labellers labelled (a skip or an incomplete label left
  out), with each item's first two labellers by time of their first save. Labeller **A** (the
  reference) is the one who labelled first on the most of those items, ties going to the
  alphabetically first name; each item's A-side label is the one of the labeller ranked first
  in that order. With two labellers this is exactly ``ragmeter golden agree A.jsonl B.jsonl``
  on the files :func:`export_labeller` writes for them.
- **final label** of an item: its adjudication if any; else its one label; else, when its first
  two labellers' labels are equal (the same spans as sets with the same grades, and the same
  answerable), the first one's; else it is *unresolved* and freezing refuses it. Skipped
  items, drafts no labeller accepted, unlabelled items and answerable labels without a span
  are left out of a frozen version and counted.
"""

from __future__ import annotations

from ..store import EditConflict
from ._label_files import (
    Exported,
    FrozenQueue,
    ImportedLabels,
    export_answer_labels,
    export_labeller,
    freeze_queue,
    import_labels,
)
from ._label_payloads import (
    AnswerLabel,
    EvidenceLabel,
    SpanLabel,
    check_payload,
    payload_of,
    question_of,
)
from ._label_queue import (
    ANSWER_FILES,
    Disagreement,
    QueueStatus,
    adjudicate,
    agreement,
    answer_agreement,
    answer_labellers,
    create_queue_from,
    delete,
    disagreements,
    ensure_labeller,
    final_labels,
    is_double,
    next_item,
    save,
    status,
)
from ._label_search import (
    SEARCH_RETRIEVERS,
    available_retrievers,
    document,
    prepare_search,
    queue_corpus,
    search,
)

__all__ = [
    "ANSWER_FILES",
    "SEARCH_RETRIEVERS",
    "AnswerLabel",
    "Disagreement",
    "EditConflict",
    "EvidenceLabel",
    "Exported",
    "FrozenQueue",
    "ImportedLabels",
    "QueueStatus",
    "SpanLabel",
    "adjudicate",
    "agreement",
    "answer_agreement",
    "answer_labellers",
    "available_retrievers",
    "check_payload",
    "create_queue_from",
    "delete",
    "disagreements",
    "document",
    "ensure_labeller",
    "export_answer_labels",
    "export_labeller",
    "final_labels",
    "freeze_queue",
    "import_labels",
    "is_double",
    "next_item",
    "payload_of",
    "prepare_search",
    "question_of",
    "queue_corpus",
    "save",
    "search",
    "status",
]
