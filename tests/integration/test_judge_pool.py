"""The HTTP pool a scoring batch uses to reach the judge gateway: at most ``connections`` requests at once,
the others waiting their turn; a slot is given back however its request ends."""

from __future__ import annotations

import asyncio
import socket

import httpx

from services.metrics.context import bounded_transport
from tests.fakellm import FakeLLM


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _body(i: int) -> dict[str, object]:
    return {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]}


def test_at_most_the_bound_in_flight_and_every_request_answered() -> None:
    fake = FakeLLM(latency_s=0.05).start()
    try:

        async def main() -> list[int]:
            async with httpx.AsyncClient(transport=bounded_transport(3), timeout=30) as http:
                responses = await asyncio.gather(
                    *(http.post(f"{fake.base_url}/chat/completions", json=_body(i)) for i in range(40))
                )
            return [r.status_code for r in responses]

        statuses = asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        fake.stop()
    assert statuses == [200] * 40
    assert len(fake.requests) == 40
    assert fake.max_in_flight == 3  # the bound, reached and never exceeded


def test_slots_come_back_after_errors_failures_and_cancellations() -> None:
    fake = FakeLLM(latency_s=0.05, fail_first=4, fail_status=500).start()
    try:

        async def main() -> tuple[list[int], int, list[str], int]:
            async with httpx.AsyncClient(transport=bounded_transport(2), timeout=30) as http:
                url = f"{fake.base_url}/chat/completions"
                # 4 upstream failures: answers like any other (their slots are released when read)
                failed = await asyncio.gather(*(http.post(url, json=_body(i)) for i in range(4)))
                # connection errors: nothing reached the pool's connection, the slot is given back
                refused: list[str] = []
                for _ in range(5):
                    try:
                        await http.post(f"http://127.0.0.1:{_closed_port()}/v1/x", json={})
                    except httpx.ConnectError as exc:
                        refused.append(type(exc).__name__)
                # cancelled while waiting for the answer
                pending = [asyncio.create_task(http.post(url, json=_body(100 + i))) for i in range(6)]
                await asyncio.sleep(0.02)
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                # and a timeout while reading
                timeouts = 0
                try:
                    await http.post(url, json=_body(200), timeout=0.001)
                except httpx.TimeoutException:
                    timeouts += 1
                # after all that, both slots are free: 10 more requests all get through, 2 at a time (the
                # judge first finishes what the cancelled requests had asked)
                while fake.in_flight:
                    await asyncio.sleep(0.01)
                fake.max_in_flight = 0
                ok = await asyncio.gather(*(http.post(url, json=_body(300 + i)) for i in range(10)))
                return [r.status_code for r in failed + ok], timeouts, refused, fake.max_in_flight

        # a lost slot would leave requests waiting forever: bounded, it fails instead
        statuses, timeouts, refused, in_flight = asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        fake.stop()
    assert statuses == [500] * 4 + [200] * 10
    assert refused == ["ConnectError"] * 5 and timeouts == 1
    assert in_flight == 2  # no slot was lost
