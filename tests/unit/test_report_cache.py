"""services.reports.cache: the last computed report while a newer one is computed, at most one computation
of a report at a time, and a request that writes then reads sees its writes when nothing else is under way.
The computations here are coroutines the tests release by hand; no database, no clock assertion."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from services.reports.cache import ReportCache, utcnow


class Computations:
    """``compute`` for the cache: each call is one computation, held until ``release`` (or failed)."""

    def __init__(self) -> None:
        self.started = 0
        self.running = 0
        self.most_at_once = 0
        self.gates: list[asyncio.Event] = []
        self.fail = False

    async def compute(self) -> str:
        self.started += 1
        n = self.started
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        gate = asyncio.Event()
        self.gates.append(gate)
        try:
            await gate.wait()
            if self.fail:
                raise LookupError("run 1 not found")
            return f"report {n}"
        finally:
            self.running -= 1

    async def release(self) -> None:
        while not self.gates:
            await asyncio.sleep(0)
        self.gates.pop(0).set()
        for _ in range(5):
            await asyncio.sleep(0)


def version(v: str) -> Callable[[], Awaitable[str]]:
    """The data version a request reads (from the store, in the service)."""

    async def read() -> str:
        return v

    return read


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_unchanged_data_is_served_from_the_cache() -> None:
    cache: ReportCache[str] = ReportCache(8, max_stale_s=60)
    calls = Computations()
    first = asyncio.ensure_future(cache.get("r", version("v1"), calls.compute))
    await calls.release()
    served = await first
    assert (served.computed.value, served.stale) == ("report 1", False)
    again = await cache.get("r", version("v1"), calls.compute)
    assert again.computed is served.computed and not again.stale
    assert (cache.hits, cache.misses, calls.started) == (1, 1, 1)
    assert served.computed.data_time <= served.computed.computed_at


async def test_new_data_with_nothing_under_way_is_computed_and_waited_for() -> None:
    """Read-your-writes: a client that wrote and then asks gets a report with its write."""
    cache: ReportCache[str] = ReportCache(8, max_stale_s=60)
    calls = Computations()
    first = asyncio.ensure_future(cache.get("r", version("v1"), calls.compute))
    await calls.release()
    await first
    asked = utcnow()
    second = asyncio.ensure_future(cache.get("r", version("v2"), calls.compute))
    await _settle()
    assert not second.done()  # waits for its own computation
    await calls.release()
    served = await second
    assert (served.computed.value, served.stale) == ("report 2", False)
    assert served.computed.data_time >= asked


async def test_while_a_computation_is_under_way_the_last_report_is_served_stale() -> None:
    cache: ReportCache[str] = ReportCache(8, max_stale_s=60)
    calls = Computations()
    first = asyncio.ensure_future(cache.get("r", version("v1"), calls.compute))
    await calls.release()
    old = (await first).computed
    under_way = asyncio.ensure_future(cache.get("r", version("v2"), calls.compute))
    await _settle()
    # Many readers while data keeps changing: each is answered at once, with the old report said stale.
    for v in ("v3", "v4", "v5"):
        served = await cache.get("r", version(v), calls.compute)
        assert served.stale and served.computed is old
    assert (calls.started, cache.stale) == (2, 3)
    await calls.release()
    assert (await under_way).computed.value == "report 2"
    # Once it ends, the next change is computed again, one computation at a time throughout.
    nxt = asyncio.ensure_future(cache.get("r", version("v6"), calls.compute))
    await calls.release()
    assert (await nxt).computed.value == "report 3" and calls.most_at_once == 1


async def test_fresh_requests_wait_for_one_computation_begun_after_them() -> None:
    """Cache-Control: no-cache: never the stale report; all such requests made during a computation share the
    one that follows it, so at most one runs and at most one waits."""
    cache: ReportCache[str] = ReportCache(8, max_stale_s=60)
    calls = Computations()
    first = asyncio.ensure_future(cache.get("r", version("v1"), calls.compute))
    await calls.release()
    await first
    under_way = asyncio.ensure_future(cache.get("r", version("v2"), calls.compute))
    await _settle()
    asked = utcnow()
    fresh = [
        asyncio.ensure_future(cache.get("r", version(f"v{3 + i}"), calls.compute, fresh=True))
        for i in range(4)
    ]
    await _settle()
    assert calls.started == 2 and not any(f.done() for f in fresh)
    await calls.release()  # the one under way ends: it began before they asked, so they wait on
    await under_way
    await _settle()
    assert calls.started == 3 and not any(f.done() for f in fresh)
    await calls.release()
    served = [await f for f in fresh]
    assert {s.computed.value for s in served} == {"report 3"} and not any(s.stale for s in served)
    assert all(s.computed.data_time >= asked for s in served)
    assert calls.most_at_once == 1


async def test_a_report_too_old_is_not_served_stale() -> None:
    cache: ReportCache[str] = ReportCache(8, max_stale_s=0.05)
    calls = Computations()
    first = asyncio.ensure_future(cache.get("r", version("v1"), calls.compute))
    await calls.release()
    await first
    under_way = asyncio.ensure_future(cache.get("r", version("v2"), calls.compute))
    await _settle()
    await asyncio.sleep(0.1)  # the last report's data is now older than max_stale_s
    waiting = asyncio.ensure_future(cache.get("r", version("v3"), calls.compute))
    await _settle()
    assert not waiting.done() and cache.stale == 0
    await calls.release()
    await under_way
    await calls.release()
    assert (await waiting).computed.value == "report 3"


async def test_max_stale_zero_never_serves_stale() -> None:
    cache: ReportCache[str] = ReportCache(8, max_stale_s=0)
    calls = Computations()
    first = asyncio.ensure_future(cache.get("r", version("v1"), calls.compute))
    await calls.release()
    await first
    under_way = asyncio.ensure_future(cache.get("r", version("v2"), calls.compute))
    await _settle()
    waiting = asyncio.ensure_future(cache.get("r", version("v3"), calls.compute))
    await _settle()
    assert not waiting.done() and cache.stale == 0
    await calls.release()
    await under_way
    await calls.release()
    assert not (await waiting).stale


async def test_a_failed_computation_fails_its_waiters_and_keeps_nothing() -> None:
    cache: ReportCache[str] = ReportCache(8, max_stale_s=60)
    calls = Computations()
    calls.fail = True
    waiters = [asyncio.ensure_future(cache.get("r", version("v1"), calls.compute)) for _ in range(3)]
    await calls.release()
    for w in waiters:
        with pytest.raises(LookupError):
            await w
    assert calls.started == 1 and cache.latest("r") is None and cache.misses == 0
    # A computation nobody waits for any more (its request went away) fails without an unretrieved error.
    gone = asyncio.ensure_future(cache.get("r", version("v1"), calls.compute))
    await _settle()
    gone.cancel()
    await calls.release()
    calls.fail = False
    nxt = asyncio.ensure_future(cache.get("r", version("v1"), calls.compute))
    await calls.release()
    assert (await nxt).computed.value == "report 3"


async def test_after_a_deletion_no_earlier_report_is_served_stale() -> None:
    """A run deleted while its report is recomputed: the next reader is not given the deleted run's report,
    stale or not; it reads the data version, which fails for a run that is gone."""
    cache: ReportCache[str] = ReportCache(8, max_stale_s=60)
    calls = Computations()
    first = asyncio.ensure_future(cache.get("r", version("v1"), calls.compute))
    await calls.release()
    old = (await first).computed
    under_way = asyncio.ensure_future(cache.get("r", version("v2"), calls.compute))
    await _settle()
    assert (await cache.get("r", version("v3"), calls.compute)).computed is old
    cache.deleted()

    async def gone() -> str:
        raise LookupError("run 1 not found")

    with pytest.raises(LookupError, match="not found"):
        await cache.get("r", gone, calls.compute)
    # The computation begun before the deletion is not served stale either once it has ended.
    await calls.release()
    await under_way
    nxt = asyncio.ensure_future(cache.get("r", version("v4"), calls.compute))
    await _settle()
    with pytest.raises(LookupError):
        await cache.get("r", gone, calls.compute)
    await calls.release()
    assert (await nxt).computed.value == "report 3"
