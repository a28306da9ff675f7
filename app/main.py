"""App factory: ``create_app(settings)`` builds the service; ``app`` is what uvicorn serves."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from fastapi import Depends, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

from app import docs, request_id, telemetry
from app.auth import access, look_up
from app.auth_state import AuthState
from app.db_slots import DbSlots
from app.errors import ErrorEnvelope, install_error_handlers
from app.middleware import UNSAFE, RequestGuard, upload_routes
from app.resources import AppResources
from app.routers import (
    accounts,
    annotation_imports,
    comparisons,
    datasets,
    deletion,
    estimates,
    generation,
    health,
    home,
    jobs,
    otlp,
    preferences,
    ratings,
    reports,
    retrieval,
    runs,
    scores,
    scoring,
    stability,
    studies,
    tasks,
    trust,
    web,
)
from app.security import SecurityHeaders
from app.settings import Settings, get_settings
from services.accounts.schemas import READERS, WRITERS
from services.datasets.schemas import DocumentCreate, QuestionCreate
from services.db import ensure_migrated, head_revision, is_in_memory, make_engine, pool_capacity
from services.jobs.processes import WorkerProcesses, worker_count
from services.jobs.queue import make_worker
from services.jobs.worker import JobContext
from services.offline import apply_offline_env
from services.ratings.schemas import PreferenceIn, RaterCreate, RatingIn
from services.reports.cache import ReportCache
from services.reports.comparison_schemas import PairwiseRead, SystemsRead
from services.reports.page_store import PageStore
from services.reports.pool import ReportPool
from services.reports.schemas import ReportRead
from services.resources import Resources, register_job_handlers
from services.runs.schemas import NativeOutput, RagasOutput, RagCheckerOutput
from services.scores.service import ExternalScoreIn
from services.tasks.schemas import ExportRow
from services.workers import worker_runtime

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

log = logging.getLogger("ragmeta")

# The API process can enqueue any job kind: its handlers are known from import (opening the resources
# registers them too, for every other process that runs jobs).
register_job_handlers()

# Item schemas of batch endpoints whose bodies are read by hand (JSON, JSONL or file) and so are not
# discovered by FastAPI; they are added to the OpenAPI components so clients can see them.
EXTRA_SCHEMAS: list[type[Any]] = [
    ReportRead,
    PairwiseRead,
    SystemsRead,
    DocumentCreate,
    QuestionCreate,
    NativeOutput,
    RagasOutput,
    RagCheckerOutput,
    RaterCreate,
    RatingIn,
    PreferenceIn,
    ExternalScoreIn,
    ExportRow,
]

DESCRIPTION = """\
ragmeta tells a RAG team which automatic metrics they can trust on their own data: it stores a question/answer
dataset with reference passages, runs a RAG system or receives the outputs of one, collects human ratings,
scores every output with Ragas, DeepEval, RAGChecker, Opik and classical metrics, and reports how each metric
correlates with the humans, with confidence intervals.

