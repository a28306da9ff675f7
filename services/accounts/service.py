"""Accounts, API keys, browser sessions and failed-login accounting.

Keys look like ``rgm_<prefix>_<secret>``: the prefix finds the stored row, the whole key is checked against
its Argon2id hash. A key is returned once, when issued; nothing else ever returns or logs it. Verifying
Argon2 on every request would cost ~0.25 s of CPU each, so a verified key is remembered (by its SHA-256, in
a bounded LRU) with the stored hash it matched; revocation and deactivation are read from the database on
every request, so they take effect at once. A browser session records the key it was signed in with and
lives only while that key is valid and its account active: revoking the key ends it at its next request.
Concurrent first uses of one key wait for one check (``app.auth.KeyChecks``).

Failure modes: Unauthorized (unknown, revoked or malformed key; inactive account), Conflict (name taken,
role mismatch), NotFound, InvalidItems (a new account without a role), TooManyRequests (login lockout).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from collections import OrderedDict
from datetime import UTC, datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy.orm import Session

from services.accounts.repository import AccountRepository
from services.accounts.schemas import (
    Identity,
    KeyCreate,
    KeyIssued,
    KeyRead,
    Role,
    UserCreate,
    UserRead,
    UserUpdate,
)
from services.config import AuthSettings
from services.errors import Conflict, InvalidItems, ItemError, NotFound, TooManyRequests, Unauthorized
from services.models import ApiKey, LoginFailure, Rater, RaterAccount, User, WebSession
from services.pagination import Page, PageRequest, map_page, page_in_order

KEY_PREFIX = "rgm_"
INVALID_KEY = "the API key is not valid (unknown, revoked, or its account is inactive)"


def _now() -> datetime:
    return datetime.now(UTC)


def _aware(dt: datetime) -> datetime:
    # SQLite returns naive datetimes for timezone-aware columns.
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class KeyHasher:
    """Argon2id hashing of API keys, with a bounded memory of keys already verified in this process."""

    def __init__(self, auth: AuthSettings, cache_size: int = 4096) -> None:
        self._ph = PasswordHasher(
            time_cost=auth.hash_time_cost,
            memory_cost=auth.hash_memory_kib,
            parallelism=auth.hash_parallelism,
        )
        self._verified: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self._size = cache_size

    def hash(self, key: str) -> str:
        return self._ph.hash(key)

    def remembers(self, digest: str) -> bool:
        """Whether a key of this SHA-256 was verified in this process (against whichever hash it matched):
        a hint that checking it again costs no Argon2 (``app.auth`` single-flights the keys it does not)."""
        with self._lock:
            return digest in self._verified

    def verify(self, stored_hash: str, key: str) -> bool:
        digest = sha256(key)
        with self._lock:
            if self._verified.get(digest) == stored_hash:
                self._verified.move_to_end(digest)
                return True
        try:
            self._ph.verify(stored_hash, key)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False
        with self._lock:
            self._verified[digest] = stored_hash
            while len(self._verified) > self._size:
                self._verified.popitem(last=False)
        return True


def user_read(u: User) -> UserRead:
    return UserRead(id=u.id, name=u.name, role=Role(u.role), active=u.active, created_at=_aware(u.created_at))


def key_read(k: ApiKey, u: User) -> KeyRead:
    return KeyRead(
        id=k.id,
        user=u.name,
        role=Role(u.role),
        label=k.label,
        prefix=k.prefix,
        created_at=_aware(k.created_at),
        revoked_at=_aware(k.revoked_at) if k.revoked_at else None,
    )


def list_users(session: Session, page: PageRequest) -> Page[UserRead]:
    return map_page(page_in_order(AccountRepository(session).users(), page, lambda u: (u.id,)), user_read)


def create_user(session: Session, data: UserCreate) -> UserRead:
    repo = AccountRepository(session)
    if repo.user_by_name(data.name) is not None:
        raise Conflict(f"an account named {data.name!r} exists", [ItemError(None, "name", "already taken")])
    user = User(name=data.name, role=data.role.value, active=True)
    repo.add(user)
    repo.flush()
    return user_read(user)


def update_user(session: Session, user_id: int, data: UserUpdate, actor: Identity) -> UserRead:
    """Change an account's role or state. Raises NotFound, and Conflict when admins would demote or
    deactivate their own account: another admin must, so the service always keeps an admin who can act."""
    user = AccountRepository(session).user(user_id)
    if user is None:
        raise NotFound(f"account {user_id} does not exist")
    if user.id == actor.user_id:
        demoted = data.role is not None and data.role != Role.admin
        if demoted or data.active is False:
            field = "role" if demoted else "active"
            raise Conflict(
                "admins cannot demote or deactivate their own account (another admin can)",
                [ItemError(None, field, "this is the calling account")],
            )
    if data.role is not None:
        user.role = data.role.value
    if data.active is not None:
        user.active = data.active
    session.flush()
    return user_read(user)


def issue_key(session: Session, hasher: KeyHasher, data: KeyCreate) -> KeyIssued:
    """A new key for the named account, creating the account when ``role`` is given and it does not exist.

    The key is made and hashed before the first statement, so that on a fresh session (an endpoint's) the
    hash's CPU time is spent outside the transaction and its locks."""
    prefix = secrets.token_hex(6)
    key = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    digest = hasher.hash(key)
    repo = AccountRepository(session)
    user = repo.user_by_name(data.name)
    if user is None:
        if data.role is None:
            raise InvalidItems(
                f"no account named {data.name!r}; give its role to create it",
                [ItemError(None, "role", "required for a new account")],
            )
        user = User(name=data.name, role=data.role.value, active=True)
        repo.add(user)
        repo.flush()
    elif data.role is not None and data.role.value != user.role:
        raise Conflict(
            f"account {data.name!r} has role {user.role!r}, not {data.role.value!r}; change it with "
            f"PATCH /users/{user.id}",
            [ItemError(None, "role", f"the account's role is {user.role}")],
        )
    row = ApiKey(user_id=user.id, label=data.label, prefix=prefix, hash=digest)
    repo.add(row)
    repo.flush()
    return KeyIssued(**key_read(row, user).model_dump(), key=key)


def list_keys(session: Session, page: PageRequest) -> Page[KeyRead]:
    keys = page_in_order(AccountRepository(session).all_keys(), page, lambda row: (row[0].id,))
    return map_page(keys, lambda row: key_read(*row))


def revoke_key(session: Session, key_id: int, actor: Identity) -> KeyRead:
    """Revoke a key and end the browser sessions signed in with it. Raises NotFound, and Conflict for the key
    making the request, by Bearer or through the session it opened (revoke it with another key), so that
    admins cannot lock themselves out by mistake."""
    repo = AccountRepository(session)
    key = repo.key(key_id)
    if key is None:
        raise NotFound(f"key {key_id} does not exist")
    if key.id == actor.key_id:
        via = "making this request" if actor.via == "key" else "this browser session was signed in with"
        raise Conflict(
            f"key {key_id} is the key {via}; issue another key and revoke this one with it",
            [ItemError(None, "key_id", "the calling key")],
        )
    if key.revoked_at is None:
        key.revoked_at = _now()
        # session_identity refuses them anyway; deleting them keeps the store to live sessions only.
        repo.delete_sessions_of_key(key.id)
        repo.flush()
    user = repo.user(key.user_id)
    assert user is not None
    return key_read(key, user)


def _identity(user: User, via: str, session_token: str | None = None, key_id: int | None = None) -> Identity:
    return Identity(
        user_id=user.id,
        name=user.name,
        role=Role(user.role),
        via=via,  # type: ignore[arg-type]
        session_token=session_token,
        key_id=key_id,
    )


def authenticate_key(session: Session, hasher: KeyHasher, key: str) -> Identity:
    """The identity of an API key. Raises Unauthorized, with a message that never repeats the key."""
    found = _valid_key(session, hasher, key)
    if found is None:
        raise Unauthorized(INVALID_KEY)
    row, user = found
    return _identity(user, "key", key_id=row.id)


def _valid_key(session: Session, hasher: KeyHasher, key: str) -> tuple[ApiKey, User] | None:
    parts = key.split("_", 2)  # the secret part may contain "_" itself
    if len(parts) != 3 or f"{parts[0]}_" != KEY_PREFIX or len(key) > 200:
        return None
    found = AccountRepository(session).key_by_prefix(parts[1])
    if found is None:
        return None
    row, user = found
    if row.revoked_at is not None or not user.active or not hasher.verify(row.hash, key):
        return None
    return row, user


def open_session(session: Session, key: ApiKey, hours: float) -> str:
    """A new browser session of ``key``'s account, ending when the key is revoked; returns its token (the
    cookie's content before signing)."""
    token = secrets.token_urlsafe(32)
    now = _now()
    repo = AccountRepository(session)
    repo.delete_expired_sessions(now)
    expires = now + timedelta(hours=hours)
    repo.add(WebSession(token_hash=sha256(token), user_id=key.user_id, key_id=key.id, expires_at=expires))
    repo.flush()
    return token


def session_identity(session: Session, token: str) -> Identity | None:
    """The identity of a browser session, None once it expired, its key was revoked (also when the revocation
    raced the sign-in that opened it) or its account was deactivated."""
    found = AccountRepository(session).session_by_hash(sha256(token))
    if found is None:
        return None
    web, key, user = found
    if _aware(web.expires_at) < _now() or key.revoked_at is not None or not user.active:
        return None
    return _identity(user, "session", token, key_id=key.id)


def close_session(session: Session, token: str) -> None:
    AccountRepository(session).delete_session(sha256(token))


def csrf_token(secret: bytes, session_token: str) -> str:
    """The CSRF token of a browser session: an HMAC of its token, so it needs no storage."""
    return hmac.new(secret, b"csrf|" + session_token.encode(), hashlib.sha256).hexdigest()


def login_name(name: str) -> str:
    """An account name as typed at the login form, as it is compared and counted."""
    return name.strip()[:200]


def check_login_limits(session: Session, auth: AuthSettings, name: str, client: str) -> None:
    """The first step of a sign-in (account name + one of its keys), before the key is checked: raises
    TooManyRequests when the name or the client address has too many recent failures. The caller runs the
    sign-ins of one name one at a time (``AuthState.signing_in_as``), so that attempts sent in parallel
    cannot pass the name's limit.

    The key is then checked outside any write transaction (its hash check takes tens of milliseconds), and
    a mismatch recorded by ``record_login_failure``. Sign-ins from one address are not serialised: that
    would make a room of raters signing in together behind one address wait on each other.
    """
    repo = AccountRepository(session)
    now = _now()
    since = now - timedelta(seconds=auth.login_window_s)
    name = login_name(name)
    client = client[:64]
    if (
        repo.failures_since(since, name=name) >= auth.login_max_failures
        or repo.failures_since(since, client=client) >= 4 * auth.login_max_failures
    ):
        oldest = repo.oldest_failure_since(since, name=name, client=client) or now
        wait = max(1, int((_aware(oldest) - since).total_seconds()) + 1)
        raise TooManyRequests(f"too many failed logins; try again in {wait} s", retry_after=wait)


def open_login_session(session: Session, key_id: int, hours: float) -> str:
    """The last step of a sign-in whose key matched: a browser session for the key's account, unless the key
    was revoked or the account deactivated since it was checked (Unauthorized)."""
    row = AccountRepository(session).key(key_id)
    user = session.get(User, row.user_id) if row is not None else None
    if row is None or row.revoked_at is not None or user is None or not user.active:
        raise Unauthorized("unknown account name or key")
    return open_session(session, row, hours)


def record_login_failure(session: Session, auth: AuthSettings, name: str, client: str) -> None:
    now = _now()
    repo = AccountRepository(session)
    repo.prune_failures(now - timedelta(seconds=auth.login_window_s))
    repo.add(LoginFailure(name=login_name(name), client=client[:64], at=now))
    repo.flush()


def rater_for(session: Session, user_id: int) -> Rater:
    """The rater that an account's ratings are recorded under, linked on first use (same name)."""
    repo = AccountRepository(session)
    rater = repo.rater_of_user(user_id)
    if rater is not None:
        return rater
    user = repo.user(user_id)
    assert user is not None
    rater = repo.rater_by_name(user.name)
    if rater is None:
        rater = Rater(name=user.name)
        repo.add(rater)
        repo.flush()
    elif repo.account_of_rater(rater.id) is not None:
        raise Conflict(f"rater {user.name!r} belongs to another account")
    repo.add(RaterAccount(rater_id=rater.id, user_id=user_id))
    repo.flush()
    return rater
