"""Failure causes come from the final attempt's own error, not from a code in earlier attempts' text."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pydantic
import pytest
from instructor.core import InstructorRetryException
from instructor.v2.core.errors import FailedAttempt

from services.metrics.judges.base import classify, final_attempt


def gateway_error(code: str) -> openai.BadRequestError:
    """What the openai SDK raises when the gateway answers its failure 400."""
    body = {"message": f"{code}: upstream said no", "type": "judge_error", "code": code}
    response = httpx.Response(400, request=httpx.Request("POST", "http://127.0.0.1/v1/chat/completions"))
    return openai.BadRequestError(f"Error code: 400 - {{'error': {body}}}", response=response, body=body)


def validation_error() -> pydantic.ValidationError:
    class Translation(pydantic.BaseModel):
        statements: list[str]

    try:
        Translation.model_validate({"statements": "not a list"})
    except pydantic.ValidationError as exc:
        return exc
    raise AssertionError("unreachable")


def retried(final: BaseException, earlier: list[BaseException]) -> InstructorRetryException:
    """instructor's wrapper: its text lists every failed attempt; it is raised from the last error."""
    attempts = [FailedAttempt(i + 1, e, None) for i, e in enumerate(earlier)]
    wrapper = InstructorRetryException(
        str(final), n_attempts=len(earlier) + 1, total_usage=0, failed_attempts=attempts
    )
    wrapper.__cause__ = final
    return wrapper


def test_a_validation_error_after_a_gateway_failure_is_malformed_output() -> None:
    # the first attempt's text carries the gateway's "code": "http_500"; the last attempt failed validation
    exc = retried(validation_error(), [gateway_error("http_500")])
    assert "http_500" in str(exc)
    assert final_attempt(exc) is exc.__cause__
    assert classify(exc).startswith("malformed_judge_output: ValidationError")


def test_a_gateway_failure_after_validation_errors_is_the_gateway_cause() -> None:
    exc = retried(gateway_error("http_503"), [validation_error(), validation_error()])
    assert classify(exc) == "http_503: upstream said no"


def test_the_last_failed_attempt_when_the_wrapper_has_no_cause() -> None:
    exc = InstructorRetryException(
        "gave up",
        n_attempts=2,
        total_usage=0,
        failed_attempts=[
            FailedAttempt(1, gateway_error("timeout"), None),
            FailedAttempt(2, ValueError("x"), None),
        ],
    )
    assert classify(exc).startswith("malformed_judge_output: ValueError")


@pytest.mark.parametrize(
    ("exc", "cause"),
    [
        (gateway_error("rate_limited"), "rate_limited"),
        (TimeoutError(), "timeout"),
        (ValueError("no JSON here"), "malformed_judge_output"),
        (RuntimeError("boom"), "exception"),
    ],
)
def test_single_errors(exc: Any, cause: str) -> None:
    assert classify(exc).split(":", 1)[0] == cause


def test_a_gateway_error_wrapped_by_a_library_keeps_its_cause() -> None:
    # Opik and litellm re-raise the SDK error under their own class: the cause is found down the chain
    inner = gateway_error("http_500")
    try:
        try:
            raise inner
        except openai.BadRequestError as e:
            raise RuntimeError("litellm.BadRequestError: OpenAIException - upstream said no") from e
    except RuntimeError as outer:
        assert classify(outer) == "http_500: upstream said no"
