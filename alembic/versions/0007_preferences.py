"""preference ratings imported from a file; the output versions each side-by-side preference was given on

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 10:50:00.000000

Preferences given in a pairwise rating task before this revision carry no output versions. They are filled
in only where the version is certain: an output never changed (version 1), or the preference was given after
the output's last change (the item's updated_at at or after the output's). Every other one stays null and
the pairwise report leaves it out as possibly given on an earlier answer (and counts it).
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _backfill(column: str, output_column: str) -> None:
    op.execute(
        f"""
        UPDATE task_item SET {column} = (
            SELECT output.version FROM output
            WHERE output.id = task_item.{output_column}
              AND (output.version = 1 OR output.updated_at <= task_item.updated_at)
        )
        WHERE task_item.preference IS NOT NULL AND task_item.{output_column} IS NOT NULL
        """
    )


def upgrade() -> None:
    with op.batch_alter_table("task_item") as batch:
        batch.add_column(sa.Column("output_version", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("output_b_version", sa.Integer(), nullable=True))
    _backfill("output_version", "output_id")
    _backfill("output_b_version", "output_b_id")
    op.create_table(
        "preference",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_a_id", sa.Integer(), nullable=False),
        sa.Column("run_b_id", sa.Integer(), nullable=False),
        sa.Column("question_id", sa.Integer(), nullable=False),
        sa.Column("output_a_id", sa.Integer(), nullable=False),
        sa.Column("output_b_id", sa.Integer(), nullable=False),
        sa.Column("output_a_version", sa.Integer(), nullable=False),
        sa.Column("output_b_version", sa.Integer(), nullable=False),
        sa.Column("rater_id", sa.Integer(), nullable=False),
        sa.Column("rubric_id", sa.Integer(), nullable=False),
        sa.Column("score", sa.Integer(), nullable=False),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("run_a_id < run_b_id", name="preference_run_order"),
        sa.ForeignKeyConstraint(["run_a_id"], ["run.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_b_id"], ["run.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["question_id"], ["question.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["output_a_id"], ["output.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["output_b_id"], ["output.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["rater_id"], ["rater.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["rubric_id"], ["rubric.id"], ondelete="RESTRICT"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_a_id", "run_b_id", "question_id", "rater_id"),
    )
    for column in ("run_a_id", "run_b_id", "output_a_id", "output_b_id", "rater_id"):
        op.create_index(f"ix_preference_{column}", "preference", [column])


def downgrade() -> None:
    op.drop_table("preference")
    with op.batch_alter_table("task_item") as batch:
        batch.drop_column("output_b_version")
        batch.drop_column("output_version")
