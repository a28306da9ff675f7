"""The `ragmeta` command: the server commands (migrate, serve, run, worker) and the client commands of
app.client, under one parser so that `ragmeta --help` lists them all.

`ragmeta keys create --local --role admin --name admin` writes the first admin key into the configured
database directly; every other client command sends $RAGMETA_API_KEY (or --key) as `Authorization: Bearer`."""

from __future__ import annotations

import argparse
import contextlib
import sys

from app.settings import Settings, get_settings


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


def start_banner(settings: Settings, host: str, port: int) -> str:
    lines = [f"ragmeta serving on http://{host}:{port}/  (API docs: http://{host}:{port}/docs)"]
    if not settings.auth.enabled:
        lines.append(
            "authentication is OFF (RAGMETA_AUTH__ENABLED=false): this is the open demo, on loopback only; "
            "anyone who can reach this address can read and change everything. For a real deployment set "
            "RAGMETA_AUTH__ENABLED=true and create an admin key: ragmeta keys create --local --role admin "
            "--name admin"
        )
    return "\n".join(lines)


def _refuse_open(host: str) -> None:
    from app.auth import open_mode_refusal

    refusal = open_mode_refusal(get_settings(), host)
    if refusal:
        print(f"ragmeta: {refusal}", file=sys.stderr, flush=True)
        raise SystemExit(2)


def _local_key(args: argparse.Namespace) -> int:
    """`ragmeta keys create --local ...`: issue a key straight into the configured database."""
    from app.client import print_issued
    from services.accounts import service as accounts
    from services.accounts.schemas import KeyCreate
    from services.db import ensure_migrated, make_engine, make_session_factory, session_scope
    from services.errors import ServiceError

    settings = get_settings()
    engine = make_engine(settings.database_url)
    ensure_migrated(engine, settings.database_url, settings.auto_migrate)
    try:
        with session_scope(make_session_factory(engine)) as s:
            data = KeyCreate(name=args.name, role=args.role, label=args.label)
            issued = accounts.issue_key(s, accounts.KeyHasher(settings.auth), data)
    except ServiceError as exc:
        print(f"error: {exc.detail}", file=sys.stderr)
        return 1
    finally:
        engine.dispose()
    print_issued(issued.model_dump(mode="json"))
    return 0


def _serve(host: str, port: int) -> None:
    import uvicorn

    from app.main import create_app

    _refuse_open(host)
    print(start_banner(get_settings(), host, port), flush=True)
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
    url.add_argument(
        "--key",
        default=argparse.SUPPRESS,
        help="API key of client commands (default: $RAGMETA_API_KEY); never echoed",
    )
    parser = argparse.ArgumentParser(
        prog="ragmeta",
        description="ragmeta: which automatic RAG metrics agree with your human raters. Server commands run "
        "the service; client commands talk to a running one.",
        epilog=client.EXIT_CODES
        + "\n\nenvironment:\n  RAGMETA_URL  the service URL of client commands (--url overrides it)\n"
        "  RAGMETA_API_KEY  the API key of client commands (--key overrides it)\n"
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
    if args.command == "keys" and getattr(args, "local", False):
        return _local_key(args)
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
        _refuse_open(host)
        _migrate()
        if not args.no_demo:
            _demo(host, port)
        _serve(host, port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
