"""services.judge: request keys, repeat scopes, usage accounting and the gateway's bookkeeping steps, with
no server started and no upstream."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from email.utils import format_datetime

import httpx
import pytest

from services.judge.gateway import (
    JudgeGateway,
    Ledger,
    Usage,
    answer_digest,
    repeat_scope,
    request_key,
    scope_repeat,
)
from services.judge.upstream import JudgeFailure, retry_after_s

BODY = {"messages": [{"role": "user", "content": "Is it faithful?"}], "temperature": 0}


def test_request_key_is_the_sha256_of_model_body_and_occurrence() -> None:
    expected = hashlib.sha256(
        json.dumps({"model": "m", "body": BODY, "n": 0}, sort_keys=True, ensure_ascii=False).encode()
    ).hexdigest()
    assert request_key("m", BODY, 0) == expected
    # Transport fields do not change the answer, so not the key either.
    assert request_key("m", {**BODY, "stream": False, "user": "u", "metadata": {"a": 1}}, 0) == expected
    assert request_key("m", BODY, 1) != expected and request_key("other", BODY, 0) != expected
    # Repeat 0 keeps the key of a cache written before repeats existed; repeat 2 is its own key.
    assert request_key("m", BODY, 0, repeat=0) == expected
    with_repeat = hashlib.sha256(
        json.dumps({"model": "m", "body": BODY, "n": 0, "repeat": 2}, sort_keys=True).encode()
    ).hexdigest()
    assert request_key("m", BODY, 0, repeat=2) == with_repeat


def test_answer_digest_is_canonical_json() -> None:
    a = {"choices": [{"message": {"content": "yes"}}], "id": "x"}
    b = {"id": "x", "choices": [{"message": {"content": "yes"}}]}
    expected = hashlib.sha256(b'{"choices":[{"message":{"content":"yes"}}],"id":"x"}').hexdigest()[:32]
    assert answer_digest(a) == answer_digest(b) == expected


@pytest.mark.parametrize(
    ("scope", "repeat"), [("q1", 0), ("q1~r3", 3), ("a~rb~r12", 12), ("q~rx", 0), ("~r", 0), ("-", 0)]
)
def test_scope_repeat(scope: str, repeat: int) -> None:
    assert scope_repeat(scope) == repeat


def test_repeat_scope_round_trips() -> None:
    assert repeat_scope("q7", 0) == "q7" and repeat_scope("q7", -1) == "q7"
    assert [scope_repeat(repeat_scope("q7", r)) for r in range(5)] == [0, 1, 2, 3, 4]


def test_usage_adds_the_figures_of_another() -> None:
    total = Usage(calls=2, prompt_tokens=10, latency_ms=1.5, causes={"timeout": 1})
    total.add({"calls": 3, "prompt_tokens": 7, "latency_ms": 2.0, "causes": {"timeout": 2, "parse": 1}})
    total.add({"unknown_field": 99})  # a figure this version does not keep is ignored
    assert total.as_dict() == {
        "calls": 5,
        "cache_hits": 0,
        "upstream_calls": 0,
        "upstream_retries": 0,
        "failures": 0,
        "prompt_tokens": 17,
        "completion_tokens": 0,
        "latency_ms": 3.5,
        "causes": {"timeout": 3, "parse": 1},
    }
    # as_dict copies the causes: changing the dict does not change the usage.
    total.as_dict()["causes"]["timeout"] = 0
    assert total.causes["timeout"] == 3


def test_the_nth_identical_request_of_a_scope_has_its_own_key() -> None:
    ledger = Ledger(token="t", job="1", refresh=False)
    base = request_key("m", BODY, 0)
    keys = [JudgeGateway._occurrence_key(ledger, "ragas.f", "q1", "m", BODY, base, 0) for _ in range(3)]
    assert keys == [base, request_key("m", BODY, 1), request_key("m", BODY, 2)]
    # Another scope or metric counts from 0 again; scope "-" (none given) never counts.
    assert JudgeGateway._occurrence_key(ledger, "ragas.f", "q2", "m", BODY, base, 0) == base
    assert JudgeGateway._occurrence_key(ledger, "ragas.g", "q1", "m", BODY, base, 0) == base
    unscoped = [JudgeGateway._occurrence_key(ledger, "ragas.f", "-", "m", BODY, base, 0) for _ in range(2)]
    assert unscoped == [base, base]
    assert ledger.occurrences[("ragas.f", "q1", base)] == 3


def test_a_failure_counts_its_attempts_as_calls_and_retries() -> None:
    usages = (Usage(), Usage())
    sent = JudgeFailure("timeout", "no answer in 30 s")
    sent.attempts = 3
    JudgeGateway._count_failure(usages, sent)
    never_sent = JudgeFailure("refused", "the bound is full")
    JudgeGateway._count_failure(usages, never_sent)
    for usage in usages:
        assert (usage.failures, usage.upstream_calls, usage.upstream_retries) == (2, 1, 2)
        assert usage.causes == {"timeout": 1, "refused": 1}


def test_ledger_report_groups_by_metric_and_scope() -> None:
    ledger = Ledger(token="t", job="7", refresh=False)
    ledger.usage["m1"].calls = 2
    ledger.scopes[("m1", "q1")].calls = 1
    ledger.scopes[("m1", "q2")].calls = 1
    ledger.answers[("m1", "q1")]["k"] = "d"
    report = ledger.report()
    assert report["job"] == "7"
    assert report["metrics"]["m1"]["calls"] == 2
    assert {s: u["calls"] for s, u in report["scopes"]["m1"].items()} == {"q1": 1, "q2": 1}
    assert report["answers"] == {"m1": {"q1": {"k": "d"}}}


def test_retry_after() -> None:
    assert retry_after_s(httpx.Headers({"retry-after-ms": "1500"})) == 1.5
    assert retry_after_s(httpx.Headers({"retry-after-ms": "x", "retry-after": "4"})) == 4.0
    assert retry_after_s(httpx.Headers({"retry-after": "-3"})) == 0.0
    assert retry_after_s(httpx.Headers({})) is None
    assert retry_after_s(httpx.Headers({"retry-after": "soon"})) is None
    when = datetime(2030, 1, 1, 12, 0, 10, tzinfo=UTC)
    now = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC).timestamp()
    header = httpx.Headers({"retry-after": format_datetime(when, usegmt=True)})
    assert retry_after_s(header, now=now) == pytest.approx(10.0)
