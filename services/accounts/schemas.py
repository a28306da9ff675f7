from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Role(StrEnum):
    admin = "admin"  # everything, and manages accounts and keys
    editor = "editor"  # imports data, runs jobs, creates rating tasks, reads reports
    rater = "rater"  # their own rating queue and their own ratings only
    viewer = "viewer"  # reads data and reports


READERS = frozenset({Role.admin, Role.editor, Role.viewer})
WRITERS = frozenset({Role.admin, Role.editor})
ADMINS = frozenset({Role.admin})
# Roles that can be given a rating queue.
RATERS = frozenset({Role.admin, Role.editor, Role.rater})
EVERYONE = frozenset(Role)

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,199}$"


@dataclass(frozen=True)
class Identity:
    """Who is calling: from an API key, a browser session, or nobody in the open demo (``via="open"``)."""

    user_id: int | None
    name: str
    role: Role
    via: Literal["key", "session", "open"]
    # The session token of a browser session (CSRF tokens are derived from it); never logged or returned.
    session_token: str | None = None
    # The API key making the request, or that its browser session was signed in with (an admin may not
    # revoke the key they are using).
    key_id: int | None = None

    def __repr__(self) -> str:  # keep the session token out of any log line
        return f"Identity(user_id={self.user_id}, name={self.name!r}, role={self.role.value}, via={self.via})"


class UserCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, description="letters, digits and . _ @ -")
    role: Role


class UserUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role | None = None
    active: bool | None = Field(default=None, strict=True)


class UserRead(BaseModel):
    id: int
    name: str
    role: Role
    active: bool
    created_at: datetime


class KeyCreate(BaseModel):
    """Issue a key to an account, creating the account with ``role`` when it does not exist yet."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, description="the account's name")
    role: Role | None = Field(default=None, description="required when the account does not exist yet")
    label: str | None = Field(default=None, max_length=200, description="what the key is for")


class KeyRead(BaseModel):
    id: int
    user: str
    role: Role
    label: str | None
    prefix: str = Field(description="the public start of the key, to recognise it")
    created_at: datetime
    revoked_at: datetime | None


class KeyIssued(KeyRead):
    key: str = Field(description="the key itself: shown this once, stored only as a hash")


class Me(BaseModel):
    name: str
    role: Role
    via: Literal["key", "session", "open"]
    csrf_token: str | None = Field(default=None, description="send as X-CSRF-Token with a browser session")
