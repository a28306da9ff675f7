"""The judge gateway against a loopback test judge: forwarding, cache (batched writes), occurrence keys,
ledgers per batch, concurrency bound, retries, and prompt errors for failing, hanging or garbled upstreams."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from sqlalchemy import Engine
from starlette.responses import JSONResponse

from services.config import JudgeSettings
from services.db import make_session_factory
from services.judge.gateway import JudgeGateway
from tests.fakellm import FakeLLM, garbage


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    server = FakeLLM(script=lambda body, i: f"answer {i}").start()
    yield server
    server.stop()


def judge_for(fake: FakeLLM, **kw: Any) -> JudgeSettings:
    return JudgeSettings(base_url=fake.base_url, model="judge-model", timeout_s=1.0, retries=2, **kw)


@pytest.fixture
def gateway(fake: FakeLLM, engine: Engine) -> Iterator[JudgeGateway]:
    gw = JudgeGateway(judge_for(fake, max_concurrency=3), make_session_factory(engine)).start()
    yield gw
    gw.stop()


def ask(base_url: str, content: str, **kw: Any) -> str:
    # Closed at once: a client left to the collector closes its keep-alive socket with a ResourceWarning,
    # an error in whichever test is running then.
    with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
        resp = client.chat.completions.create(
            model="whatever", messages=[{"role": "user", "content": content}], **kw
        )
    return str(resp.choices[0].message.content)


def url_of(gateway: JudgeGateway, metric: str = "m", scope: str = "-", job: str = "1", **kw: Any) -> str:
    """A new ledger (one scoring batch) and the base URL a library is given for ``metric`` in it."""
    return gateway.base_url(gateway.open_ledger(job, **kw), metric, scope)


def usage(gateway: JudgeGateway, url: str, metric: str = "m") -> Any:
    token = url.split("/g/", 1)[1].split("/", 1)[0]
    return gateway.ledgers[token].usage[metric]


def test_forwards_with_the_configured_model_and_counts(gateway: JudgeGateway, fake: FakeLLM) -> None:
    url = url_of(gateway, "ragas.faithfulness")
    assert ask(url, "hello") == "answer 0"
    assert fake.requests[0]["model"] == "judge-model"
    u = usage(gateway, url, "ragas.faithfulness")
    assert (u.calls, u.upstream_calls, u.cache_hits, u.prompt_tokens, u.completion_tokens) == (1, 1, 0, 10, 5)


def test_cache_makes_a_rerun_free_across_gateways(
    gateway: JudgeGateway, fake: FakeLLM, engine: Engine
) -> None:
    url = url_of(gateway)
    first = [ask(url, f"q{i}") for i in range(3)]
    assert len(fake.requests) == 3
    gateway.flush_cache()  # answers are written in batches; another gateway reads them from the table
    again = JudgeGateway(gateway.judge, make_session_factory(engine)).start()
    try:
        url2 = url_of(again, job="2")
        assert [ask(url2, f"q{i}") for i in range(3)] == first
        assert len(fake.requests) == 3
        assert usage(again, url2).cache_hits == 3
    finally:
        again.stop()


def test_answers_waiting_to_be_written_are_served_then_written_in_one_go(
    gateway: JudgeGateway, fake: FakeLLM, engine: Engine
) -> None:
    from sqlalchemy import func, select
    from sqlalchemy.orm import Session

    from services.models import JudgeCall

    url = url_of(gateway)
    first = [ask(url, f"p{i}") for i in range(5)]
    assert [ask(url_of(gateway), f"p{i}") for i in range(5)] == first and len(fake.requests) == 5
    gateway.flush_cache()
    with Session(engine) as s:
        assert s.scalar(select(func.count()).select_from(JudgeCall)) == 5
    assert gateway._pending == {}


def test_identical_requests_of_different_metrics_are_sent_once(gateway: JudgeGateway, fake: FakeLLM) -> None:
    token = gateway.open_ledger("1")
    a = ask(gateway.base_url(token, "deepeval.faithfulness"), "same prompt")
    b = ask(gateway.base_url(token, "opik.hallucination"), "same prompt")
    assert a == b and len(fake.requests) == 1


def test_deliberate_repeats_within_a_scope_are_not_collapsed(gateway: JudgeGateway, fake: FakeLLM) -> None:
    url = url_of(gateway, "ragas.answer_relevancy", scope="out-7")
    answers = [ask(url, "generate a question", temperature=0.3) for _ in range(3)]
    assert answers == ["answer 0", "answer 1", "answer 2"] and len(fake.requests) == 3
    # the same three calls for the same output in a later batch are all answered from the cache, in order
    again = url_of(gateway, "ragas.answer_relevancy", scope="out-7", job="2")
    assert [ask(again, "generate a question", temperature=0.3) for _ in range(3)] == answers
    assert len(fake.requests) == 3


def test_the_scope_header_numbers_repeats_like_the_path(gateway: JudgeGateway, fake: FakeLLM) -> None:
    token = gateway.open_ledger("1")
    client = openai.OpenAI(base_url=gateway.base_url(token, "m"), api_key="x", max_retries=0)

    def asked(scope: str) -> str:
        resp = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "same"}],
            extra_headers={"x-ragmeta-scope": scope},
        )
        return str(resp.choices[0].message.content)

    with client:
        assert [asked("o1"), asked("o1"), asked("o2")] == ["answer 0", "answer 1", "answer 0"]
    scopes = gateway.ledgers[token].scopes
    assert (scopes[("m", "o1")].calls, scopes[("m", "o2")].calls) == (2, 1)


def test_ledgers_are_released_with_their_figures(gateway: JudgeGateway, fake: FakeLLM) -> None:
    with httpx.Client(base_url=gateway.url) as http:
        token = http.post("/ledgers", json={"job": "7", "refresh": False}).json()["token"]
        ask(gateway.base_url(token, "m", "o1"), "x")
        report = http.delete(f"/ledgers/{token}").json()
        assert report["job"] == "7" and report["metrics"]["m"]["calls"] == 1
        assert report["scopes"]["m"]["o1"]["upstream_calls"] == 1
        assert http.get("/stats").json()["ledgers"] == 0
        assert http.delete(f"/ledgers/{token}").status_code == 404
    # a call for a released ledger is refused with a cause, not counted anywhere
    with pytest.raises(openai.BadRequestError) as info:
        ask(gateway.base_url(token, "m"), "y")
    assert "unknown_ledger" in str(info.value)


def test_concurrency_never_exceeds_the_setting(gateway: JudgeGateway, fake: FakeLLM) -> None:
    fake.latency_s = 0.2

    async def many() -> list[httpx.Response]:
        limits = httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=url_of(gateway), limits=limits, timeout=30) as client:
            return await asyncio.gather(
                *(
                    client.post(
                        "/chat/completions", json={"messages": [{"role": "user", "content": f"p{i}"}]}
                    )
                    for i in range(12)
                )
            )

    replies = asyncio.run(many())
    assert all(r.status_code == 200 for r in replies)
    assert len(fake.requests) == 12 and fake.max_in_flight == 3


def test_5xx_then_success_is_retried(gateway: JudgeGateway, fake: FakeLLM) -> None:
    fake.fail_first, fake.fail_status = 2, 503
    url = url_of(gateway)
    assert ask(url, "x") == "answer 2"
    assert usage(gateway, url).upstream_retries == 2


@pytest.mark.parametrize(
    ("setup", "cause"),
    [
        (lambda f: setattr(f, "fail_first", 99), "http_500"),
        (lambda f: (setattr(f, "fail_first", 99), setattr(f, "fail_status", 429)), "rate_limited"),
        (lambda f: (setattr(f, "hang_first", 99), setattr(f, "hang_s", 5.0)), "timeout"),
        (lambda f: setattr(f, "script", lambda b, i: garbage()), "malformed_response"),
    ],
)
def test_failures_become_prompt_non_retryable_errors(
    gateway: JudgeGateway, fake: FakeLLM, setup: Any, cause: str
) -> None:
    setup(fake)
    url = url_of(gateway)
    with pytest.raises(openai.BadRequestError) as info:
        ask(url, "x")
    assert cause in str(info.value)
    u = usage(gateway, url)
    assert u.failures == 1 and u.causes == {cause: 1}
    expected_upstream = 1 if cause == "malformed_response" else 3  # garbage is not retried
    assert len(fake.requests) == expected_upstream


def test_identical_concurrent_requests_are_sent_once(gateway: JudgeGateway, fake: FakeLLM) -> None:
    fake.latency_s = 0.3

    token = gateway.open_ledger("1")

    async def same() -> list[httpx.Response]:
        limits = httpx.Limits(max_keepalive_connections=0)
        body = {"messages": [{"role": "user", "content": "one prompt"}]}
        async with httpx.AsyncClient(limits=limits, timeout=30) as client:
            return await asyncio.gather(
                *(
                    client.post(gateway.base_url(token, f"metric{i}") + "/chat/completions", json=body)
                    for i in range(5)
                )
            )

    replies = asyncio.run(same())
    assert {r.json()["choices"][0]["message"]["content"] for r in replies} == {"answer 0"}
    assert len(fake.requests) == 1


def test_a_refreshed_batch_reuses_only_the_answers_it_asked_for(gateway: JudgeGateway, fake: FakeLLM) -> None:
    assert ask(url_of(gateway), "x") == "answer 0"
    token = gateway.open_ledger("2", refresh=True)
    # two metrics of the refreshed batch ask the same thing: the stored answer is not read, the new one is
    a = ask(gateway.base_url(token, "deepeval.faithfulness"), "x")
    b = ask(gateway.base_url(token, "opik.hallucination"), "x")
    assert (a, b, len(fake.requests)) == ("answer 1", "answer 1", 2)


def test_refresh_bypasses_the_cache_and_replaces_the_answer(gateway: JudgeGateway, fake: FakeLLM) -> None:
    first = ask(url_of(gateway), "x")
    fresh = ask(url_of(gateway, job="2", refresh=True), "x")
    assert (first, fresh, len(fake.requests)) == ("answer 0", "answer 1", 2)
    assert ask(url_of(gateway, job="3"), "x") == "answer 1"  # later jobs get the refreshed answer
    assert len(fake.requests) == 2
    gateway.flush_cache()
    assert ask(url_of(gateway, job="4"), "x") == "answer 1"  # and so does the stored answer
    assert len(fake.requests) == 2


def _recorded_sleeps(gateway: JudgeGateway) -> list[float]:
    """The gateway's back-off delays, recorded instead of waited out."""
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)

    gateway.sleep = sleep
    return delays


