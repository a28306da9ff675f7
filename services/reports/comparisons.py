"""Entry points of the comparisons between runs for the report pool (``fn(session, settings, *args)``), their
CSV rows and their HTML sections (shown on the pooled report page)."""

from __future__ import annotations

from html import escape
from itertools import combinations
from typing import Any

from sqlalchemy.orm import Session

from services.config import Settings
from services.errors import ServiceError
from services.ratings.repository import PreferenceRepository
from services.reports.comparison_schemas import PairTest, PairwiseRead, SystemsRead
from services.reports.pairwise import pairwise
from services.reports.presentation.comparison_figure import pairwise_figure
from services.reports.schemas import Comparison, Corr
from services.reports.service import report_version
from services.reports.systems import MIN_RUNS, systems
from services.tasks.repository import TaskRepository

# The pooled page shows the pairwise section for at most this many pairs of runs (the API gives any pair).
PAGE_MAX_PAIRS = 3


def comparison_version(session: Session, run_ids: list[int]) -> tuple[object, ...]:
    """What cached comparisons of these runs must match to be reused: everything a report of them reads
    (outputs and their versions, ratings, scores, questions), and the preference ratings between them from
    both sources (imported, and given side by side in pairwise tasks)."""
    return (
        report_version(session, run_ids),
        PreferenceRepository(session).version(run_ids),
        TaskRepository(session).pairwise_version(run_ids),
    )


def pairwise_read(
    session: Session, settings: Settings, run_a: int, run_b: int, kwargs: dict[str, Any]
) -> PairwiseRead:
    return pairwise(session, settings, run_a, run_b, **kwargs)


def pairwise_bytes(
    session: Session, settings: Settings, run_a: int, run_b: int, kwargs: dict[str, Any], fmt: str
) -> bytes:
    read = pairwise(session, settings, run_a, run_b, **kwargs)
    return pairwise_figure(read, "png" if fmt == "png" else "svg")


def systems_read(
    session: Session, settings: Settings, run_ids: list[int], kwargs: dict[str, Any]
) -> SystemsRead:
    return systems(session, settings, run_ids, **kwargs)


def _c(c: Corr, prefix: str) -> dict[str, Any]:
    return {
        f"{prefix}": c.estimate,
        f"{prefix}_ci_low": c.ci_low,
        f"{prefix}_ci_high": c.ci_high,
        f"{prefix}_p": c.p_value,
    }


def _cmp(c: Comparison | None, prefix: str) -> dict[str, Any]:
    return {
        f"{prefix}_diff_vs_best": c.difference if c else None,
        f"{prefix}_diff_ci_low": c.ci_low if c else None,
        f"{prefix}_diff_ci_high": c.ci_high if c else None,
        f"{prefix}_holm_p": c.holm_p if c else None,
        f"{prefix}_indistinguishable_from_best": c.indistinguishable_from_best if c else None,
    }


def pairwise_rows(read: PairwiseRead) -> list[dict[str, Any]]:
    """One row per metric (the CSV form); metrics not computed get their reason and empty figures."""
    rows: list[dict[str, Any]] = []
    for m in read.metrics:
        rows.append(
            {
                "run_a": read.run_a.id,
                "run_b": read.run_b.id,
                "source": read.source,
                "metric": m.metric,
                "library": m.library,
                "kind": m.kind,
                "higher_is_better": m.higher_is_better,
                "n_pairs": m.n_pairs,
                **_c(m.pearson, "pearson_r"),
                **_c(m.spearman, "spearman_rho"),
                **_c(m.kendall, "kendall_tau_b"),
                "sign_correct": m.sign_agreement.correct,
                "sign_total": m.sign_agreement.total,
                "sign_accuracy": m.sign_agreement.estimate,
                "sign_ci_low": m.sign_agreement.ci_low,
                "sign_ci_high": m.sign_agreement.ci_high,
                "n_metric_ties": m.n_metric_ties,
                "best": read.best,
                **_cmp(m.comparison, "pearson"),
                **_cmp(m.spearman_comparison, "spearman"),
                **_cmp(m.kendall_comparison, "kendall"),
                "status": "computed",
                "reason": m.pearson.undefined_reason,
            }
        )
    columns = list(rows[0]) if rows else ["run_a", "run_b", "source", "metric", "status", "reason"]
    for nc in read.not_computed:
        rows.append(
            {"run_a": read.run_a.id, "run_b": read.run_b.id, "source": read.source, "metric": nc.metric}
            | {"status": "not computed", "reason": nc.reason}
        )
    return [{c: row.get(c) for c in columns} for row in rows]


