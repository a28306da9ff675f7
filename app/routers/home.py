"""The landing page: what the service is for, the demo report, the API docs and the metric catalogue."""

from __future__ import annotations

from html import escape

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.auth import IdentityDep
from app.deps import CommittingRoute, SessionDep
from services.accounts.schemas import Role
from services.datasets.repository import DatasetRepository
from services.runs.repository import RunRepository

router = APIRouter(tags=["home"], include_in_schema=False, route_class=CommittingRoute)


@router.get("/", response_class=HTMLResponse)
def home(session: SessionDep, identity: IdentityDep) -> Response:
    # Raters have their own pages; everyone else must be signed in (or be on the open demo).
    if identity is None:
        return RedirectResponse("/login", status_code=303)
    if identity.role == Role.rater:
        return RedirectResponse("/rate", status_code=303)
    items = []
    for ds in DatasetRepository(session).list():
        runs = RunRepository(session).all(ds.id)
        links = (
            " · ".join(f"<a href='/runs/{r.id}/report.html'>{escape(r.name)}</a>" for r in runs)
            or "<span class='muted'>no runs yet</span>"
        )
        pooled = ""
        if len(runs) > 1:
            ids = ",".join(str(r.id) for r in runs)
            pooled = f" · <a href='/report.html?runs={ids}'>all runs pooled</a>"
        items.append(
            f"<li><b>{escape(ds.name)}</b> ({escape(ds.language)}): reports of runs {links}{pooled}</li>"
        )
    datasets = (
        "<ul>" + "".join(items) + "</ul>"
        if items
        else "<p>No dataset yet: import one (see the API docs).</p>"
    )
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>ragmeta</title>
<link rel="stylesheet" href="/static/ragmeta.css"></head><body><main>
<h1>ragmeta</h1>
<p>Which automatic RAG metrics can you trust on your data? ragmeta scores every output of your RAG system with
Ragas, DeepEval, RAGChecker, Opik and classical metrics, and reports how each one correlates with your human
raters, with confidence intervals and the ceiling that rater disagreement puts on any metric.</p>
<h2>Datasets and reports</h2>{datasets}
<h2>More</h2>
<ul><li><a href="/docs">API documentation</a> (<a href="/redoc">ReDoc</a>;
OpenAPI: <a href="/openapi.json">/openapi.json</a>)</li>
<li><a href="/metrics">Metric catalogue</a> with availability</li>
<li><a href="/healthz">Health</a></li>
<li><a href="/tasks.html">Rating tasks</a> (dashboards) · <a href="/rate">my rating queue</a></li></ul>
</main></body></html>"""
    return HTMLResponse(page)
