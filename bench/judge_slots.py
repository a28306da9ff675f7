"""The cost of the judge bound shared through PostgreSQL (services/judge/slots.py) beside the obvious
alternative, a per-process asyncio.Semaphore (which does not bound several processes together).

``--processes`` slot sets (one connection each, as many processes would have) share ``--bound`` slots;
``--calls`` calls of ``--latency`` seconds are spread over them. Printed per variant: wall time, the ideal
(calls x latency / bound), efficiency (ideal / wall), the most calls at once, and the slot's own cost per call
at zero latency (acquire + release).

    python bench/judge_slots.py --pg-url postgresql+psycopg://postgres@127.0.0.1:5432/ragmeta_bench
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


async def run(groups: list[Any], calls: int, latency: float) -> tuple[float, int]:
    now = peak = 0

    async def call(bound: Any) -> None:
        nonlocal now, peak
        async with bound:
            now += 1
            peak = max(peak, now)
            if latency:
                await asyncio.sleep(latency)
            now -= 1

    t0 = time.perf_counter()
    await asyncio.gather(*(call(groups[i % len(groups)]) for i in range(calls)))
    return time.perf_counter() - t0, peak


class _Slot:
    """JudgeSlots.slot() as a reusable async context manager for ``run``."""

    def __init__(self, slots: Any) -> None:
        self.slots = slots
        self._held: list[int] = []

    async def __aenter__(self) -> None:
        self._held.append(await self.slots.acquire())

    async def __aexit__(self, *_: Any) -> None:
        await self.slots.release(self._held.pop())


async def main(args: argparse.Namespace) -> None:
    from services.jobs.connection import conninfo
    from services.judge.slots import JudgeSlots

    info = conninfo(args.pg_url)
    print(
        f"{args.processes} slot sets, bound {args.bound}, {args.calls} calls of "
        f"{args.latency * 1000:.0f} ms; ideal {args.calls * args.latency / args.bound:.2f} s"
    )
    print(f"{'variant':52} {'wall s':>7} {'effic.':>7} {'most at once':>13}")
    for latency in (args.latency, 0.0):
        local = [asyncio.Semaphore(args.bound) for _ in range(args.processes)]
        wall, peak = await run(local, args.calls, latency)
        ideal = args.calls * latency / args.bound
        label = f"per-process Semaphore({args.bound}) x {args.processes} (not one bound)"
        print(f"{label:52} {wall:7.2f} {ideal / wall if latency else float('nan'):7.2f} {peak:13d}")
        sets = [JudgeSlots(info, args.bound, poll_s=0.02) for _ in range(args.processes)]
        try:
            wall_s, peak_s = await run([_Slot(s) for s in sets], args.calls, latency)
        finally:
            for s in sets:
                await s.aclose()
        label = f"shared slots (advisory locks), latency {latency * 1000:.0f} ms"
        print(f"{label:52} {wall_s:7.2f} {ideal / wall_s if latency else float('nan'):7.2f} {peak_s:13d}")
        if not latency:
            print(
                f"slot cost per call at 0 ms (acquire + release, {args.bound} in flight): "
                f"{wall_s / args.calls * 1000 * args.bound:.2f} ms per slot holder; "
                f"{wall_s / args.calls * 1000:.2f} ms of wall per call"
            )


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pg-url", required=True)
    p.add_argument("--processes", type=int, default=3)
    p.add_argument("--bound", type=int, default=8)
    p.add_argument("--calls", type=int, default=800)
    p.add_argument("--latency", type=float, default=0.1)
    asyncio.run(main(p.parse_args()))