def systems_rows(read: SystemsRead) -> list[dict[str, Any]]:
    """One row per metric x pair of runs, plus one row per metric with the rank agreement (pair empty)."""
    rows: list[dict[str, Any]] = []
    for m in read.metrics:
        base = {
            "metric": m.metric,
            "library": m.library,
            "higher_is_better": m.higher_is_better,
            "n_questions": m.n_questions,
            "kendall_tau_b": m.kendall.estimate,
            "kendall_ci_low": m.kendall.ci_low,
            "kendall_ci_high": m.kendall.ci_high,
            "pairwise_correct": m.pairwise_correct,
            "pairwise_total": m.pairwise_total,
            "status": "computed",
        }
        means = {f"mean_run_{r.run_id}": r.mean for r in m.means}
        rows.append(base | means | {"run_a": None, "run_b": None})
        for p in m.pairs:
            rows.append(
                base
                | means
                | {
                    "run_a": p.run_a,
                    "run_b": p.run_b,
                    "human_diff": p.human.difference,
                    "human_diff_ci_low": p.human.ci_low,
                    "human_diff_ci_high": p.human.ci_high,
                    "human_holm_p": p.human.holm_p,
                    "metric_diff": p.metric.difference,
                    "metric_diff_ci_low": p.metric.ci_low,
                    "metric_diff_ci_high": p.metric.ci_high,
                    "metric_holm_p": p.metric.holm_p,
                    "same_winner": p.same_winner,
                }
            )
    for nc in read.not_computed:
        rows.append({"metric": nc.metric, "status": "not computed", "reason": nc.reason})
    columns = list(dict.fromkeys(k for row in rows for k in row)) or ["metric", "status", "reason"]
    return [{c: row.get(c) for c in columns} for row in rows]


# ------------------------------------------------------------------------------------------------- HTML


