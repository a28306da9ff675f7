"""Correlation reports: agreement, the three analyses, CSV, figure (SVG/PNG) and an HTML page."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from app.deps import SessionDep, SettingsDep
from app.errors import responses
from services.errors import InvalidItems, ItemError
from services.reports import figure, html
from services.reports.schemas import ReportRead
from services.reports.service import agreement_block, build_report, report_rows
from services.scores.service import table_csv

router = APIRouter(tags=["reports"])


class ReportParams:
    """Query parameters shared by every form of the report."""

    def __init__(
        self,
        k: int = Query(5, ge=1, le=100, description="k of the retrieval metrics and of ref.word_recall@k"),
        types: str | None = Query(None, description="comma-separated question types (any of them)"),
        answerable: bool | None = Query(None, description="true: answerable questions only; omit for all"),
        ci: Literal["fisher", "bca"] = Query("fisher", description="bca: paired BCa bootstrap by output"),
        seed: int = Query(0, description="bootstrap seed, recorded in the report"),
        n_resamples: int = Query(2000, ge=100, le=100_000, description="bootstrap resamples"),
    ) -> None:
        self.kwargs: dict[str, Any] = {
            "k": k,
            "types": [t.strip() for t in types.split(",") if t.strip()] if types else None,
            "answerable": answerable,
            "ci": ci,
            "seed": seed,
            "n_resamples": n_resamples,
        }


def _run_ids(runs: str) -> list[int]:
    try:
        ids = [int(x) for x in runs.split(",") if x.strip()]
    except ValueError:
        raise InvalidItems(
            "runs must be comma-separated run ids", [ItemError(None, "runs", "not integers")]
        ) from None
    if not ids:
        raise InvalidItems("give at least one run id", [ItemError(None, "runs", "empty")])
    return ids


def _report(session: Any, settings: Any, run_ids: list[int], params: ReportParams, fmt: str) -> Response:
    report = build_report(session, settings, run_ids, **params.kwargs)
    if fmt == "csv":
        rows = report_rows(report)
        header = list(rows[0]) if rows else ["analysis", "metric"]
        return PlainTextResponse(
            table_csv(header, rows),
            media_type="text/csv; charset=utf-8",
            headers={
                "Content-Disposition": f'attachment; filename="report-{"-".join(map(str, run_ids))}.csv"'
            },
        )
    return JSONResponse(report.model_dump(mode="json"))


ParamsDep = Annotated[ReportParams, Depends()]
_CSV: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/ReportRead"}},
            "text/csv": {},
        }
    }
}


@router.get("/runs/{run_id}/agreement", responses=responses(404))
def agreement(run_id: int, session: SessionDep, settings: SettingsDep, seed: int = 0) -> dict[str, Any]:
    """Inter-rater agreement: pairwise Pearson/Spearman, Krippendorff's α with a bootstrap CI, ICCs,
    quadratic κ (two raters), exact and ±1 agreement, and the ceiling sqrt(ICC(A,k))."""
    return agreement_block(session, settings, [run_id], seed)


@router.get("/runs/{run_id}/report", responses={**responses(404, 422), **_CSV})
def run_report(
    run_id: int,
    session: SessionDep,
    settings: SettingsDep,
    params: ParamsDep,
    format: Literal["json", "csv"] = "json",
) -> Response:
    """Agreement and the study's three analyses for one run (`?format=csv`: one row per metric x analysis)."""
    return _report(session, settings, [run_id], params, format)


@router.get("/report", responses={**responses(404, 422), **_CSV})
def pooled_report(
    session: SessionDep,
    settings: SettingsDep,
    params: ParamsDep,
    runs: str = Query(..., description="comma-separated run ids"),
    format: Literal["json", "csv"] = "json",
) -> Response:
    """The report over several runs of one dataset, pooled (items = outputs)."""
    return _report(session, settings, _run_ids(runs), params, format)


def _figure(session: Any, settings: Any, run_ids: list[int], params: ReportParams, fmt: str) -> Response:
    report = build_report(session, settings, run_ids, **params.kwargs)
    media = "image/svg+xml" if fmt == "svg" else "image/png"
    return Response(figure.render(report, "svg" if fmt == "svg" else "png"), media_type=media)


def _page(session: Any, settings: Any, run_ids: list[int], params: ReportParams) -> HTMLResponse:
    report: ReportRead = build_report(session, settings, run_ids, **params.kwargs)
    svg = figure.render(report, "svg").decode("utf-8")
    svg = svg[svg.index("<svg") :]
    if len(run_ids) == 1:
        base, query = f"/runs/{run_ids[0]}/report", "?"
    else:
        base, query = "/report", f"?runs={','.join(map(str, run_ids))}&"
    links = {
        "JSON": f"{base}{query.rstrip('?&')}",
        "CSV": f"{base}{query}format=csv",
        "PNG": f"{base}.png{query.rstrip('?&')}",
        "API docs": "/docs",
    }
    return HTMLResponse(html.render(report, svg, links))


_SVG = {**responses(404), 200: {"content": {"image/svg+xml": {}}}}
_PNG = {**responses(404), 200: {"content": {"image/png": {}}}}
_HTML = {**responses(404), 200: {"content": {"text/html": {}}}}


@router.get("/runs/{run_id}/report.svg", responses=_SVG)
def report_svg(run_id: int, session: SessionDep, settings: SettingsDep, params: ParamsDep) -> Response:
    """The figure: one row per metric grouped by library, point and CI, zero line, human ceiling."""
    return _figure(session, settings, [run_id], params, "svg")


@router.get("/runs/{run_id}/report.png", responses=_PNG)
def report_png(run_id: int, session: SessionDep, settings: SettingsDep, params: ParamsDep) -> Response:
    return _figure(session, settings, [run_id], params, "png")


@router.get("/runs/{run_id}/report.html", responses=_HTML)
def report_html(run_id: int, session: SessionDep, settings: SettingsDep, params: ParamsDep) -> HTMLResponse:
    """The report as one page readable without JavaScript: agreement, figure, tables."""
    return _page(session, settings, [run_id], params)


@router.get("/report.svg", responses=_SVG)
def pooled_svg(
    session: SessionDep, settings: SettingsDep, params: ParamsDep, runs: str = Query(...)
) -> Response:
    return _figure(session, settings, _run_ids(runs), params, "svg")


@router.get("/report.png", responses=_PNG)
def pooled_png(
    session: SessionDep, settings: SettingsDep, params: ParamsDep, runs: str = Query(...)
) -> Response:
    return _figure(session, settings, _run_ids(runs), params, "png")


@router.get("/report.html", responses=_HTML)
def pooled_html(
    session: SessionDep, settings: SettingsDep, params: ParamsDep, runs: str = Query(...)
) -> HTMLResponse:
    return _page(session, settings, _run_ids(runs), params)
