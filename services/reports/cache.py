"""Computed reports kept in memory: the last one computed of each report, with the version and the time of
the data it was computed from, and at most one computation of each report at a time.

A report is identified by what was asked (runs, parameters); its data version (``RunRepository.data_version``)
changes with anything it reads (outputs, ratings, scores, questions and passages, and their histories). What
a request made at time ``t`` is given (``ReportCache.get``):

1. while a computation of the same report is under way, the last computed one at once, *stale* (the
   computation under way was started because the data changed since), if its data is at most
   ``max_stale_s`` older than ``t`` and the caller did not ask for a fresh one: under many writers a report
   is then never waited for behind other reports, nor for the store (the data version is not even read);
2. else, the data version ``v`` read, the last computed report when it was computed from ``v`` (nothing it
   reads changed since): current;
3. else a computation begun at or after ``t``: the one under way if it began then, else one started for it,
   after the one under way (if any) has ended. Requests waiting together share it.

A deletion (``ReportCache.deleted``: a run, a dataset, ratings, scores or job results removed) ends rule 1
for every report computed before it: the next request reads the data version, which fails for a run that is
gone, instead of being given a report of deleted data.

So one report is computed at most once at a time, and a request that writes then reads (with nothing else
under way) sees its own writes. Every answer says what it was computed from (``Computed``): ``data_time``,
before which every committed write is in it, and ``computed_at``.

Event loop only (the computations are awaited there; what they compute runs elsewhere). Failure modes: a
computation that raises raises in every request waiting for it, and nothing is kept.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from cachetools import LRUCache

T = TypeVar("T")


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Computed(Generic[T]):
    """A computed report and what it was computed from."""

    value: T
    version: Hashable
    # Every write committed before this time is in ``value`` (the computation read the data after it).
    data_time: datetime
    computed_at: datetime
    # The cache's deletion count when the computation began: a report of data since deleted is never stale.
    epoch: int = 0
    # Forms of ``value`` derived once for every request served it (an encoded body, say): the caller's.
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Served(Generic[T]):
    computed: Computed[T]
    # True: writes committed after ``computed.data_time`` and before the request may be missing from it.
    stale: bool


@dataclass
class _Flight(Generic[T]):
    future: asyncio.Future[Computed[T]]
    version: Hashable
    data_time: datetime
    epoch: int


class ReportCache(Generic[T]):
    def __init__(self, maxsize: int, max_stale_s: float = 0.0) -> None:
        self._latest: LRUCache[Hashable, Computed[T]] | None = LRUCache(maxsize) if maxsize > 0 else None
        self._flights: dict[Hashable, _Flight[T]] = {}
        self.max_stale = timedelta(seconds=max_stale_s)
        # Deletions so far; read on the event loop, counted from the deleting request's thread.
        self._epoch = 0
        self._deletions = itertools.count(1)
        self._epoch_lock = threading.Lock()
        # Served current from the cache; computed; served stale while a computation was under way.
        self.hits = 0
        self.misses = 0
        self.stale = 0

    def deleted(self) -> None:
        """Something reports read was deleted: no report computed before now is served stale again (thread
        safe; called by the deleting request before its transaction commits, so a computation that could
        still read the deleted rows is counted before it)."""
        with self._epoch_lock:
            self._epoch = next(self._deletions)

    @property
    def epoch(self) -> int:
        """Deletions so far (``deleted``): a report computed with an earlier count may hold deleted data."""
        return self._epoch

    def latest(self, key: Hashable) -> Computed[T] | None:
        return self._latest.get(key) if self._latest is not None else None

    async def get(
        self,
        key: Hashable,
        read_version: Callable[[], Awaitable[Hashable]],
        compute: Callable[[], Awaitable[T]],
        fresh: bool = False,
    ) -> Served[T]:
        """The report ``key`` by the rules of the module: ``read_version()`` reads the version of the data it
        reads, ``compute()`` computes it. ``fresh``: never stale. Raises what either raises."""
        asked_at = utcnow()
        stale = None if fresh else self._stale(key, asked_at)
        if stale is not None:
            return stale
        version = await read_version()
        latest = self.latest(key)
        if latest is not None and latest.version == version:
            self.hits += 1
            return Served(latest, stale=False)
        stale = None if fresh else self._stale(key, asked_at)
        if stale is not None:
            return stale
        while True:
            flight = self._flights.get(key)
            if flight is None:
                flight = self._start(key, version, compute)
            if flight.data_time >= asked_at or flight.version == version:
                return Served(await asyncio.shield(flight.future), stale=False)
            # Begun before this request, from other data: wait for it to end, then for one of our own.
            await asyncio.wait([flight.future])

    def _stale(self, key: Hashable, asked_at: datetime) -> Served[T] | None:
        """The last computed report, stale, while a computation of it is under way (rule 1)."""
        latest = self.latest(key)
        if (
            key in self._flights
            and latest is not None
            and latest.epoch == self._epoch
            and self.max_stale > timedelta(0)
            and asked_at - latest.data_time <= self.max_stale
        ):
            self.stale += 1
            return Served(latest, stale=True)
        return None

    def _start(self, key: Hashable, version: Hashable, compute: Callable[[], Awaitable[T]]) -> _Flight[T]:
        data_time, epoch = utcnow(), self._epoch

        async def run() -> Computed[T]:
            value = await compute()
            return Computed(value, version, data_time, utcnow(), epoch)

        flight = _Flight(asyncio.ensure_future(run()), version, data_time, epoch)
        self._flights[key] = flight

        def done(future: asyncio.Future[Computed[T]]) -> None:
            # Kept before the flight leaves: a request arriving in between finds it. An exception is read
            # here, so none goes unretrieved when no request waits any more.
            if not future.cancelled() and future.exception() is None:
                self.misses += 1
                if self._latest is not None:
                    self._latest[key] = future.result()
            if self._flights.get(key) is flight:
                del self._flights[key]

        flight.future.add_done_callback(done)
        return flight
