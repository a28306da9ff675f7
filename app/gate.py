"""``ragmeta gate --runs A,B --metric M``: a release gate for CI. Does run B beat run A on the human scale?

Each run's mean human score is the service's prediction-powered estimate (``GET /runs/{id}/estimate``, PPI++:
the rated outputs, and metric M on every output), with its interval at the confidence asked. B passes when its
interval's lower limit is above A's upper limit (plus ``--require margin=D``). The error control: if B's mean
is not above A's (plus the margin), a pass needs one of the two intervals to miss its run's mean on one side,
each of which happens with probability (1 - confidence) / 2; a false pass is therefore at most 1 - confidence
(the union bound: conservative, a real but small improvement may not pass). Exits 0 when B passes, 1 when it
does not; either way the evidence is printed."""

from __future__ import annotations

import argparse
import json
from typing import Any

from app.cli_common import UsageError
from app.sdk import Client
from services.reports.estimate_schemas import PpiRow, RunEstimate

PASS, NOT_SHOWN = 0, 1
REQUIREMENTS = ("margin", "rated")


def _runs(value: str) -> tuple[int, int]:
    try:
        ids = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--runs must be two run ids, A,B (baseline first), not {value!r}") from None
    if len(ids) != 2 or ids[0] == ids[1]:
        raise UsageError(f"--runs must be two different run ids, A,B (baseline first), not {value!r}")
    return ids[0], ids[1]


def _requirements(values: list[str]) -> dict[str, float]:
    """``--require margin=0.2 --require rated=30`` (or comma-separated): each name known, each a number."""
    found: dict[str, float] = {}
    for item in (x.strip() for v in values for x in v.split(",")):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        if not sep or name not in REQUIREMENTS:
            raise UsageError(f"--require takes {' or '.join(f'{r}=N' for r in REQUIREMENTS)}, not {item!r}")
        try:
            found[name] = float(raw)
        except ValueError:
            raise UsageError(f"--require {name} must be a number, not {raw!r}") from None
        if found[name] < 0:
            raise UsageError(f"--require {name} must be 0 or more, not {raw}")
    return found


def _row(est: RunEstimate, metric: str) -> PpiRow:
    for row in est.metrics:
        if row.metric == metric:
            return row
    known = ", ".join(r.metric for r in est.metrics) or "none"
    raise UsageError(f"no metric {metric!r} with scores on run {est.run_id}; metrics: {known}")


def _side(est: RunEstimate, row: PpiRow) -> dict[str, Any]:
    ppi = row.ppi
    return {
        "run_id": est.run_id,
        "run_name": est.run_name,
        "n_outputs": est.n_outputs,
        "n_rated": est.n_rated,
        "estimate": None if ppi is None else ppi.estimate,
        "ci_low": None if ppi is None else ppi.ci_low,
        "ci_high": None if ppi is None else ppi.ci_high,
        "rated_only": [est.rated_only.estimate, est.rated_only.ci_low, est.rated_only.ci_high],
        "lam": row.lam,
        "metric_human_r": row.metric_human_r,
        "undefined_reason": row.undefined_reason,
    }


def decide(a: RunEstimate, b: RunEstimate, metric: str, require: dict[str, float]) -> dict[str, Any]:
    """The gate's decision and its evidence from the two runs' estimates (no statistic of its own: the
    intervals are the service's; the rule only compares them)."""
    ra, rb = _row(a, metric), _row(b, metric)
    margin = require.get("margin", 0.0)
    reasons: list[str] = []
    if a.rubric != b.rubric:
        reasons.append(f"the runs are rated on different scales ({a.rubric} and {b.rubric})")
    for est, row in ((a, ra), (b, rb)):
        if row.ppi is None:
            reasons.append(f"run {est.run_id}: no estimate from {metric}: {row.undefined_reason}")
        if "rated" in require and est.n_rated < require["rated"]:
            reasons.append(
                f"run {est.run_id}: {est.n_rated} rated outputs, fewer than the {require['rated']:g} required"
            )
    difference = lower_gap = None
    if ra.ppi is not None and rb.ppi is not None:
        difference = rb.ppi.estimate - ra.ppi.estimate
        lower_gap = rb.ppi.ci_low - ra.ppi.ci_high
        if lower_gap <= margin:
            reasons.append(
                f"B's lower limit {rb.ppi.ci_low:.3f} is not above A's upper limit {ra.ppi.ci_high:.3f}"
                + (f" plus the margin {margin:g}" if margin else "")
            )
    return {
        "passed": not reasons,
        "metric": metric,
        "confidence": a.confidence,
        "margin": margin,
        "a": _side(a, ra),
        "b": _side(b, rb),
        "difference": difference,
        "gap": lower_gap,
        "reasons": reasons,
        "rule": f"B passes when its {a.confidence:.0%} interval's lower limit is above A's upper limit"
        + (f" plus {margin:g}" if margin else ""),
        "error_control": (
            f"each interval is the service's {a.confidence:.0%} PPI++ interval of its run's mean human score "
            f"(rated outputs and {metric} on every output; the rated outputs taken as a uniform random "
            f"subset). If B is not better than A by more than the margin, a pass needs one interval to miss "
            f"its mean on one side: a false pass has probability at most {1 - a.confidence:.0%} "
            "(union bound, conservative)"
        ),
        "warnings": [f"run {e.run_id}: {w.message}" for e in (a, b) for w in e.warnings],
    }


