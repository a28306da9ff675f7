"""The base of every repository: all SQL lives in repositories, services never commit."""

from __future__ import annotations

from sqlalchemy.orm import Session


class Repository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, obj: object) -> None:
        self.session.add(obj)

    def flush(self) -> None:
        self.session.flush()
