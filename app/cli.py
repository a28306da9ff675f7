"""The `ragmeta` command: the server commands (migrate, serve, run, worker) and the client commands of
app.client, under one parser so that `ragmeta --help` lists them all.

`ragmeta keys create --local --role admin --name admin` writes the first admin key into the configured
database directly; every other client command sends $RAGMETA_API_KEY (or --key) as `Authorization: Bearer`."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from app.cli_common import EXIT_CODES, plain
from app.sdk import DEFAULT_URL
from app.settings import Settings, get_settings

if TYPE_CHECKING:
    from services.reports.pool import ReportPool


def _migrate() -> None:
    from services.db import current_revision, head_revision, make_engine, upgrade

    settings = get_settings()
    engine = make_engine(settings.database_url)
    before = current_revision(engine)
    upgrade(settings.database_url)
    where = engine.url.render_as_string(hide_password=True)
    print(f"database {where}: {before or 'empty'} -> {head_revision()}")
    engine.dispose()


def _demo(host: str, port: int, pool: ReportPool | None = None) -> None:
    """Prepare the demo and print its summary; the summary's report is computed by ``pool`` when given
    (the served app's report processes), else here."""
    from app.demo import prepare, summary
    from services.db import make_engine, make_session_factory
    from services.offline import apply_offline_env
    from services.reports import render
    from services.reports.schemas import ReportQuery

    apply_offline_env()
    settings = get_settings()
    engine = make_engine(settings.database_url)
    factory = make_session_factory(engine)
    try:
        print("preparing the bundled demo study (offline; only the first run takes a while)...", flush=True)
        info = prepare(factory, settings)
        ids = list(info["runs"].values())
        report = pool.submit(render.report, ids, ReportQuery()).result() if pool and pool.processes else None
        print(summary(factory, settings, info["runs"], f"http://{host}:{port}", report), flush=True)
    finally:
        engine.dispose()


def _demo_when_served(server: Any, app: Any, host: str, port: int) -> None:
    """The demo prepared once the server answers: a restart serves at once (the demo is already stored;
    preparing it again only finds it unchanged), a first run fills its pages as the jobs end."""
    while not server.started:
        if server.should_exit:
            return
        time.sleep(0.05)
    pool = app.state.resources.report_pool
    # After the report process's warm-up, which it would slow down: a first report page comes first.
    pool.wait_warm(120)
    try:
        _demo(host, port, pool)
    except Exception as exc:  # the service keeps serving what is stored
        print(f"ragmeta: the demo could not be prepared: {type(exc).__name__}: {exc}", file=sys.stderr)


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
    from app.cli_common import print_issued
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


def _serve(host: str, port: int, demo: bool = False) -> None:
    # Refused before anything starts or loads: the refusal is all such a start prints.
    _refuse_open(host)
    from services.reports.pool import ReportPool

    settings = get_settings()
    # The report processes are spawned first: their warm-up (the statistics' libraries, compiled kernels)
    # runs on another core while this process imports the app, so a first report page does not wait.
    early = ReportPool(settings, None, settings.report_processes) if settings.report_processes else None
    if early is not None:
        early.start()
    import uvicorn

    from app.main import create_app

    print(start_banner(settings, host, port), flush=True)
    app = create_app(settings, early)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    if demo:
        threading.Thread(
            target=_demo_when_served, args=(server, app, host, port), name="demo", daemon=True
        ).start()
    server.run()


def _worker(worker_id: str | None, once: bool) -> None:
    from services.db import ensure_migrated
    from services.jobs.queue import make_worker
    from services.jobs.worker import JobContext
    from services.offline import apply_offline_env
    from services.resources import Resources

    apply_offline_env()
    settings = get_settings()
    # Judge calls go through settings.judge.gateway_url when set (one bound shared with other workers),
    # else through a gateway of this process's own. The engine is the resources' own (disposed on close).
    resources = Resources.open(settings)
    engine = resources.engine
    ensure_migrated(engine, settings.database_url, settings.auto_migrate)
    worker = make_worker(JobContext(resources.session_factory, settings, resources), worker_id=worker_id)
    print(
        f"ragmeta worker {worker.worker_id} on {engine.url.render_as_string(hide_password=True)}", flush=True
    )
    # SIGTERM (docker stop, systemd): finish the batch in progress, then exit.
    signal.signal(signal.SIGTERM, lambda *_: worker.request_stop())
    try:
        if once:
            worker.drain()
        else:
            with contextlib.suppress(KeyboardInterrupt):
                worker.run_forever()
    finally:
        resources.close()


# ------------------------------------------------- single-run estimates: human score from few ratings, judges


def _num(x: object, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _estimate_text(est: dict[str, Any]) -> str:
    ro = est["rated_only"]
    lines = [
        f"run {est['run_id']}: {est['n_rated']} of {est['n_outputs']} outputs rated; mean human score",
        f"  {'(rated only)':<32} {ro['estimate']:.2f} [{ro['ci_low']:.2f}, {ro['ci_high']:.2f}]  width "
        f"{ro['width']:.2f}  {est['rated_only_plan']['note']}",
    ]
    for r in est["metrics"]:
        p = r["ppi"]
        if p is None:
            lines.append(f"  {r['metric']:<32} not computed: {r['undefined_reason']}")
            continue
        lines.append(
            f"  {r['metric']:<32} {p['estimate']:.2f} [{p['ci_low']:.2f}, {p['ci_high']:.2f}]  width "
            f"{p['width']:.2f} ({_num(r['width_ratio'])} x)  lambda {_num(r['lam'])}  {r['plan']['note']}"
        )
    lines.append(est["narrowest_note"])
    lines += [f"warning ({w['scope']}): {w['message']}" for w in est["warnings"]]
    clipped = [ro, *(r["ppi"] for r in est["metrics"] if r["ppi"] is not None)]
    lines += [f"note: {c['ci_clipped']}" for c in clipped if c.get("ci_clipped")]
    return "\n".join(lines) + "\n"


def _sensitivity_text(res: dict[str, Any]) -> str:
    def conf(c: dict[str, Any]) -> str:
        return f"{c['id']} ({c['model']}, {c['endpoint']}, {c['language']})"

    lines = [
        f"a = {conf(res['a'])}",
        f"b = {conf(res['b'])}",
        "Pearson r with the raters under a / b, a - b [Zou]:",
    ]
    for r in res["metrics"]:
        d = next(x for x in r["differences"] if x["method"] == "pearson")
        ag = r["agreement"]
        lines.append(
            f"  {r['metric']:<32} n {r['n']:>4}  {_num(r['a']['pearson']['estimate'])} / "
            f"{_num(r['b']['pearson']['estimate'])}  {_num(d['difference'])} [{_num(d['ci_low'])}, "
            f"{_num(d['ci_high'])}]  scores a vs b r {_num(ag['pearson']['estimate'])}"
        )
    lines += [f"warning ({w['scope']}): {w['message']}" for w in res["warnings"]]
    return "\n".join(lines) + "\n"


def _cmd_estimate(c: Any, args: argparse.Namespace) -> None:
    opts = {"k": args.k, "confidence": args.confidence, "target_width": args.target_width}
    if args.format == "text":
        _emit(args, plain(c.run_estimate(args.run, **opts)), _estimate_text)
    else:
        _emit(args, c.run_estimate_text(args.run, args.format, **opts), _estimate_text)


def _cmd_judge_sensitivity(c: Any, args: argparse.Namespace) -> None:
    if args.list:
        resp = plain(c.run_judge_configurations(args.run))
        for conf in resp["configurations"]:
            print(
                f"{conf['id']}  {conf['model']}  {conf['endpoint']}  {conf['language']}  "
                f"{len(conf['metrics'])} metrics, {conf['n_scores']} scores; reported: "
                f"{', '.join(conf['reported']) or '-'}"
            )
        return
    pair = {k: v for k, v in (("a", args.a), ("b", args.b)) if v}
    if args.format == "text":
        _emit(args, plain(c.run_judge_sensitivity(args.run, **pair)), _sensitivity_text)
    else:
        _emit(args, c.run_judge_sensitivity_text(args.run, args.format, **pair), _sensitivity_text)


def _fig(f: dict[str, Any]) -> str:
    if f["estimate"] is None:
        return f"- ({f['undefined_reason']})"
    if f["ci_low"] is None:
        return f"{f['estimate']:.3f} (no interval: {f['undefined_reason']})"
    return f"{f['estimate']:.3f} [{f['ci_low']:.3f}, {f['ci_high']:.3f}]"


def _stability_text(res: dict[str, Any]) -> str:
    lines = [f"run {res['run_id']}: judge stability ({res['n_raters']} raters)"]
    for m in res["metrics"]:
        c = m["corrected"]
        lines.append(f"{m['metric']}: {m['repeats']} repeats on {m['n_outputs']} outputs")
        if m["undefined_reason"]:
            lines.append(f"  {m['undefined_reason']}")
            continue
        lines += [
            f"  ICC(A,1) across repeats   {_fig(m['icc_a1'])}"
            + (f"  (unstable: below {res['unstable_below']})" if m.get("unstable") else ""),
            f"  within-output SD          {_fig(m['within_sd'])}",
            f"  reliability of the mean   {_fig(m['reliability_of_mean'])}",
            f"  r with the mean rating    {_fig(c['raw_r'])}",
            f"  corrected r               {_fig(c['corrected_r'])}"
            + ("  (capped at 1)" if c["capped"] else ""),
        ]
    lines.append(f"rule: {res['rule']}")
    lines += [f"note: {n}" for n in res["notes"]]
    for p in res.get("pair_probes", []):
        lines += _probe_text(p)
    return "\n".join(lines) + "\n"


def _share(p: dict[str, Any] | None, undefined: str = "-") -> str:
    if p is None:
        return undefined
    if p["estimate"] is None or p["ci_low"] is None:
        return p.get("undefined_reason") or undefined
    return f"{p['estimate']:.3f} [{p['ci_low']:.3f}, {p['ci_high']:.3f}] ({p['correct']}/{p['total']})"


def _probe_text(p: dict[str, Any]) -> list[str]:
    """A pairwise judge's position and length probes (the stability report's ``pair_probes``)."""
    causes = ", ".join(f"{c} {n}" for c, n in sorted(p["errors_by_cause"].items()))
    length = p["length"]
    lines = [
        f"pairwise judge, runs {p['run_a']} vs {p['run_b']}: {p['n_judged']} pairs judged in both orders, "
        f"{p['n_errors']} failed" + (f" ({causes})" if causes else ""),
        f"  position consistency      {_share(p['position_consistency'])}",
        f"  first shown won both {p['first_shown_won_both']}, second shown won both "
        f"{p['second_shown_won_both']}, a tie in one order {p['one_order_tie']}",
        f"  judge: longer wins        {_share(length['judge_longer_wins'])}",
        "  humans: longer wins       "
        + _share(length["human_longer_wins"], length.get("human_undefined_reason") or "-"),
    ]
    lines += [f"  error on {e['question']}: {e['error'][:200]}" for e in p["errors"][:5]]
    lines.append(f"  rule: {p['rule']}")
    return lines


def _cmd_stability(c: Any, args: argparse.Namespace) -> None:
    if args.format == "text":
        _emit(args, plain(c.run_stability(args.run)), _stability_text)
    else:
        _emit(args, c.run_stability_text(args.run, args.format), _stability_text)


def _emit(args: argparse.Namespace, resp: Any, text: Any) -> None:
    """JSON (the service's, pretty-printed), CSV (as sent), else the terminal text of the answer."""
    import json

    if args.format == "json":
        print(json.dumps(json.loads(resp), indent=2, ensure_ascii=False))
    elif args.format == "csv":
        print(resp, end="")
    else:
        print(text(resp), end="")


def _add_estimate_commands(sub: Any, url: argparse.ArgumentParser) -> None:
    formats = {"choices": ("text", "json", "csv"), "default": "text", "help": "output (default text)"}
    p = sub.add_parser(
        "estimate",
        parents=[url],
        help="a run's mean human score from its rated outputs and each metric (prediction-powered)",
        description="The run's mean human score from the rated outputs and each metric on every output "
        "(PPI++), beside the rated-only interval, and the ratings a target width needs.",
    )
    p.add_argument("run", type=int, help="run id")
    p.add_argument("--k", type=int, default=5, help="k of the retrieval metrics (default 5)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--target-width", type=float, default=None, help="interval width to plan ratings for")
    p.add_argument("--format", **formats)
    p.set_defaults(client=_cmd_estimate)
    p = sub.add_parser(
        "judge-sensitivity",
        parents=[url],
        help="the same judge metrics under two judge configurations: agreement with the raters under each",
        description="Per judge metric scored under two judge configurations on the run: correlation with "
        "the raters under each, the paired difference (Zou), and how the two configurations' scores agree.",
    )
    p.add_argument("run", type=int, help="run id")
    p.add_argument("--a", default=None, help="configuration id (see --list; default: the older of two)")
    p.add_argument("--b", default=None, help="configuration id (default: the newer of two)")
    p.add_argument("--list", action="store_true", help="list the run's judge configurations and exit")
    p.add_argument("--format", **formats)
    p.set_defaults(client=_cmd_judge_sensitivity)
    p = sub.add_parser(
        "stability",
        parents=[url],
        help="how stable each judge metric is across its repeats, and its agreement corrected for noise",
        description="Per judge metric scored with repeats >= 2: ICC(A,1) across repeats, the within-output "
        "SD and the reliability of the repeat mean (Spearman-Brown), and the correlation with the mean "
        "rating beside the same corrected for both sides' reliability.",
    )
    p.add_argument("run", type=int, help="run id")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output (default text)")
    p.set_defaults(client=_cmd_stability)


def build_parser() -> argparse.ArgumentParser:
    from app import client, compare_client, team_client

    url = argparse.ArgumentParser(add_help=False)
    url.add_argument(
        "--url",
        default=argparse.SUPPRESS,
        help=f"service URL for client commands (default: $RAGMETA_URL, else {DEFAULT_URL})",
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
        epilog=EXIT_CODES
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
    _add_estimate_commands(sub, url)
    team_client.add_commands(sub, url)
    # Comparisons between runs (pairwise preference, system level).
    compare_client.add_commands(sub, url)
    from app import annotations_client, gate, trust_client

    annotations_client.add_commands(sub, url)
    trust_client.add_commands(sub, url)
    gate.add_commands(sub, url)
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
        # The demo is prepared beside the serving API, not before it: /healthz answers at once.
        _serve(host, port, demo=not args.no_demo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
