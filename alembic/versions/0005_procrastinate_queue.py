"""procrastinate's queue schema (PostgreSQL only)

On PostgreSQL, job batches are dispatched through procrastinate (services/jobs/queue.py); this installs
the schema of procrastinate 3.10 (its tables, types, functions and triggers, all named ``procrastinate_*``)
from the package's own ``schema.sql``. SQLite keeps the lease loop: nothing to do there.

A later procrastinate release that changes its schema ships migration files
(``procrastinate/sql/migrations``); they go in a new revision, never into this one.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 06:30:00
"""

from collections.abc import Sequence
from importlib import metadata, resources

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEMA_VERSION = "3.10"

DROP = """
DROP TABLE IF EXISTS procrastinate_events, procrastinate_periodic_defers, procrastinate_jobs,
    procrastinate_workers CASCADE;
DO $$
DECLARE f record;
BEGIN
    FOR f IN SELECT p.oid::regprocedure AS sig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = current_schema() AND p.proname LIKE 'procrastinate\\_%'
    LOOP
        EXECUTE 'DROP FUNCTION IF EXISTS ' || f.sig || ' CASCADE';
    END LOOP;
END $$;
DROP TYPE IF EXISTS procrastinate_job_to_defer_v1, procrastinate_job_event_type,
    procrastinate_job_status CASCADE;
"""


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    installed = metadata.version("procrastinate")
    if not installed.startswith(SCHEMA_VERSION + "."):
        raise RuntimeError(
            f"revision 0005 installs procrastinate {SCHEMA_VERSION}'s schema, but procrastinate {installed} "
            "is installed: install the version pinned in requirements.lock"
        )
    schema = (resources.files("procrastinate.sql") / "schema.sql").read_text(encoding="utf-8")
    # Several statements, no parameters: sent as they are, like procrastinate's own `schema --apply`.
    bind.connection.driver_connection.execute(schema)  # type: ignore[union-attr]


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    bind.connection.driver_connection.execute(DROP)  # type: ignore[union-attr]
