"""What every LLM-judge adapter shares: the gateway, the judge fingerprint, per-sample concurrency, timeouts
and the classification of failures into causes ("timeout", "http_500", "malformed_judge_output", ...)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Sequence
from typing import Any

from services.db import shared_session_factory
from services.judge.gateway import JudgeGateway, shared_gateway
from services.metrics.base import BaseAdapter, Sample, SampleScore, package_version
from services.offline import apply_offline_env

OUTPUT_CHECKS = 2
_CODE = re.compile(r"""['"]code['"]:\s*['"]([a-z_0-9]+)['"]""")


_SSL_CONTEXT: Any = None


def gateway_http_client() -> Any:
    """An httpx.AsyncClient for the loopback gateway, without keep-alive (a pooled connection must not outlive
    the scoring's event loop). httpx builds an SSL context per client by default, loading the CA bundle each
    time (~24 ms, measured by bench/judges.py as most of the Ragas and Opik adapters' CPU); the gateway is
    plain HTTP, so one shared context serves every client (0.07 ms per client)."""
    import ssl

    import httpx

    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        _SSL_CONTEXT = ssl.create_default_context()
    return httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0), verify=_SSL_CONTEXT)


def final_attempt(exc: BaseException) -> BaseException:
    """The error of the last attempt behind ``exc``: libraries that retry (instructor, tenacity) raise a
    wrapper whose text lists every attempt; the cause of the failure is the one that ended the retries."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        attempts = getattr(exc, "failed_attempts", None)
        if hasattr(exc, "n_attempts"):  # instructor's InstructorRetryException: raised from the last error
            if exc.__cause__ is not None:
                exc = exc.__cause__
                continue
            if attempts:
                exc = attempts[-1].exception
                continue
        last = getattr(exc, "last_attempt", None)  # tenacity's RetryError
        if last is not None and hasattr(last, "exception"):
            inner = last.exception()
            if isinstance(inner, BaseException):
                exc = inner
                continue
        break
    return exc


def gateway_cause(exc: BaseException) -> tuple[str, str] | None:
    """(code, message) when ``exc`` is, or was raised from, the gateway's own failure answer (a 400 whose
    body says ``type: judge_error`` and the cause code), looked up in that exception's chain only."""
    chained: BaseException | None = exc
    seen: set[int] = set()
    while chained is not None and id(chained) not in seen:
        seen.add(id(chained))
        body = getattr(chained, "body", None)
        if isinstance(body, dict):
            error = body.get("error")
            inner: dict[str, Any] = error if isinstance(error, dict) else body
            if inner.get("type") == "judge_error" and inner.get("code"):
                code, message = str(inner["code"]), str(inner.get("message") or "")
                return code, message.removeprefix(f"{code}: ")
        chained = chained.__cause__ or chained.__context__
    text = str(exc)
    match = _CODE.search(text)
    if "judge_error" in text and match:  # an SDK that kept only the text of the gateway's answer
        return match.group(1), text
    return None


def classify(exc: BaseException) -> str:
    """An exception raised while a library scored one sample, as "cause: message": the cause is that of
    the final attempt's own error, never a code found in the text of earlier attempts."""
    final = final_attempt(exc)
    found = gateway_cause(final)
    if found is not None:
        return f"{found[0]}: {found[1][:300]}"
    chained: BaseException | None = final
    while chained is not None:
        if isinstance(chained, asyncio.TimeoutError | TimeoutError) or "Timeout" in type(chained).__name__:
            return f"timeout: {str(chained)[:300] or 'the metric did not finish in time'}"
        chained = chained.__cause__ or chained.__context__
    text = f"{type(final).__name__}: {final}"
    lowered = text.lower()
    if isinstance(final, json.JSONDecodeError | ValueError) or any(
        w in lowered
        for w in ("validationerror", "json", "parse", "instructorretryexception", "output_parser")
    ):
        return f"malformed_judge_output: {text[:300]}"
    return f"exception: {text[:300]}"


class JudgeAdapter(BaseAdapter):
    """Subclasses implement ``score_one`` (or override ``compute`` for batch libraries)."""

    library = "judge"
    #: Whether the library's prompts are run in the dataset's language (else they stay English).
    translates_prompts = False
    job_id = "adhoc"

    def bind_job(self, job_id: int, refresh_judge_cache: bool = False) -> None:
        self.job_id = str(job_id)
        if refresh_judge_cache:
            self.gateway.refresh_jobs.add(self.job_id)

    def judge_usage(self) -> dict[str, Any] | None:
        return self.gateway.usage_for(self.job_id, self.spec.name).as_dict()

    @property
    def judge_language(self) -> str:
        return self.settings.judge.language or self.language

    @property
    def prompt_language(self) -> str:
        lang = self.judge_language.split("-")[0]
        return lang if self.translates_prompts else "en"

    def config(self) -> dict[str, Any]:
        judge = self.settings.judge
        return {
            **super().config(),
            "judge": {
                "model": judge.model,
                "endpoint": judge.host,
                "language": self.judge_language,
                "prompts": self.prompt_language,
                "library_version": package_version(self.spec.package),
                # Version of the adapters' checks on the judge's answers (a failure is never a number):
                # scores stored under older checks are computed again.
                "output_checks": OUTPUT_CHECKS,
            },
        }

    @property
    def gateway(self) -> JudgeGateway:
        apply_offline_env()
        return shared_gateway(self.settings.judge, shared_session_factory(self.settings.database_url))

    def scope(self, sample: Sample) -> str:
        return f"o{sample.output_id}"

    def base_url(self, sample: Sample | None = None) -> str:
        return self.gateway.base_url(self.job_id, self.spec.name, self.scope(sample) if sample else "-")

    @property
    def model_name(self) -> str:
        return self.settings.judge.model or "judge"

    @property
    def sample_timeout_s(self) -> float:
        # Generous: a metric makes several calls, each with the gateway's own retries.
        judge = self.settings.judge
        return judge.timeout_s * (judge.retries + 1) * 6

    async def score_one(self, sample: Sample) -> SampleScore:
        raise NotImplementedError

    async def compute(self, samples: Sequence[Sample]) -> list[SampleScore]:
        limit = asyncio.Semaphore(max(1, self.settings.judge.max_concurrency))
        gateway = self.gateway
        gateway.reset_occurrences(self.job_id, self.spec.name)

        async def one(sample: Sample) -> SampleScore:
            async with limit:
                t0 = time.perf_counter()
                try:
                    res = await asyncio.wait_for(self.score_one(sample), self.sample_timeout_s)
                except Exception as exc:
                    res = SampleScore(error=classify(exc))
                usage = gateway.usage_for(self.job_id, self.spec.name, self.scope(sample))
                res.tokens = usage.prompt_tokens + usage.completion_tokens
                res.latency_ms = (time.perf_counter() - t0) * 1000
                res.details.setdefault("judge_calls", usage.calls)
                res.details.setdefault("cache_hits", usage.cache_hits)
                return res

        return list(await asyncio.gather(*(one(s) for s in samples)))
