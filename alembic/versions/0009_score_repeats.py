"""metric scores carry the repeat index of the judge asking they come from

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04 04:00:00.000000

A scoring job with ``repeats = k`` asks the judge k independent times per (metric, output) and keeps each
answer's score: the repeat index becomes part of what makes a score unique. Existing scores are repeat 0.
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The unique constraint of 0001 was created without a name: PostgreSQL named it itself, SQLite keeps none
# (batch mode names the reflected one by this convention so that it can be dropped).
_OLD_POSTGRES = "metric_score_output_id_metric_config_key_key"
_OLD_SQLITE = "uq_metric_score_output_id"
_CONVENTION = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def _old_name() -> str:
    return _OLD_POSTGRES if op.get_bind().dialect.name == "postgresql" else _OLD_SQLITE


def upgrade() -> None:
    with op.batch_alter_table("metric_score", naming_convention=_CONVENTION) as batch:
        batch.add_column(sa.Column("repeat", sa.Integer(), nullable=False, server_default="0"))
        batch.drop_constraint(_old_name(), type_="unique")
        batch.create_unique_constraint(
            "uq_metric_score_repeat", ["output_id", "metric", "config_key", "repeat"]
        )


def downgrade() -> None:
    op.execute("DELETE FROM metric_score WHERE repeat <> 0")
    with op.batch_alter_table("metric_score", naming_convention=_CONVENTION) as batch:
        batch.drop_constraint("uq_metric_score_repeat", type_="unique")
        batch.create_unique_constraint(_old_name(), ["output_id", "metric", "config_key"])
        batch.drop_column("repeat")
