"""SQL for the judge-call cache."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from services.models import JudgeCall
from services.repository import Repository


class JudgeCallRepository(Repository):
    def get(self, key: str) -> JudgeCall | None:
        return self.session.scalar(select(JudgeCall).where(JudgeCall.key == key))

    def put(
        self,
        key: str,
        model: str,
        request: dict[str, Any],
        response: dict[str, Any],
        prompt_tokens: int | None,
        completion_tokens: int | None,
        latency_ms: float,
    ) -> None:
        existing = self.get(key)
        if existing is not None:  # a refreshed answer supersedes the cached one
            existing.response, existing.latency_ms = response, latency_ms
            existing.prompt_tokens, existing.completion_tokens = prompt_tokens, completion_tokens
        else:
            self.session.add(
                JudgeCall(
                    key=key,
                    model=model,
                    request=request,
                    response=response,
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                    latency_ms=latency_ms,
                )
            )
        try:
            self.session.commit()
        except IntegrityError:  # the same call answered concurrently: the first stored answer stays
            self.session.rollback()
