"""What a report may and may not conclude, applied to a built report before any form of it is rendered:

- every catalogue metric is listed (computed, or "not computed" with the reason, per analysis);
- the verdict names a "best" metric only when at least one metric is distinguishable from it at 95 %;
- intervals are clipped to their coefficient's domain, saying so; non-finite numbers become "undefined" with a
  reason, so no form of the report ever prints `nan`;
- warnings say when n is too small for an analysis, and what n would be needed.
"""

from __future__ import annotations

import math
from typing import Any

from services.reports.schemas import (
    Analysis,
    Corr,
    MetricStatus,
    NotComputed,
    ReportRead,
    ReportWarning,
)
from services.stats import special

# The bundled demo's annotators: two on every output, a third on the 50 outputs of one run (so that the
# Alternative Annotator Test, which needs three raters, runs in the demo). Their ratings are illustrative
# wherever they are imported (a user may reuse the demo's rating files on a run of their own): any report that
# uses them says so.
ILLUSTRATIVE_RATERS = ("annotateur-A", "annotateur-B", "annotateur-C (sous-ensemble)")
ILLUSTRATIVE_NOTE = (
    "Illustrative ratings: written for this demo by independent annotators following the default 1-5 rubric "
    "on these exact outputs (two on every output, a third on the 50 outputs of the hybrid-extractive run). "
    "They show how the service works; they are not results of a study."
)
# A correlation of this size is what a useful metric should show; the warnings say how many items are needed
# to tell it from no correlation at all (two-sided 5 %, power 0.8).
USEFUL_R = 0.5
POWER = 0.8


def n_to_detect(r: float = USEFUL_R, power: float = POWER, alpha: float = 0.05) -> int:
    """Items needed to tell a Pearson correlation r from 0 (Fisher z): 3 + ((z_a/2 + z_b) / atanh r)^2."""
    z = float(special.ndtri(1 - alpha / 2) + special.ndtri(power))
    return math.ceil(3 + (z / math.atanh(r)) ** 2)


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _clip_corr(c: Corr) -> None:
    for attr in ("estimate", "p_value", "ci_low", "ci_high"):
        value = getattr(c, attr)
        if value is not None and not math.isfinite(value):
            setattr(c, attr, None)
            if attr == "estimate":
                c.undefined_reason = c.undefined_reason or "not a finite number on these items"
    if c.ci_low is None or c.ci_high is None:
        return
    lo, hi = max(c.ci_low, -1.0), min(c.ci_high, 1.0)
    if (lo, hi) != (c.ci_low, c.ci_high):
        c.ci_clipped = (
            f"interval clipped to the coefficient's domain [-1, 1] (computed: "
            f"[{c.ci_low:.3f}, {c.ci_high:.3f}]); with so few items it says little"
        )
        c.ci_low, c.ci_high = lo, hi


def _sanitize(obj: Any, path: str, found: list[str]) -> Any:
    """Replace non-finite floats in a JSON-like block by None, recording where."""
    if isinstance(obj, float) and not math.isfinite(obj):
        found.append(path)
        return None
    if isinstance(obj, dict):
        return {k: _sanitize(v, f"{path}.{k}" if path else str(k), found) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_sanitize(v, f"{path}[{i}]", found) for i, v in enumerate(obj)]
    return obj


def _clip_block(block: dict[str, Any], lo: float, hi: float, what: str) -> None:
    """Clip a {estimate, ci_low, ci_high} block (agreement figures) to [lo, hi], saying so."""
    a, b = block.get("ci_low"), block.get("ci_high")
    if not (isinstance(a, float | int) and isinstance(b, float | int)):
        return
    ca, cb = max(float(a), lo), min(float(b), hi)
    if (ca, cb) != (a, b):
        block["ci_clipped"] = (
            f"{what} interval clipped to its domain [{lo:g}, {hi:g}] (computed: [{a:.3f}, {b:.3f}])"
        )
        block["ci_low"], block["ci_high"] = ca, cb