Every error is one JSON envelope: `{"error": name, "detail": text, "items": [{index, line, field, reason}]}`.
"""


def _operation_id(route: APIRoute) -> str:
    return route.name


def create_app(settings: Settings | None = None, report_pool: ReportPool | None = None) -> FastAPI:
    """The app. ``report_pool``: report processes already started (and warming up) for it, which it then
    owns; by default its own, started by its lifespan."""
    settings = settings or get_settings()
    apply_offline_env()
    engine = make_engine(settings.database_url, settings.database_wait_s)
    resources = _open_resources(settings, engine, report_pool)
    app = FastAPI(
        title="ragmeta",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=_lifespan(settings, engine, resources),
        generate_unique_id_function=_operation_id,
        # The API docs are served from local assets (app.docs), never from a CDN.
        docs_url=None,
        redoc_url=None,
    )
    # The one attribute of app.state: everything else the app owns is typed in it (app.resources).
    app.state.resources = resources
    install_error_handlers(app)
    _install_middleware(app)
    docs.install(app)
    _install_routers(app, resources)
    _install_openapi(app)
    return app


def _open_resources(settings: Settings, engine: Engine, report_pool: ReportPool | None) -> AppResources:
    """What the app owns for its life; the lifespan starts what runs in the background and closes all."""
    core = Resources.open(settings, engine)
    read_factory = core.read_session_factory
    if report_pool is None:
        report_pool = ReportPool(settings, read_factory, settings.report_processes)
    elif report_pool.factory is None:
        report_pool.factory = read_factory
    return AppResources(
        settings=settings,
        core=core,
        db_slots=DbSlots(pool_capacity(engine)),
        report_limiter=anyio.CapacityLimiter(settings.max_concurrent_reports),
        import_limiter=anyio.CapacityLimiter(settings.max_concurrent_imports),
        answer_limiter=anyio.CapacityLimiter(settings.generator.max_concurrency),
        report_cache=ReportCache(settings.report_cache_size, settings.report_max_stale_s),
        section_cache=ReportCache(settings.report_cache_size, settings.report_max_stale_s),
        page_store=_page_store(settings),
        report_pool=report_pool,
        auth=AuthState(settings, look_up),
        probe_engine=_probe_engine(settings, engine),
        probe_limiter=anyio.CapacityLimiter(1),
        migration_head=head_revision(),
    )


def _page_store(settings: Settings) -> PageStore | None:
    """Report pages kept across restarts under the data directory, for these settings and schema (the
    database's location aside: a copied data directory keeps its pages)."""
    off = not settings.report_page_store or settings.report_cache_size == 0
    if off or is_in_memory(settings.database_url):
        return None
    context = settings.model_dump_json(exclude={"data_dir", "database_url", "host", "port"}) + head_revision()
    return PageStore(settings.data_dir / "report-pages", context, settings.report_cache_size)


def _probe_engine(settings: Settings, engine: Engine) -> Engine:
    """One connection of the probes' own (an in-memory database is the engine's own: another would be
    another database)."""
    if is_in_memory(settings.database_url):
        return engine
    return make_engine(settings.database_url, min(settings.database_wait_s, 5.0), connections=1)


def _lifespan(
    settings: Settings, engine: Engine, resources: AppResources
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: starts the report processes and the workers, closes everything it started."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # What was started is closed in reverse order however the app ends (a failed start included), each
        # step even when one before it fails, off the event loop (the joins block) and shielded from the
        # cancellation of a hurried shutdown: uvicorn re-raises its SIGTERM once this returns, and no exit
        # hook runs then, so a child not ended here would outlive the server with its database connections.
        stack = ExitStack()
        stack.callback(engine.dispose)
        stack.callback(resources.probe_engine.dispose)
        stack.callback(resources.report_pool.close)
        try:
            # The report processes start and warm up with the API, in the background: not on a first report.
            resources.report_pool.start()
            # Every request holding a database slot can always get a thread, with threads to spare.
            threads = anyio.to_thread.current_default_thread_limiter()
            threads.total_tokens = max(threads.total_tokens, resources.db_slots.total + 16)
            # Refuse to serve a database that is behind the code (or migrate it, when told to).
            ensure_migrated(engine, settings.database_url, settings.auto_migrate)
            # The long-lived resources (scoring loop, judge gateway, pools, models, indexes, LLM clients)
            # belong to the app: made anew when an app is started again after a shutdown.
            if resources.core.closed:
                resources.core = Resources.open(settings, engine)
            core = resources.core
            stack.callback(core.close)
            resources.inline_slots = asyncio.Semaphore(settings.scoring.max_inline_requests)
            # Set on the loop's first turn after start-up: the server is then binding its socket.
            serving = threading.Event()
            worker, processes = None, None
            if settings.jobs.embedded_worker:
                count = worker_count(settings)
                if count == 0:
                    worker = make_worker(
                        JobContext(core.session_factory, settings, core), worker_id="embedded"
                    )
                    stack.callback(worker.stop)
                    worker.start()
                else:
                    # Worker processes send their judge calls through this process's gateway: one bound.
                    gateway = await anyio.to_thread.run_sync(core.scoring.gateway_url)
                    processes = WorkerProcesses(settings, gateway, count, worker_runtime)
                    stack.callback(processes.stop)
                    # Started once the server serves (and the report processes, if any, have warmed up).
                    stack.callback(_start_when_warm(resources.report_pool, processes, serving))
            resources.worker, resources.worker_processes = worker, processes
            # What start-up made (modules, classes, the app) lives as long as the app: out of the
            # collector's full passes, which otherwise traverse all of it and stopped every request for
            # 0.1 to 1.5 s at a time under load (bench/load.py). Given back to the collector at shutdown.
            gc.freeze()
            stack.callback(gc.unfreeze)
            asyncio.get_running_loop().call_soon(serving.set)
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(stack.close)

    return lifespan


# The job worker processes wait at most this long for the report processes' warm-up before starting.
WORKERS_AFTER_WARM_UP_S = 60.0


def _start_when_warm(
    pool: ReportPool, processes: WorkerProcesses, serving: threading.Event
) -> Callable[[], None]:
    """Start ``processes`` from a thread once the server is serving and the report processes (when there
    are any) have warmed up, or after ``WORKERS_AFTER_WARM_UP_S``; returns what cancels a start not yet made
    and waits for the thread.

    On a small machine, the job workers' imports (two processes on two cores) would share the CPU with the
    report process's warm-up and slow the first report page by seconds, or with the API's own start and
    delay its first answer; a job queued meanwhile waits in the store until they take it.
    """
    stopping = threading.Event()

    def start() -> None:
        deadline = time.monotonic() + WORKERS_AFTER_WARM_UP_S
        while not stopping.is_set() and time.monotonic() < deadline and not serving.wait(0.2):
            pass
        while not stopping.is_set() and time.monotonic() < deadline and not pool.wait_warm(0.2):
            pass
        if not stopping.is_set():
            processes.start()

    thread = threading.Thread(target=start, name="worker-start", daemon=True)
    thread.start()

    def cancel() -> None:
        stopping.set()
        thread.join()

    return cancel


def _install_middleware(app: FastAPI) -> None:
    app.add_middleware(RequestGuard, fastapi_app=app)
    # Outermost: the guard's own refusals carry the headers too.
    app.add_middleware(SecurityHeaders)
    request_id.install(app)
    telemetry.install(app)


def _install_routers(app: FastAPI, resources: AppResources) -> None:
    # Who may call what: these routers read with the reader roles (admin, editor, viewer) and write with the
    # writer roles (admin, editor: imports, jobs, deletions); the others declare their roles per route
    # (accounts, ratings, tasks, web) or are public (health, static files).
    by_method = [Depends(access(read=READERS, write=WRITERS))]
    for module in (
        datasets,
        retrieval,
        generation,
        runs,
        scores,
        scoring,
        reports,
        estimates,
        comparisons,
        preferences,
        jobs,
        studies,
        otlp,
        annotation_imports,
        deletion,
    ):
        app.include_router(module.router, dependencies=by_method)
    app.include_router(stability.router, dependencies=by_method)
    app.include_router(trust.router, dependencies=by_method)
    for module in (home, health, accounts, ratings, tasks, web):
        app.include_router(module.router)
    web.mount_static(app)
    resources.upload_routes = upload_routes(app)
    if not resources.upload_routes:
        # Without them every batch upload would meet the plain-body limit (1 MiB) instead of its own.
        raise RuntimeError("no batch upload route found in the app's routes (app.middleware.upload_routes)")


def _install_openapi(app: FastAPI) -> None:
    """The OpenAPI schema with the batch item schemas and every error the app answers in its envelope."""

    def custom_openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        app.openapi_schema = _openapi_schema(app)
        return app.openapi_schema

    app.openapi = custom_openapi  # type: ignore[method-assign]


def _openapi_schema(app: FastAPI) -> dict[str, Any]:
    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for model in EXTRA_SCHEMAS:
        js = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, sub in js.pop("$defs", {}).items():
            components.setdefault(name, sub)
        components.setdefault(model.__name__, js)
    # Request validation errors are rendered in the envelope too: say so instead of FastAPI's default.
    envelope = {"$ref": "#/components/schemas/ErrorEnvelope"}
    for ops in schema.get("paths", {}).values():
        for op in ops.values():
            resp = op.get("responses", {}).get("422")
            if resp and "HTTPValidationError" in str(resp):
                resp["content"] = {"application/json": {"schema": envelope}}
                resp["description"] = "Invalid request or items; every bad field is listed"
    # What the request guard (app.middleware) answers before any route: declared on every operation.
    for ops in schema.get("paths", {}).values():
        for method, op in ops.items():
            declared = op.setdefault("responses", {})
            extra = {}
            if method.upper() in UNSAFE:
                extra["403"] = "A browser's write from another origin is refused"
            if "requestBody" in op:
                extra["400"] = "Malformed body: not UTF-8, not JSON, NaN/Infinity, or nested too deep"
                extra["413"] = "Request body over the configured size limit"
            if method.upper() in UNSAFE:
                # app.errors: a pool or lock timeout is an overload, answered with Retry-After.
                extra["503"] = "The database is overloaded (connection or lock not obtained in time); "
                extra["503"] += "nothing was written; retry after Retry-After seconds"
            for code, text in extra.items():
                declared.setdefault(
                    code, {"description": text, "content": {"application/json": {"schema": envelope}}}
                )
    components.setdefault(
        "ErrorEnvelope", ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")
    )
    # Every operation that takes a credential can answer 401 (none or invalid) and 403 (role, CSRF).
    for ops in schema.get("paths", {}).values():
        for op in ops.values():
            if op.get("security"):
                for status, why in (("401", "No credential, or not a valid one"), ("403", "Not allowed")):
                    op["responses"].setdefault(
                        status,
                        {"description": why, "content": {"application/json": {"schema": envelope}}},
                    )
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    return schema


def __getattr__(name: str) -> Any:
    # `uvicorn app.main:app` builds the app on first access, so importing this module has no side effects.
    if name == "app":
        return create_app()
    raise AttributeError(name)
