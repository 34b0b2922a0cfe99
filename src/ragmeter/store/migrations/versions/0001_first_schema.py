"""The first schema: every table of the experiment store

Revision ID: 0001
Revises: (none)
Create Date: 2026-12-01 20:37:02.346929
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "blobs",
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=True),
        sa.Column("path", sa.String(length=300), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("hash", name=op.f("pk_blobs")),
    )
    op.create_table(
        "chunkings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=500), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("stats", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chunkings")),
        sa.UniqueConstraint("fingerprint", name="uq_chunkings_fingerprint"),
    )
    op.create_table(
        "corpora",
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("n_docs", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=1000), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("fingerprint", name=op.f("pk_corpora")),
    )
    op.create_table(
        "experiments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=500), nullable=False),
        sa.Column("file", sa.String(length=1000), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_experiments")),
        sa.UniqueConstraint("name", name="uq_experiments_name"),
    )
    op.create_table(
        "ledger",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("time", sa.String(length=40), nullable=False),
        sa.Column("golden_version", sa.String(length=64), nullable=False),
        sa.Column("metric", sa.String(length=200), nullable=False),
        sa.Column("baseline", sa.String(length=600), nullable=False),
        sa.Column("candidate", sa.String(length=600), nullable=False),
        sa.Column("entry", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger")),
    )
    with op.batch_alter_table("ledger", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_ledger_golden_version"), ["golden_version"], unique=False
        )

    op.create_table(
        "golden_versions",
        sa.Column("version", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=500), nullable=True),
        sa.Column("n_questions", sa.Integer(), nullable=False),
        sa.Column("n_spans", sa.Integer(), nullable=False),
        sa.Column("labels_digest", sa.String(length=64), nullable=False),
        sa.Column("slices", sa.JSON(), nullable=False),
        sa.Column("splits", sa.JSON(), nullable=False),
        sa.Column("questions_blob", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["questions_blob"], ["blobs.hash"], name=op.f("fk_golden_versions_questions_blob_blobs")
        ),
        sa.PrimaryKeyConstraint("version", name=op.f("pk_golden_versions")),
    )
    op.create_table(
        "judge_labels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("judge", sa.String(length=500), nullable=False),
        sa.Column("prompt_hash", sa.String(length=64), nullable=True),
        sa.Column("prompt", sa.Text(), nullable=True),
        sa.Column("source", sa.String(length=1000), nullable=True),
        sa.Column("n_labels", sa.Integer(), nullable=False),
        sa.Column("labels_blob", sa.String(length=64), nullable=False),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["labels_blob"], ["blobs.hash"], name=op.f("fk_judge_labels_labels_blob_blobs")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_judge_labels")),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("experiment_id", sa.Integer(), nullable=False),
        sa.Column("invocation", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=500), nullable=False),
        sa.Column("label", sa.String(length=1000), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("is_baseline", sa.Boolean(), nullable=False),
        sa.Column("golden_version", sa.String(length=64), nullable=True),
        sa.Column("corpus", sa.String(length=64), nullable=True),
        sa.Column("chunking_id", sa.Integer(), nullable=True),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("config_hash", sa.String(length=64), nullable=False),
        sa.Column("changes", sa.JSON(), nullable=False),
        sa.Column("ragmeter_version", sa.String(length=40), nullable=False),
        sa.Column("git_commit", sa.String(length=40), nullable=True),
        sa.Column("git_dirty", sa.Boolean(), nullable=True),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("process_start", sa.String(length=32), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=True),
        sa.Column("timings", sa.JSON(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("n_queries", sa.Integer(), nullable=True),
        sa.Column("context_tokens", sa.Float(), nullable=True),
        sa.Column("ranked_blob", sa.String(length=64), nullable=True),
        sa.Column("source", sa.String(length=1000), nullable=True),
        sa.Column("notes", sa.JSON(), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "status IN ('running', 'finished', 'interrupted', 'failed')",
            name=op.f("ck_runs_status"),
        ),
        sa.ForeignKeyConstraint(
            ["chunking_id"], ["chunkings.id"], name=op.f("fk_runs_chunking_id_chunkings")
        ),
        sa.ForeignKeyConstraint(
            ["corpus"], ["corpora.fingerprint"], name=op.f("fk_runs_corpus_corpora")
        ),
        sa.ForeignKeyConstraint(
            ["experiment_id"],
            ["experiments.id"],
            name=op.f("fk_runs_experiment_id_experiments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["ranked_blob"], ["blobs.hash"], name=op.f("fk_runs_ranked_blob_blobs")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_runs_config_hash"), ["config_hash"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_experiment_id"), ["experiment_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_runs_golden_version"), ["golden_version"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_runs_status"), ["status"], unique=False)

    op.create_table(
        "answer_sets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("name", sa.String(length=500), nullable=False),
        sa.Column("golden_version", sa.String(length=64), nullable=True),
        sa.Column("source", sa.String(length=1000), nullable=True),
        sa.Column("n_answers", sa.Integer(), nullable=False),
        sa.Column("answers_blob", sa.String(length=64), nullable=False),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["answers_blob"], ["blobs.hash"], name=op.f("fk_answer_sets_answers_blob_blobs")
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_answer_sets_run_id_runs"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_answer_sets")),
    )
    with op.batch_alter_table("answer_sets", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_answer_sets_golden_version"), ["golden_version"], unique=False
        )

    op.create_table(
        "comparisons",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("baseline_run_id", sa.Integer(), nullable=True),
        sa.Column("candidate_run_id", sa.Integer(), nullable=True),
        sa.Column("baseline", sa.String(length=500), nullable=False),
        sa.Column("candidate", sa.String(length=500), nullable=False),
        sa.Column("metric", sa.String(length=200), nullable=False),
        sa.Column("golden_version", sa.String(length=64), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("mean_delta", sa.Float(), nullable=True),
        sa.Column("ci_low", sa.Float(), nullable=True),
        sa.Column("ci_high", sa.Float(), nullable=True),
        sa.Column("wins", sa.Integer(), nullable=False),
        sa.Column("losses", sa.Integer(), nullable=False),
        sa.Column("ties", sa.Integer(), nullable=False),
        sa.Column("fixed_ids", sa.JSON(), nullable=True),
        sa.Column("broken_ids", sa.JSON(), nullable=True),
        sa.Column("sign_test_p", sa.Float(), nullable=True),
        sa.Column("n_resamples", sa.Integer(), nullable=False),
        sa.Column("seed", sa.String(length=40), nullable=True),
        sa.Column("slices", sa.JSON(), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("values_blob", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["baseline_run_id"],
            ["runs.id"],
            name=op.f("fk_comparisons_baseline_run_id_runs"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["candidate_run_id"],
            ["runs.id"],
            name=op.f("fk_comparisons_candidate_run_id_runs"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["values_blob"], ["blobs.hash"], name=op.f("fk_comparisons_values_blob_blobs")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_comparisons")),
    )
    with op.batch_alter_table("comparisons", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_comparisons_baseline_run_id"), ["baseline_run_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_comparisons_candidate_run_id"), ["candidate_run_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_comparisons_golden_version"), ["golden_version"], unique=False
        )

    op.create_table(
        "evaluations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("level", sa.String(length=16), nullable=False),
        sa.Column("run_name", sa.String(length=500), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("aggregate", sa.JSON(), nullable=False),
        sa.Column("n_queries", sa.Integer(), nullable=False),
        sa.Column("n_missing", sa.Integer(), nullable=False),
        sa.Column("n_no_relevant", sa.Integer(), nullable=False),
        sa.Column("golden_version", sa.String(length=64), nullable=True),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("values_blob", sa.String(length=64), nullable=False),
        sa.Column("extras_blob", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["extras_blob"], ["blobs.hash"], name=op.f("fk_evaluations_extras_blob_blobs")
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_evaluations_run_id_runs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["values_blob"], ["blobs.hash"], name=op.f("fk_evaluations_values_blob_blobs")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evaluations")),
        sa.UniqueConstraint("run_id", "level", name="uq_evaluations_run_id_level"),
    )


def downgrade() -> None:
    op.drop_table("evaluations")
    with op.batch_alter_table("comparisons", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_comparisons_golden_version"))
        batch_op.drop_index(batch_op.f("ix_comparisons_candidate_run_id"))
        batch_op.drop_index(batch_op.f("ix_comparisons_baseline_run_id"))

    op.drop_table("comparisons")
    with op.batch_alter_table("answer_sets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_answer_sets_golden_version"))

    op.drop_table("answer_sets")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_status"))
        batch_op.drop_index(batch_op.f("ix_runs_golden_version"))
        batch_op.drop_index(batch_op.f("ix_runs_experiment_id"))
        batch_op.drop_index(batch_op.f("ix_runs_config_hash"))

    op.drop_table("runs")
    op.drop_table("judge_labels")
    op.drop_table("golden_versions")
    with op.batch_alter_table("ledger", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ledger_golden_version"))

    op.drop_table("ledger")
    op.drop_table("experiments")
    op.drop_table("corpora")
    op.drop_table("chunkings")
    op.drop_table("blobs")
