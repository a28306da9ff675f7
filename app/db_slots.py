"""How many requests may use the database at once (see the transaction rule in ``app.deps``)."""

from __future__ import annotations

import anyio


class DbSlots:
    """How many requests may use the database at once, waited for on the event loop (costing no thread).

    Were every thread of the pool taken by requests waiting for a connection or for the SQLite write lock,
    a request holding them could not get a thread to finish: 80 submits at once deadlocked that way until
    the pool's 30 s timeout (bench/burst_submit.py), when a request's transaction still spanned several hops
    between the loop and the threadpool. Transactions now begin and end in one thread call; requests still
    wait for a slot before they touch the database, so that no thread queues for a connection:
    ``sessions`` slots for request sessions and ``run_in_session``, ``lookups`` for credential look-ups
    (``app.auth``, which run while a request already holds a session slot). Together they never exceed the
    connections the pool can lend, and the threadpool
    is larger than that (``app.main``), so holders never wait for a connection or a thread.
    """

    def __init__(self, pool_capacity: int) -> None:
        self.lookups = anyio.CapacityLimiter(max(1, pool_capacity // 4))
        self.sessions = anyio.CapacityLimiter(max(1, pool_capacity - int(self.lookups.total_tokens)))

    @property
    def total(self) -> int:
        return int(self.sessions.total_tokens + self.lookups.total_tokens)
