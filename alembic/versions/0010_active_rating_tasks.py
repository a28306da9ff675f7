"""rating tasks with an active sampling policy: the stream of draws with their inclusion probabilities,
the policy's recorded fits, and each served item's probability

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04 20:00:00.000000

A task made with ``policy = 'active'`` gets no queues up front: its outputs are put in a seeded order
(``task_draw``, one row per output, with the metric value the policy reads) and decided one at a time when a
rater needs an item, each with its inclusion probability recorded at that moment. ``task_fit`` records every
refit of the uncertainty model. Existing tasks are ``fixed`` (assigned when made, as before).
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("rating_task") as batch:
        batch.add_column(sa.Column("policy", sa.String(16), nullable=False, server_default="fixed"))
        batch.add_column(sa.Column("policy_params", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("closed_reason", sa.Text(), nullable=True))
    op.create_table(
        "task_fit",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "task_id", sa.Integer(), sa.ForeignKey("rating_task.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("n_ratings", sa.Integer(), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_task_fit_task_id", "task_fit", ["task_id"])
    op.create_table(
        "task_draw",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "task_id", sa.Integer(), sa.ForeignKey("rating_task.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("stream_index", sa.Integer(), nullable=False),
        sa.Column("output_id", sa.Integer(), sa.ForeignKey("output.id", ondelete="CASCADE"), nullable=False),
        sa.Column(
            "question_id", sa.Integer(), sa.ForeignKey("question.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("metric_value", sa.Float(), nullable=False),
        sa.Column("metric_imputed", sa.Boolean(), nullable=False),
        sa.Column("pi", sa.Float(), nullable=True),
        sa.Column("included", sa.Boolean(), nullable=True),
        sa.Column("fit_id", sa.Integer(), sa.ForeignKey("task_fit.id", ondelete="SET NULL"), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("task_id", "stream_index"),
        sa.UniqueConstraint("task_id", "output_id"),
    )
    op.create_index("ix_task_draw_task_id", "task_draw", ["task_id"])
    with op.batch_alter_table("task_item") as batch:
        batch.add_column(sa.Column("draw_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("inclusion_probability", sa.Float(), nullable=True))
        batch.create_foreign_key(
            "fk_task_item_draw_id", "task_draw", ["draw_id"], ["id"], ondelete="SET NULL"
        )


def downgrade() -> None:
    with op.batch_alter_table("task_item") as batch:
        batch.drop_constraint("fk_task_item_draw_id", type_="foreignkey")
        batch.drop_column("inclusion_probability")
        batch.drop_column("draw_id")
    op.drop_index("ix_task_draw_task_id", "task_draw")
    op.drop_table("task_draw")
    op.drop_index("ix_task_fit_task_id", "task_fit")
    op.drop_table("task_fit")
    with op.batch_alter_table("rating_task") as batch:
        batch.drop_column("closed_reason")
        batch.drop_column("closed_at")
        batch.drop_column("policy_params")
        batch.drop_column("policy")
