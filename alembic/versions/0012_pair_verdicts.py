"""pairwise judge verdicts in both orders; the repeat index kept with a score's history

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06 06:30:00.000000

``pair_verdict`` holds what a pairwise judge said about two runs' answers to one question, asked once with
each answer shown first (the position probe of the stability report). ``metric_score_history.repeat`` keeps
the judge asking a superseded score came from, as ``metric_score.repeat`` does; rows moved there before are
repeat 0.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("metric_score_history") as batch:
        batch.add_column(sa.Column("repeat", sa.Integer(), nullable=False, server_default="0"))
    op.create_table(
        "pair_verdict",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("run_a_id", sa.Integer(), sa.ForeignKey("run.id", ondelete="CASCADE"), nullable=False),
        sa.Column("run_b_id", sa.Integer(), sa.ForeignKey("run.id", ondelete="CASCADE"), nullable=False),
        sa.Column(
            "question_id", sa.Integer(), sa.ForeignKey("question.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column(
            "output_a_id", sa.Integer(), sa.ForeignKey("output.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column(
            "output_b_id", sa.Integer(), sa.ForeignKey("output.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("output_a_version", sa.Integer(), nullable=False),
        sa.Column("output_b_version", sa.Integer(), nullable=False),
        sa.Column("config_key", sa.String(64), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("a_first", sa.String(8), nullable=True),
        sa.Column("b_first", sa.String(8), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("job_id", sa.Integer(), sa.ForeignKey("job.id", ondelete="SET NULL"), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("run_a_id", "run_b_id", "question_id", "config_key", name="uq_pair_verdict"),
        sa.CheckConstraint("run_a_id < run_b_id", name="pair_verdict_run_order"),
    )
    op.create_index("ix_pair_verdict_run_a_id", "pair_verdict", ["run_a_id"])
    op.create_index("ix_pair_verdict_run_b_id", "pair_verdict", ["run_b_id"])
    op.create_index("ix_pair_verdict_output_a_id", "pair_verdict", ["output_a_id"])
    op.create_index("ix_pair_verdict_output_b_id", "pair_verdict", ["output_b_id"])


def downgrade() -> None:
    op.drop_table("pair_verdict")
    with op.batch_alter_table("metric_score_history") as batch:
        batch.drop_column("repeat")
