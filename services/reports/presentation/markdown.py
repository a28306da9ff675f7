"""The report as Markdown, for a pull request or a wiki page: warnings, coverage, agreement, one table per
analysis with its verdict, the metrics that were not computed with the reason, and for one run its human
score estimated from the rated outputs (PPI), as on the report page."""

from __future__ import annotations

import re
from html import escape

from services.reports.estimate_schemas import MeanEstimate, RunEstimate, WidthPlan
from services.reports.presentation import text
from services.reports.schemas import ReportRead


def _text(value: object) -> str:
    """One line of text as Markdown: HTML escaped, since names, question types and messages come from users
    and Markdown renderers (wikis, pull requests) pass raw HTML through."""
    return escape(str(value), quote=False).replace("\r", " ").replace("\n", " ")


def _cell(value: str) -> str:
    return _text(value).replace("|", "\\|")


def _code(value: str) -> str:
    """A code span (shown verbatim, HTML included) that a backtick inside the name cannot close early."""
    one_line = value.replace("\r", " ").replace("\n", " ")
    fence = "`" * (max((len(run) for run in re.findall("`+", one_line)), default=0) + 1)
    pad = " " if one_line.startswith("`") or one_line.endswith("`") else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"


def render(report: ReportRead, links: dict[str, str] | None = None, extra: str = "") -> str:
    """The report; ``extra`` (Markdown): sections beside it, appended (the single run's estimate)."""
    out = [f"# Which metrics track your raters? — {_text(text.runs_label(report))}", ""]
    for w in report.warnings:
        out.append(f"> **Warning ({_text(w.scope)}):** {_text(w.message)}")
        out.append(">")
    if report.warnings:
        out.pop()
        out.append("")
    for note in report.notes:
        out += [f"> **Note:** {_text(note)}", ""]
    ref = report.reference_score
    out.append(
        f"{ref['n_items']} outputs; human reference = {_text(ref['method'])} of the raters for "
        f"{ref['n_with_reference']} of them. {_text(text.filters(report.filters))}."
    )
    if report.interval_rule:
        out += ["", f"Intervals: {_text(report.interval_rule)}"]
    if report.coverage:
        out += ["", f"**Metrics:** {_text(report.coverage.summary)}."]
    if links:
        out += ["", " · ".join(f"[{_text(t)}]({u})" for t, u in links.items())]
    out += ["", "## Inter-rater agreement", "", "| figure | value |", "|---|---|"]
    rows = text.agreement_rows(report.agreement, report.human_ceiling, report.human_ceiling_undefined_reason)
    out += [f"| {_cell(k)} | {_cell(v)} |" for k, v in rows]
    for a in report.analyses:
        out += ["", f"## {a.id}. {_text(a.title)}", "", f"Reference: {_text(a.reference)}."]
        if a.verdict:
            out += ["", f"**Verdict:** {_text(a.verdict)}."]
        if a.metrics:
            out += [
                "",
                "| metric | library | n | excluded | Pearson r [95 % CI] | p | Spearman ρ [CI] "
                "| Kendall τ-b [CI] | vs top | verdict |",
                "|---|---|---:|---|---|---:|---|---|---|---|",
            ]
            for m in a.metrics:
                cells = [
                    text.metric_label(m),
                    text.library_label(m.library),
                    str(m.n),
                    text.excluded(m),
                    text.corr(m.pearson),
                    text.p_value(m.pearson.p_value),
                    text.corr(m.spearman),
                    text.corr(m.kendall),
                    text.comparison(m),
                    text.row_verdict(a, m),
                ]
                out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        for reason, names in text.not_computed_groups(a.not_computed):
            out += [
                "",
                f"Not computed ({len(names)}) — {_text(reason)}: {', '.join(_code(n) for n in names)}",
            ]
    pf = report.pass_fail
    if pf is not None:
        out += [
            "",
            f"## 4. {_text(pf.title)}",
            "",
            _text(pf.threshold_rule + (f" — {pf.note}" if pf.note else "")),
        ]
        if pf.metrics:
            out += ["", "| " + " | ".join(text.PASS_FAIL_HEADER) + " |", "|---|" + "---:|" * 8]
            out += ["| " + " | ".join(_cell(c) for c in text.pass_fail_cells(m)) + " |" for m in pf.metrics]
            out += ["", _text(text.PASS_FAIL_FOOTNOTE)]
    if any(m.pearson.ci_clipped for a in report.analyses for m in a.metrics):
        out += ["", "\\* interval clipped to [-1, 1]."]
    return "\n".join(out) + "\n" + extra


