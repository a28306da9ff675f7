"""The report's computations as top-level functions ``fn(session, settings, *args)``: what the report
router runs, in a report worker process (``services.reports.pool``) or in a thread."""

from __future__ import annotations

from typing import Literal
from urllib.parse import quote

from sqlalchemy.orm import Session

from services.config import Settings
from services.errors import ServiceError
from services.reports.drilldown import metric_items
from services.reports.estimate_schemas import RunEstimate
from services.reports.estimates import build_estimate
from services.reports.presentation import figure, html, markdown
from services.reports.presentation.estimate_render import page_sections, why_not_computed
from services.reports.schemas import AgreementRead, MetricItems, ReportQuery, ReportRead
from services.reports.service import agreement_block, build_report, report_version
from services.reports.stability import page_section as stability_section


def report(session: Session, settings: Settings, run_ids: list[int], query: ReportQuery) -> ReportRead:
    return build_report(
        session,
        settings,
        run_ids,
        k=query.k,
        types=list(query.types) if query.types is not None else None,
        answerable=query.answerable,
        ci=query.ci,
        seed=query.seed,
        n_resamples=query.n_resamples,
        pass_threshold=query.pass_threshold,
    )


def agreement(session: Session, settings: Settings, run_ids: list[int], seed: int) -> AgreementRead:
    return agreement_block(session, settings, run_ids, seed)


def figure_bytes(
    session: Session, settings: Settings, rep: ReportRead, fmt: Literal["svg", "png", "pdf"]
) -> bytes:
    return figure.render(rep, fmt)


def _base(run_ids: list[int]) -> tuple[str, str]:
    """Path prefix and query of the report of these runs."""
    if len(run_ids) == 1:
        return f"/runs/{run_ids[0]}/report", ""
    return "/report", f"runs={','.join(map(str, run_ids))}"


def _url(path: str, query: str, extra: str = "") -> str:
    q = "&".join(x for x in (query, extra) if x)
    return f"{path}?{q}" if q else path


def links(run_ids: list[int]) -> dict[str, str]:
    base, query = _base(run_ids)
    return {
        "JSON": _url(base, query),
        "CSV": _url(base, query, "format=csv"),
        "Markdown": _url(base, query, "format=md"),
        "SVG": _url(f"{base}.svg", query),
        "PNG": _url(f"{base}.png", query),
        "PDF": _url(f"{base}.pdf", query),
        "API docs": "/docs",
    }


def items_href(run_ids: list[int], metric: str) -> str:
    name = quote(metric, safe="")
    if len(run_ids) == 1:
        return f"/runs/{run_ids[0]}/metrics/{name}/items.html"
    return f"/report/metrics/{name}/items.html?runs={','.join(map(str, run_ids))}"


def section_options(rep: ReportRead) -> dict[str, int]:
    """k, seed and resamples of the sections beside the report: the report's own."""
    boot = rep.bootstrap
    return {
        "k": int(rep.filters.get("k") or 5),
        "seed": int(boot["seed"]) if boot else 0,
        "n_resamples": int(boot["n_resamples"]) if boot else 2000,
    }


def sections_version(session: Session, run_ids: list[int]) -> tuple[object, ...]:
    """What cached sections of these runs' page must match to be reused (see ``sections``)."""
    if len(run_ids) == 1:
        return report_version(session, run_ids)
    from services.reports.comparisons import comparison_version

    return comparison_version(session, run_ids)


def sections(session: Session, settings: Settings, rep: ReportRead, run_ids: list[int]) -> str:
    """The page's sections beside the report: for one run, its human score from few ratings (PPI), judge
    sensitivity and judge stability (test-retest over repeats); for pooled runs, the comparisons between
    them (system level, pairwise preference); for both, whether a metric may replace the raters (the trust
    verdicts)."""
    from services.reports import trust

    opts = section_options(rep)
    verdicts = trust.html_section(
        trust.build_trust(session, settings, run_ids, k=opts["k"], seed=opts["seed"])
    )
    if len(run_ids) == 1:
        run_id = run_ids[0]
        stability = stability_section(session, settings, run_id)
        return page_sections(session, settings, run_id, opts["k"]) + stability + verdicts
    from services.reports.comparisons import page_sections as comparison_sections

    sections = comparison_sections(session, settings, run_ids, opts["seed"], opts["n_resamples"], opts["k"])
    return sections + verdicts


def markdown_sections(session: Session, settings: Settings, rep: ReportRead, run_ids: list[int]) -> str:
    """The Markdown report's sections beside the report: for one run, its human score from the rated
    outputs (PPI), as on the page (or why it is not computed); none for pooled runs."""
    if len(run_ids) != 1:
        return ""
    try:
        est: RunEstimate | None = build_estimate(session, settings, run_ids[0], k=section_options(rep)["k"])
        why = None
    except ServiceError as exc:
        est, why = None, why_not_computed(exc)
    return markdown.estimate_section(est, why)


def page(
    session: Session, settings: Settings, rep: ReportRead, run_ids: list[int], extra: str | None = None
) -> bytes:
    """The report page, encoded; ``extra``: its sections beside the report, computed here when not given."""
    svg = figure.render(rep, "svg").decode("utf-8")
    svg = svg[svg.index("<svg") :]
    if extra is None:
        extra = sections(session, settings, rep, run_ids)
    page = html.render(rep, svg, links(run_ids), lambda metric: items_href(run_ids, metric), extra)
    return page.encode("utf-8")


def items(
    session: Session, settings: Settings, run_ids: list[int], metric: str, query: ReportQuery
) -> MetricItems:
    types = list(query.types) if query.types is not None else None
    return metric_items(session, settings, run_ids, metric, types=types, answerable=query.answerable)


def items_page(
    session: Session, settings: Settings, run_ids: list[int], metric: str, query: ReportQuery
) -> str:
    table = items(session, settings, run_ids, metric, query)
    base, runs_query = _base(run_ids)
    runs = ", ".join(f"#{r}" for r in run_ids)
    return html.render_items(table, f"run(s) {runs}", _url(f"{base}.html", runs_query))
