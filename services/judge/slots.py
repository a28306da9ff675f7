"""The judge bound shared by every process on one PostgreSQL database (workers on many machines).

``judge.max_concurrency`` slots are the PostgreSQL session advisory locks ``(NAMESPACE, 0 .. n-1)``. A judge
gateway takes a free slot (``pg_try_advisory_lock``) for the duration of each upstream call and unlocks it
after, so at most ``n`` calls are in flight across all gateways together. Each process holds its slots on
one dedicated connection of its own: when the process dies, even by SIGKILL, its connection closes and
PostgreSQL releases its slots at once — no lease to expire, nothing to clean up.

Taking a slot is one statement that tries the free candidates in turn and stops at the first it gets. When
none is free, the calls waiting in a process queue in arrival order; the first one asks again when a slot of
this process is released, or after ``poll_s`` (slots of other processes). Advisory locks are re-entrant in a
session, so a process never asks for a slot it already holds.

Failure modes: a connection that breaks loses this process's slots server-side; the calls holding them finish
(the bound can be exceeded by those for the length of one call), the next call reconnects. When the database
cannot be reached the call fails with ``judge_bound`` (an item error), rather than going over the bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator
from typing import Any

from services.config import Settings
from services.jobs.connection import conninfo, uses_queue
from services.judge.gateway import JudgeFailure

log = logging.getLogger("ragmeta.judge")

# First key of the advisory locks (int4): b"rjdg". The slot number is the second.
NAMESPACE = 0x726A6467

TAKE = """
WITH RECURSIVE attempt(i, got) AS (
    SELECT 1, pg_try_advisory_lock(%(ns)s, (%(c)s::int[])[1])
  UNION ALL
    SELECT i + 1, pg_try_advisory_lock(%(ns)s, (%(c)s::int[])[i + 1])
      FROM attempt WHERE NOT got AND i < cardinality(%(c)s::int[])
)
SELECT (%(c)s::int[])[i] FROM attempt WHERE got
"""


class JudgeSlots:
    def __init__(self, conninfo: str, size: int, poll_s: float = 0.02) -> None:
        self.conninfo = conninfo
        self.size = max(1, size)
        self.poll_s = poll_s
        self._conn: Any = None
        self._generation = 0
        self._held: dict[int, int] = {}  # slot -> generation of the connection that holds it
        self._io: asyncio.Lock | None = None
        self._turn: asyncio.Lock | None = None
        self._freed: asyncio.Event | None = None
        self._start = random.randrange(self.size)
        self._background: set[asyncio.Future[None]] = set()

    @property
    def held(self) -> list[int]:
        return sorted(self._held)

    def _locks(self) -> tuple[asyncio.Lock, asyncio.Lock, asyncio.Event]:
        # Made on first use, on the loop that uses them (the gateway's).
        if self._io is None or self._turn is None or self._freed is None:
            self._io, self._turn, self._freed = asyncio.Lock(), asyncio.Lock(), asyncio.Event()
        return self._io, self._turn, self._freed

    async def _connection(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            self._conn = await psycopg.AsyncConnection.connect(
                self.conninfo, autocommit=True, application_name="ragmeta-judge-slots"
            )
            self._generation += 1
            self._held.clear()  # a new session holds nothing
        return self._conn

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self._held.clear()
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    async def _take(self) -> int | None:
        io, _, _ = self._locks()
        async with io:
            candidates = [
                s for s in ((self._start + k) % self.size for k in range(self.size)) if s not in self._held
            ]
            if not candidates:
                return None
            try:
                conn = await self._connection()
                cur = await conn.execute(TAKE, {"ns": NAMESPACE, "c": candidates})
                row = await cur.fetchone()
            except Exception as exc:
                await self._drop()
                raise JudgeFailure("judge_bound", f"the shared judge bound is unreachable: {exc}") from exc
            if row is None:
                return None
            slot = int(row[0])
            self._held[slot] = self._generation
            self._start = (slot + 1) % self.size
            return slot

    async def _unlock(self, slot: int) -> None:
        io, _, freed = self._locks()
        async with io:
            generation = self._held.pop(slot, None)
            if generation is not None and generation == self._generation and self._conn is not None:
                try:
                    await self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", (NAMESPACE, slot))
                except Exception:
                    log.warning("judge slots: unlocking slot %d failed; reconnecting", slot, exc_info=True)
                    await self._drop()
            freed.set()

    async def acquire(self) -> int:
        """A free slot, waiting for one if need be (in arrival order within this process)."""
        _, turn, freed = self._locks()
        async with turn:
            while True:
                freed.clear()
                take = asyncio.ensure_future(self._take())
                try:
                    slot = await asyncio.shield(take)
                except asyncio.CancelledError:
                    # The statement goes on; a slot it takes after all is given back.
                    take.add_done_callback(self._give_back)
                    raise
                if slot is not None:
                    return slot
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(freed.wait(), self.poll_s * (0.5 + random.random()))

    def _give_back(self, take: asyncio.Future[int | None]) -> None:
        slot = None if take.cancelled() or take.exception() is not None else take.result()
        if slot is not None:
            task = asyncio.ensure_future(self._unlock(slot))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def release(self, slot: int) -> None:
        # Shielded: a cancelled call still gives its slot back.
        await asyncio.shield(asyncio.ensure_future(self._unlock(slot)))

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[int]:
        """Hold one slot for the block (one upstream call)."""
        slot = await self.acquire()
        try:
            yield slot
        finally:
            await self.release(slot)

    async def aclose(self) -> None:
        io, _, _ = self._locks()
        async with io:
            await self._drop()


def judge_slots(settings: Settings) -> JudgeSlots | None:
    """The shared bound for this deployment's gateways: on PostgreSQL unless ``judge.shared_bound`` is off;
    None on SQLite (one process: the gateway's own bound is the bound)."""
    if not settings.judge.shared_bound or not uses_queue(settings.database_url):
        return None
    return JudgeSlots(conninfo(settings.database_url), settings.judge.max_concurrency)