def _agreement(report: ReportRead, warnings: list[ReportWarning], needed: int) -> None:
    block = report.agreement
    if block is None:
        return
    found: list[str] = []
    block = _sanitize(block, "", found)
    report.agreement = block
    result = block.get("result")
    if found:
        warnings.append(
            ReportWarning(
                code="undefined",
                scope="agreement",
                message="some agreement figures are undefined on these items: " + ", ".join(found[:6]),
            )
        )
    if result is None:
        warnings.append(
            ReportWarning(
                code="undefined",
                scope="agreement",
                message=f"inter-rater agreement is undefined: {block.get('undefined_reason')}",
            )
        )
        return
    ordinal = (result.get("alpha") or {}).get("ordinal") or {}
    if ordinal:
        _clip_block(ordinal, -1.0, 1.0, "Krippendorff's alpha")
    for name, icc in (result.get("icc") or {}).items():
        if isinstance(icc, dict):
            _clip_block(icc, -1.0, 1.0, name)
    n_used = int(block.get("n_used") or 0)
    if n_used < needed:
        warnings.append(
            ReportWarning(
                code="small_sample",
                scope="agreement",
                message=f"agreement is measured on {n_used} output(s): its intervals are wide or undefined; "
                f"about {needed} rated outputs are needed for figures worth quoting",
                n=n_used,
                n_needed=needed,
            )
        )
    if report.human_ceiling is None and report.human_ceiling_undefined_reason is None:
        icc_k = (result.get("icc") or {}).get("ICC(A,k)") or {}
        estimate = icc_k.get("estimate") if isinstance(icc_k, dict) else None
        if isinstance(estimate, float | int) and estimate <= 0:
            why = f"ICC(A,k) = {estimate:.2f} is not positive: the raters agree no better than chance here"
        else:
            why = result.get("icc_undefined_reason") or "ICC(A,k) is undefined on these items"
        report.human_ceiling_undefined_reason = why


def _not_computed(report: ReportRead, statuses: list[MetricStatus]) -> None:
    by_name = {s.metric: s for s in statuses}
    for analysis in report.analyses:
        kept = []
        for row in analysis.metrics:
            status = by_name.get(row.metric.partition("@")[0])
            if status is not None and status.status == "not_computed":
                analysis.not_computed.append(
                    NotComputed(
                        metric=row.metric, library=row.library, kind=row.kind, reason=status.reason or ""
                    )
                )
            else:
                kept.append(row)
        analysis.metrics = kept
        listed = {m.metric.partition("@")[0] for m in analysis.metrics} | {
            n.metric.partition("@")[0] for n in analysis.not_computed
        }
        for s in statuses:
            if s.status == "not_computed" and analysis.id in s.analyses and s.metric not in listed:
                # Analysis 2 compares retrieval metrics with ref.word_recall: the reference is not a row.
                if analysis.id == 2 and s.metric == "ref.word_recall":
                    continue
                analysis.not_computed.append(
                    NotComputed(
                        metric=s.metric,
                        library=s.library,
                        kind=s.kind,
                        reason=s.reason or "",
                        reason_code=s.reason_code,
                    )
                )


def verdict(analysis: Analysis) -> None:
    """Name a best metric only when some metric is distinguishable from it at 95 % (Holm-adjusted)."""
    defined = [m for m in analysis.metrics if m.oriented_r is not None]
    top = analysis.best or analysis.top
    analysis.top = top
    analysis.best = None
    if not defined or top is None:
        analysis.top_group = []
        analysis.verdict = analysis.note or "no metric has a defined correlation in this analysis"
        return
    if len(defined) == 1:
        analysis.top_group = [top]
        analysis.verdict = f"only {top} has a defined correlation: there is nothing to compare it with"
        return
    group = [top]
    distinguished = []
    for m in defined:
        c = m.comparison
        if m.metric == top or c is None:
            continue
        if c.indistinguishable_from_best is True:
            group.append(m.metric)
        elif c.indistinguishable_from_best is False:
            distinguished.append(m.metric)
    analysis.top_group = group
    if distinguished:
        analysis.best = top
        others = group[1:]
        analysis.verdict = f"best: {top}" + (
            f"; not distinguishable from it at 95 %: {', '.join(others)}" if others else ""
        )
    else:
        analysis.verdict = "no metric is distinguishable from the others at 95 %"


