"""The judge bound shared through PostgreSQL advisory locks (services/judge/slots.py): one bound for several
processes (each ``JudgeSlots`` here has its own connection, as each process does), released when a holder's
connection dies, never taken twice by one process.

The PostgreSQL tests are skipped on SQLite, where there is one process and no shared bound
(``test_no_shared_bound_on_sqlite_or_when_off`` checks that side); CI runs them in its PostgreSQL leg.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from pydantic import ValidationError

from services.config import Settings
from services.jobs.connection import conninfo
from services.judge.gateway import JudgeFailure
from services.judge.slots import NAMESPACE, JudgeSlots, judge_slots

URL = os.environ.get("RAGMETA_TEST_DATABASE_URL") or ""
pg_only = pytest.mark.skipif(
    not URL.startswith("postgresql"), reason="PostgreSQL only: SQLite has no shared bound (one process)"
)


def test_no_shared_bound_on_sqlite_or_when_off(tmp_path: object) -> None:
    assert judge_slots(Settings(database_url="sqlite:///x.db")) is None
    pg = "postgresql+psycopg://u@127.0.0.1:1/db"
    slots = judge_slots(Settings(database_url=pg, judge={"max_concurrency": 5}))  # type: ignore[arg-type]
    assert isinstance(slots, JudgeSlots) and slots.size == 5
    assert slots.conninfo == "postgresql://u@127.0.0.1:1/db"
    assert judge_slots(Settings(database_url=pg, judge={"shared_bound": False})) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("judge", "field"),
    [({"max_concurrency": 0}, "max_concurrency"), ({"shared_bound": "sometimes"}, "shared_bound")],
)
def test_bad_settings_are_refused_naming_the_field(judge: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        Settings(judge=judge)  # type: ignore[arg-type]
    assert any(e["loc"] == ("judge", field) for e in err.value.errors())


async def _holders(groups: list[JudgeSlots], calls: int, hold_s: float) -> int:
    """``calls`` concurrent callers spread over ``groups``, each holding a slot for ``hold_s``; the most
    ever held at once."""
    now = peak = 0

    async def call(slots: JudgeSlots) -> None:
        nonlocal now, peak
        async with slots.slot():
            now += 1
            peak = max(peak, now)
            await asyncio.sleep(hold_s)
            now -= 1

    await asyncio.gather(*(call(groups[i % len(groups)]) for i in range(calls)))
    return peak


@pg_only
async def test_three_processes_share_one_bound() -> None:
    groups = [JudgeSlots(conninfo(URL), 3, poll_s=0.005) for _ in range(3)]
    try:
        peak = await _holders(groups, calls=30, hold_s=0.03)
    finally:
        for g in groups:
            await g.aclose()
    # each of the three would allow 3 on its own (9 together): the bound holds across them, and is reached
    assert peak == 3


@pg_only
async def test_a_process_never_takes_its_own_slot_twice() -> None:
    slots = JudgeSlots(conninfo(URL), 2, poll_s=0.005)
    try:
        a, b = await slots.acquire(), await slots.acquire()
        assert {a, b} == {0, 1} and slots.held == [0, 1]
        third = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0.1)
        assert not third.done()  # advisory locks are re-entrant: only the local bookkeeping prevents this
        await slots.release(a)
        assert await asyncio.wait_for(third, 10) == a
        await slots.release(a)
        await slots.release(b)
        assert slots.held == []
    finally:
        await slots.aclose()


@pg_only
async def test_slots_of_a_dead_connection_are_released_at_once() -> None:
    import psycopg

    dying = JudgeSlots(conninfo(URL), 2, poll_s=0.005)
    waiting = JudgeSlots(conninfo(URL), 2, poll_s=0.005)
    try:
        await dying.acquire()
        await dying.acquire()
        blocked = asyncio.ensure_future(waiting.acquire())
        await asyncio.sleep(0.1)
        assert not blocked.done()
        pid = dying._conn.info.backend_pid
        async with await psycopg.AsyncConnection.connect(conninfo(URL), autocommit=True) as admin:
            await admin.execute("SELECT pg_terminate_backend(%s)", (pid,))  # what a SIGKILL does to it
        assert await asyncio.wait_for(blocked, 10) in (0, 1)
    finally:
        await dying.aclose()
        await waiting.aclose()


@pg_only
async def test_a_cancelled_wait_leaks_no_slot() -> None:
    slots = JudgeSlots(conninfo(URL), 1, poll_s=0.005)
    other = JudgeSlots(conninfo(URL), 1, poll_s=0.005)
    try:
        held = await slots.acquire()
        waiter = asyncio.ensure_future(other.acquire())
        await asyncio.sleep(0.05)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await slots.release(held)
        assert await asyncio.wait_for(other.acquire(), 10) == 0  # the slot is free for whoever asks
        assert other.held == [0]
    finally:
        await slots.aclose()
        await other.aclose()


async def test_an_unreachable_database_fails_the_call_not_the_bound() -> None:
    slots = JudgeSlots("postgresql://postgres@127.0.0.1:1/nowhere", 2)
    with pytest.raises(JudgeFailure) as err:
        await slots.acquire()
    assert err.value.cause == "judge_bound"
    assert NAMESPACE < 2**31  # the first key fits PostgreSQL's int4 form
