"""The Prometheus scrape endpoint, ``GET /-/metrics``, and the middleware that counts requests.

``/metrics`` is the metric catalogue (what ragmeta can score), so the scrape lives under ``/-/``, the prefix
GitLab and Prometheus itself give their operational endpoints: no resource of the API can be named ``-``,
and a scrape job only needs ``metrics_path: /-/metrics``.

One process answers for all: the API process. What the other processes do is visible from it: the worker
processes' items are read from the store at scrape time (queue depth and items done or failed, the same
numbers whoever processed them), their judge calls all go through this process's judge gateway (whose totals
are read here), and report compute time is measured here around each hand-over to the report process. So no
per-process registry has to be merged and a scrape costs two small queries.

Routes are labelled by their template (``/runs/{run_id}/outputs``), never by the raw path, and requests that
matched no route are labelled ``unmatched``, so that a scan of random URLs cannot grow the series.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import anyio
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import PlainTextResponse
from sqlalchemy.orm import Session

from app.resources import AppResources, get_resources
from services.db import run_transaction
from services.jobs.repository import JobRepository
from services.telemetry import Gauge, Labels, Telemetry

PATH = "/-/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

router = APIRouter(tags=["health"])


def _store_counts(session: Session) -> dict[str, list[tuple[Labels, float]]]:
    repo = JobRepository(session)
    return {
        "jobs": [((status,), float(n)) for status, n in repo.count_by_status()],
        "items": [((status,), float(n)) for status, n in repo.count_items_by_status()],
    }


def _gauges(resources: AppResources, store: dict[str, list[tuple[Labels, float]]]) -> list[Gauge]:
    """The families read at scrape time; ``store`` holds the counts this scrape read from the database."""
    return [*_store_gauges(resources, store), *_judge_gauges(resources), *_app_gauges(resources)]


def _store_gauges(resources: AppResources, store: dict[str, list[tuple[Labels, float]]]) -> list[Gauge]:
    """The database pool, the request slots, and the jobs and job items in the store."""
    engine = resources.core.engine
    pool: Any = engine.pool

    def db_pool() -> Iterable[tuple[Labels, float]]:
        out: list[tuple[Labels, float]] = []
        for state, method in (("checked_out", "checkedout"), ("idle", "checkedin"), ("overflow", "overflow")):
            reader = getattr(pool, method, None)
            if reader is not None:
                out.append(((state,), float(reader())))
        return out

    def db_size() -> Iterable[tuple[Labels, float]]:
        size = getattr(pool, "size", None)
        return [((), float(size()))] if size is not None else []

    def slots() -> Iterable[tuple[Labels, float]]:
        sessions = resources.db_slots.sessions
        return [(("in_use",), float(sessions.borrowed_tokens)), (("total",), float(sessions.total_tokens))]

    items = store["items"]
    return [
        Gauge("ragmeta_db_pool_connections", "Database pool connections by state", db_pool, ("state",)),
        Gauge("ragmeta_db_pool_size", "Database pool size (connections kept open)", db_size),
        Gauge(
            "ragmeta_db_slots", "Request database slots (app.db_slots) in use and in all", slots, ("state",)
        ),
        Gauge("ragmeta_jobs", "Jobs in the store by status", lambda: store["jobs"], ("status",)),
        Gauge(
            "ragmeta_job_queue_depth",
            "Job items waiting to be processed or being processed (pending or claimed)",
            lambda: [((), sum(n for (s,), n in items if s in ("pending", "claimed")))],
        ),
        Gauge(
            "ragmeta_job_items_processed_total",
            "Job items processed, by outcome (read from the store, by every worker; rate() gives items/s; "
            "falls only when job results are deleted, which Prometheus reads as a reset)",
            lambda: [((s,), n) for (s,), n in items if s in ("done", "failed")],
            ("status",),
            kind="counter",
        ),
    ]


def _judge_gauges(resources: AppResources) -> list[Gauge]:
    """The judge gateway's requests in flight and its totals (none without a gateway)."""
    gateway = resources.core.scoring.gateway

    def judge(attr: str) -> Iterable[tuple[Labels, float]]:
        return [((), float(getattr(gateway.totals, attr)))] if gateway is not None else []

    def judge_in_flight() -> Iterable[tuple[Labels, float]]:
        return [((), float(gateway.in_flight))] if gateway is not None else []

    return [
        Gauge(
            "ragmeta_judge_in_flight",
            "Judge requests being answered now (upstream or cache)",
            judge_in_flight,
        ),
        Gauge(
            "ragmeta_judge_requests_total",
            "Judge requests received by the gateway",
            lambda: judge("calls"),
            kind="counter",
        ),
        Gauge(
            "ragmeta_judge_cache_hits_total",
            "Judge requests answered from the cache",
            lambda: judge("cache_hits"),
            kind="counter",
        ),
        Gauge(
            "ragmeta_judge_upstream_calls_total",
            "Judge requests sent to the judge",
            lambda: judge("upstream_calls"),
            kind="counter",
        ),
        Gauge(
            "ragmeta_judge_retries_total",
            "Extra attempts made for judge requests (rate limits, timeouts, server errors)",
            lambda: judge("upstream_retries"),
            kind="counter",
        ),
        Gauge(
            "ragmeta_judge_failures_total",
            "Judge requests that got no usable answer",
            lambda: judge("failures"),
            kind="counter",
        ),
    ]


def _app_gauges(resources: AppResources) -> list[Gauge]:
    """The report caches and the embedded worker processes."""

    def caches(attr: str) -> Iterable[tuple[Labels, float]]:
        return [
            (("report",), float(getattr(resources.report_cache, attr))),
            (("section",), float(getattr(resources.section_cache, attr))),
        ]

    processes = resources.worker_processes

    def workers() -> Iterable[tuple[Labels, float]]:
        if processes is None:
            return []
        alive = sum(1 for p in processes.processes if p.is_alive())
        return [(("alive",), float(alive)), (("configured",), float(len(processes.processes)))]

    return [
        Gauge(
            "ragmeta_report_cache_hits_total",
            "Reports served from the cache",
            lambda: caches("hits"),
            ("cache",),
            kind="counter",
        ),
        Gauge(
            "ragmeta_report_cache_misses_total",
            "Reports computed and put in the cache",
            lambda: caches("misses"),
            ("cache",),
            kind="counter",
        ),
        Gauge("ragmeta_worker_processes", "Embedded job worker processes", workers, ("state",)),
    ]


def _scrape(resources: AppResources) -> str:
    telemetry: Telemetry = resources.telemetry
    try:
        store = run_transaction(resources.read_session_factory, _store_counts)
    except Exception:
        telemetry.scrape_errors.inc()
        store = {"jobs": [], "items": []}
    return telemetry.render(_gauges(resources, store))


@router.get(
    PATH,
    response_class=PlainTextResponse,
    responses={200: {"content": {CONTENT_TYPE: {}}, "description": "Prometheus text exposition"}},
)
async def prometheus_metrics(request: Request) -> PlainTextResponse:
    """Operational metrics for a Prometheus scrape (text format 0.0.4); public, like `/healthz`: it tells
    counts and timings, no data."""
    resources = get_resources(request)
    async with resources.db_slots.sessions:
        text = await anyio.to_thread.run_sync(_scrape, resources)
    return PlainTextResponse(text, media_type=CONTENT_TYPE)


def install(app: FastAPI) -> None:
    """The scrape route; requests are counted and timed by the request middleware (``app.request_id``),
    which sees every answer, the guard's refusals included."""
    app.include_router(router)
