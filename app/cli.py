"""The `ragmeta` command: the server commands (migrate, serve, run, worker) and the client commands of
app.client, under one parser so that `ragmeta --help` lists them all."""

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
    from services.metrics.resources import ScoringResources
    from services.offline import apply_offline_env

    apply_offline_env()
    settings = get_settings()
    engine = make_engine(settings.database_url)
    ensure_migrated(engine, settings.database_url, settings.auto_migrate)
    factory = make_session_factory(engine)
    # Judge calls go through settings.judge.gateway_url when set (one bound shared with other workers),
    # else through a gateway of this process's own.
    resources = ScoringResources(settings, factory)
    worker = Worker(JobContext(factory, settings, resources), worker_id=worker_id)
    print(
        f"ragmeta worker {worker.worker_id} on {engine.url.render_as_string(hide_password=True)}", flush=True
    )
    try:
        if once:
            worker.drain()
        else:
            with contextlib.suppress(KeyboardInterrupt):
                worker.run_forever()
    finally:
        resources.close()


def build_parser() -> argparse.ArgumentParser:
    from app import client

    url = argparse.ArgumentParser(add_help=False)
    url.add_argument(
        "--url",
        default=argparse.SUPPRESS,
        help=f"service URL for client commands (default: $RAGMETA_URL, else {client.DEFAULT_URL})",
    )
    parser = argparse.ArgumentParser(
        prog="ragmeta",
        description="ragmeta: which automatic RAG metrics agree with your human raters. Server commands run "
        "the service; client commands talk to a running one.",
        epilog=client.EXIT_CODES
        + "\n\nenvironment:\n  RAGMETA_URL  the service URL of client commands (--url overrides it)\n"
        "  RAGMETA_*    the service's settings (server commands), see README",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[url],
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    sub.add_parser("migrate", help="bring the database to the code's schema (Alembic upgrade)")
    for name, help_text in (
        ("serve", "serve the API (refuses an unmigrated database)"),
        ("run", "migrate, load and score the bundled demo, then serve (what `make run` does)"),
    ):
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument(
            "--host", default=None, help="interface to listen on (default: RAGMETA_HOST or 127.0.0.1)"
        )
        p.add_argument("--port", type=int, default=None, help="port (default: RAGMETA_PORT or 8000)")
        if name == "run":
            p.add_argument("--no-demo", action="store_true", help="do not load and score the bundled demo")
    w = sub.add_parser(
        "worker", help="run a job worker against the same database", description="run a job worker"
    )
    w.add_argument("--id", default=None, help="worker id shown in job items (default: random)")
    w.add_argument("--once", action="store_true", help="exit when no work is left")
    client.add_commands(sub, url)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if getattr(args, "client", None) is not None:
        from app.client import run

        return run(args)
    settings = get_settings()
    host = getattr(args, "host", None) or settings.host
    port = getattr(args, "port", None) or settings.port
    if args.command == "migrate":
        _migrate()
    elif args.command == "serve":
        _serve(host, port)
    elif args.command == "worker":
        _worker(args.id, args.once)
    elif args.command == "run":
        _migrate()
        if not args.no_demo:
            _demo(host, port)
        _serve(host, port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
