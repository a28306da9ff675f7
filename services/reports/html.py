"""The report as one HTML page readable without JavaScript: notes, agreement, the figure, the tables."""

from __future__ import annotations

from html import escape
from typing import Any

from services.reports.schemas import Corr, ReportRead

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#222;line-height:1.45;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:right}th{background:#f5f5f5}
td:first-child,th:first-child{text-align:left}
.note{background:#fff6d6;border:1px solid #e6c200;padding:.5rem .75rem;border-radius:4px}
.muted{color:#777}.best{font-weight:600}.figure{overflow-x:auto;border:1px solid #eee;padding:.5rem}
"""


def _f(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _p(p: float | None) -> str:
    if p is None:
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _filters(f: dict[str, Any]) -> str:
    types = ", ".join(f.get("types") or []) or "all question types"
    answerable = {None: "all questions", True: "answerable questions only", False: "unanswerable only"}
    ci = "paired BCa bootstrap CIs" if f.get("ci") == "bca" else "Fisher / Fieller CIs"
    return f"k = {f.get('k')}; {escape(types)}; {answerable.get(f.get('answerable'), 'all questions')}; {ci}"


def _corr(c: Corr) -> str:
    if c.estimate is None:
        return f'<span class="muted" title="{escape(c.undefined_reason or "")}">undefined</span>'
    ci = f" [{_f(c.ci_low)}, {_f(c.ci_high)}]" if c.ci_low is not None else ""
    return f"{_f(c.estimate)}{ci}"


def _agreement(block: dict[str, Any] | None) -> str:
    if not block:
        return "<p>No ratings.</p>"
    if block.get("result") is None:
        return f"<p class='muted'>Agreement undefined: {escape(str(block.get('undefined_reason')))}</p>"
    res = block["result"]
    alpha = res["alpha"].get("ordinal", {})
    icc = res["icc"]
    rows = [
        ("Raters", ", ".join(escape(r) for r in block["raters"])),
        (
            "Outputs rated / used",
            f"{block['n_rated_outputs']} / {block['n_used']}"
            f" ({block['n_excluded_under_min_raters']} under {block['min_raters']} raters excluded)",
        ),
        (
            "Krippendorff's α (ordinal)",
            f"{_f(alpha.get('estimate'))} [{_f(alpha.get('ci_low'))}, {_f(alpha.get('ci_high'))}]",
        ),
        ("ICC(A,1)", _f((icc.get("ICC(A,1)") or {}).get("estimate"))),
        ("ICC(A,k)", _f((icc.get("ICC(A,k)") or {}).get("estimate"))),
        ("Quadratic-weighted κ", _f(res.get("kappa_quadratic"))),
        ("Human ceiling √ICC(A,k)", _f(res.get("attenuation_ceiling"))),
    ]
    for p in res["pairs"]:
        rows.append(
            (
                f"{escape(p['rater_a'])} vs {escape(p['rater_b'])}",
                f"Pearson {_f(p['pearson']['estimate'])}, exact {_f(p['exact'])}, ±1 {_f(p['within_one'])},"
                f" n = {p['n_items']}",
            )
        )
    return "<table>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def render(report: ReportRead, svg: str, links: dict[str, str]) -> str:
    runs = ", ".join(f"{escape(r.name)} (#{r.id})" for r in report.runs)
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>ragmeta report — {runs}</title><style>{CSS}</style></head><body>",
        f"<h1>Which metrics track your raters? — {runs}</h1>",
    ]
    for note in report.notes:
        parts.append(f"<p class='note'>{escape(note)}</p>")
    ref = report.reference_score
    parts.append(
        f"<p>{ref['n_items']} outputs; human reference = {escape(ref['method'])} of the raters for "
        f"{ref['n_with_reference']} of them. {_filters(report.filters)}. "
        + " · ".join(f"<a href='{escape(u)}'>{escape(t)}</a>" for t, u in links.items())
        + "</p>"
    )
    parts.append("<h2>Inter-rater agreement</h2>" + _agreement(report.agreement))
    parts.append(f"<h2>Figure</h2><div class='figure'>{svg}</div>")
    for a in report.analyses:
        parts.append(
            f"<h2>{a.id}. {escape(a.title)}</h2><p class='muted'>Reference: {escape(a.reference)}"
            + (f" — {escape(a.note)}" if a.note else "")
            + "</p>"
        )
        if not a.metrics:
            continue
        parts.append(
            "<table><tr><th>metric</th><th>n</th><th>excluded</th><th>Pearson r [95% CI]</th><th>p</th>"
            "<th>Spearman ρ [CI]</th><th>Kendall τ-b [CI]</th><th>vs best: Δr, Holm p</th>"
            "<th>verdict</th></tr>"
        )
        for m in a.metrics:
            c = m.comparison
            if m.metric == a.best:
                verdict = "best"
            elif c is None or c.indistinguishable_from_best is None:
                verdict = "—"
            elif c.indistinguishable_from_best:
                verdict = "indistinguishable from the best at 95 %"
            else:
                verdict = "worse than the best"
            excl = "; ".join(f"{escape(k)}: {v}" for k, v in sorted(m.excluded.items())) or "—"
            comp = "—" if c is None else f"{_f(c.difference)}, {_p(c.holm_p)}"
            title = f" title='{escape(c.note)}'" if c and c.note else ""
            parts.append(
                f"<tr{' class=best' if m.metric == a.best else ''}><td>{escape(m.metric)}"
                f"{'' if m.higher_is_better else ' (lower is better)'}</td><td>{m.n}</td>"
                f"<td style='text-align:left'>{excl}</td><td>{_corr(m.pearson)}</td>"
                f"<td>{_p(m.pearson.p_value)}</td><td>{_corr(m.spearman)}</td><td>{_corr(m.kendall)}</td>"
                f"<td{title}>{comp}</td><td>{verdict}</td></tr>"
            )
        parts.append("</table>")
    if report.by_type:
        names = sorted({k for t in report.by_type for k in t.metrics})
        parts.append(
            "<h2>By question type (analysis 1, Pearson r)</h2><table><tr><th>type</th><th>n</th>"
            + "".join(f"<th>{escape(n)}</th>" for n in names)
            + "</tr>"
        )
        for t in report.by_type:
            cells = "".join(f"<td>{_corr(t.metrics[n]) if n in t.metrics else '—'}</td>" for n in names)
            parts.append(f"<tr><td>{escape(t.type)}</td><td>{t.n_items}</td>{cells}</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "".join(parts)
