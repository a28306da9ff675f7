"""passages and chunks located from text record how and their match score

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 01:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("passage") as batch:
        batch.add_column(sa.Column("location", sa.String(length=16), nullable=False, server_default="given"))
        batch.add_column(sa.Column("match_score", sa.Float(), nullable=True))
    with op.batch_alter_table("retrieved_chunk") as batch:
        batch.add_column(sa.Column("match_score", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("retrieved_chunk") as batch:
        batch.drop_column("match_score")
    with op.batch_alter_table("passage") as batch:
        batch.drop_column("match_score")
        batch.drop_column("location")
