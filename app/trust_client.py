"""``ragmeta trust``: the trust analysis of a run (or pooled runs) in a terminal, and a gate for CI:
``--metric NAME --require item|ranking|gating`` exits with NOT_QUALIFIED (5) unless that metric's verdict for
that use is "yes" ("no" and "not yet" both fail the gate: a pipeline must not pass on missing evidence)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from app.cli_common import NOT_QUALIFIED, UsageError, plain


def _text(body: dict[str, Any]) -> str:
    lines = [f"raters: {', '.join(body['raters']) or '-'}; epsilon {body['epsilon']:g}"]
    if body.get("note"):
        lines.append(body["note"])
    hb = body.get("human_baseline")
    if hb and hb["mae"]["estimate"] is not None:
        lines.append(f"human baseline MAE {hb['mae']['estimate']:.3f} (each rater vs the mean of the others)")
    for m in body["metrics"]:
        mae = m["calibration"]["mae"]["estimate"]
        head = f"{m['metric']}: held-out MAE " + ("undefined" if mae is None else f"{mae:.3f}")
        lines.append(head)
        lines += [f"  {v['use']}: {v['verdict']} ({v['reason']})" for v in m["verdicts"]]
    return "\n".join(lines) + "\n"


def _cmd_trust(c: Any, args: argparse.Namespace) -> int:
    if args.require and not args.metric:
        raise UsageError("--require needs --metric NAME: the metric the gate is about")
    runs = ",".join([str(args.run), args.runs]) if args.runs else None
    if runs:
        body = plain(c.pooled_trust(runs, epsilon=args.epsilon))
    else:
        body = plain(c.run_trust(args.run, epsilon=args.epsilon))
    if args.format == "md":
        md = c.pooled_trust_text(runs, "md", epsilon=args.epsilon) if runs else None
        print(md if md is not None else c.run_trust_text(args.run, "md", epsilon=args.epsilon), end="")
    elif args.format == "json":
        print(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        print(_text(body), end="")
    if not args.require:
        return 0
    by_name = {m["metric"]: m for m in body["metrics"]}
    if args.metric not in by_name:
        known = ", ".join(sorted(by_name)) or "none"
        raise UsageError(f"no metric {args.metric!r} in the run; metrics: {known}")
    verdict = next(v for v in by_name[args.metric]["verdicts"] if v["use"] == args.require)
    if verdict["verdict"] != "yes":
        print(
            f"{args.metric} does not qualify for {args.require}: {verdict['verdict']} ({verdict['reason']})"
        )
        return NOT_QUALIFIED
    return 0


def add_commands(sub: Any, url: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "trust",
        parents=[url],
        help="may a metric replace the raters? calibration, the Alternative Annotator Test, verdicts",
        description="Per metric: held-out calibration onto the rubric beside the human baseline, the "
        "Alternative Annotator Test, and a yes / no / not yet verdict per use. With --metric and "
        f"--require, exits {NOT_QUALIFIED} unless that metric's verdict for that use is yes.",
    )
    p.add_argument("run", type=int, help="run id")
    p.add_argument("--runs", default=None, help="further run ids to pool with RUN (comma-separated)")
    p.add_argument("--epsilon", type=float, default=0.2, help="the test's margin (default 0.2)")
    p.add_argument("--metric", default=None, help="the metric --require is about")
    p.add_argument(
        "--require",
        choices=("item", "ranking", "gating"),
        default=None,
        help="use the metric must qualify for",
    )
    p.add_argument("--format", choices=("text", "json", "md"), default="text", help="output (default text)")
    p.set_defaults(client=_cmd_trust)
