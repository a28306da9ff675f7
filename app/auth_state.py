"""What the app owns for authentication (``AuthState``: the key hasher, the cookie-signing secret, the key
checks in progress), apart from the dependencies in ``app.auth`` that read it from the app's resources."""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from fastapi import Request
from itsdangerous import TimestampSigner

from app.settings import Settings
from services.accounts import service as accounts
from services.accounts.schemas import Identity
from services.errors import Unauthorized

# How a credential becomes an identity (``app.auth.look_up``: a credential slot, a thread, a read session).
LookUp = Callable[..., Awaitable[Identity | None]]


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
    first request runs the ordinary look-up (``look_up``: a credential slot, a thread, a read session); the
    others wait on the event loop for it to end, holding no thread, no database slot and no lock, then:
    - it succeeded: the key is remembered, each runs its own look-up (no Argon2; revocation and the account's
      state are still read per request);
    - it answered 401: each answers 401 (the same key against the same stored hash), and nothing is
      remembered, so the next request checks the key again;
    - it ended otherwise (a database overload, a cancelled request): each tries again, one leading.
    Entries are dropped when their check ends. Only the event loop touches the dict, so it needs no lock.
    """

    def __init__(self, look_up: LookUp) -> None:
        self._look_up = look_up
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
        return await self._look_up(request, accounts.authenticate_key, hasher, key)

    async def _lead(
        self, digest: str, request: Request, hasher: accounts.KeyHasher, key: str
    ) -> Identity | None:
        check = self._running[digest] = _Check()
        try:
            return await self._look_up(request, accounts.authenticate_key, hasher, key)
        except Unauthorized:
            check.rejected = True
            raise
        finally:
            del self._running[digest]
            check.done.set()


class AuthState:
    """What the app owns for authentication: the key hasher (with its verified-key memory) and the
    cookie-signing secret, read (or created) on first use so that building the app touches no file."""

    def __init__(self, settings: Settings, look_up: LookUp) -> None:
        self.hasher = accounts.KeyHasher(settings.auth)
        self.key_checks = KeyChecks(look_up)
        self._signing_in: dict[str, tuple[anyio.Lock, int]] = {}
        self._settings = settings
        self._secret: bytes | None = None
        self._lock = threading.Lock()

    @property
    def secret(self) -> bytes:
        with self._lock:
            if self._secret is None:
                self._secret = load_secret(self._settings)
            return self._secret

    @asynccontextmanager
    async def signing_in_as(self, name: str) -> AsyncIterator[None]:
        """Sign-ins of account ``name`` one at a time in this process, from reading its failed-login limit to
        recording the outcome, so that attempts sent in parallel cannot pass the limit: each reads the
        failures of those before it, already recorded. (Counting the attempts in flight instead was off by
        one whenever a failure had been written but its attempt not yet uncounted.) Sign-ins of other names
        run in parallel; an entry is dropped when no sign-in of its name waits. Event loop only."""
        lock, waiting = self._signing_in.get(name) or (anyio.Lock(), 0)
        self._signing_in[name] = (lock, waiting + 1)
        try:
            async with lock:
                yield
        finally:
            lock, waiting = self._signing_in[name]
            if waiting == 1:
                del self._signing_in[name]
            else:
                self._signing_in[name] = (lock, waiting - 1)

    def signer(self, purpose: str) -> TimestampSigner:
        return TimestampSigner(self.secret, salt=f"ragmeta-{purpose}")

    def csrf(self, identity: Identity) -> str | None:
        return accounts.csrf_token(self.secret, identity.session_token) if identity.session_token else None
