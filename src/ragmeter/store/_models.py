"""The store's tables, as SQLAlchemy Core metadata (the Alembic migrations create exactly these).

Plain columns hold what a list or a filter needs (names, versions, status, headline numbers);
JSON columns hold records as ragmeter already writes them (configs, aggregates, slice tables);
per-question values and ranked lists live in content-addressed columnar blobs (``blobs``), inline
when small and in Parquet files beside the database when large, so a 1M-question run does not
bloat the database.
"""

from __future__ import annotations

import sqlalchemy as sa

#: constraint names spelled out, so migrations and autogenerate agree on every database
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = sa.MetaData(naming_convention=NAMING)

#: run status values; a run is counted only when ``finished``
STATUSES = ("running", "finished", "interrupted", "failed")

_when = sa.DateTime(timezone=True)

blobs = sa.Table(
    "blobs",
    metadata,
    sa.Column("hash", sa.String(64), primary_key=True),  # sha256 of the bytes
    sa.Column("kind", sa.String(16), nullable=False),  # "parquet" | "json.gz"
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=True),  # inline when small
    sa.Column("path", sa.String(300), nullable=True),  # relative to the artifact folder
    sa.Column("created_at", _when, nullable=False),
)

golden_versions = sa.Table(
    "golden_versions",
    metadata,
    sa.Column("version", sa.String(64), primary_key=True),
    sa.Column("name", sa.String(500), nullable=True),
    sa.Column("n_questions", sa.Integer, nullable=False),
    sa.Column("n_spans", sa.Integer, nullable=False),
    sa.Column("labels_digest", sa.String(64), nullable=False),
    sa.Column("slices", sa.JSON, nullable=False),  # slice -> question count
    sa.Column("splits", sa.JSON, nullable=False),  # split -> question count
    sa.Column("questions_blob", sa.String(64), sa.ForeignKey("blobs.hash"), nullable=False),
    sa.Column("created_at", _when, nullable=False),
    sa.Column("parent", sa.String(64), nullable=True),  # the version it was made from (0002)
)

corpora = sa.Table(
    "corpora",
    metadata,
    sa.Column("fingerprint", sa.String(64), primary_key=True),
    sa.Column("n_docs", sa.Integer, nullable=False),
    sa.Column("source", sa.String(1000), nullable=True),
    sa.Column("created_at", _when, nullable=False),
)

chunkings = sa.Table(
    "chunkings",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(500), nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("stats", sa.JSON, nullable=False),
    sa.Column("created_at", _when, nullable=False),
    sa.UniqueConstraint("fingerprint", name="uq_chunkings_fingerprint"),
)

experiments = sa.Table(
    "experiments",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(500), nullable=False),
    sa.Column("file", sa.String(1000), nullable=True),
    sa.Column("created_at", _when, nullable=False),
    sa.UniqueConstraint("name", name="uq_experiments_name"),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "experiment_id",
        sa.Integer,
        sa.ForeignKey("experiments.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("invocation", sa.String(32), nullable=False),  # one command's runs share it
    sa.Column("name", sa.String(500), nullable=False),  # the variant's name
    sa.Column("label", sa.String(1000), nullable=True),
    sa.Column("kind", sa.String(16), nullable=False),  # "experiment" | "eval" | "import"
    sa.Column("status", sa.String(16), nullable=False, index=True),
    sa.Column("is_baseline", sa.Boolean, nullable=False),
    # a plain column: a run may be scored on a version whose questions were never stored
    sa.Column("golden_version", sa.String(64), nullable=True, index=True),
    sa.Column("corpus", sa.String(64), sa.ForeignKey("corpora.fingerprint"), nullable=True),
    sa.Column("chunking_id", sa.Integer, sa.ForeignKey("chunkings.id"), nullable=True),
    sa.Column("config", sa.JSON, nullable=False),
    sa.Column("config_hash", sa.String(64), nullable=False, index=True),
    sa.Column("changes", sa.JSON, nullable=False),
    sa.Column("ragmeter_version", sa.String(40), nullable=False),
    sa.Column("git_commit", sa.String(40), nullable=True),
    sa.Column("git_dirty", sa.Boolean, nullable=True),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("process_start", sa.String(32), nullable=True),  # tells a reused pid apart
    sa.Column("started_at", _when, nullable=False),
    sa.Column("finished_at", _when, nullable=True),
    sa.Column("seconds", sa.Float, nullable=True),
    sa.Column("timings", sa.JSON, nullable=False),
    sa.Column("metrics", sa.JSON, nullable=False),  # metric string -> mean (None: no mean)
    sa.Column("n_queries", sa.Integer, nullable=True),
    sa.Column("context_tokens", sa.Float, nullable=True),
    sa.Column("ranked_blob", sa.String(64), sa.ForeignKey("blobs.hash"), nullable=True),
    sa.Column("source", sa.String(1000), nullable=True),  # the file or folder it came from
    sa.Column("notes", sa.JSON, nullable=False),
    sa.Column("message", sa.Text, nullable=True),  # why it failed or was interrupted
    sa.CheckConstraint("status IN ('running', 'finished', 'interrupted', 'failed')", name="status"),
)