def _then_ok(status: int, headers: dict[str, str]) -> Any:
    def script(body: dict[str, Any], i: int) -> Any:
        if i == 0:
            return JSONResponse({"error": {"message": "slow down"}}, status_code=status, headers=headers)
        return f"answer {i}"

    return script


@pytest.mark.parametrize(
    ("status", "headers", "delay"),
    [
        (429, {"Retry-After": "0.75"}, 0.75),
        (503, {"Retry-After": "0"}, 0.0),
        (429, {"retry-after-ms": "250"}, 0.25),
    ],
)
def test_retry_after_within_the_timeout_is_the_delay(
    gateway: JudgeGateway, fake: FakeLLM, status: int, headers: dict[str, str], delay: float
) -> None:
    delays = _recorded_sleeps(gateway)
    fake.script = _then_ok(status, headers)
    assert ask(url_of(gateway), "x") == "answer 1"
    assert delays == [delay] and len(fake.requests) == 2


def test_retry_after_as_an_http_date() -> None:
    from email.utils import formatdate

    from services.judge.gateway import retry_after_s

    now = 1_700_000_000.0
    when = formatdate(now + 30, usegmt=True)
    assert retry_after_s(httpx.Headers({"Retry-After": when}), now=now) == pytest.approx(30.0)
    assert retry_after_s(httpx.Headers({"Retry-After": "soon"})) is None
    assert retry_after_s(httpx.Headers({})) is None


def test_retry_after_beyond_the_timeout_ends_the_retries_at_once(
    gateway: JudgeGateway, fake: FakeLLM
) -> None:
    delays = _recorded_sleeps(gateway)
    fake.script = _then_ok(429, {"Retry-After": "30"})  # the timeout is 1 s
    url = url_of(gateway)
    with pytest.raises(openai.BadRequestError) as info:
        ask(url, "x")
    assert "rate_limited" in str(info.value) and "retry after 30 s" in str(info.value)
    assert delays == [] and len(fake.requests) == 1
    assert usage(gateway, url).causes == {"rate_limited": 1}


def test_without_retry_after_the_back_off_is_used(gateway: JudgeGateway, fake: FakeLLM) -> None:
    delays = _recorded_sleeps(gateway)
    fake.fail_first, fake.fail_status = 2, 503
    assert ask(url_of(gateway), "x") == "answer 2"
    assert len(delays) == 2 and 0.25 <= delays[0] <= 0.75 and 0.5 <= delays[1] <= 1.5
