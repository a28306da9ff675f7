"""Accounts and API keys (admins), and who the caller is (everyone)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response

from app.auth import auth_state, require
from app.deps import CommittingRoute, KeyId, SessionDep, UserId
from app.errors import responses
from app.pagination import PageDep, paged, paged_extra, paged_responses
from services.accounts import service
from services.accounts.schemas import (
    ADMINS,
    EVERYONE,
    Identity,
    KeyCreate,
    KeyIssued,
    KeyRead,
    Me,
    UserCreate,
    UserRead,
    UserUpdate,
)

router = APIRouter(tags=["accounts"], route_class=CommittingRoute)
Admin = Annotated[Identity, Depends(require(ADMINS))]
Anyone = Annotated[Identity, Depends(require(EVERYONE))]


@router.get("/me", response_model=Me, responses=responses(401))
def me(request: Request, identity: Anyone) -> Me:
    """The caller's account and role; with a browser session, the CSRF token for unsafe API calls."""
    return Me(
        name=identity.name,
        role=identity.role,
        via=identity.via,
        csrf_token=auth_state(request).csrf(identity),
    )


@router.get(
    "/users",
    response_model=list[UserRead],
    responses={**responses(401, 403, 422), **paged_responses()},
    openapi_extra=paged_extra(),
)
def list_users(
    session: SessionDep, _: Admin, page: PageDep, request: Request, response: Response
) -> list[UserRead]:
    """The accounts in id order, a page at a time."""
    return paged(request, response, "users", service.list_users(session, page.request("users")))


@router.post("/users", status_code=201, response_model=UserRead, responses=responses(401, 403, 409, 422))
def create_user(body: UserCreate, session: SessionDep, _: Admin) -> UserRead:
    """An account with a role (`admin`, `editor`, `rater`, `viewer`); give it a key with POST /keys."""
    return service.create_user(session, body)


@router.patch("/users/{user_id}", response_model=UserRead, responses=responses(401, 403, 404, 409, 422))
def update_user(user_id: UserId, body: UserUpdate, session: SessionDep, admin: Admin) -> UserRead:
    """Change an account's role, or deactivate it (its keys and sessions stop working at once). Admins
    cannot demote or deactivate their own account (409): another admin does."""
    return service.update_user(session, user_id, body, admin)


@router.post("/keys", status_code=201, response_model=KeyIssued, responses=responses(401, 403, 409, 422))
def create_key(body: KeyCreate, request: Request, session: SessionDep, _: Admin) -> KeyIssued:
    """Issue an API key (creating the account when `role` is given). The key is in this answer only: the
    service keeps an Argon2id hash of it. Use it as `Authorization: Bearer <key>` or at the login form."""
    return service.issue_key(session, auth_state(request).hasher, body)


@router.get(
    "/keys",
    response_model=list[KeyRead],
    responses={**responses(401, 403, 422), **paged_responses()},
    openapi_extra=paged_extra(),
)
def list_keys(
    session: SessionDep, _: Admin, page: PageDep, request: Request, response: Response
) -> list[KeyRead]:
    """Every key's public prefix, account and state (never the key), in id order a page at a time."""
    return paged(request, response, "keys", service.list_keys(session, page.request("keys")))


@router.delete("/keys/{key_id}", response_model=KeyRead, responses=responses(401, 403, 404, 409))
def revoke_key(key_id: KeyId, session: SessionDep, admin: Admin) -> KeyRead:
    """Revoke a key; requests with it fail from now on. The key making the request cannot revoke itself
    (409): issue another key and revoke this one with it."""
    return service.revoke_key(session, key_id, admin)