evaluations = sa.Table(
    "evaluations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("level", sa.String(16), nullable=False),  # span | chunk | document | eval
    sa.Column("run_name", sa.String(500), nullable=False),
    sa.Column("metrics", sa.JSON, nullable=False),  # canonical metric strings, column order
    sa.Column("aggregate", sa.JSON, nullable=False),
    sa.Column("n_queries", sa.Integer, nullable=False),
    sa.Column("n_missing", sa.Integer, nullable=False),
    sa.Column("n_no_relevant", sa.Integer, nullable=False),
    sa.Column("golden_version", sa.String(64), nullable=True),
    sa.Column("config", sa.JSON, nullable=False),
    sa.Column("values_blob", sa.String(64), sa.ForeignKey("blobs.hash"), nullable=False),
    sa.Column("extras_blob", sa.String(64), sa.ForeignKey("blobs.hash"), nullable=False),
    sa.UniqueConstraint("run_id", "level", name="uq_evaluations_run_id_level"),
)

comparisons = sa.Table(
    "comparisons",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("created_at", _when, nullable=False),
    sa.Column(
        "baseline_run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="SET NULL"), index=True
    ),
    sa.Column(
        "candidate_run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="SET NULL"), index=True
    ),
    sa.Column("baseline", sa.String(500), nullable=False),
    sa.Column("candidate", sa.String(500), nullable=False),
    sa.Column("metric", sa.String(200), nullable=False),
    sa.Column("golden_version", sa.String(64), nullable=True, index=True),
    sa.Column("n", sa.Integer, nullable=False),
    sa.Column("mean_delta", sa.Float, nullable=True),
    sa.Column("ci_low", sa.Float, nullable=True),
    sa.Column("ci_high", sa.Float, nullable=True),
    sa.Column("wins", sa.Integer, nullable=False),
    sa.Column("losses", sa.Integer, nullable=False),
    sa.Column("ties", sa.Integer, nullable=False),
    sa.Column("fixed_ids", sa.JSON, nullable=True),
    sa.Column("broken_ids", sa.JSON, nullable=True),
    sa.Column("sign_test_p", sa.Float, nullable=True),
    sa.Column("n_resamples", sa.Integer, nullable=False),
    sa.Column("seed", sa.String(40), nullable=True),  # numpy seeds may pass 2**63
    sa.Column("slices", sa.JSON, nullable=False),  # the slice table, as compare prints it
    sa.Column("record", sa.JSON, nullable=False),  # Comparison.to_dict() without per_query
    sa.Column("values_blob", sa.String(64), sa.ForeignKey("blobs.hash"), nullable=False),
)

ledger = sa.Table(
    "ledger",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("time", sa.String(40), nullable=False),
    sa.Column("golden_version", sa.String(64), nullable=False, index=True),
    sa.Column("metric", sa.String(200), nullable=False),
    sa.Column("baseline", sa.String(600), nullable=False),
    sa.Column("candidate", sa.String(600), nullable=False),
    sa.Column("entry", sa.JSON, nullable=False),  # the whole entry, as the JSONL ledger holds it
)

