"""What every LLM-judge adapter shares: the judge session from the scoring context, the judge fingerprint,
per-sample scheduling and timeouts, and the classification of failures into causes ("timeout", "http_500",
"malformed_judge_output", ...)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Sequence
from typing import Any

from services.judge.gateway import repeat_scope
from services.metrics.base import BaseAdapter, Sample, SampleScore, package_version
from services.metrics.context import SCOPE, JudgeSession, ScoringContext

OUTPUT_CHECKS = 2
_CODE = re.compile(r"""['"]code['"]:\s*['"]([a-z_0-9]+)['"]""")


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


class PrepareFailed(Exception):
    """What ``prepare`` could not do (a model to load, prompts to adapt): every sample's error, as given
    ("cause: message")."""


class JudgeAdapter(BaseAdapter):
    """Subclasses implement ``score_one`` (and ``prepare`` for what a call's samples share), or override
    ``compute`` for batch libraries. Nothing is kept on the instance between calls."""

    library = "judge"
    #: Whether the library's prompts run in the dataset's language (else they stay English).
    translates_prompts = False

    # ------------------------------------------------------------------------------------------ identity
    def ledger_metric(self) -> str:
        """The name this metric's judge calls are accounted under at the gateway."""
        return self.spec.name

    def translates(self, ctx: ScoringContext) -> bool:
        return self.translates_prompts

    def prompt_language(self, ctx: ScoringContext) -> str:
        lang = ctx.judge_language.split("-")[0].lower()
        return lang if self.translates(ctx) else "en"

    def config(self, ctx: ScoringContext) -> dict[str, Any]:
        judge = ctx.settings.judge
        return {
            **super().config(ctx),
            "judge": {
                "model": judge.model,
                "endpoint": judge.host,
                "language": ctx.judge_language,
                "prompts": self.prompt_language(ctx),
                "library_version": package_version(self.spec.package),
                # Version of the adapters' checks on the judge's answers (a failure is never a number):
                # scores stored under older checks are computed again.
                "output_checks": OUTPUT_CHECKS,
            },
        }

    def scope(self, sample: Sample) -> str:
        return repeat_scope(f"o{sample.output_id}", sample.repeat)

    def memo_basis(self, sample: Sample, ctx: ScoringContext) -> str | None:
        """A digest of the library-side state (besides the judge's cached answers) a score of ``sample``
        would be computed from now: part of its score-memo key (services/metrics/memo.py). "" when there
        is none; None when it cannot be vouched for (the memo is not used)."""
        return ""

    @staticmethod
    def model_name(ctx: ScoringContext) -> str:
        return ctx.settings.judge.model or "judge"

    def sample_timeout_s(self, ctx: ScoringContext) -> float:
        # Generous: a metric makes several calls, each with the gateway's own retries (and the delays a judge
        # may ask for, each within the timeout).
        judge = ctx.settings.judge
        return judge.timeout_s * (judge.retries + 1) * 2 * 6

    @staticmethod
    def session(ctx: ScoringContext) -> JudgeSession:
        if ctx.judge is None:
            raise RuntimeError(
                "no judge session in the scoring context (score through services.metrics.batch)"
            )
        return ctx.judge

    def base_url(self, ctx: ScoringContext, sample: Sample | None = None) -> str:
        scope = self.scope(sample) if sample is not None else "-"
        return self.session(ctx).base_url(self.ledger_metric(), scope)

    # ------------------------------------------------------------------------------------------- scoring
    async def prepare(self, samples: Sequence[Sample], ctx: ScoringContext) -> Any:
        """What every sample of this call shares (clients, metric objects), built once; None by default."""
        return None

    async def release(self, shared: Any) -> None:
        """Close what ``prepare`` opened."""

    def admission(self, sample: Sample, ctx: ScoringContext) -> contextlib.AbstractAsyncContextManager[Any]:
        """What a sample waits for before it takes a slot and is scored (nothing by default)."""
        return contextlib.nullcontext()

    async def score_one(self, sample: Sample, ctx: ScoringContext, shared: Any) -> SampleScore:
        raise NotImplementedError

    async def compute(self, samples: Sequence[Sample], ctx: ScoringContext) -> list[SampleScore]:
        self.session(ctx)
        try:
            shared = await self.prepare(samples, ctx)
        except PrepareFailed as exc:
            return [SampleScore(error=str(exc)) for _ in samples]
        except Exception as exc:
            err = classify(exc)
            return [SampleScore(error=err) for _ in samples]
        timeout = self.sample_timeout_s(ctx)

        async def one(sample: Sample) -> SampleScore:
            # Waiting for admission (another metric computing what this one will read) holds no slot.
            async with (
                self.admission(sample, ctx),
                ctx.slots if ctx.slots is not None else contextlib.nullcontext(),
            ):
                # Every request made for this sample (in this task and the tasks it starts) is accounted to
                # its scope.
                SCOPE.set(self.scope(sample))
                t0 = time.perf_counter()
                try:
                    res = await asyncio.wait_for(self.score_one(sample, ctx, shared), timeout)
                except Exception as exc:
                    res = SampleScore(error=classify(exc))
                res.latency_ms = (time.perf_counter() - t0) * 1000
                return res

        try:
            return list(await asyncio.gather(*(one(s) for s in samples)))
        finally:
            await self.release(shared)