def _interval(e: MeanEstimate) -> str:
    """[low, high], starred when clipped to the rubric's scale (the note under the table says so)."""
    return f"[{e.ci_low:.2f}, {e.ci_high:.2f}]" + ("\\*" if e.ci_clipped else "")


def _width_plan(plan: WidthPlan) -> str:
    if plan.n_rated_needed is None:
        return f"not reachable (all rated: {plan.width_if_all_rated:.2f})"
    if plan.more_ratings == 0:
        return "reached"
    return f"{plan.more_ratings} more ({plan.n_rated_needed} in all)"


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


ESTIMATE_TITLE = "The run's human score from the rated outputs (prediction-powered)"


def estimate_section(est: RunEstimate | None, why: str | None = None) -> str:
    """The single run's PPI estimate as a Markdown section (the report page's estimate section), or why it
    was not computed; user text HTML escaped as in the rest of the report."""
    out = ["", f"## {ESTIMATE_TITLE}", ""]
    if est is None:
        return "\n".join([*out, f"Not computed because {_text(why or '')}.", ""])
    ro = est.rated_only
    under = (
        f" ({est.n_under_min_raters} more with too few raters count as unrated)"
        if est.n_under_min_raters
        else ""
    )
    out += [
        f"{est.n_rated} of {est.n_outputs} outputs rated{under}. Rated only: **{ro.estimate:.2f}** "
        f"{_interval(ro)} (width {ro.width:.2f}; {_text(est.rated_only_plan.note)}). "
        f"**{_text(est.narrowest_note)}**.",
        "",
        _text(est.rated_items),
    ]
    for w in est.warnings:
        out += ["", f"> **Warning ({_text(w.scope)}):** {_text(w.message)}"]
    out += [
        "",
        "| metric | r with humans (rated) | λ | estimate [95 % CI] | width vs rated-only | ratings for width "
        f"{est.target_width:g} | not computed because |",
        "|---|---:|---:|---|---:|---|---|",
        f"| (rated only) | — | 0 | {ro.estimate:.2f} {_interval(ro)} | 1.00 | "
        f"{_cell(_width_plan(est.rated_only_plan))} |  |",
    ]
    for r in est.metrics:
        name = f"**{_cell(r.metric)}**" if r.metric == est.narrowest else _cell(r.metric)
        if r.ppi is None:
            out.append(f"| {name} |  |  |  |  |  | {_cell(r.undefined_reason or '')} |")
            continue
        imputed = f"{r.n_imputed} outputs without a value" if r.n_imputed else ""
        out.append(
            f"| {name} | {_num(r.metric_human_r)} | {_num(r.lam)} | {r.ppi.estimate:.2f} {_interval(r.ppi)} "
            f"| {_num(r.width_ratio)} | {_cell(_width_plan(r.plan)) if r.plan else '—'} | {imputed} |"
        )
    clipped = [x.ci_clipped for x in [ro, *(r.ppi for r in est.metrics)] if x is not None and x.ci_clipped]
    if clipped:
        out += [
            "",
            "\\* " + _text(clipped[0].split(" (computed")[0]) + ": the computed limits went past it (",
        ]
        out[-1] += "; ".join(_text(n.split("(computed: ", 1)[1].rstrip(")")) for n in clipped) + ")."
    if est.not_computed:
        groups = text.not_computed_groups(est.not_computed)
        out += [
            "",
            f"{len(est.not_computed)} catalogue metrics have no scores on this run and predict nothing here: "
            + "; ".join(f"{len(names)} {_text(reason)}" for reason, names in groups)
            + ".",
        ]
    out += ["", f"Method: {_text(est.method)} Assumptions: " + " ".join(_text(a) for a in est.assumptions)]
    return "\n".join(out) + "\n"
