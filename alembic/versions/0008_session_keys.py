"""browser sessions record the API key they were signed in with

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 09:00:00.000000

A session lives only while its key does: revoking the key ends the sessions opened with it. Sessions opened
before this revision do not say which key they came from, and some may come from a key revoked since, so
they are ended here (their browsers sign in again); a session lasts hours, so nothing else is lost.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("DELETE FROM web_session")
    with op.batch_alter_table("web_session") as batch:
        batch.add_column(sa.Column("key_id", sa.Integer(), nullable=False))
        batch.create_foreign_key("fk_web_session_key_id", "api_key", ["key_id"], ["id"], ondelete="CASCADE")
        batch.create_index("ix_web_session_key_id", ["key_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("web_session") as batch:
        batch.drop_index("ix_web_session_key_id")
        batch.drop_constraint("fk_web_session_key_id", type_="foreignkey")
        batch.drop_column("key_id")
