"""API documentation that works offline: Swagger UI at /docs and ReDoc at /redoc, their scripts and styles
served by the service itself from the `fastapi-offline` package's bundled assets (no CDN, no web font).

FastAPI's own page builders are used; only the asset URLs change. The assets are the package's files, so
upgrading Swagger UI or ReDoc is a dependency bump."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

STATIC_URL = "/static/docs"
# The pages may load only the service's own files. ReDoc's menu always shows a logo from its vendor's CDN; the
# policy stops the browser before it asks (the image hides itself on error), so the page makes no request
# outside the service, even on a connected machine.
CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


def _local_only(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = CSP
    return page


def assets_dir() -> Path:
    """The directory holding swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js and favicon.png.
    Found without importing the package (whose module would build nothing we use)."""
    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the fastapi-offline package (offline API docs assets) is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


def install(app: FastAPI) -> None:
    app.mount(STATIC_URL, StaticFiles(directory=assets_dir()), name="docs-assets")
    title = app.title
    openapi_url = app.openapi_url or "/openapi.json"
    redirect_url = "/docs/oauth2-redirect"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return _local_only(
            get_swagger_ui_html(
                openapi_url=openapi_url,
                title=f"{title} — API",
                oauth2_redirect_url=redirect_url,
                swagger_js_url=f"{STATIC_URL}/swagger-ui-bundle.js",
                swagger_css_url=f"{STATIC_URL}/swagger-ui.css",
                swagger_favicon_url=f"{STATIC_URL}/favicon.png",
                # No badge asking an online validator about the document.
                swagger_ui_parameters={"validatorUrl": None},
            )
        )

    @app.get(redirect_url, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return _local_only(
            get_redoc_html(
                openapi_url=openapi_url,
                title=f"{title} — API reference",
                redoc_js_url=f"{STATIC_URL}/redoc.standalone.js",
                redoc_favicon_url=f"{STATIC_URL}/favicon.png",
                with_google_fonts=False,
            )
        )
