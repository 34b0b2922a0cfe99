"""The golden-set workbench: labellers, label queues, their items and labels; the parent version
of a stored golden set

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-07 14:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("golden_versions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("parent", sa.String(length=64), nullable=True))

    op.create_table(
        "labellers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_labellers")),
        sa.UniqueConstraint("name", name="uq_labellers_name"),
        sa.UniqueConstraint("token_hash", name="uq_labellers_token_hash"),
    )
    op.create_table(
        "label_queues",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("corpus_blob", sa.String(length=64), nullable=True),
        sa.Column("corpus_fingerprint", sa.String(length=64), nullable=True),
        sa.Column("n_docs", sa.Integer(), nullable=False),
        sa.Column("double_share", sa.Float(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("parent_version", sa.String(length=64), nullable=True),
        sa.Column("source", sa.String(length=1000), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("kind IN ('evidence', 'answers')", name=op.f("ck_label_queues_kind")),
        sa.ForeignKeyConstraint(
            ["corpus_blob"], ["blobs.hash"], name=op.f("fk_label_queues_corpus_blob_blobs")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_label_queues")),
        sa.UniqueConstraint("name", name="uq_label_queues_name"),
    )
    op.create_table(
        "label_items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("queue_id", sa.Integer(), nullable=False),
        sa.Column("qid", sa.String(length=500), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("accepted", sa.Boolean(), nullable=False),
        sa.Column("double", sa.Boolean(), nullable=False),
        sa.Column("context", sa.JSON(), nullable=False),
        sa.Column("prefill", sa.JSON(), nullable=True),
        sa.CheckConstraint(
            "origin IN ('logged', 'written', 'drafted', 'golden')",
            name=op.f("ck_label_items_origin"),
        ),
        sa.ForeignKeyConstraint(
            ["queue_id"],
            ["label_queues.id"],
            name=op.f("fk_label_items_queue_id_label_queues"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_label_items")),
        sa.UniqueConstraint("queue_id", "qid", name="uq_label_items_queue_id_qid"),
    )
    with op.batch_alter_table("label_items", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_label_items_queue_id"), ["queue_id"], unique=False)

    op.create_table(
        "labels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("labeller_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("role IN ('label', 'resolved')", name=op.f("ck_labels_role")),
        sa.ForeignKeyConstraint(
            ["item_id"],
            ["label_items.id"],
            name=op.f("fk_labels_item_id_label_items"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["labeller_id"],
            ["labellers.id"],
            name=op.f("fk_labels_labeller_id_labellers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_labels")),
        sa.UniqueConstraint("item_id", "role", "slot", name="uq_labels_item_id_role_slot"),
    )
    with op.batch_alter_table("labels", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_labels_item_id"), ["item_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_labels_labeller_id"), ["labeller_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("labels", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_labels_labeller_id"))
        batch_op.drop_index(batch_op.f("ix_labels_item_id"))

    op.drop_table("labels")
    with op.batch_alter_table("label_items", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_label_items_queue_id"))

    op.drop_table("label_items")
    op.drop_table("label_queues")
    op.drop_table("labellers")
    with op.batch_alter_table("golden_versions", schema=None) as batch_op:
        batch_op.drop_column("parent")
