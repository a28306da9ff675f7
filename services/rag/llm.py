"""Calls to an OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, LM Studio, TGI).

The openai SDK retries 408/409/429/5xx and timeouts with exponential back-off (``retries`` times); what
still fails is raised as LLMError whose text starts with a cause ("timeout", "rate_limited", "http_500",
"connection", "malformed_response") so that jobs can count failures by cause.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from services.config import LLMEndpoint


class LLMError(Exception):
    def __init__(self, cause: str, message: str) -> None:
        super().__init__(f"{cause}: {message}")
        self.cause = cause


@dataclass(frozen=True)
class ChatResult:
    text: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float


_clients: dict[tuple[str, str, float, int], Any] = {}


def _client(endpoint: LLMEndpoint) -> Any:
    import openai

    key = (endpoint.base_url or "", endpoint.api_key_env, endpoint.timeout_s, endpoint.retries)
    if key not in _clients:
        _clients[key] = openai.OpenAI(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key(),
            timeout=endpoint.timeout_s,
            max_retries=endpoint.retries,
        )
    return _clients[key]


def chat(endpoint: LLMEndpoint, messages: list[dict[str, str]]) -> ChatResult:
    """One chat completion. Raises LLMError after the SDK's retries are exhausted."""
    import openai

    if not endpoint.configured:
        raise LLMError("not_configured", "no LLM endpoint configured")
    t0 = time.perf_counter()
    try:
        resp = _client(endpoint).chat.completions.create(
            model=endpoint.model, messages=messages, temperature=endpoint.temperature
        )
    except openai.APITimeoutError as exc:
        raise LLMError(
            "timeout", f"no answer within {endpoint.timeout_s} s ({endpoint.retries} retries)"
        ) from exc
    except openai.RateLimitError as exc:
        raise LLMError("rate_limited", str(exc)[:300]) from exc
    except openai.APIStatusError as exc:
        raise LLMError(f"http_{exc.status_code}", str(exc)[:300]) from exc
    except openai.APIConnectionError as exc:
        raise LLMError("connection", str(exc)[:300]) from exc
    except openai.APIResponseValidationError as exc:
        raise LLMError("malformed_response", str(exc)[:300]) from exc
    except ValueError as exc:  # a body that is not JSON
        raise LLMError("malformed_response", str(exc)[:300]) from exc
    latency = (time.perf_counter() - t0) * 1000
    try:
        text = resp.choices[0].message.content
    except (AttributeError, IndexError, TypeError) as exc:
        raise LLMError("malformed_response", "no choices[0].message.content in the answer") from exc
    if not isinstance(text, str):
        raise LLMError("malformed_response", "the answer has no text content")
    usage = getattr(resp, "usage", None)
    return ChatResult(
        text=text.strip(),
        model=str(getattr(resp, "model", endpoint.model)),
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        latency_ms=latency,
    )
