"""The report as one HTML page readable without JavaScript: warnings, notes, agreement, the figure, one table
per analysis with its verdict and the metrics not computed; and a drill-down page per metric."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from services.labels import derived_id
from services.reports.presentation import text
from services.reports.schemas import Analysis, MetricItems, MetricRow, ReportRead

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#222;line-height:1.45;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:right;vertical-align:top}th{background:#f5f5f5}
td:first-child,th:first-child{text-align:left}td.l,th.l{text-align:left}
.note{background:#fff6d6;border:1px solid #e6c200;padding:.5rem .75rem;border-radius:4px}
.warnings{background:#fdecea;border:1px solid #d93025;padding:.5rem .75rem;border-radius:4px}
.warnings ul{margin:.25rem 0;padding-left:1.25rem}
.muted{color:#666}.top{font-weight:600}.group{background:#fffbe6}
.verdict{font-weight:600}
.figure{border:1px solid #eee;padding:.5rem}.figure svg{width:100%;height:auto;display:block}
.nc td{color:#555}
.wide{overflow-x:auto}table.analysis{font-size:.8rem}table.analysis td{white-space:nowrap}
table.analysis td.l,table.analysis td.w{white-space:normal}
"""


def _page(title: str, body: list[str]) -> str:
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<link rel='icon' href='/static/favicon.svg' type='image/svg+xml'>"
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>" + "".join(body) + "</body></html>"
    )


def _question_cell(external_id: str, question: str) -> str:
    """The team's own id in bold before the text; an id derived from the text only as its tooltip."""
    if derived_id(external_id):
        return f"<span title='{escape(external_id)}'>{escape(question)}</span>"
    return f"<b>{escape(external_id)}</b> {escape(question)}"


def _nb(value: str) -> str:
    """Escaped, with "95 %" kept on one line."""
    return escape(value).replace(" %", "\u00a0%")


def _warnings(report: ReportRead) -> str:
    if not report.warnings:
        return ""
    items = "".join(f"<li><b>{escape(w.scope)}</b>: {escape(w.message)}</li>" for w in report.warnings)
    return f"<div class='warnings' id='warnings' role='note'><b>Read with care</b><ul>{items}</ul></div>"


def _pass_fail(report: ReportRead) -> str:
    """Analysis 4: one row per metric, its pass/fail decision against the raters'."""
    pf = report.pass_fail
    if pf is None:
        return ""
    out = [
        f"<h2 id='pass-fail'>4. {escape(pf.title)}</h2><p class='muted'>{escape(pf.threshold_rule)}"
        + (f" — {escape(pf.note)}" if pf.note else "")
        + "</p>"
    ]
    if not pf.metrics:
        return "".join(out)
    head = "".join(f"<th>{_nb(h)}</th>" for h in text.PASS_FAIL_HEADER)
    out.append(f"<div class='wide'><table class='analysis' id='table-pass-fail'><tr>{head}</tr>")
    for m in pf.metrics:
        out.append("<tr>" + "".join(f"<td>{_nb(c)}</td>" for c in text.pass_fail_cells(m)) + "</tr>")
    out.append(f"</table></div><p class='muted'>{escape(text.PASS_FAIL_FOOTNOTE)}</p>")
    return "".join(out)


def render(
    report: ReportRead,
    svg: str,
    links: dict[str, str],
    metric_href: Callable[[str], str] | None = None,
    extra_sections: str = "",
) -> str:
    """The page; ``extra_sections`` (HTML) go after the analyses (the single-run estimates, or the
    comparisons between pooled runs)."""
    runs = text.runs_label(report)
    parts = _intro(report, runs, links)
    parts.append(f"<h2>Figure</h2><div class='figure' id='figure'>{svg}</div>")
    for a in report.analyses:
        parts.extend(_analysis(a, metric_href))
    parts.append(_pass_fail(report))
    parts.extend(_by_type(report))
    parts.append(extra_sections)
    return _page(f"ragmeta report — {runs}", parts)


