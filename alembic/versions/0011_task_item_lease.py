"""a lease on the items an active task serves: when each was served, and items released after the lease

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06 07:00:00.000000

An item an active task served and its rater left unrated held the output's rater slot for good. Items now
record when they were served (``served_at``); one left pending longer than the task's lease is marked
``released`` (``released_at``), keeping its draw and inclusion probability, and the output may be served to
another rater. Items pending at the upgrade are taken as served when their draw was decided.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD = "status IN ('pending', 'rated', 'skipped', 'flagged')"
NEW = "status IN ('pending', 'rated', 'skipped', 'flagged', 'released')"


def upgrade() -> None:
    with op.batch_alter_table("task_item") as batch:
        batch.add_column(sa.Column("served_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("released_at", sa.DateTime(timezone=True), nullable=True))
        batch.drop_constraint("task_item_status", type_="check")
        batch.create_check_constraint("task_item_status", NEW)
    op.execute(
        "UPDATE task_item SET served_at = (SELECT decided_at FROM task_draw WHERE task_draw.id = "
        "task_item.draw_id) WHERE draw_id IS NOT NULL"
    )


def downgrade() -> None:
    op.execute("UPDATE task_item SET status = 'skipped' WHERE status = 'released'")
    with op.batch_alter_table("task_item") as batch:
        batch.drop_constraint("task_item_status", type_="check")
        batch.create_check_constraint("task_item_status", OLD)
        batch.drop_column("released_at")
        batch.drop_column("served_at")
