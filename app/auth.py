"""Who is calling and what they may do: FastAPI dependencies applied per router (``access``) or per route
(``require``), and the cookie helpers of browser sessions.

Credentials: ``Authorization: Bearer <API key>`` (API, CLI) or the signed session cookie set by the login form
(browser). A browser session may call the JSON API too; its unsafe requests then need the ``X-CSRF-Token``
header (forms carry the token in a hidden field instead). With ``RAGMETA_AUTH__ENABLED=false`` (the demo on
loopback) an anonymous caller acts as an admin, and only on a loopback address.
"""

from __future__ import annotations

import hmac
import os
import secrets
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from ipaddress import ip_address
from pathlib import Path
from typing import Annotated, Any

import anyio
from fastapi import Depends, Request, Response
from fastapi.security import APIKeyCookie, HTTPAuthorizationCredentials, HTTPBearer
from itsdangerous import BadSignature, TimestampSigner

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


def load_secret(settings: Settings) -> bytes:
    """The cookie-signing key: from the environment variable named in settings, else a file made once."""
    value = os.environ.get(settings.auth.secret_key_env)
    if value:
        return value.encode()
    path = Path(settings.data_dir) / "secret_key"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes().strip()
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32))
    return path.read_bytes().strip()


class _Check:
    __slots__ = ("done", "rejected")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.rejected = False


class KeyChecks:
    """The first checks of API keys in progress, one per key, so that concurrent first uses of a key cost one
    Argon2 verification instead of one each (the hasher remembers a key only once a check has succeeded).

    Keyed by the key's SHA-256 (the hasher's memory's own key), never by its prefix: only requests presenting
    the very same key share a check, so a wrong key sent alongside the right one is checked on its own. The
    first request runs the ordinary look-up (``_look_up``: a credential slot, a thread, a read session); the
    others wait on the event loop for it to end, holding no thread, no database slot and no lock, then:
    - it succeeded: the key is remembered, each runs its own look-up (no Argon2; revocation and the account's
      state are still read per request);
    - it answered 401: each answers 401 (the same key against the same stored hash), and nothing is
      remembered, so the next request checks the key again;
    - it ended otherwise (a database overload, a cancelled request): each tries again, one leading.
    Entries are dropped when their check ends. Only the event loop touches the dict, so it needs no lock.
    """

    def __init__(self) -> None:
        self._running: dict[str, _Check] = {}

    async def identity(self, request: Request, hasher: accounts.KeyHasher, key: str) -> Identity | None:
        digest = accounts.sha256(key)
        while not hasher.remembers(digest):
            running = self._running.get(digest)
            if running is None:
                return await self._lead(digest, request, hasher, key)
            await running.done.wait()
            if running.rejected:
                raise Unauthorized(accounts.INVALID_KEY)
        return await _look_up(request, accounts.authenticate_key, hasher, key)

    async def _lead(
        self, digest: str, request: Request, hasher: accounts.KeyHasher, key: str
    ) -> Identity | None:
        check = self._running[digest] = _Check()
        try:
            return await _look_up(request, accounts.authenticate_key, hasher, key)
        except Unauthorized:
            check.rejected = True
            raise
        finally:
            del self._running[digest]
            check.done.set()


class AuthState:
    """What the app owns for authentication: the key hasher (with its verified-key memory) and the
    cookie-signing secret, read (or created) on first use so that building the app touches no file."""

    def __init__(self, settings: Settings) -> None:
        self.hasher = accounts.KeyHasher(settings.auth)
        self.key_checks = KeyChecks()
        self._signing_in: Counter[str] = Counter()
        self._settings = settings
        self._secret: bytes | None = None
        self._lock = threading.Lock()

    @property
    def secret(self) -> bytes:
        with self._lock:
            if self._secret is None:
                self._secret = load_secret(self._settings)
            return self._secret

    @contextmanager
    def signing_in_as(self, name: str) -> Iterator[int]:
        """Counts a sign-in of account ``name`` while its key is checked and its outcome recorded; yields how
        many other sign-ins of the name are (they count towards its failed-login limit). Event loop only:
        enter it before the first await, so that a parallel attempt sees this one."""
        others = self._signing_in[name]
        self._signing_in[name] += 1
        try:
            yield others
        finally:
            self._signing_in[name] -= 1
            if not self._signing_in[name]:
                del self._signing_in[name]

    def signer(self, purpose: str) -> TimestampSigner:
        return TimestampSigner(self.secret, salt=f"ragmeta-{purpose}")

    def csrf(self, identity: Identity) -> str | None:
        return accounts.csrf_token(self.secret, identity.session_token) if identity.session_token else None


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
            identity = await _look_up(request, accounts.session_identity, token)
    if identity is None and not settings.auth.enabled:
        server = request.scope.get("server")
        if not is_loopback(server[0] if server else None):
            raise Unavailable(
                "authentication is off (RAGMETA_AUTH__ENABLED=false) and this request did not arrive on a "
                "loopback address; turn authentication on"
            )
        return OPEN_IDENTITY
    return identity


async def _look_up(request: Request, fn: Callable[..., Identity | None], *args: Any) -> Identity | None:
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
