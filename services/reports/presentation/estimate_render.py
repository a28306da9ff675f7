"""The single-run estimates as top-level ``fn(session, settings, *args)`` (run by the report pool) and as HTML
sections of the run's report page."""

from __future__ import annotations

from html import escape
from typing import Any

from sqlalchemy.orm import Session

from services.config import Settings
from services.errors import InvalidItems, ServiceError
from services.reports.estimate_schemas import JudgeConfigurations, JudgeSensitivity, RunEstimate
from services.reports.estimates import build_estimate
from services.reports.presentation import text
from services.reports.sensitivity import build_sensitivity, judge_configurations


def estimate(session: Session, settings: Settings, run_id: int, kwargs: dict[str, Any]) -> RunEstimate:
    return build_estimate(session, settings, run_id, **kwargs)


def configurations(session: Session, settings: Settings, run_id: int) -> JudgeConfigurations:
    return judge_configurations(session, settings, run_id)


def sensitivity(
    session: Session, settings: Settings, run_id: int, kwargs: dict[str, Any]
) -> JudgeSensitivity:
    return build_sensitivity(session, settings, run_id, **kwargs)


def _num(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def why_not_computed(exc: ServiceError) -> str:
    """What a section says in place of a figure that cannot be computed."""
    if isinstance(exc, InvalidItems) and exc.items:
        return "; ".join(i.reason for i in exc.items)
    return str(exc.detail)


def _warnings(warnings: list[Any]) -> str:
    if not warnings:
        return ""
    items = "".join(f"<li><b>{escape(w.scope)}</b>: {escape(w.message)}</li>" for w in warnings)
    return f"<div class='warnings' role='note'><b>Read with care</b><ul>{items}</ul></div>"


def estimate_section(est: RunEstimate | None, why: str | None = None) -> str:
    head = "<h2 id='estimate'>The run's human score from the rated outputs (prediction-powered)</h2>"
    if est is None:
        return (
            head
            + f"<p class='muted' id='estimate-not-computed'>Not computed because {escape(why or '')}.</p>"
        )
    ro = est.rated_only
    parts = [
        head,
        f"<p>{est.n_rated} of {est.n_outputs} outputs rated"
        + (
            f" ({est.n_under_min_raters} more with too few raters count as unrated)"
            if est.n_under_min_raters
            else ""
        )
        + f". Rated only: <b>{ro.estimate:.2f}</b> {_interval(ro)} "
        f"(width {ro.width:.2f}; "
        f"{escape(est.rated_only_plan.note)}). <b>{escape(est.narrowest_note)}</b>.</p>",
        f"<p class='muted'>{escape(est.rated_items)}</p>",
        _warnings(est.warnings),
        "<div class='wide'><table class='analysis' id='table-estimate'><tr><th>metric</th><th>r with humans "
        "(rated)</th><th>λ</th><th>estimate [95% CI]</th><th>width vs rated-only</th><th class='l'>"
        f"ratings for width {est.target_width:g}</th><th class='l'>not computed because</th></tr>",
        f"<tr class='top'><td>(rated only)</td><td>—</td><td>0</td><td>{ro.estimate:.2f} {_interval(ro)}"
        f"</td><td>1.00</td><td class='l'>{_plan(est.rated_only_plan)}</td><td></td></tr>",
    ]
    for r in est.metrics:
        cls = " class='group'" if r.metric == est.narrowest else ""
        if r.ppi is None:
            parts.append(
                f"<tr{cls}><td>{escape(r.metric)}</td><td colspan='5'></td>"
                f"<td class='l undefined'>{escape(r.undefined_reason or '')}</td></tr>"
            )
            continue
        p = r.ppi
        parts.append(
            f"<tr{cls}><td>{escape(r.metric)}</td><td>{_num(r.metric_human_r)}</td><td>{_num(r.lam)}</td>"
            f"<td>{p.estimate:.2f} {_interval(p)}</td><td>{_num(r.width_ratio)}</td>"
            f"<td class='l'>{_plan(r.plan) if r.plan else '—'}</td><td class='l'>"
            + (f"{r.n_imputed} outputs without a value" if r.n_imputed else "")
            + "</td></tr>"
        )
    parts.append("</table></div>")
    notes = [x.ci_clipped for x in [ro, *(r.ppi for r in est.metrics)] if x is not None and x.ci_clipped]
    if notes:
        parts.append(
            "<p class='muted' id='estimate-clipped'>* "
            + escape(notes[0].split(" (computed")[0])
            + ": the computed limits went past it ("
            + "; ".join(escape(n.split("(computed: ", 1)[1].rstrip(")")) for n in notes)
            + ").</p>"
        )
    if est.not_computed:
        # The analyses above list them by name; here only how many and why.
        groups = text.not_computed_groups(est.not_computed)
        parts.append(
            f"<p class='muted'>{len(est.not_computed)} catalogue metrics have no scores on this run and "
            "predict nothing here: "
            + "; ".join(f"{len(names)} {escape(reason)}" for reason, names in groups)
            + ".</p>"
        )
    parts.append(
        f"<p class='muted'>Method: {escape(est.method)} Assumptions: "
        + " ".join(escape(a) for a in est.assumptions)
        + "</p>"
    )
    return "".join(parts)


def _interval(e: Any) -> str:
    """[low, high], starred when clipped to the rubric's scale (the note under the table says so)."""
    star = "*" if e.ci_clipped else ""
    return f"[{e.ci_low:.2f}, {e.ci_high:.2f}]{star}"


def _plan(plan: Any) -> str:
    if plan.n_rated_needed is None:
        return f"not reachable (all rated: {plan.width_if_all_rated:.2f})"
    if plan.more_ratings == 0:
        return "reached"
    return f"{plan.more_ratings} more ({plan.n_rated_needed} in all)"


def _corr(c: Any) -> str:
    return escape(text.corr(c))


def sensitivity_section(res: JudgeSensitivity | None, why: str | None = None) -> str:
    head = (
        "<h2 id='judge-sensitivity'>Judge sensitivity: the same metrics under two judge configurations</h2>"
    )
    if res is None:
        return (
            head
            + f"<p class='muted' id='sensitivity-not-computed'>Not computed because {escape(why or '')}.</p>"
        )

    def label(c: Any) -> str:
        return f"{c.id}: {c.model or '?'} at {c.endpoint or '?'}, language {c.language or '?'}"

    parts = [
        head,
        f"<p>a = {escape(label(res.a))}; b = {escape(label(res.b))}. Paired on the rated outputs both "
        "scored; Δ = oriented coefficient under a − under b (positive: a agrees better with the raters).</p>",
        _warnings(res.warnings),
        "<div class='wide'><table class='analysis' id='table-sensitivity'><tr><th>metric</th><th>n</th>"
        "<th>Pearson r (a)</th><th>r (b)</th><th>Δr [Zou 95% CI], p</th><th>Spearman Δρ [CI]</th>"
        "<th>scores a vs b: r [CI]</th><th>mean b − a [CI]</th></tr>",
    ]
    for r in res.metrics:
        dp = next(d for d in r.differences if d.method == "pearson")
        ds = next(d for d in r.differences if d.method == "spearman")
        ag = r.agreement

        def diff(d: Any) -> str:
            if d.difference is None or d.ci_low is None:
                return escape(d.undefined_reason or "undefined")
            p = f", p {text.p_value(d.p_value)}" if d.method == "pearson" else ""
            return f"{d.difference:+.2f} [{d.ci_low:+.2f}, {d.ci_high:+.2f}]{p}"

        md = (
            "—"
            if ag.mean_difference is None
            else f"{ag.mean_difference:+.2f} [{ag.mean_difference_ci_low:+.2f}, "
            f"{ag.mean_difference_ci_high:+.2f}]"
        )
        parts.append(
            f"<tr><td>{escape(r.metric)}</td><td>{r.n}</td><td>{_corr(r.a['pearson'])}</td>"
            f"<td>{_corr(r.b['pearson'])}</td><td>{diff(dp)}</td><td>{diff(ds)}</td>"
            f"<td>{_corr(ag.pearson)} (n {ag.n})</td><td>{md}</td></tr>"
        )
    parts.append("</table></div>")
    if res.only_in_a or res.only_in_b:
        parts.append(
            "<p class='muted'>Scored under one configuration only: "
            + escape(", ".join([f"{m} (a)" for m in res.only_in_a] + [f"{m} (b)" for m in res.only_in_b]))
            + "</p>"
        )
    parts.append(f"<p class='muted'>Method: {escape(res.method)}</p>")
    return "".join(parts)


def page_sections(session: Session, settings: Settings, run_id: int, k: int) -> str:
    """Both sections for the run's report page; what cannot be computed says why instead."""
    try:
        est: RunEstimate | None = build_estimate(session, settings, run_id, k=k)
        why = None
    except ServiceError as exc:
        est, why = None, why_not_computed(exc)
    out = estimate_section(est, why)
    try:
        sens: JudgeSensitivity | None = build_sensitivity(session, settings, run_id)
        why = None
    except ServiceError as exc:
        sens, why = None, why_not_computed(exc)
    return out + sensitivity_section(sens, why)
