"""All SQL about accounts, keys, sessions and failed logins."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select

from services.models import ApiKey, LoginFailure, Rater, RaterAccount, User, WebSession
from services.repository import Repository


class AccountRepository(Repository):
    def user(self, user_id: int) -> User | None:
        return self.session.get(User, user_id)

    def user_by_name(self, name: str) -> User | None:
        return self.session.scalar(select(User).where(User.name == name))

    def users(self) -> Sequence[User]:
        return self.session.scalars(select(User).order_by(User.id)).all()

    def users_by_name(self, names: Sequence[str]) -> dict[str, User]:
        return {u.name: u for u in self.session.scalars(select(User).where(User.name.in_(list(names))))}

    def key_by_prefix(self, prefix: str) -> tuple[ApiKey, User] | None:
        row = self.session.execute(
            select(ApiKey, User).join(User, User.id == ApiKey.user_id).where(ApiKey.prefix == prefix)
        ).first()
        return (row[0], row[1]) if row else None

    def key(self, key_id: int) -> ApiKey | None:
        return self.session.get(ApiKey, key_id)

    def all_keys(self) -> Sequence[tuple[ApiKey, User]]:
        rows = self.session.execute(
            select(ApiKey, User).join(User, User.id == ApiKey.user_id).order_by(ApiKey.id)
        )
        return [(k, u) for k, u in rows]

    def session_by_hash(self, token_hash: str) -> tuple[WebSession, ApiKey, User] | None:
        row = self.session.execute(
            select(WebSession, ApiKey, User)
            .join(ApiKey, ApiKey.id == WebSession.key_id)
            .join(User, User.id == WebSession.user_id)
            .where(WebSession.token_hash == token_hash)
        ).first()
        return (row[0], row[1], row[2]) if row else None

    def delete_sessions_of_key(self, key_id: int) -> None:
        self.session.execute(delete(WebSession).where(WebSession.key_id == key_id))

    def delete_session(self, token_hash: str) -> None:
        self.session.execute(delete(WebSession).where(WebSession.token_hash == token_hash))

    def delete_expired_sessions(self, now: datetime) -> None:
        self.session.execute(delete(WebSession).where(WebSession.expires_at < now))

    def failures_since(self, since: datetime, *, name: str | None = None, client: str | None = None) -> int:
        stmt = select(func.count()).select_from(LoginFailure).where(LoginFailure.at >= since)
        if name is not None:
            stmt = stmt.where(LoginFailure.name == name)
        if client is not None:
            stmt = stmt.where(LoginFailure.client == client)
        return int(self.session.scalar(stmt) or 0)

    def oldest_failure_since(self, since: datetime, *, name: str, client: str) -> datetime | None:
        return self.session.scalar(
            select(func.min(LoginFailure.at)).where(
                LoginFailure.at >= since, (LoginFailure.name == name) | (LoginFailure.client == client)
            )
        )

    def prune_failures(self, before: datetime) -> None:
        self.session.execute(delete(LoginFailure).where(LoginFailure.at < before))

    def rater_of_user(self, user_id: int) -> Rater | None:
        return self.session.scalar(
            select(Rater)
            .join(RaterAccount, RaterAccount.rater_id == Rater.id)
            .where(RaterAccount.user_id == user_id)
        )

    def rater_by_name(self, name: str) -> Rater | None:
        return self.session.scalar(select(Rater).where(Rater.name == name))

    def account_of_rater(self, rater_id: int) -> int | None:
        return self.session.scalar(select(RaterAccount.user_id).where(RaterAccount.rater_id == rater_id))