answer_sets = sa.Table(
    "answer_sets",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("created_at", _when, nullable=False),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="SET NULL"), nullable=True),
    sa.Column("name", sa.String(500), nullable=False),
    sa.Column("golden_version", sa.String(64), nullable=True, index=True),
    sa.Column("source", sa.String(1000), nullable=True),
    sa.Column("n_answers", sa.Integer, nullable=False),
    sa.Column("answers_blob", sa.String(64), sa.ForeignKey("blobs.hash"), nullable=False),
    sa.Column("report", sa.JSON, nullable=False),
)

judge_labels = sa.Table(
    "judge_labels",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("created_at", _when, nullable=False),
    sa.Column("judge", sa.String(500), nullable=False),  # model (or judge) that labelled
    sa.Column("prompt_hash", sa.String(64), nullable=True),
    sa.Column("prompt", sa.Text, nullable=True),
    sa.Column("source", sa.String(1000), nullable=True),
    sa.Column("n_labels", sa.Integer, nullable=False),
    sa.Column("labels_blob", sa.String(64), sa.ForeignKey("blobs.hash"), nullable=False),
    sa.Column("report", sa.JSON, nullable=False),
)

# -- the golden-set workbench (docs/labelling.md): queues of questions, labellers and labels --
#: what a queue labels: evidence spans (and answers) of questions, or generated answers
QUEUE_KINDS = ("evidence", "answers")
#: how an item's question was made
ORIGINS = ("logged", "written", "drafted", "golden")
#: a labeller's own label, or the adjudicated one (one per item)
ROLES = ("label", "resolved")

labellers = sa.Table(
    "labellers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(100), nullable=False),
    sa.Column("token_hash", sa.String(64), nullable=True),  # sha256 hex; None: loopback only
    sa.Column("created_at", _when, nullable=False),
    sa.UniqueConstraint("name", name="uq_labellers_name"),
    sa.UniqueConstraint("token_hash", name="uq_labellers_token_hash"),
)

label_queues = sa.Table(
    "label_queues",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    # the corpus as a table (id, text, title, metadata): the lab shows documents with no file
    sa.Column("corpus_blob", sa.String(64), sa.ForeignKey("blobs.hash"), nullable=True),
    sa.Column("corpus_fingerprint", sa.String(64), nullable=True),
    sa.Column("n_docs", sa.Integer, nullable=False),
    sa.Column("double_share", sa.Float, nullable=False),
    sa.Column("seed", sa.Integer, nullable=False),
    sa.Column("parent_version", sa.String(64), nullable=True),
    sa.Column("source", sa.String(1000), nullable=True),
    sa.Column("created_at", _when, nullable=False),
    sa.UniqueConstraint("name", name="uq_label_queues_name"),
    sa.CheckConstraint("kind IN ('evidence', 'answers')", name="kind"),
)

label_items = sa.Table(
    "label_items",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "queue_id",
        sa.Integer,
        sa.ForeignKey("label_queues.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("qid", sa.String(500), nullable=False),
    sa.Column("question", sa.Text, nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("origin", sa.String(16), nullable=False),
    sa.Column("accepted", sa.Boolean, nullable=False),  # False: a draft no labeller accepted
    sa.Column("double", sa.Boolean, nullable=False),  # two labellers label it
    sa.Column("context", sa.JSON, nullable=False),  # shown beside the question, never a label
    sa.Column("prefill", sa.JSON, nullable=True),  # a reviewed golden set's label
    sa.UniqueConstraint("queue_id", "qid", name="uq_label_items_queue_id_qid"),
    sa.CheckConstraint("origin IN ('logged', 'written', 'drafted', 'golden')", name="origin"),
)

labels = sa.Table(
    "labels",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "item_id",
        sa.Integer,
        sa.ForeignKey("label_items.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    # who made it (for a resolved label: who resolved it last)
    sa.Column(
        "labeller_id",
        sa.Integer,
        sa.ForeignKey("labellers.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("role", sa.String(16), nullable=False),
    # the labeller's id for a "label", 0 for "resolved": one label per labeller, one resolution
    # per item, kept by the unique constraint on every database (no partial index needed)
    sa.Column("slot", sa.Integer, nullable=False),
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("created_at", _when, nullable=False),
    sa.Column("updated_at", _when, nullable=False),
    sa.UniqueConstraint("item_id", "role", "slot", name="uq_labels_item_id_role_slot"),
    sa.CheckConstraint("role IN ('label', 'resolved')", name="role"),
)
