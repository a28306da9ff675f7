"""services.accounts: accounts, keys (issue, verify, revoke), browser sessions, login limits, queries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from services.accounts import service as accounts
from services.accounts.repository import AccountRepository
from services.accounts.schemas import Identity, KeyCreate, Role, UserCreate, UserUpdate
from services.config import AuthSettings
from services.errors import Conflict, InvalidItems, NotFound, TooManyRequests, Unauthorized
from services.models import ApiKey, LoginFailure, Rater, RaterAccount, User, WebSession
from services.pagination import MAX_LIMIT, PageRequest

AUTH = AuthSettings(hash_time_cost=1, hash_memory_kib=1024, hash_parallelism=1, login_max_failures=2)


@pytest.fixture
def hasher() -> accounts.KeyHasher:
    return accounts.KeyHasher(AUTH)


def _admin(db: Session, hasher: accounts.KeyHasher) -> tuple[Identity, str]:
    issued = accounts.issue_key(db, hasher, KeyCreate(name="root", role=Role.admin))
    return accounts.authenticate_key(db, hasher, issued.key), issued.key


def test_issue_key_creates_the_account_and_stores_only_a_hash(
    db: Session, hasher: accounts.KeyHasher
) -> None:
    issued = accounts.issue_key(db, hasher, KeyCreate(name="ann", role=Role.rater, label="laptop"))
    assert issued.key.startswith(f"rgm_{issued.prefix}_")
    row = db.scalars(select(ApiKey)).one()
    assert (row.prefix, row.label, row.revoked_at) == (issued.prefix, "laptop", None)
    assert issued.key not in row.hash and row.hash.startswith("$argon2id$")
    user = db.scalars(select(User)).one()
    assert (user.name, user.role, user.active) == ("ann", "rater", True)
    # A second key for the same account; the role must match when given.
    accounts.issue_key(db, hasher, KeyCreate(name="ann"))
    assert db.scalar(select(func.count()).select_from(ApiKey)) == 2
    with pytest.raises(Conflict) as exc:
        accounts.issue_key(db, hasher, KeyCreate(name="ann", role=Role.admin))
    assert [e.field for e in exc.value.items] == ["role"]
    with pytest.raises(InvalidItems) as inv:
        accounts.issue_key(db, hasher, KeyCreate(name="newcomer"))
    assert [(e.field, e.reason) for e in inv.value.items] == [("role", "required for a new account")]
    assert [u.name for u in accounts.list_users(db, PageRequest(MAX_LIMIT)).items] == ["ann"]
    assert [k.user for k in accounts.list_keys(db, PageRequest(MAX_LIMIT)).items] == ["ann", "ann"]


def test_authenticate_key_refuses_bad_revoked_and_inactive(db: Session, hasher: accounts.KeyHasher) -> None:
    actor, admin_key = _admin(db, hasher)
    assert (actor.name, actor.role, actor.via) == ("root", Role.admin, "key")
    issued = accounts.issue_key(db, hasher, KeyCreate(name="bob", role=Role.editor))
    assert accounts.authenticate_key(db, hasher, issued.key).name == "bob"
    for bad in ("nonsense", issued.key[:-1] + "x", "rgm_ffffffffffff_secret", admin_key + "x" * 200):
        with pytest.raises(Unauthorized):
            accounts.authenticate_key(db, hasher, bad)
    accounts.revoke_key(db, issued.id, actor)
    with pytest.raises(Unauthorized, match="not valid"):
        accounts.authenticate_key(db, hasher, issued.key)
    other = accounts.issue_key(db, hasher, KeyCreate(name="cy", role=Role.viewer))
    cy = db.scalars(select(User).where(User.name == "cy")).one()
    accounts.update_user(db, cy.id, UserUpdate(active=False), actor)
    with pytest.raises(Unauthorized):
        accounts.authenticate_key(db, hasher, other.key)


def test_admins_cannot_lock_themselves_out(db: Session, hasher: accounts.KeyHasher) -> None:
    actor, _ = _admin(db, hasher)
    assert actor.user_id is not None and actor.key_id is not None
    with pytest.raises(Conflict) as exc:
        accounts.update_user(db, actor.user_id, UserUpdate(role=Role.viewer), actor)
    assert [e.field for e in exc.value.items] == ["role"]
    with pytest.raises(Conflict) as exc:
        accounts.update_user(db, actor.user_id, UserUpdate(active=False), actor)
    assert [e.field for e in exc.value.items] == ["active"]
    with pytest.raises(Conflict) as exc:
        accounts.revoke_key(db, actor.key_id, actor)
    assert [e.field for e in exc.value.items] == ["key_id"]
    assert db.scalar(select(ApiKey.revoked_at)) is None
    with pytest.raises(NotFound):
        accounts.update_user(db, 999, UserUpdate(active=False), actor)
    with pytest.raises(NotFound):
        accounts.revoke_key(db, 999, actor)


def test_create_and_update_user(db: Session, hasher: accounts.KeyHasher) -> None:
    actor, _ = _admin(db, hasher)
    made = accounts.create_user(db, UserCreate(name="dee", role=Role.viewer))
    with pytest.raises(Conflict) as exc:
        accounts.create_user(db, UserCreate(name="dee", role=Role.rater))
    assert [e.field for e in exc.value.items] == ["name"]
    updated = accounts.update_user(db, made.id, UserUpdate(role=Role.editor), actor)
    assert (updated.role, updated.active) == (Role.editor, True)
    assert db.get(User, made.id).role == "editor"  # type: ignore[union-attr]


def test_browser_sessions_end_with_their_key(db: Session, hasher: accounts.KeyHasher) -> None:
    actor, _ = _admin(db, hasher)
    issued = accounts.issue_key(db, hasher, KeyCreate(name="ann", role=Role.rater))
    token = accounts.open_login_session(db, issued.id, hours=1)
    web = db.scalars(select(WebSession)).one()
    assert web.token_hash == accounts.sha256(token) and token not in web.token_hash
    identity = accounts.session_identity(db, token)
    assert identity is not None and (identity.name, identity.via, identity.key_id) == (
        "ann",
        "session",
        issued.id,
    )
    assert accounts.session_identity(db, "other") is None
    accounts.revoke_key(db, issued.id, actor)
    assert accounts.session_identity(db, token) is None
    assert db.scalar(select(func.count()).select_from(WebSession)) == 0
    with pytest.raises(Unauthorized):
        accounts.open_login_session(db, issued.id, hours=1)
    # An expired session is refused, and removed when the next one opens.
    fresh = accounts.issue_key(db, hasher, KeyCreate(name="ann"))
    old = accounts.open_login_session(db, fresh.id, hours=-1)
    assert accounts.session_identity(db, old) is None
    new = accounts.open_login_session(db, fresh.id, hours=1)
    assert [w.token_hash for w in db.scalars(select(WebSession))] == [accounts.sha256(new)]
    accounts.close_session(db, new)
    assert db.scalar(select(func.count()).select_from(WebSession)) == 0


def test_login_limits_count_failures_per_name(db: Session) -> None:
    accounts.check_login_limits(db, AUTH, "ann", "10.0.0.1")
    accounts.record_login_failure(db, AUTH, " ann ", "10.0.0.1")
    accounts.check_login_limits(db, AUTH, "ann", "10.0.0.1")
    # The name's limit counts its failures from any address.
    accounts.record_login_failure(db, AUTH, "ann", "10.0.0.2")
    with pytest.raises(TooManyRequests) as exc:
        accounts.check_login_limits(db, AUTH, "ann", "10.0.0.9")
    assert 1 <= exc.value.retry_after <= AUTH.login_window_s + 1
    accounts.check_login_limits(db, AUTH, "bob", "10.0.0.1")  # another name from the same address
    assert [f.name for f in db.scalars(select(LoginFailure))] == ["ann", "ann"]
    # Failures older than the window are pruned by the next one recorded.
    db.execute(update(LoginFailure).values(at=datetime.now(UTC) - timedelta(hours=1)))
    accounts.record_login_failure(db, AUTH, "cy", "10.0.0.1")
    assert [f.name for f in db.scalars(select(LoginFailure))] == ["cy"]


def test_rater_for_links_an_account_once(db: Session) -> None:
    ann = accounts.create_user(db, UserCreate(name="ann", role=Role.rater))
    rater = accounts.rater_for(db, ann.id)
    assert rater.name == "ann" and accounts.rater_for(db, ann.id).id == rater.id
    link = db.scalars(select(RaterAccount)).one()
    assert (link.rater_id, link.user_id) == (rater.id, ann.id)
    # A rater registered by name before the account is linked, not duplicated.
    db.add(Rater(name="bob"))
    bob = accounts.create_user(db, UserCreate(name="bob", role=Role.rater))
    assert accounts.rater_for(db, bob.id).name == "bob"
    assert db.scalar(select(func.count()).select_from(Rater)) == 2
    repo = AccountRepository(db)
    assert repo.account_of_rater(rater.id) == ann.id
    assert repo.rater_of_user(bob.id) is not None and repo.rater_by_name("zed") is None
    assert sorted(repo.users_by_name(["ann", "zed"])) == ["ann"]


def test_key_hasher_remembers_verified_keys_within_its_bound() -> None:
    hasher = accounts.KeyHasher(AUTH, cache_size=1)
    a, b = hasher.hash("key-a"), hasher.hash("key-b")
    assert hasher.verify(a, "key-a") and not hasher.verify(a, "key-b")
    assert hasher.remembers(accounts.sha256("key-a"))
    assert hasher.verify(b, "key-b")
    assert not hasher.remembers(accounts.sha256("key-a")) and hasher.remembers(accounts.sha256("key-b"))
    assert not hasher.verify("not a hash", "key-a")