def _f(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _ci(low: float | None, high: float | None, digits: int = 2) -> str:
    return "" if low is None or high is None else f" [{low:.{digits}f}, {high:.{digits}f}]"


def _corr(c: Corr) -> str:
    if c.estimate is None:
        return f"undefined ({escape(c.undefined_reason or '')})"
    return f"{c.estimate:.2f}{_ci(c.ci_low, c.ci_high)}"


def _warnings_html(scope: str, warnings: list[Any], notes: list[str]) -> str:
    out = [f"<p class='note run-note'>{escape(n)}</p>" for n in notes]
    if warnings:
        items = "".join(f"<li><b>{escape(w.scope)}</b>: {escape(w.message)}</li>" for w in warnings)
        out.append(f"<div class='warnings' role='note'><b>Read with care ({scope})</b><ul>{items}</ul></div>")
    return "".join(out)


def pairwise_html(read: PairwiseRead, figure_href: str | None = None, svg: str | None = None) -> str:
    a, b = read.run_a, read.run_b
    anchor = f"pairwise-{a.id}-{b.id}"
    parts = [
        f"<h3 id='{anchor}'>Run #{b.id} ({escape(b.name)}) vs run #{a.id} ({escape(a.name)})</h3>",
        _warnings_html("pairwise", read.warnings, read.notes),
        f"<p>{read.n_pairs} pairs ({read.n_questions_both} questions answered by both runs): the humans "
        f"prefer B on {read.human_prefers_b}, A on {read.human_prefers_a}, tie {read.n_human_ties}. "
        f"{escape(read.source_detail)}.</p>",
        f"<p class='muted'>{escape(read.interval_rule)} {escape(read.ties_rule)}</p>",
    ]
    if svg:
        parts.append(f"<div class='figure' id='figure-{anchor}'>{svg}</div>")
    if read.metrics:
        head = (
            "<tr><th>metric</th><th>pairs</th><th>Pearson r [95% CI]</th><th>Spearman ρ [CI]</th>"
            "<th>Kendall τ-b [CI]</th><th>sign agreement [Wilson CI]</th>"
            "<th>vs best: Δr [CI], Holm p</th></tr>"
        )
        body = []
        for m in read.metrics:
            s = m.sign_agreement
            sign = (
                f"{s.correct}/{s.total} = {_f(s.estimate)}{_ci(s.ci_low, s.ci_high)}"
                if s.estimate is not None
                else escape(s.undefined_reason or "")
            )
            if m.n_metric_ties:
                sign += f" ({m.n_metric_ties} metric ties)"
            c = m.comparison
            vs = "best" if m.metric == read.best else "—"
            if c is not None and c.difference is not None:
                star = " *" if c.holm_p is not None and c.holm_p < 0.05 else ""
                vs = f"{c.difference:+.2f}{_ci(c.ci_low, c.ci_high)}, {_f(c.holm_p, 3)}{star}"
            label = escape(m.metric + ("" if m.higher_is_better else " (↓ better)"))
            cls = " class='top'" if m.metric == read.best else ""
            body.append(
                f"<tr{cls}><td>{label}</td><td>{m.n_pairs}</td><td>{_corr(m.pearson)}</td>"
                f"<td>{_corr(m.spearman)}</td><td>{_corr(m.kendall)}</td><td>{sign}</td><td>{vs}</td></tr>"
            )
        parts.append(
            f"<div class='wide'><table class='analysis' id='table-{anchor}'>{head}"
            + "".join(body)
            + "</table></div><p class='muted'>Differences are B − A, sign flipped for ↓ metrics; vs best: "
            "Zou's interval of r(best) − r(metric), * = Holm p &lt; 0.05 (worse than the best).</p>"
        )
    if read.not_computed:
        nc = "".join(f"<li>{escape(n.metric)}: {escape(n.reason)}</li>" for n in read.not_computed)
        parts.append(
            f"<details><summary>Not computed ({len(read.not_computed)})</summary><ul>{nc}</ul></details>"
        )
    if figure_href:
        parts.append(f"<p><a href='{escape(figure_href)}'>figure (SVG)</a></p>")
    return "".join(parts)


def _test(t: PairTest) -> str:
    if t.difference is None:
        return escape(t.undefined_reason or "—")
    if t.ci_low is None:
        return f"{t.difference:+.2f} ({escape(t.undefined_reason or '')})"
    star = " *" if t.holm_p is not None and t.holm_p < 0.05 else ""
    return f"{t.difference:+.2f}{_ci(t.ci_low, t.ci_high)} p {_f(t.holm_p, 3)}{star}"


def systems_html(read: SystemsRead) -> str:
    names = {r.id: f"#{r.id} {r.name}" for r in read.runs}
    parts = [
        "<h2 id='system-level'>System level: does each metric rank the runs as the humans do?</h2>",
        _warnings_html("system level", read.warnings, read.notes),
        f"<p class='muted'>{escape(read.interval_rule)}</p>",
    ]
    rows = "".join(
        f"<tr><td class='l'>{escape(names[h.run_id])}</td><td>{_f(h.mean)}{_ci(h.ci_low, h.ci_high)}</td>"
        f"<td>{h.n}</td></tr>"
        for h in read.human
    )
    parts.append(
        f"<p>{read.n_questions} questions have a human reference score in every run.</p>"
        "<table id='system-human'><tr><th>run</th><th>human mean [95% t CI]</th><th>questions</th></tr>"
        + rows
        + "</table>"
    )
    pair_rows = "".join(
        f"<tr><td class='l'>{escape(names[p.run_b])} − {escape(names[p.run_a])}</td><td>{_test(p)}</td></tr>"
        for p in read.human_pairs
    )
    parts.append(
        "<table id='system-human-pairs'><tr><th>pair of runs (B − A)</th>"
        "<th>human difference [95% CI], paired t, Holm p</th></tr>" + pair_rows + "</table>"
    )
    if read.metrics:
        run_heads = "".join(f"<th>mean {escape(names[r.id])}</th>" for r in read.runs)
        pair_heads = "".join(
            f"<th>{escape(f'#{b} − #{a}')}: metric Δ [CI] Holm p · winner</th>"
            for a, b in combinations([r.id for r in read.runs], 2)
        )
        head = (
            f"<tr><th>metric</th><th>questions</th>{run_heads}<th>Kendall τ-b [bootstrap CI]</th>"
            f"<th>pairs ordered as humans</th>{pair_heads}</tr>"
        )
        body = []
        for m in read.metrics:
            k = m.kendall
            tau = (
                f"{k.estimate:.2f}{_ci(k.ci_low, k.ci_high)}"
                if k.estimate is not None
                else f"undefined ({escape(k.undefined_reason or '')})"
            )
            if k.estimate is not None and k.ci_low is None and k.undefined_reason:
                tau += f" ({escape(k.undefined_reason)})"
            means = "".join(f"<td>{_f(x.mean, 3)}</td>" for x in m.means)
            pairs = "".join(
                f"<td>{_test(p.metric)} · "
                f"{'—' if p.same_winner is None else ('same' if p.same_winner else '<b>other</b>')}</td>"
                for p in m.pairs
            )
            label = escape(m.metric + ("" if m.higher_is_better else " (↓ better)"))
            body.append(
                f"<tr><td>{label}</td><td>{m.n_questions}</td>{means}<td>{tau}</td>"
                f"<td>{m.pairwise_correct}/{m.pairwise_total}</td>{pairs}</tr>"
            )
        parts.append(
            "<div class='wide'><table class='analysis' id='table-system-level'>"
            + head
            + "".join(body)
            + "</table></div><p class='muted'>Metric differences are oriented (positive: B better; sign "
            "flipped for ↓ metrics); * = Holm p &lt; 0.05 over the pairs of runs; winner: the same as the "
            "humans' (same) or the other run (other); — when the humans' means are equal.</p>"
        )
    if read.not_computed:
        nc = "".join(f"<li>{escape(n.metric)}: {escape(n.reason)}</li>" for n in read.not_computed)
        parts.append(
            f"<details><summary>Not computed ({len(read.not_computed)})</summary><ul>{nc}</ul></details>"
        )
    return "".join(parts)


def page_sections(
    session: Session, settings: Settings, run_ids: list[int], seed: int, n_resamples: int, k: int
) -> str:
    """The comparison sections of the pooled report page: system level (3+ runs) and pairwise preference
    for the first pairs of runs. An analysis that cannot run says why instead."""
    if len(run_ids) < 2:
        return ""
    kwargs: dict[str, Any] = {"seed": seed, "n_resamples": n_resamples, "k": k}
    parts = []
    if len(run_ids) >= MIN_RUNS:
        try:
            parts.append(systems_html(systems(session, settings, run_ids, **kwargs)))
        except ServiceError as exc:
            parts.append(
                f"<h2 id='system-level'>System level</h2><p>Not computed because {escape(exc.detail)}.</p>"
            )
    parts.append(
        "<h2 id='pairwise'>Pairwise preference: does the metric's difference follow the humans' "
        "preference?</h2>"
    )
    pairs = list(combinations(run_ids, 2))
    for a, b in pairs[:PAGE_MAX_PAIRS]:
        href = f"/reports/pairwise.svg?run_a={a}&run_b={b}&seed={seed}&n_resamples={n_resamples}&k={k}"
        try:
            read = pairwise(session, settings, a, b, **kwargs)
        except ServiceError as exc:
            parts.append(f"<h3>Run #{b} vs run #{a}</h3><p>Not computed because {escape(exc.detail)}.</p>")
            continue
        svg = pairwise_figure(read, "svg").decode("utf-8")
        parts.append(pairwise_html(read, href, svg[svg.index("<svg") :]))
    if len(pairs) > PAGE_MAX_PAIRS:
        parts.append(
            f"<p class='muted'>{len(pairs) - PAGE_MAX_PAIRS} more pair(s) of runs: "
            "GET /reports/pairwise?run_a=…&run_b=….</p>"
        )
    return "".join(parts)
