"""The embedded job workers start only once the API serves and the report processes have warmed up
(app.main._start_when_warm): their imports would otherwise share the cores with the API's own start."""

from __future__ import annotations

import threading
from typing import Any

from app.main import _start_when_warm


class _Pool:
    def __init__(self) -> None:
        self.warm = threading.Event()

    def wait_warm(self, timeout: float) -> bool:
        return self.warm.wait(timeout)


class _Processes:
    def __init__(self) -> None:
        self.started = threading.Event()

    def start(self) -> Any:
        self.started.set()
        return self


def test_workers_wait_for_the_server_and_the_warm_up_then_start() -> None:
    pool, processes, serving = _Pool(), _Processes(), threading.Event()
    cancel = _start_when_warm(pool, processes, serving)  # type: ignore[arg-type]
    try:
        pool.warm.set()  # warm, not serving yet: no start
        assert not processes.started.wait(0.5)
        serving.set()
        assert processes.started.wait(10)
    finally:
        cancel()


def test_serving_without_the_warm_up_does_not_start_them_and_a_cancel_ends_the_wait() -> None:
    pool, processes, serving = _Pool(), _Processes(), threading.Event()
    serving.set()
    cancel = _start_when_warm(pool, processes, serving)  # type: ignore[arg-type]
    assert not processes.started.wait(0.5)
    cancel()  # returns: the waiting thread ended
    pool.warm.set()
    assert not processes.started.wait(0.3)
