"""The landing page: what the service is for, the demo report, the API docs and the metric catalogue."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from app.auth import IdentityDep
from app.deps import CommittingRoute, SessionDep
from app.routers.web import APP_DIR, _page
from services.accounts.schemas import Role
from services.datasets.repository import DatasetRepository
from services.runs.repository import RunRepository

router = APIRouter(tags=["home"], include_in_schema=False, route_class=CommittingRoute)


@router.get("/", response_class=HTMLResponse)
def home(request: Request, session: SessionDep, identity: IdentityDep) -> Response:
    # Raters have their own pages; everyone else must be signed in (or be on the open demo).
    if identity is None:
        return RedirectResponse("/login", status_code=303)
    if identity.role == Role.rater:
        return RedirectResponse("/rate", status_code=303)
    datasets = [(ds, RunRepository(session).all(ds.id)) for ds in DatasetRepository(session).list()]
    # The shared layout: its header says who is signed in and holds the sign-out form.
    return _page(request, "home.html", identity, datasets=datasets)


@router.get("/favicon.ico")
def favicon() -> FileResponse:
    # Browsers ask for it on pages that name no icon (JSON answers opened in a tab).
    return FileResponse(APP_DIR / "static" / "favicon.svg", media_type="image/svg+xml")
