"""The service sets the libraries' offline and telemetry switches itself, and the test suite's network guard
catches any non-loopback connection attempt."""

from __future__ import annotations

import os

from services.offline import OFFLINE_ENV, apply_offline_env
from tests import conftest


def test_offline_switches_are_set_at_start() -> None:
    applied = apply_offline_env()
    for key in (
        "HF_HUB_OFFLINE",
        "RAGAS_DO_NOT_TRACK",
        "DEEPEVAL_TELEMETRY_OPT_OUT",
        "OPIK_TRACK_DISABLE",
        "OPIK_SENTRY_ENABLE",
        "OPIK_ANALYTICS_ENABLE",
        "LITELLM_LOCAL_MODEL_COST_MAP",
    ):
        assert os.environ[key] == applied[key] == OFFLINE_ENV[key]


def test_guard_records_non_loopback_attempts() -> None:
    before = len(conftest._outbound)
    conftest._audit("socket.connect", (None, ("93.184.216.34", 443)))
    conftest._audit("socket.getaddrinfo", ("huggingface.co", 443, 0, 0, 0))
    conftest._audit("socket.connect", (None, ("127.0.0.1", 8000)))
    conftest._audit("socket.connect", (None, "/var/run/postgresql/.s.PGSQL.5432"))
    recorded = conftest._outbound[before:]
    del conftest._outbound[before:]  # the attempts were simulated; do not fail this test for them
    assert recorded == ["connect ('93.184.216.34', 443)", "getaddrinfo 'huggingface.co'"]
