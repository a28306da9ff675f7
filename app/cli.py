"""The `ragmeta` command: run the service, migrate, run a worker.

ragmeta migrate            bring the database to the code's schema
ragmeta serve              serve the API (refuses an unmigrated database)
ragmeta run                migrate, then serve (what `make run` does)
"""

from __future__ import annotations

import argparse
import sys

from app.settings import get_settings


def _migrate() -> None:
    from services.db import current_revision, head_revision, make_engine, upgrade

    settings = get_settings()
    engine = make_engine(settings.database_url)
    before = current_revision(engine)
    upgrade(settings.database_url)
    where = engine.url.render_as_string(hide_password=True)
    print(f"database {where}: {before or 'empty'} -> {head_revision()}")
    engine.dispose()


def _serve(host: str, port: int) -> None:
    import uvicorn

    from app.main import create_app

    print(f"ragmeta serving on http://{host}:{port}/  (API docs: http://{host}:{port}/docs)", flush=True)
    uvicorn.run(create_app(), host=host, port=port, log_level="warning")


def main(argv: list[str] | None = None) -> int:
    settings = get_settings()
    parser = argparse.ArgumentParser(prog="ragmeta", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="apply database migrations")
    for name in ("serve", "run"):
        p = sub.add_parser(name, help="serve the API" if name == "serve" else "migrate and serve")
        p.add_argument("--host", default=settings.host)
        p.add_argument("--port", type=int, default=settings.port)
    args = parser.parse_args(argv)
    if args.command == "migrate":
        _migrate()
    elif args.command == "serve":
        _serve(args.host, args.port)
    elif args.command == "run":
        _migrate()
        _serve(args.host, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
