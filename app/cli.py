"""The `ragmeta` command: run the service, migrate, run a worker.

ragmeta migrate            bring the database to the code's schema
ragmeta serve              serve the API (refuses an unmigrated database)
ragmeta run                migrate, then serve (what `make run` does)
"""

from __future__ import annotations

import argparse
import contextlib
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


def _demo(host: str, port: int) -> None:
    from app.demo import prepare, summary
    from services.db import make_engine, make_session_factory
    from services.offline import apply_offline_env

    apply_offline_env()
    settings = get_settings()
    factory = make_session_factory(make_engine(settings.database_url))
    print("preparing the bundled demo study (offline; only the first run takes a while)...", flush=True)
    info = prepare(factory, settings)
    print(summary(factory, settings, info["runs"], f"http://{host}:{port}"), flush=True)


def _serve(host: str, port: int) -> None:
    import uvicorn

    from app.main import create_app

    print(f"ragmeta serving on http://{host}:{port}/  (API docs: http://{host}:{port}/docs)", flush=True)
    uvicorn.run(create_app(), host=host, port=port, log_level="warning")


def _worker(worker_id: str | None, once: bool) -> None:
    from services.db import ensure_migrated, make_engine, make_session_factory
    from services.jobs.worker import JobContext, Worker
    from services.offline import apply_offline_env

    apply_offline_env()
    settings = get_settings()
    engine = make_engine(settings.database_url)
    ensure_migrated(engine, settings.database_url, settings.auto_migrate)
    worker = Worker(JobContext(make_session_factory(engine), settings), worker_id=worker_id)
    print(
        f"ragmeta worker {worker.worker_id} on {engine.url.render_as_string(hide_password=True)}", flush=True
    )
    if once:
        worker.drain()
    else:
        with contextlib.suppress(KeyboardInterrupt):
            worker.run_forever()


CLIENT_COMMANDS = {
    "import-dataset",
    "index",
    "create-run",
    "generate",
    "import-outputs",
    "rate",
    "score",
    "report",
    "figure",
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of the service commands (client commands have their own, in app.client)."""
    settings = get_settings()
    parser = argparse.ArgumentParser(prog="ragmeta", description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("migrate", help="apply database migrations")
    for name in ("serve", "run"):
        p = sub.add_parser(
            name, help="serve the API" if name == "serve" else "migrate, load the demo and serve"
        )
        p.add_argument("--host", default=settings.host)
        p.add_argument("--port", type=int, default=settings.port)
        if name == "run":
            p.add_argument("--no-demo", action="store_true", help="do not load and score the bundled demo")
    w = sub.add_parser("worker", help="run the job worker")
    w.add_argument("--id", default=None, help="worker id shown in job items (default: random)")
    w.add_argument("--once", action="store_true", help="exit when no work is left")
    return parser


def main(argv: list[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    # Client commands talk to a running service over HTTP; `--url` may precede them.
    words = [a for a in args_in if not a.startswith("-")]
    if (words and words[0] in CLIENT_COMMANDS) or args_in[:1] == ["--url"]:
        from app.client import main as client_main

        return client_main(args_in)
    args = build_parser().parse_args(args_in)
    if args.command == "migrate":
        _migrate()
    elif args.command == "serve":
        _serve(args.host, args.port)
    elif args.command == "worker":
        _worker(args.id, args.once)
    elif args.command == "run":
        _migrate()
        if not args.no_demo:
            _demo(args.host, args.port)
        _serve(args.host, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
