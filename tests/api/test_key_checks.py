"""Concurrent first uses of one API key share one Argon2 check (app.auth.KeyChecks), on a served app (uvicorn
on loopback: real event loop, threadpool and connection pool).

The app's hasher is wrapped to count the Argon2 verifications it runs (per key) and to hold each one at a gate
until every request of the burst has reached the credential check and every request holding a credential
look-up slot has reached Argon2, so the requests overlap by construction, not by luck of timing (without
the single check, as many requests as there are look-up slots verify the key at once). The timeouts only
keep a regression from hanging the suite; nothing is timed."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from argon2.exceptions import VerifyMismatchError
from sqlalchemy import Engine

from app.main import create_app
from app.settings import Settings
from services.accounts import service as accounts
from services.accounts.schemas import Role
from tests.conftest import issue_key
from tests.live import Served

HANG_GUARD_S = 120.0
BURST = 16


class _CountedArgon2:
    """Delegates to the real Argon2 hasher; counts verifications by key, waits at the gate, and can be told
    to fail the next verifications (a mismatch) or to break them (an error that is no verdict)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.calls: Counter[str] = Counter()
        self.gate = threading.Event()
        self.gate.set()
        self.mismatch_next = 0
        self.break_next = 0

    def hash(self, key: str) -> str:
        return str(self._inner.hash(key))

    def verify(self, stored_hash: str, key: str) -> bool:
        with self._lock:
            self.calls[key] += 1
        assert self.gate.wait(HANG_GUARD_S), "the burst never reached the credential check"
        with self._lock:
            mismatch, self.mismatch_next = self.mismatch_next > 0, max(0, self.mismatch_next - 1)
            broken, self.break_next = self.break_next > 0, max(0, self.break_next - 1)
        if mismatch:
            raise VerifyMismatchError
        if broken:
            raise RuntimeError("the hash check broke")
        return bool(self._inner.verify(stored_hash, key))


class CountingHasher(accounts.KeyHasher):
    """The app's key hasher with its Argon2 counted, and a count of the requests that asked whether a key is
    already remembered (each request asks before it waits for or starts a check)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings.auth)
        self.argon2 = _CountedArgon2(self._ph)
        self._ph = self.argon2  # type: ignore[assignment]
        self.asked = 0

    def remembers(self, digest: str) -> bool:
        self.asked += 1
        return super().remembers(digest)


@dataclass(frozen=True)
class App:
    url: str
    hasher: CountingHasher
    key: str  # a rater's new key, never used before the test
    lookups: Any  # the app's credential look-up slots (app.deps.DbSlots.lookups)


@pytest.fixture
def served(settings: Settings, engine: Engine) -> Iterator[App]:
    """A served app with the counting hasher."""
    app = create_app(settings)
    hasher = CountingHasher(settings)
    app.state.resources.auth.hasher = hasher
    key = issue_key(app, "rita", Role.rater)
    server = Served(app).start()
    try:
        yield App(server.url, hasher, key, app.state.resources.db_slots.lookups)
    finally:
        server.stop()


def _burst(a: App, keys: list[str]) -> list[httpx.Response]:
    """GET /me once per key, all at once. Argon2 is held until every request has reached the credential check
    and every request holding a look-up slot has reached Argon2."""
    hasher = a.hasher

    def all_in() -> bool:
        entered = sum(hasher.argon2.calls.values())
        return hasher.asked >= len(keys) and entered >= max(1, a.lookups.borrowed_tokens)

    async def run() -> list[httpx.Response]:
        hasher.asked = 0
        hasher.argon2.gate.clear()
        async with httpx.AsyncClient(base_url=a.url, timeout=HANG_GUARD_S) as c:
            sent = [asyncio.create_task(c.get("/me", headers={"Authorization": f"Bearer {k}"})) for k in keys]
            try:
                async with asyncio.timeout(HANG_GUARD_S):
                    while not all_in():
                        await asyncio.sleep(0.005)
            finally:
                hasher.argon2.gate.set()
            return list(await asyncio.gather(*sent))

    return asyncio.run(run())


def _one(url: str, key: str) -> httpx.Response:
    return httpx.get(f"{url}/me", headers={"Authorization": f"Bearer {key}"}, timeout=HANG_GUARD_S)


def _wrong(key: str) -> str:
    """The same key with its secret's last character changed: same prefix (same stored row), wrong secret."""
    return key[:-1] + ("A" if key[-1] != "A" else "B")


def test_a_burst_of_first_uses_of_one_key_runs_one_argon2_check(
    served: App,
) -> None:
    url, hasher, key = served.url, served.hasher, served.key
    answers = _burst(served, [key] * BURST)
    assert [r.status_code for r in answers] == [200] * BURST, [r.text for r in answers]
    assert {r.json()["name"] for r in answers} == {"rita"}
    assert hasher.argon2.calls == Counter({key: 1})
    assert _one(url, key).status_code == 200
    assert hasher.argon2.calls == Counter({key: 1})  # remembered as before


def test_a_wrong_key_alongside_the_right_one_fails_on_its_own_check(
    served: App,
) -> None:
    url, hasher, key = served.url, served.hasher, served.key
    wrong = _wrong(key)
    assert wrong.split("_")[1] == key.split("_")[1]
    keys = [key, wrong] * (BURST // 2)
    answers = _burst(served, keys)
    for k, r in zip(keys, answers, strict=True):
        assert r.status_code == (200 if k == key else 401), r.text
    # One check per distinct key: the wrong key's requests share the wrong key's failed check only.
    assert hasher.argon2.calls == Counter({key: 1, wrong: 1})
    # The failure was not remembered: the wrong key is checked again (and fails), the right one is not.
    assert _one(url, wrong).status_code == 401
    assert _one(url, key).status_code == 200
    assert hasher.argon2.calls == Counter({key: 1, wrong: 2})


def test_a_failed_check_fails_its_waiters_and_is_retried_on_the_next_request(
    served: App,
) -> None:
    url, hasher, key = served.url, served.hasher, served.key
    hasher.argon2.mismatch_next = 1  # the one check of the burst answers "no match"
    answers = _burst(served, [key] * BURST)
    assert [r.status_code for r in answers] == [401] * BURST, [r.text for r in answers]
    assert hasher.argon2.calls == Counter({key: 1})
    assert not hasher.remembers(accounts.sha256(key))
    assert _one(url, key).status_code == 200  # checked again, not answered from a memory of the failure
    assert hasher.argon2.calls == Counter({key: 2})


def test_a_check_that_ends_without_a_verdict_is_run_again_by_a_waiter(
    served: App,
) -> None:
    hasher, key = served.hasher, served.key
    hasher.argon2.break_next = 1  # the first check raises: no verdict for the others to share
    answers = _burst(served, [key] * BURST)
    codes = sorted(r.status_code for r in answers)
    assert codes == [200] * (BURST - 1) + [500], [r.text for r in answers]
    assert hasher.argon2.calls == Counter({key: 2})
