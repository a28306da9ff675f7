"""The report as Markdown, for a pull request or a wiki page: warnings, coverage, agreement, one table per
analysis with its verdict, and the metrics that were not computed with the reason."""

from __future__ import annotations

import re
from html import escape

from services.reports import text
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


def render(report: ReportRead, links: dict[str, str] | None = None) -> str:
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
    return "\n".join(out) + "\n"