def _intro(report: ReportRead, runs: str, links: dict[str, str]) -> list[str]:
    """The title, warnings and notes, what the reference is, the links and the raters' agreement."""
    parts = [f"<h1>Which metrics track your raters? — {escape(runs)}</h1>", _warnings(report)]
    for note in report.notes:
        parts.append(f"<p class='note'>{escape(note)}</p>")
    ref = report.reference_score
    parts.append(
        f"<p>{ref['n_items']} outputs; human reference = {escape(ref['method'])} of the raters for "
        f"{ref['n_with_reference']} of them. {escape(text.filters(report.filters))}.</p>"
    )
    parts.append(_data_time(report))
    if report.interval_rule:
        parts.append(f"<p class='muted' id='interval-rule'>Intervals: {escape(report.interval_rule)}</p>")
    if report.coverage:
        parts.append(f"<p id='coverage'><b>Metrics:</b> {escape(report.coverage.summary)}.</p>")
    parts.append(
        "<p>" + " · ".join(f"<a href='{escape(u)}'>{escape(t)}</a>" for t, u in links.items()) + "</p>"
    )
    rows = text.agreement_rows(report.agreement, report.human_ceiling, report.human_ceiling_undefined_reason)
    parts.append(
        "<h2>Inter-rater agreement</h2><table id='agreement'>"
        + "".join(f"<tr><th>{escape(k)}</th><td class='l'>{escape(v)}</td></tr>" for k, v in rows)
        + "</table>"
    )
    return parts


def _data_time(report: ReportRead) -> str:
    """When the data shown was read; said loudly when a newer report was being computed."""
    fresh = report.freshness
    if fresh is None:
        return ""
    data, computed = (f"{t:%Y-%m-%d %H:%M:%S} UTC" for t in (fresh.data_time, fresh.computed_at))
    if fresh.stale:
        return (
            f"<p class='note' id='data-time'>Data as of {data} (computed {computed}): a newer report was "
            "being computed when this page was asked for, so writes made since are not in it. Reload the "
            "page for the current one.</p>"
        )
    return f"<p class='muted' id='data-time'>Data as of {data} (computed {computed}).</p>"


def _analysis(a: Analysis, metric_href: Callable[[str], str] | None) -> list[str]:
    """One analysis: its title and verdict, its table of metrics, the metrics it could not compute."""
    parts: list[str] = []
    parts.append(
        f"<h2 id='analysis-{a.id}'>{a.id}. {escape(a.title)}</h2><p class='muted'>Reference: "
        f"{escape(a.reference)}" + (f" — {escape(a.note)}" if a.note and a.note != a.verdict else "") + "</p>"
    )
    if a.verdict:
        parts.append(f"<p class='verdict'>Verdict: {_nb(a.verdict)}.</p>")
    if a.metrics:
        parts.append(
            f"<div class='wide'><table class='analysis' id='table-{a.id}'><tr><th>metric</th>"
            "<th class='l'>library</th><th>n</th><th class='l'>excluded</th><th>Pearson r [95% CI]</th>"
            "<th>p</th><th>Spearman ρ [CI]</th><th>Kendall τ-b [CI]</th>"
            "<th>vs the top metric: Δr, Holm p</th><th class='l'>verdict</th></tr>"
        )
        for m in a.metrics:
            parts.append(_metric_row(a, m, metric_href))
        parts.append("</table></div>")
        if any(m.pearson.ci_clipped for m in a.metrics):
            parts.append("<p class='muted'>* interval clipped to the coefficient's domain [-1, 1].</p>")
    if a.not_computed:
        parts.append(
            f"<table class='not-computed' id='not-computed-{a.id}'><tr><th>not computed</th>"
            "<th class='l'>metrics</th></tr>"
        )
        for reason, names in text.not_computed_groups(a.not_computed):
            parts.append(
                f"<tr class='nc'><td class='l'>{escape(reason)}</td><td class='l'>"
                + ", ".join(f"<span class='metric'>{escape(n)}</span>" for n in names)
                + "</td></tr>"
            )
        parts.append("</table>")
    return parts


