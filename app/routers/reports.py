"""Correlation reports: agreement, the three analyses as JSON, CSV or Markdown, the figure (SVG/PNG/PDF), an
HTML page, and a per-item drill-down for each metric."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from functools import partial
from typing import Annotated, Any, Literal, TypeVar

import anyio
from fastapi import APIRouter, Depends, Header, Path, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from app.deps import CommittingRoute, RunId, SeedQuery, SettingsDep, run_in_session
from app.errors import responses
from app.resources import get_resources
from app.security import with_inline_styles
from services.errors import InvalidItems, ItemError
from services.reports import render
from services.reports.cache import ReportCache, Served
from services.reports.page_store import PageStore, version_text
from services.reports.presentation import markdown
from services.reports.schemas import AgreementRead, MetricItems, ReportFreshness, ReportQuery, ReportRead
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
        cache_control: str | None = Header(
            None,
            alias="Cache-Control",
            max_length=200,
            description="no-cache (or max-age=0): wait for a report of the data as it is now, rather than "
            "be given the last computed one while a newer one is computed (see freshness)",
        ),
    ) -> None:
        self.query = ReportQuery(
            k=k,
            types=tuple(t.strip() for t in types.split(",") if t.strip()) if types else None,
            answerable=answerable,
            ci=ci,
            seed=seed,
            n_resamples=n_resamples,
            pass_threshold=pass_threshold,
        )
        self.fresh = _fresh(cache_control)


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


def _fresh(cache_control: str | None) -> bool:
    """Whether the client asked for a current report: ``Cache-Control: no-cache`` (or ``max-age=0``, a
    browser's reload)."""
    directives = {d.strip().lower() for d in (cache_control or "").split(",")}
    return bool(directives & {"no-cache", "max-age=0"})


async def _cached(
    request: Request,
    cache: ReportCache[T],
    key: Hashable,
    run_ids: list[int],
    version_fn: Callable[..., Any],
    compute: Callable[[], Any],
    fresh: bool,
) -> Served[T]:
    """``cache``'s report ``key`` for the data as it is now (``version_fn(session, run_ids)`` reads its
    version): current, or the last computed one while a newer one is computed (see
    services.reports.cache)."""
    return await cache.get(key, partial(run_in_session, request, version_fn, run_ids), compute, fresh=fresh)


def _freshness(*served: Served[Any]) -> ReportFreshness:
    """What the served parts were computed from, together: the oldest data, the latest computation."""
    return ReportFreshness(
        data_time=min(s.computed.data_time for s in served),
        computed_at=max(s.computed.computed_at for s in served),
        stale=any(s.stale for s in served),
    )


def _with_freshness(report: ReportRead, freshness: ReportFreshness) -> ReportRead:
    return report.model_copy(update={"freshness": freshness})


def _freshness_headers(freshness: ReportFreshness | None) -> dict[str, str]:
    if freshness is None:
        return {}
    return {
        "X-Report-Data-Time": freshness.data_time.isoformat(),
        "X-Report-Computed-At": freshness.computed_at.isoformat(),
        "X-Report-Stale": "true" if freshness.stale else "false",
    }


async def _build(request: Request, run_ids: list[int], params: ReportParams) -> Served[ReportRead]:
    """The report, from the cache when the data it reads has not changed (or while it is recomputed)."""
    key = (tuple(run_ids), params.query)
    compute = partial(_compute, request, render.report, run_ids, params.query)
    cache = get_resources(request).report_cache
    return await _cached(request, cache, key, run_ids, report_version, compute, params.fresh)


async def _sections(
    request: Request, kind: str, fn: Callable[..., Any], report: ReportRead, run_ids: list[int], fresh: bool
) -> Served[str]:
    """The sections beside the report (estimates of one run, comparisons of pooled runs), cached like the
    report on the version of everything they read (for pooled runs, their preference ratings too)."""
    key = (tuple(run_ids), kind, tuple(render.section_options(report).items()))
    compute = partial(_compute, request, fn, report, run_ids)
    cache = get_resources(request).section_cache
    return await _cached(request, cache, key, run_ids, render.sections_version, compute, fresh)


async def _report(request: Request, run_ids: list[int], params: ReportParams, fmt: str) -> Response:
    served = await _build(request, run_ids, params)
    parts: list[Served[Any]] = [served]
    extra = ""
    if fmt == "md":
        # The single run's estimate, cached like the page's sections.
        fn = render.markdown_sections
        section = await _sections(request, "md", fn, served.computed.value, run_ids, params.fresh)
        parts.append(section)
        extra = section.computed.value
    freshness = _freshness(*parts)
    headers = _freshness_headers(freshness)
    if fmt == "json":
        # Encoded once per computed report (every reader of it is sent the same bytes), then its freshness.
        body: bytes | None = served.computed.derived.get("json")
        if body is None:
            body = await anyio.to_thread.run_sync(_json_body, served.computed.value)
            served.computed.derived["json"] = body
        return Response(_with_freshness_json(body, freshness), media_type="application/json", headers=headers)
    report = _with_freshness(served.computed.value, freshness)
    # Encoding (CSV, Markdown) is CPU work that grows with the report: off the event loop.
    response = await anyio.to_thread.run_sync(_encode, report, run_ids, fmt, extra)
    response.headers.update(headers)
    return response


def _json_body(report: ReportRead) -> bytes:
    """The report's JSON as JSONResponse encodes it, without ``freshness`` (the last field)."""
    return bytes(JSONResponse(report.model_dump(mode="json", exclude={"freshness"})).body)


def _with_freshness_json(body: bytes, freshness: ReportFreshness) -> bytes:
    """``body`` (``_json_body``) with ``freshness`` as its last field: the bytes JSONResponse would send."""
    field = bytes(JSONResponse({"freshness": freshness.model_dump(mode="json")}).body)
    return body[:-1] + b"," + field[1:]


def _encode(report: ReportRead, run_ids: list[int], fmt: str, extra: str = "") -> Response:
    """The CSV or Markdown form (JSON: ``_json_body``)."""
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
    return PlainTextResponse(
        markdown.render(report, extra=extra),
        media_type="text/markdown; charset=utf-8",
        headers={"Content-Disposition": f'inline; filename="report-{"-".join(map(str, run_ids))}.md"'},
    )


ParamsDep = Annotated[ReportParams, Depends()]
# Answered with every form of a report (JSON, CSV, Markdown, figure, page).
_FRESHNESS = {
    "X-Report-Data-Time": {
        "description": "every write committed before this time is in the report (ISO 8601, UTC)",
        "schema": {"type": "string", "format": "date-time"},
    },
    "X-Report-Computed-At": {
        "description": "when the report was computed (ISO 8601, UTC)",
        "schema": {"type": "string", "format": "date-time"},
    },
    "X-Report-Stale": {
        "description": "true: the last computed report, served while a newer one is computed",
        "schema": {"type": "string", "enum": ["true", "false"]},
    },
}
_CSV: dict[int | str, dict[str, Any]] = {
    200: {
        "headers": _FRESHNESS,
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/ReportRead"}},
            "text/csv": {},
            "text/markdown": {},
        },
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
    served = await _build(request, run_ids, params)
    body = await _compute(request, render.figure_bytes, served.computed.value, fmt)
    headers = _freshness_headers(_freshness(served))
    return with_inline_styles(Response(body, media_type=MEDIA[fmt], headers=headers))


async def _page(request: Request, run_ids: list[int], params: ReportParams) -> HTMLResponse:
    resources = get_resources(request)
    key = (tuple(run_ids), params.query)
    kept = None
    if resources.page_store is not None and resources.report_cache.latest(key) is None:
        kept = await _kept_page(request, resources.page_store, key, run_ids)
    if kept is not None:
        return with_inline_styles(HTMLResponse(kept[0], headers=kept[1]))
    served = await _build(request, run_ids, params)
    fn = render.sections
    section = await _sections(request, "page", fn, served.computed.value, run_ids, params.fresh)
    # The page states the data time of what it shows (the older of the report's and its sections').
    report = _with_freshness(served.computed.value, _freshness(served, section))
    body = await _compute(request, render.page, report, run_ids, section.computed.value)
    headers = _freshness_headers(report.freshness)
    store = resources.page_store
    current = not (served.stale or section.stale)
    if store is not None and current and served.computed.derived.get("kept") is not section.computed:
        await _keep_page(request, key, [served, section], body, headers)
        served.computed.derived["kept"] = section.computed
    return with_inline_styles(HTMLResponse(body, headers=headers))


async def _kept_page(
    request: Request, store: PageStore, key: Hashable, run_ids: list[int]
) -> tuple[bytes, dict[str, str]] | None:
    """The page kept on disk for ``key`` (a restart since), if the data it was computed from is the data
    now: the page a computation would give (services.reports.page_store). Raises NotFound for a run gone."""
    entry = await anyio.to_thread.run_sync(store.load, key)
    if entry is None:
        return None
    versions = [
        version_text(await run_in_session(request, fn, run_ids))
        for fn in (report_version, render.sections_version)
    ]
    if versions != entry["versions"]:
        return None
    return entry["body"].encode("utf-8"), dict(entry["headers"])


async def _keep_page(
    request: Request, key: Hashable, served: list[Served[Any]], body: bytes, headers: dict[str, str]
) -> None:
    """Keep a page served current on disk, unless a deletion happened since its parts were begun."""
    resources = get_resources(request)
    store = resources.page_store
    assert store is not None
    caches = (resources.report_cache, resources.section_cache)
    versions = [version_text(s.computed.version) for s in served]

    def current() -> bool:
        return all(c.epoch == s.computed.epoch for c, s in zip(caches, served, strict=True))

    await anyio.to_thread.run_sync(store.save, key, versions, body, headers, current)


# Non-JSON bodies: response_class=Response (no media type of its own, so errors stay application/json)
# keeps FastAPI from advertising an application/json 200 with an empty schema; each route returns its own
# Response, so what it sends is unchanged.
def _body(media_type: str, schema: dict[str, str]) -> dict[int | str, dict[str, Any]]:
    return {**responses(404, 422), 200: {"headers": _FRESHNESS, "content": {media_type: {"schema": schema}}}}


_SVG = _body("image/svg+xml", {"type": "string"})
_PNG = _body("image/png", {"type": "string", "format": "binary"})
_PDF = _body("application/pdf", {"type": "string", "format": "binary"})
_HTML = _body("text/html", {"type": "string"})
_ITEMS_HTML = {**responses(404, 422), 200: {"content": {"text/html": {"schema": {"type": "string"}}}}}


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
    return await _compute(request, render.items, [run_id], metric, params.query)  # type: ignore[no-any-return]


@router.get("/runs/{run_id}/metrics/{metric}/items.html", responses=_ITEMS_HTML, response_class=Response)
async def metric_items_html(
    run_id: RunId, metric: MetricPath, request: Request, params: ParamsDep
) -> HTMLResponse:
    return with_inline_styles(
        HTMLResponse(await _compute(request, render.items_page, [run_id], metric, params.query))
    )


@router.get("/report/metrics/{metric}/items", response_model=MetricItems, responses=responses(404, 422))
async def pooled_metric_items(
    metric: MetricPath, request: Request, params: ParamsDep, runs: RunsQuery
) -> MetricItems:
    return await _compute(request, render.items, _run_ids(runs), metric, params.query)  # type: ignore[no-any-return]


@router.get("/report/metrics/{metric}/items.html", responses=_ITEMS_HTML, response_class=Response)
async def pooled_metric_items_html(
    metric: MetricPath, request: Request, params: ParamsDep, runs: RunsQuery
) -> HTMLResponse:
    return with_inline_styles(
        HTMLResponse(await _compute(request, render.items_page, _run_ids(runs), metric, params.query))
    )
