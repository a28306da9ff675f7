"""Who is calling and what they may do: FastAPI dependencies applied per router (``access``) or per route
(``require``), and the cookie helpers of browser sessions.

Credentials: ``Authorization: Bearer <API key>`` (API, CLI) or the signed session cookie set by the login form
(browser). A browser session may call the JSON API too; its unsafe requests then need the ``X-CSRF-Token``
header (forms carry the token in a hidden field instead). With ``RAGMETA_AUTH__ENABLED=false`` (the demo on
loopback) an anonymous caller acts as an admin, and only on a loopback address.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from functools import partial
from ipaddress import ip_address
from typing import Annotated, Any

import anyio
from fastapi import Depends, Request, Response
from fastapi.security import APIKeyCookie, HTTPAuthorizationCredentials, HTTPBearer
from itsdangerous import BadSignature

from app.auth_state import AuthState
from app.resources import get_resources
from app.settings import Settings
from services.accounts import service as accounts
from services.accounts.schemas import Identity, Role
from services.db import run_transaction
from services.errors import Forbidden, Unauthorized, Unavailable

SESSION_COOKIE = "ragmeta_session"
LOGIN_CSRF_COOKIE = "ragmeta_login_csrf"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
OPEN_IDENTITY = Identity(user_id=None, name="open-demo", role=Role.admin, via="open")

_bearer = HTTPBearer(auto_error=False, description="API key: `Authorization: Bearer rgm_...`")
_cookie = APIKeyCookie(name=SESSION_COOKIE, auto_error=False, description="browser session (the login form)")


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def open_mode_refusal(settings: Settings, host: str) -> str | None:
    """Why the service must not start (auth off on a non-loopback address), or None."""
    if settings.auth.enabled or is_loopback(host):
        return None
    return (
        f"refusing to serve on {host} with authentication off: anyone on the network could read and change "
        "everything. Set RAGMETA_AUTH__ENABLED=true (and create a key: ragmeta keys create --local --role "
        "admin --name admin), or bind to 127.0.0.1."
    )


def auth_state(request: Request) -> AuthState:
    return get_resources(request).auth


def _session_token(request: Request, cookie: str) -> str | None:
    settings = get_resources(request).settings
    try:
        max_age = int(settings.auth.session_hours * 3600)
        raw = auth_state(request).signer("session").unsign(cookie, max_age=max_age)
    except BadSignature:
        return None
    return raw.decode()


async def current_identity(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    cookie: Annotated[str | None, Depends(_cookie)],
) -> Identity | None:
    """The caller's identity, None when there is no credential. An invalid API key is a 401 at once.

    The look-up (and the key's hash check) runs in a thread, on a read session of its own, in a slot of the
    app's credential look-ups (``app.deps.DbSlots``) waited for on the loop; concurrent first uses of one key
    share one hash check (``KeyChecks``)."""
    settings = get_resources(request).settings
    identity = None
    if bearer is not None:
        state = auth_state(request)
        identity = await state.key_checks.identity(request, state.hasher, bearer.credentials)
    elif cookie:
        token = _session_token(request, cookie)
        if token:
            identity = await look_up(request, accounts.session_identity, token)
    if identity is None and not settings.auth.enabled:
        server = request.scope.get("server")
        if not is_loopback(server[0] if server else None):
            raise Unavailable(
                "authentication is off (RAGMETA_AUTH__ENABLED=false) and this request did not arrive on a "
                "loopback address; turn authentication on"
            )
        return OPEN_IDENTITY
    return identity


async def look_up(request: Request, fn: Callable[..., Identity | None], *args: Any) -> Identity | None:
    res = get_resources(request)
    async with res.db_slots.lookups:
        return await anyio.to_thread.run_sync(partial(run_transaction, res.read_session_factory, fn, *args))


IdentityDep = Annotated[Identity | None, Depends(current_identity)]


def _check(request: Request, identity: Identity | None, roles: frozenset[Role]) -> Identity:
    if identity is None:
        raise Unauthorized(
            "this needs a credential: an API key (Authorization: Bearer ...) or a browser session (/login)"
        )
    if identity.role not in roles:
        allowed = ", ".join(sorted(r.value for r in roles))
        raise Forbidden(f"the {identity.role.value} role may not do this (allowed: {allowed})")
    if identity.via == "session" and request.method not in SAFE_METHODS:
        sent = request.headers.get(CSRF_HEADER, "")
        expected = auth_state(request).csrf(identity) or ""
        if not hmac.compare_digest(sent, expected):
            raise Forbidden(f"a browser session needs the {CSRF_HEADER} header on this request (see GET /me)")
    return identity


def require(roles: frozenset[Role]) -> Callable[..., Identity]:
    """Route dependency: the caller must have one of ``roles``; returns their identity."""

    def dependency(request: Request, identity: IdentityDep) -> Identity:
        return _check(request, identity, roles)

    return dependency


def access(read: frozenset[Role], write: frozenset[Role]) -> Callable[..., Identity]:
    """Router dependency: ``read`` roles for GET/HEAD, ``write`` roles for every other method."""

    def dependency(request: Request, identity: IdentityDep) -> Identity:
        return _check(request, identity, read if request.method in SAFE_METHODS else write)

    return dependency


def set_session_cookie(request: Request, response: Response, token: str) -> None:
    settings = get_resources(request).settings
    response.set_cookie(
        SESSION_COOKIE,
        auth_state(request).signer("session").sign(token).decode(),
        max_age=int(settings.auth.session_hours * 3600),
        httponly=True,
        samesite="lax",
        secure=_secure(request),
        path="/",
    )


def clear_session_cookie(request: Request, response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, httponly=True, samesite="lax", secure=_secure(request), path="/")


def _secure(request: Request) -> bool:
    settings = get_resources(request).settings
    forced = settings.auth.cookie_secure
    return forced if forced is not None else request.url.scheme == "https"


def login_csrf(request: Request) -> tuple[str, str | None]:
    """The login form's CSRF token (double submit: a signed cookie and the same value in the form), and the
    cookie to set when the browser does not have a valid one yet."""
    value = request.cookies.get(LOGIN_CSRF_COOKIE)
    if value:
        try:
            return auth_state(request).signer("login-csrf").unsign(value, max_age=86400).decode(), None
        except BadSignature:
            pass
    token = secrets.token_urlsafe(24)
    return token, auth_state(request).signer("login-csrf").sign(token).decode()


def set_login_csrf_cookie(request: Request, response: Response, cookie: str | None) -> None:
    if cookie is None:
        return
    response.set_cookie(
        LOGIN_CSRF_COOKIE,
        cookie,
        max_age=86400,
        httponly=True,
        samesite="strict",
        secure=_secure(request),
        path="/login",
    )


def login_csrf_ok(request: Request, sent: str) -> bool:
    value = request.cookies.get(LOGIN_CSRF_COOKIE)
    if not value or not sent:
        return False
    try:
        token = auth_state(request).signer("login-csrf").unsign(value, max_age=86400).decode()
    except BadSignature:
        return False
    return hmac.compare_digest(token, sent)


def form_csrf_ok(request: Request, identity: Identity, sent: str) -> bool:
    expected = auth_state(request).csrf(identity)
    return expected is not None and hmac.compare_digest(expected, sent or "")
