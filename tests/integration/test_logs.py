"""JSON log lines with the request id, from the request into the lines of the job it started; and no
secret in any line, whatever logger wrote it at whatever level."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from services.config import JudgeSettings, Settings
from services.logs import REDACTED, configure_logs, scrub
from tests.api.test_session_keys import _key, _signed_in
from tests.fakellm import FakeLLM
from tests.integration.judges.test_opik import new_run
from tests.integration.test_scoring import drain
from tests.judgefake import start_judge


@pytest.fixture
def captured(settings: Settings) -> Iterator[io.StringIO]:
    """What the service logs, as configured by ``settings`` (JSON), at DEBUG for every logger."""
    settings.log_format = "json"
    settings.log_level = "DEBUG"
    root = logging.getLogger()
    level = root.level
    stream = io.StringIO()
    yield stream
    root.setLevel(level)
    for handler in [h for h in root.handlers if h.get_name() == "ragmeta-logs"]:
        root.removeHandler(handler)


def _capture(client: TestClient, stream: io.StringIO) -> None:
    """Send the app's lines (configured when it was made) into ``stream``, every logger at DEBUG."""
    configure_logs(client.app.state.resources.settings, stream)  # type: ignore[attr-defined]
    logging.getLogger().setLevel(logging.DEBUG)


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_the_request_id_follows_the_request_into_its_job(
    client: TestClient, settings: Settings, captured: io.StringIO
) -> None:
    _capture(client, captured)
    run = new_run(client)
    r = client.post(
        f"/runs/{run}/scoring-jobs",
        json={"metrics": ["classic.rouge_l"]},
        headers={"X-Request-ID": "req-31.a"},
    )
    assert r.status_code == 202 and r.headers["X-Request-ID"] == "req-31.a"
    job_id = r.json()["id"]
    assert r.json()["params"]["request_id"] == "req-31.a"
    drain(client)  # another thread, as a worker: the id comes with the job
    lines = _lines(captured)
    assert all({"ts", "level", "logger", "message", "request_id", "job_id"} <= set(line) for line in lines)
    access = [x for x in lines if x["logger"] == "ragmeta.access" and x["request_id"] == "req-31.a"]
    assert [(a["method"], a["route"], a["status"]) for a in access] == [
        ("POST", "/runs/{run_id}/scoring-jobs", 202)
    ]
    job_lines = [x for x in lines if x["job_id"] == job_id]
    assert job_lines and all(x["request_id"] == "req-31.a" for x in job_lines)
    assert any("batch" in x["message"] and "ended" in x["message"] for x in job_lines)

    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    r = client.get("/healthz", headers={"traceparent": f"00-{trace}-00f067aa0ba902b7-01"})
    assert r.headers["X-Request-ID"] == trace
    # Not a plain short token: not echoed (it would go into every line), a new id instead.
    r = client.get("/healthz", headers={"X-Request-ID": "x y" + "z" * 200})
    made = r.headers["X-Request-ID"]
    assert len(made) == 32 and int(made, 16) >= 0
    # Refused by the request guard before any route: still an id and an access line.
    r = client.post(
        "/datasets", content=b"{", headers={"content-type": "application/json", "X-Request-ID": "bad-1"}
    )
    assert r.status_code == 400 and r.headers["X-Request-ID"] == "bad-1"
    assert any(x["request_id"] == "bad-1" and x["logger"] == "ragmeta.access" for x in _lines(captured))


def test_no_secret_is_ever_logged(
    client: TestClient, settings: Settings, captured: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge_key = "sk-judge-0123456789abcdef"
    monkeypatch.setenv("RAGMETA_TEST_JUDGE_KEY", judge_key)
    fake: FakeLLM = start_judge()
    try:
        fake.fail_first, fake.fail_status = 10**9, 401  # the judge refuses: its errors are logged
        settings.judge = JudgeSettings(
            base_url=fake.base_url, model="judge-model", api_key_env="RAGMETA_TEST_JUDGE_KEY", retries=1
        )
        _capture(client, captured)
        issued = _key(client, "alice", "editor")
        browser = _signed_in(client, "alice", issued["key"])
        cookie = browser.cookies.get("ragmeta_session")
        assert cookie
        browser.get("/datasets")
        client.get("/datasets", headers={"Authorization": f"Bearer {issued['key']}x"})  # a wrong key
        core = client.app.state.resources.core  # type: ignore[attr-defined]
        core.scoring.gateway_url()
        gateway = core.scoring.gateway
        token = gateway.open_ledger("logs-test")
        import httpx

        body = {"model": "judge-model", "messages": [{"role": "user", "content": "?"}]}
        with httpx.Client(timeout=10) as http:
            http.post(gateway.base_url(token, "opik.moderation") + "/chat/completions", json=body)
        gateway.close_ledger(token)
        assert fake.requests, "the judge was called (with its key)"
        admin = client.headers["Authorization"].removeprefix("Bearer ")
        secrets = [issued["key"], admin, cookie, judge_key]
        # The check sees what it should: lines naming each secret as an SDK or a careless line would are
        # written, and come out scrubbed (the keys by their shape or value, the cookie by its name).
        sdk = logging.getLogger("thirdparty.sdk")
        for secret in secrets:
            sdk.warning("sending headers %s", {"authorization": f"Bearer {secret}"})
            sdk.debug("cookie: ragmeta_session=%s; other=1", secret)
        for secret in (issued["key"], admin, judge_key):
            logging.getLogger("ragmeta.test").error("raw value %s", secret)
    finally:
        fake.stop()
    text = captured.getvalue()
    assert text.count(REDACTED) >= 2 * len(secrets) + 3
    assert "judge" in text.lower() or "gateway" in text.lower() or "http" in text.lower()
    for secret in secrets:
        assert secret not in text
        assert secret[:24] not in text  # nor a recognisable part


@pytest.mark.parametrize(
    "line",
    [
        "Authorization: Bearer abc.def-ghi",
        'headers={"cookie": "ragmeta_session=AbC123xyz"}',
        "key rgm_0a1b2c3d4e5f_Zm9vYmFyYmF6cXV4",
        "api_key=supersecretvalue",
        "OPENAI sk-proj-ABCDEFGHIJKLMNOP",
    ],
)
def test_scrub_removes_each_shape_of_secret(line: str) -> None:
    out = scrub(line)
    assert REDACTED in out
    for word in ("abc.def-ghi", "AbC123xyz", "Zm9vYmFyYmF6cXV4", "supersecretvalue", "ABCDEFGHIJKLMNOP"):
        assert word not in out
