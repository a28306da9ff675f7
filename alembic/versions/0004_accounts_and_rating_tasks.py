"""accounts and rating tasks

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 23:55:19.483260
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "app_user",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("role IN ('admin', 'editor', 'rater', 'viewer')", name="user_role"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "login_failure",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("client", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("login_failure", schema=None) as batch_op:
        batch_op.create_index("ix_login_failure_client_at", ["client", "at"], unique=False)
        batch_op.create_index("ix_login_failure_name_at", ["name", "at"], unique=False)

    op.create_table(
        "api_key",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=True),
        sa.Column("prefix", sa.String(length=32), nullable=False),
        sa.Column("hash", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["app_user.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("prefix"),
    )
    with op.batch_alter_table("api_key", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_key_user_id"), ["user_id"], unique=False)

    op.create_table(
        "rater_account",
        sa.Column("rater_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["rater_id"], ["rater.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["app_user.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("rater_id"),
        sa.UniqueConstraint("user_id"),
    )
    op.create_table(
        "web_session",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["app_user.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    with op.batch_alter_table("web_session", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_web_session_user_id"), ["user_id"], unique=False)

    op.create_table(
        "rating_task",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("mode", sa.String(length=16), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("run_b_id", sa.Integer(), nullable=True),
        sa.Column("rubric_id", sa.Integer(), nullable=False),
        sa.Column("per_output", sa.Integer(), nullable=True),
        sa.Column("show_reference", sa.Boolean(), nullable=False),
        sa.Column("show_contexts", sa.Boolean(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("mode IN ('pointwise', 'pairwise')", name="task_mode"),
        sa.ForeignKeyConstraint(["created_by"], ["app_user.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["rubric_id"], ["rubric.id"], ondelete="RESTRICT"),
        sa.ForeignKeyConstraint(["run_b_id"], ["run.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    with op.batch_alter_table("rating_task", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_rating_task_run_id"), ["run_id"], unique=False)

    op.create_table(
        "task_item",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("question_id", sa.Integer(), nullable=False),
        sa.Column("output_id", sa.Integer(), nullable=False),
        sa.Column("output_b_id", sa.Integer(), nullable=True),
        sa.Column("b_on_left", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("preference", sa.Integer(), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("flag_reason", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("status IN ('pending', 'rated', 'skipped', 'flagged')", name="task_item_status"),
        sa.ForeignKeyConstraint(["output_b_id"], ["output.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["output_id"], ["output.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["question_id"], ["question.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["task_id"], ["rating_task.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["app_user.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("task_id", "user_id", "position"),
        sa.UniqueConstraint("task_id", "user_id", "question_id"),
    )
    with op.batch_alter_table("task_item", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_task_item_output_id"), ["output_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_task_item_task_id"), ["task_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_task_item_user_id"), ["user_id"], unique=False)

    op.create_table(
        "task_rater",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("order_seed", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["rating_task.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["app_user.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("task_id", "user_id"),
    )
    with op.batch_alter_table("task_rater", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_task_rater_task_id"), ["task_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_task_rater_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("task_rater", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_task_rater_user_id"))
        batch_op.drop_index(batch_op.f("ix_task_rater_task_id"))

    op.drop_table("task_rater")
    with op.batch_alter_table("task_item", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_task_item_user_id"))
        batch_op.drop_index(batch_op.f("ix_task_item_task_id"))
        batch_op.drop_index(batch_op.f("ix_task_item_output_id"))

    op.drop_table("task_item")
    with op.batch_alter_table("rating_task", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_rating_task_run_id"))

    op.drop_table("rating_task")
    with op.batch_alter_table("web_session", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_web_session_user_id"))

    op.drop_table("web_session")
    op.drop_table("rater_account")
    with op.batch_alter_table("api_key", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_key_user_id"))

    op.drop_table("api_key")
    with op.batch_alter_table("login_failure", schema=None) as batch_op:
        batch_op.drop_index("ix_login_failure_name_at")
        batch_op.drop_index("ix_login_failure_client_at")

    op.drop_table("login_failure")
    op.drop_table("app_user")
