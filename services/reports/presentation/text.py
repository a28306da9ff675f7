"""Wording shared by every form of a report (HTML, Markdown, terminal text): numbers, intervals, verdicts and
the agreement figures, so that the forms cannot disagree. Imports nothing heavy: the command-line client uses
it on the JSON it receives."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from services.reports.schemas import Analysis, Corr, Figure, MetricRow, NotComputed, PassFailRow, ReportRead

LIBRARY_LABELS = {
    "ragas": "Ragas",
    "deepeval": "DeepEval",
    "opik": "Opik",
    "ragchecker": "RAGChecker",
    "classic": "classical",
    "ref": "reference",
    "external": "external",
}
UNDEFINED = "undefined"


def library_label(library: str) -> str:
    return LIBRARY_LABELS.get(library, library)


def num(x: float | int | None, digits: int = 2, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def p_value(p: float | None) -> str:
    if p is None:
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def interval(lo: float | None, hi: float | None, signed: bool = False) -> str:
    if lo is None or hi is None:
        return ""
    return f"[{num(lo, signed=signed)}, {num(hi, signed=signed)}]"


def corr(c: Corr, signed: bool = False) -> str:
    """`0.74 [0.28, 0.92]`, or `undefined (reason)`; a clipped interval is marked with `*`."""
    if c.estimate is None:
        return f"{UNDEFINED} ({c.undefined_reason})" if c.undefined_reason else UNDEFINED
    ci = interval(c.ci_low, c.ci_high, signed)
    return f"{num(c.estimate, signed=signed)}" + (f" {ci}" if ci else "") + ("*" if c.ci_clipped else "")


def figure(f: Figure) -> str:
    """A pass/fail figure: `0.81 [0.70, 0.90]`, or `undefined`."""
    if f.estimate is None:
        return UNDEFINED
    ci = interval(f.ci_low, f.ci_high)
    return num(f.estimate) + (f" {ci}" if ci else "")


PASS_FAIL_HEADER = (
    "metric",
    "n (pass / fail)",
    "ROC AUC [95 % CI]",
    "metric threshold",
    "Cohen's κ, held out",
    "accuracy, held out",
    "precision, held out",
    "recall, held out",
    "TN, FP, FN, TP, held out",
)
PASS_FAIL_FOOTNOTE = (
    "The metric threshold maximises Youden's J on all the data. Held out: each half of the questions is "
    "judged at the threshold chosen on the other half (intervals leave one question out)."
)


def pass_fail_cells(m: PassFailRow) -> list[str]:
    """One row of the pass/fail table, in the order of PASS_FAIL_HEADER."""
    cm = ", ".join(str(v) for row in m.confusion_held_out for v in row) if m.confusion_held_out else "—"
    side = "≥ " if m.higher_is_better else "≤ "
    thr = "—" if m.threshold.estimate is None else side + figure(m.threshold)
    return [
        m.metric,
        f"{m.n} ({m.n_pass} / {m.n_fail})",
        figure(m.auc),
        thr,
        figure(m.kappa),
        figure(m.accuracy),
        figure(m.precision),
        figure(m.recall),
        cm,
    ]


def row_verdict(analysis: Analysis, m: MetricRow) -> str:
    """The verdict of one row. "best" appears only when the analysis names a best metric."""
    c = m.comparison
    if m.oriented_r is None:
        return "—"
    if m.metric == analysis.top:
        if analysis.best:
            return "best"
        if len(analysis.top_group) > 1:
            return "highest r, not distinguishable from the others at 95 %"
        return "only defined metric"
    if c is None or c.indistinguishable_from_best is None:
        return "not compared" + (f" ({c.note})" if c and c.note else "")
    anchor = "the best" if analysis.best else "the highest"
    if c.indistinguishable_from_best:
        return f"not distinguishable from {anchor} at 95 %"
    return f"worse than {anchor} at 95 %"


def comparison(m: MetricRow) -> str:
    c = m.comparison
    return "—" if c is None else f"Δr {num(c.difference)}, Holm p {p_value(c.holm_p)}"


def excluded(m: MetricRow) -> str:
    return "; ".join(f"{k}: {v}" for k, v in sorted(m.excluded.items())) or "—"


def metric_label(m: MetricRow) -> str:
    return m.metric + ("" if m.higher_is_better else " (lower is better)")


def not_computed_groups(items: list[NotComputed]) -> list[tuple[str, list[str]]]:
    """Not-computed metrics grouped by reason, in first-seen order: [(reason, [metric, ...])]."""
    groups: dict[str, list[str]] = defaultdict(list)
    for nc in items:
        groups[nc.reason].append(nc.metric)
    return list(groups.items())


def agreement_rows(
    block: Mapping[str, Any] | None, ceiling: float | None, ceiling_why: str | None
) -> list[tuple[str, str]]:
    """(label, value) pairs for the inter-rater agreement, every undefined figure with its reason."""
    if not block:
        return [("Agreement", "no ratings")]
    if block.get("result") is None:
        return [("Agreement", f"{UNDEFINED}: {block.get('undefined_reason')}")]
    res = block["result"]
    rows = [
        ("Raters", ", ".join(block["raters"])),
        (
            "Outputs rated / used",
            f"{block['n_rated_outputs']} / {block['n_used']}"
            f" ({block['n_excluded_under_min_raters']} under {block['min_raters']} raters excluded)",
        ),
    ]
    alpha = (res.get("alpha") or {}).get("ordinal") or {}
    if alpha.get("estimate") is None:
        rows.append(("Krippendorff's α (ordinal)", f"{UNDEFINED}: {alpha.get('undefined_reason')}"))
    else:
        ci = interval(alpha.get("ci_low"), alpha.get("ci_high"))
        if ci:
            clip = alpha.get("ci_clipped")
            value = f"{num(alpha['estimate'])} {ci}" + (f" ({clip})" if clip else "")
        else:
            why = alpha.get("ci_undefined_reason") or "not computed"
            value = f"{num(alpha['estimate'])}; interval {UNDEFINED}: {why}"
        rows.append(("Krippendorff's α (ordinal)", value))
    icc = res.get("icc") or {}
    for name in ("ICC(A,1)", "ICC(A,k)"):
        block_icc = icc.get(name) or {}
        if block_icc.get("estimate") is None:
            rows.append((name, f"{UNDEFINED}: {res.get('icc_undefined_reason') or 'not computed'}"))
        else:
            ci = interval(block_icc.get("ci_low"), block_icc.get("ci_high"))
            clip = block_icc.get("ci_clipped")
            rows.append(
                (
                    name,
                    f"{num(block_icc['estimate'])}"
                    + (f" {ci}" if ci else "")
                    + (f" ({clip})" if clip else ""),
                )
            )
    kappa = res.get("kappa_quadratic")
    rows.append(
        (
            "Quadratic-weighted κ",
            num(kappa) if kappa is not None else f"{UNDEFINED}: {res.get('kappa_undefined_reason')}",
        )
    )
    rows.append(
        (
            "Human ceiling √ICC(A,k)",
            num(ceiling) if ceiling is not None else f"{UNDEFINED}: {ceiling_why or 'no ICC(A,k)'}",
        )
    )
    for p in res.get("pairs") or []:
        pearson = p["pearson"]
        r = (
            num(pearson["estimate"])
            if pearson.get("estimate") is not None
            else f"{UNDEFINED} ({pearson.get('undefined_reason')})"
        )
        rows.append(
            (
                f"{p['rater_a']} vs {p['rater_b']}",
                f"Pearson {r}, exact {num(p['exact'])}, ±1 {num(p['within_one'])}, n = {p['n_items']}",
            )
        )
    return rows


def filters(f: Mapping[str, Any]) -> str:
    types = ", ".join(f.get("types") or []) or "all question types"
    answerable = {None: "all questions", True: "answerable questions only", False: "unanswerable only"}
    ci = {"bca": "paired BCa bootstrap CIs", "auto": "CIs by ci=auto"}.get(
        f.get("ci") or "", "Fisher / Fieller CIs"
    )
    return f"k = {f.get('k')}; {types}; {answerable.get(f.get('answerable'), 'all questions')}; {ci}"


def runs_label(report: ReportRead) -> str:
    return ", ".join(f"{r.name} (#{r.id})" for r in report.runs)


def render_text(report: ReportRead, width: int = 36) -> str:
    """The report for a terminal: warnings first, coverage, agreement, each analysis with its verdict."""
    lines = [f"Report — {runs_label(report)}"]
    for w in report.warnings:
        lines.append(f"WARNING ({w.scope}): {w.message}")
    for note in report.notes:
        lines.append(f"NOTE: {note}")
    ref = report.reference_score
    lines.append(
        f"{ref['n_items']} outputs, {ref['n_with_reference']} with a human reference score; "
        f"{filters(report.filters)}"
    )
    if report.coverage:
        lines.append(report.coverage.summary)
    lines.append("")
    lines.append("Inter-rater agreement")
    for label, value in agreement_rows(
        report.agreement, report.human_ceiling, report.human_ceiling_undefined_reason
    ):
        lines.append(f"   {label}: {value}")
    for a in report.analyses:
        lines.append("")
        lines.append(f"{a.id}. {a.title} (reference: {a.reference})")
        if a.verdict:
            lines.append(f"   verdict: {a.verdict}")
        for m in a.metrics:
            if m.pearson.estimate is None:
                # With n this small the exclusions are the explanation: say them (n = 0 alone says nothing).
                why = f"; excluded: {excluded(m)}" if m.excluded else ""
                lines.append(
                    f"   {m.metric:<{width}} {UNDEFINED}: {m.pearson.undefined_reason}  n = {m.n}{why}"
                )
                continue
            r = corr(m.pearson, signed=True)
            lines.append(f"   {metric_label(m):<{width}} r = {r}  n = {m.n:<4} {row_verdict(a, m)}")
        for reason, names in not_computed_groups(a.not_computed):
            lines.append(f"   not computed ({len(names)}): {reason}")
            lines.append(f"      {', '.join(names)}")
    pf = report.pass_fail
    if pf is not None:
        lines += ["", f"4. {pf.title}", f"   {pf.threshold_rule}"]
        if pf.note:
            lines.append(f"   {pf.note}")
        for row in pf.metrics:
            c = pass_fail_cells(row)
            lines.append(f"   {c[0]:<{width}} AUC = {c[2]}  threshold {c[3]}  κ = {c[4]}  n = {c[1]}")
    if report.interval_rule:
        lines += ["", f"Intervals: {report.interval_rule}"]
    return "\n".join(lines) + "\n"