def _analysis_warnings(analysis: Analysis, warnings: list[ReportWarning], needed: int) -> None:
    ns = [m.n for m in analysis.metrics]
    if not ns:
        return
    n = max(ns)
    scope = f"analysis {analysis.id}"
    if n < 3:
        warnings.append(
            ReportWarning(
                code="small_sample",
                scope=scope,
                message=f"n = {n}: too few items for any correlation (at least 3 are needed); about {needed} "
                f"are needed to tell a correlation of {USEFUL_R} from none at power {POWER}",
                n=n,
                n_needed=needed,
            )
        )
    elif n < needed:
        warnings.append(
            ReportWarning(
                code="small_sample",
                scope=scope,
                message=f"n = {n}: intervals are wide; about {needed} items are needed to tell a correlation "
                f"of {USEFUL_R} from none at power {POWER}",
                n=n,
                n_needed=needed,
            )
        )
    short = [
        m.comparison
        for m in analysis.metrics
        if m.comparison is not None
        and m.comparison.indistinguishable_from_best
        and m.comparison.n_needed is not None
        and m.comparison.n_needed > m.comparison.n
    ]
    if short:
        most = max(c.n_needed or 0 for c in short)
        least = min(c.n_needed or 0 for c in short)
        span = f"{least}" if least == most else f"{least} to {most}"
        warnings.append(
            ReportWarning(
                code="comparison_underpowered",
                scope=scope,
                message=f"n = {short[0].n} is too small to tell the top metric from {len(short)} other(s): "
                f"{span} items would be needed at power {POWER}",
                n=short[0].n,
                n_needed=most,
            )
        )


def finish(report: ReportRead, statuses: list[MetricStatus] | None = None) -> ReportRead:
    """Apply the rules above in place and return the report."""
    needed = n_to_detect()
    warnings: list[ReportWarning] = []
    if statuses is not None:
        report.metric_status = statuses
        _not_computed(report, statuses)
        for s in statuses:
            if s.status == "computed" and s.n_failed:
                warnings.append(
                    ReportWarning(code="failed_scores", scope=s.metric, message=f"{s.metric}: {s.reason}")
                )
    raters = set(report.agreement["raters"] if report.agreement else [])
    if raters & set(ILLUSTRATIVE_RATERS) and ILLUSTRATIVE_NOTE not in report.notes:
        report.notes.append(ILLUSTRATIVE_NOTE)
    if report.human_ceiling is not None and not math.isfinite(report.human_ceiling):
        report.human_ceiling = None
    _agreement(report, warnings, needed)
    for analysis in report.analyses:
        for m in analysis.metrics:
            for c in (m.pearson, m.spearman, m.kendall):
                _clip_corr(c)
            if m.oriented_r is not None and not math.isfinite(m.oriented_r):
                m.oriented_r = None
            if m.comparison is not None:
                comp = m.comparison
                for attr in type(comp).model_fields:
                    value = getattr(comp, attr)
                    if isinstance(value, float) and not math.isfinite(value):
                        setattr(comp, attr, None)
        verdict(analysis)
        _analysis_warnings(analysis, warnings, needed)
        clipped = [m.metric for m in analysis.metrics if m.pearson.ci_clipped]
        if clipped:
            warnings.append(
                ReportWarning(
                    code="ci_clipped",
                    scope=f"analysis {analysis.id}",
                    message=f"intervals clipped to [-1, 1] for {', '.join(clipped)}",
                )
            )
    for t in report.by_type:
        for c in t.metrics.values():
            _clip_corr(c)
    report.warnings = warnings + report.warnings
    return report