def _metric_row(a: Analysis, m: MetricRow, metric_href: Callable[[str], str] | None) -> str:
    """A metric's row in its analysis' table."""
    c = m.comparison
    label = escape(text.metric_label(m))
    if metric_href is not None:
        label = f"<a href='{escape(metric_href(m.metric))}' title='per-item table'>{label}</a>"
    classes = []
    if m.metric == a.top:
        classes.append("top")
    if m.metric in a.top_group and len(a.top_group) > 1:
        classes.append("group")
    cls = f" class='{' '.join(classes)}'" if classes else ""
    title = f" title='{escape(c.note)}'" if c and c.note else ""
    coefficients = (m.pearson, m.spearman, m.kendall)
    if all(x.estimate is None for x in coefficients):
        # One cell for the four columns: the reason written once, not three times side by side
        # in unbreakable cells that push the table past its column.
        why = "; ".join(dict.fromkeys(x.undefined_reason or "no value" for x in coefficients))
        stats = f"<td class='l undefined' colspan='4'>{text.UNDEFINED}: {escape(why)}</td>"
    else:
        stats = (
            f"<td>{escape(text.corr(m.pearson))}</td><td>{text.p_value(m.pearson.p_value)}</td>"
            f"<td>{escape(text.corr(m.spearman))}</td><td>{escape(text.corr(m.kendall))}</td>"
        )
    return (
        f"<tr{cls}><td>{label}</td><td class='l'>{escape(text.library_label(m.library))}</td>"
        f"<td>{m.n}</td><td class='l'>{escape(text.excluded(m))}</td>{stats}"
        f"<td class='w'{title}>{escape(text.comparison(m))}</td>"
        f"<td class='l'>{_nb(text.row_verdict(a, m))}</td></tr>"
    )


def _by_type(report: ReportRead) -> list[str]:
    """Analysis 1's Pearson r per question type."""
    parts: list[str] = []
    if report.by_type:
        names = sorted({k for t in report.by_type for k in t.metrics})
        parts.append(
            "<h2>By question type (analysis 1, Pearson r)</h2><table><tr><th>type</th><th>n</th>"
            + "".join(f"<th>{escape(n)}</th>" for n in names)
            + "</tr>"
        )
        for t in report.by_type:
            cells = "".join(
                f"<td>{escape(text.corr(t.metrics[n])) if n in t.metrics else '—'}</td>" for n in names
            )
            parts.append(f"<tr><td>{escape(t.type)}</td><td>{t.n_items}</td>{cells}</tr>")
        parts.append("</table>")
    return parts


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0f}"


def render_items(items: MetricItems, runs: str, back: str) -> str:
    """A metric's per-item table, largest disagreements first."""
    direction = "higher is better" if items.higher_is_better else "lower is better"
    parts = [
        f"<p><a href='{escape(back)}'>← report</a></p>",
        f"<h1>{escape(items.metric)} vs the raters — {escape(runs)}</h1>",
        f"<p>{escape(text.library_label(items.library))} metric, {direction}. {items.n} outputs have both a "
        f"metric score and a human reference score"
        + (f"; Pearson r = {escape(text.corr(items.pearson))}" if items.pearson else "")
        + ".</p>",
        "<p class='muted'>Percentiles are mid-ranks among these outputs (metric oriented so that higher "
        "is better). Disagreement = metric percentile − human percentile: a large positive value is an "
        "output the metric rates much higher than the raters do; largest disagreements first.</p>",
    ]
    if items.excluded:
        parts.append(
            "<p>Excluded: "
            + "; ".join(f"{escape(k)}: {v}" for k, v in sorted(items.excluded.items()))
            + "</p>"
        )
    parts.append(
        "<table id='items'><tr><th>question</th><th>run</th><th class='l'>answer</th><th>human</th>"
        "<th>metric</th><th>human pct</th><th>metric pct</th><th>disagreement</th></tr>"
    )
    for it in items.items:
        dis = (
            f"{it.disagreement:+.0f}"
            if it.disagreement is not None
            else f"<span class='muted'>{escape(it.missing_reason or '—')}</span>"
        )
        parts.append(
            f"<tr><td class='l'>{_question_cell(it.question_id, it.question)}</td>"
            f"<td>{it.run_id}</td>"
            f"<td class='l'>{escape(it.answer or '—')}</td><td>{text.num(it.human)}</td>"
            f"<td>{text.num(it.value, 3)}</td><td>{_pct(it.human_percentile)}</td>"
            f"<td>{_pct(it.metric_percentile)}</td><td>{dis}</td></tr>"
        )
    parts.append("</table>")
    return _page(f"ragmeta — {items.metric} per item", parts)
