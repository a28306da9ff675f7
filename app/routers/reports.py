"""Correlation reports: agreement, the three analyses as JSON, CSV or Markdown, the figure (SVG/PNG/PDF), an
HTML page, and a per-item drill-down for each metric."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from functools import partial
from typing import Annotated, Any, Literal, TypeVar

import anyio
from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from app.deps import CommittingRoute, RunId, SeedQuery, SettingsDep, run_in_session
from app.errors import responses
from app.resources import get_resources
from app.security import with_inline_styles
from services.errors import InvalidItems, ItemError
from services.reports import markdown, render
from services.reports.cache import ReportCache
from services.reports.schemas import AgreementRead, MetricItems, ReportRead
from services.reports.service import report_rows, report_version
from services.scores.service import table_csv
from services.telemetry import timed
from services.types import MAX_ID

router = APIRouter(tags=["reports"], route_class=CommittingRoute)
T = TypeVar("T")


class ReportParams:
    """Query parameters shared by every form of the report."""

    def __init__(
        self,
        k: int = Query(5, ge=1, le=100, description="k of the retrieval metrics and of ref.word_recall@k"),
        types: str | None = Query(None, description="comma-separated question types (any of them)"),
        answerable: bool | None = Query(None, description="true: answerable questions only; omit for all"),
        ci: Literal["fisher", "bca", "auto"] = Query(
            "fisher",
            description="fisher: analytic intervals; bca: paired BCa bootstrap; auto: the method known to"
            " hold for the data (rule stated in the report). Pooled runs whose questions repeat always"
            " leave out or resample whole questions.",
        ),
        seed: SeedQuery = 0,
        n_resamples: int = Query(2000, ge=100, le=100_000, description="bootstrap resamples"),
        pass_threshold: float | None = Query(
            None,
            allow_inf_nan=False,
            description="pass/fail analysis: a human reference score at or above it is a pass (default: "
            "the upper half of the rubric, e.g. 4 on 1-5)",
        ),
    ) -> None:
        self.kwargs: dict[str, Any] = {
            "k": k,
            "types": [t.strip() for t in types.split(",") if t.strip()] if types else None,
            "answerable": answerable,
            "ci": ci,
            "seed": seed,
            "n_resamples": n_resamples,
            "pass_threshold": pass_threshold,
        }


RunsQuery = Annotated[
    str,
    Query(
        min_length=1,
        max_length=2000,
        pattern=r"^\s*[1-9]\d{0,17}\s*(,\s*[1-9]\d{0,17}\s*)*,?$",
        description="comma-separated run ids",
    ),
]


def _run_ids(runs: str) -> list[int]:
    try:
        ids = [int(x) for x in runs.split(",") if x.strip()]
    except ValueError:
        raise InvalidItems(
            "runs must be comma-separated run ids", [ItemError(None, "runs", "not integers")]
        ) from None
    if not ids:
        raise InvalidItems("give at least one run id", [ItemError(None, "runs", "empty")])
    too_large = [i for i in ids if not 1 <= i <= MAX_ID]
    if too_large:
        raise InvalidItems(
            f"run ids are whole numbers from 1 to {MAX_ID}",
            [ItemError(None, "runs", f"{too_large[0]} is out of range")],
        )
    return list(dict.fromkeys(ids))


async def _compute(request: Request, fn: Any, *args: Any) -> Any:
    """CPU-bound report work: in a report worker process when the app has them (the API's GIL stays free),
    else in a thread under the report limiter (see app.deps for the rule)."""
    resources = get_resources(request)
    pool = resources.report_pool
    with timed(resources.telemetry.report_seconds, getattr(fn, "__name__", "report")):
        if pool.processes:
            return await asyncio.wrap_future(pool.submit(fn, *args))
        return await anyio.to_thread.run_sync(pool.run_here, fn, *args, limiter=resources.report_limiter)


async def _cached(request: Request, cache: ReportCache[T], key: Hashable, compute: Callable[[], Any]) -> T:
    """``cache[key]``, or the awaited ``compute()`` stored there; identical requests arriving together share
    one computation."""
    state = get_resources(request)
    hit = cache.get(key)
    if hit is not None:
        return hit
    pending = state.report_inflight.get(key)
    if pending is None:
        pending = asyncio.ensure_future(compute())
        state.report_inflight[key] = pending

        def done(future: asyncio.Future[T]) -> None:
            # Into the cache before leaving the in-flight table: a request arriving in between finds one.
            if not future.cancelled() and future.exception() is None:
                cache.put(key, future.result())
            state.report_inflight.pop(key, None)

        pending.add_done_callback(done)
    value: T = await asyncio.shield(pending)
    return value


async def _build(request: Request, run_ids: list[int], params: ReportParams) -> ReportRead:
    """The report, from the cache when the data it reads has not changed."""
    key = (
        tuple(run_ids),
        tuple(sorted((k, str(v)) for k, v in params.kwargs.items())),
        await run_in_session(request, report_version, run_ids),
    )
    compute = partial(_compute, request, render.report, run_ids, params.kwargs)
    return await _cached(request, get_resources(request).report_cache, key, compute)


async def _report(request: Request, run_ids: list[int], params: ReportParams, fmt: str) -> Response:
    report = await _build(request, run_ids, params)
    extra = ""
    if fmt == "md":
        # The single run's estimate, cached like the page's sections on the version of what it reads.
        version = await run_in_session(request, render.sections_version, run_ids)
        key = ("md-sections", tuple(run_ids), tuple(render.section_options(report).items()), version)
        compute = partial(_compute, request, render.markdown_sections, report, run_ids)
        extra = await _cached(request, get_resources(request).section_cache, key, compute)
    # Encoding (JSON, CSV, Markdown) is CPU work that grows with the report: off the event loop.
    return await anyio.to_thread.run_sync(_encode, report, run_ids, fmt, extra)


def _encode(report: ReportRead, run_ids: list[int], fmt: str, extra: str = "") -> Response:
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
    if fmt == "md":
        return PlainTextResponse(
            markdown.render(report, extra=extra),
            media_type="text/markdown; charset=utf-8",
            headers={"Content-Disposition": f'inline; filename="report-{"-".join(map(str, run_ids))}.md"'},
        )
    return JSONResponse(report.model_dump(mode="json"))


ParamsDep = Annotated[ReportParams, Depends()]
_CSV: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/ReportRead"}},
            "text/csv": {},
            "text/markdown": {},
        }
    }
}


@router.get("/runs/{run_id}/agreement", response_model=AgreementRead, responses=responses(404, 422))
async def agreement(
    run_id: RunId, request: Request, settings: SettingsDep, seed: SeedQuery = 0
) -> AgreementRead:
    """Inter-rater agreement: pairwise Pearson/Spearman, Krippendorff's α with a bootstrap CI, ICCs,
    quadratic κ (two raters), exact and ±1 agreement, and the ceiling sqrt(ICC(A,k))."""
    return await _compute(request, render.agreement, [run_id], seed)  # type: ignore[no-any-return]


@router.get("/runs/{run_id}/report", responses={**responses(404, 422), **_CSV})
async def run_report(
    run_id: RunId, request: Request, params: ParamsDep, format: Literal["json", "csv", "md"] = "json"
) -> Response:
    """Agreement and the study's three analyses for one run (`?format=csv`: one row per metric x analysis;
    `?format=md`: Markdown for a pull request or a wiki). Every catalogue metric is listed: computed, or not
    and why; `warnings` says what the items cannot support."""
    return await _report(request, [run_id], params, format)


@router.get("/report", responses={**responses(404, 422), **_CSV})
async def pooled_report(
    request: Request, params: ParamsDep, runs: RunsQuery, format: Literal["json", "csv", "md"] = "json"
) -> Response:
    """The report over several runs of one dataset, pooled (items = outputs)."""
    return await _report(request, _run_ids(runs), params, format)


MEDIA = {"svg": "image/svg+xml", "png": "image/png", "pdf": "application/pdf"}


async def _figure(request: Request, run_ids: list[int], params: ReportParams, fmt: str) -> Response:
    report = await _build(request, run_ids, params)
    body = await _compute(request, render.figure_bytes, report, fmt)
    return with_inline_styles(Response(body, media_type=MEDIA[fmt]))


async def _page(request: Request, run_ids: list[int], params: ReportParams) -> HTMLResponse:
    report = await _build(request, run_ids, params)
    # The sections beside the report (estimates of one run, comparisons of pooled runs) are cached like the
    # report, on the version of everything they read (for pooled runs, their preference ratings too).
    version = await run_in_session(request, render.sections_version, run_ids)
    key = ("sections", tuple(run_ids), tuple(render.section_options(report).items()), version)
    compute = partial(_compute, request, render.sections, report, run_ids)
    extra: str = await _cached(request, get_resources(request).section_cache, key, compute)
    return with_inline_styles(HTMLResponse(await _compute(request, render.page, report, run_ids, extra)))


# Non-JSON bodies: response_class=Response (no media type of its own, so errors stay application/json)
# keeps FastAPI from advertising an application/json 200 with an empty schema; each route returns its own
# Response, so what it sends is unchanged.
_SVG = {**responses(404, 422), 200: {"content": {"image/svg+xml": {"schema": {"type": "string"}}}}}
_PNG = {
    **responses(404, 422),
    200: {"content": {"image/png": {"schema": {"type": "string", "format": "binary"}}}},
}
_PDF = {
    **responses(404, 422),
    200: {"content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}}},
}
_HTML = {**responses(404, 422), 200: {"content": {"text/html": {"schema": {"type": "string"}}}}}


@router.get("/runs/{run_id}/report.svg", responses=_SVG, response_class=Response)
async def report_svg(run_id: RunId, request: Request, params: ParamsDep) -> Response:
    """The figure: one row per metric grouped by library, point and CI, zero line, human ceiling."""
    return await _figure(request, [run_id], params, "svg")


@router.get("/runs/{run_id}/report.png", responses=_PNG, response_class=Response)
async def report_png(run_id: RunId, request: Request, params: ParamsDep) -> Response:
    return await _figure(request, [run_id], params, "png")


@router.get("/runs/{run_id}/report.pdf", responses=_PDF, response_class=Response)
async def report_pdf(run_id: RunId, request: Request, params: ParamsDep) -> Response:
    return await _figure(request, [run_id], params, "pdf")


@router.get("/runs/{run_id}/report.html", responses=_HTML, response_class=Response)
async def report_html(run_id: RunId, request: Request, params: ParamsDep) -> HTMLResponse:
    """The report as one page readable without JavaScript: agreement, figure, tables."""
    return await _page(request, [run_id], params)


@router.get("/report.svg", responses=_SVG, response_class=Response)
async def pooled_svg(request: Request, params: ParamsDep, runs: RunsQuery) -> Response:
    return await _figure(request, _run_ids(runs), params, "svg")


@router.get("/report.png", responses=_PNG, response_class=Response)
async def pooled_png(request: Request, params: ParamsDep, runs: RunsQuery) -> Response:
    return await _figure(request, _run_ids(runs), params, "png")


@router.get("/report.pdf", responses=_PDF, response_class=Response)
async def pooled_pdf(request: Request, params: ParamsDep, runs: RunsQuery) -> Response:
    return await _figure(request, _run_ids(runs), params, "pdf")


@router.get("/report.html", responses=_HTML, response_class=Response)
async def pooled_html(request: Request, params: ParamsDep, runs: RunsQuery) -> HTMLResponse:
    return await _page(request, _run_ids(runs), params)


MetricPath = Annotated[
    str, Path(min_length=1, max_length=300, description="metric name as in the report, with @k if any")
]


@router.get(
    "/runs/{run_id}/metrics/{metric}/items", response_model=MetricItems, responses=responses(404, 422)
)
async def metric_items(run_id: RunId, metric: MetricPath, request: Request, params: ParamsDep) -> MetricItems:
    """One metric's per-item table: question, human score, metric score, percentiles and their difference,
    largest disagreements first."""
    return await _compute(request, render.items, [run_id], metric, params.kwargs)  # type: ignore[no-any-return]


@router.get("/runs/{run_id}/metrics/{metric}/items.html", responses=_HTML, response_class=Response)
async def metric_items_html(
    run_id: RunId, metric: MetricPath, request: Request, params: ParamsDep
) -> HTMLResponse:
    return with_inline_styles(
        HTMLResponse(await _compute(request, render.items_page, [run_id], metric, params.kwargs))
    )


@router.get("/report/metrics/{metric}/items", response_model=MetricItems, responses=responses(404, 422))
async def pooled_metric_items(
    metric: MetricPath, request: Request, params: ParamsDep, runs: RunsQuery
) -> MetricItems:
    return await _compute(request, render.items, _run_ids(runs), metric, params.kwargs)  # type: ignore[no-any-return]


@router.get("/report/metrics/{metric}/items.html", responses=_HTML, response_class=Response)
async def pooled_metric_items_html(
    metric: MetricPath, request: Request, params: ParamsDep, runs: RunsQuery
) -> HTMLResponse:
    return with_inline_styles(
        HTMLResponse(await _compute(request, render.items_page, _run_ids(runs), metric, params.kwargs))
    )