def _text(d: dict[str, Any]) -> str:
    def side(label: str, s: dict[str, Any]) -> str:
        head = f"  {label} run {s['run_id']} ({s['run_name']}): {s['n_rated']} of {s['n_outputs']} rated; "
        if s["estimate"] is None:
            return head + f"no estimate ({s['undefined_reason']})"
        ro = s["rated_only"]
        return head + (
            f"mean human score {s['estimate']:.3f} [{s['ci_low']:.3f}, {s['ci_high']:.3f}] "
            f"(rated only {ro[0]:.3f} [{ro[1]:.3f}, {ro[2]:.3f}])"
        )

    verdict = "PASS: run B beats run A" if d["passed"] else "NOT SHOWN: run B is not shown to beat run A"
    lines = [
        f"{verdict} on the human scale (estimated with {d['metric']})",
        side("A", d["a"]),
        side("B", d["b"]),
    ]
    if d["difference"] is not None:
        lines.append(f"  B - A: {d['difference']:+.3f}; B's lower limit - A's upper limit: {d['gap']:+.3f}")
    lines += [f"  because {r}" for r in d["reasons"]]
    lines += [f"  rule: {d['rule']}", f"  error control: {d['error_control']}"]
    lines += [f"  warning: {w}" for w in d["warnings"]]
    return "\n".join(lines) + "\n"


def _cmd_gate(c: Client, args: argparse.Namespace) -> int:
    run_a, run_b = _runs(args.runs)
    require = _requirements(args.require or [])
    if not 0 < args.confidence < 1:
        raise UsageError(f"--confidence must be between 0 and 1, not {args.confidence}")
    a_run, b_run = c.get_run(run_a), c.get_run(run_b)
    if a_run.dataset_id != b_run.dataset_id:
        raise UsageError(
            f"runs {run_a} and {run_b} answer different datasets ({a_run.dataset_id}, {b_run.dataset_id}): "
            "the gate compares two systems on the same questions"
        )
    a = c.run_estimate(run_a, k=args.k, confidence=args.confidence)
    b = c.run_estimate(run_b, k=args.k, confidence=args.confidence)
    d = decide(a, b, args.metric, require)
    print(json.dumps(d, indent=2, ensure_ascii=False) if args.format == "json" else _text(d), end="")
    if args.format == "json":
        print()
    return PASS if d["passed"] else NOT_SHOWN


def add_commands(sub: Any, url: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "gate",
        parents=[url],
        help="a release gate for CI: does run B beat run A on the human scale? (exit 0 yes, 1 not shown)",
        description="Does run B beat run A on the human scale? Each run's mean human score is estimated from "
        "its ratings and metric M on every output (PPI++, GET /runs/{id}/estimate); B passes when its "
        "interval's lower limit is above A's upper limit (plus --require margin=D). A false pass has "
        "probability at most 1 - confidence. Exits 0 when B passes, 1 when it does not, with the evidence.",
    )
    p.add_argument("--runs", required=True, help="A,B: the baseline run's id, then the candidate's")
    p.add_argument("--metric", required=True, help="the metric the estimates lean on (see ragmeta estimate)")
    p.add_argument(
        "--require",
        action="append",
        metavar="NAME=VALUE",
        help="margin=D: B must beat A by more than D on the rubric's scale; rated=N: each run needs N rated "
        "outputs (repeatable, or comma-separated)",
    )
    p.add_argument("--confidence", type=float, default=0.95, help="of each interval (default 0.95)")
    p.add_argument("--k", type=int, default=5, help="k of the retrieval metrics (default 5)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output (default text)")
    p.set_defaults(client=_cmd_gate)
