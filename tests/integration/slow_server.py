"""Launches the real service with a slowed-down BLEU adapter so a test can kill it mid-job.

Only the launcher is patched (the timing of one metric); the service, its worker and its database are the
real ones.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from services.metrics import classic
from services.metrics.scoring import ScoringHandler

_original = classic.BleuAdapter.compute


async def _slow(self: Any, samples: Any) -> Any:
    await asyncio.sleep(0.15 * len(samples))
    return await _original(self, samples)


classic.BleuAdapter.compute = _slow  # type: ignore[method-assign]
ScoringHandler.batch_size = 2

if __name__ == "__main__":
    from app.cli import main

    sys.exit(main(["serve", "--host", "127.0.0.1", "--port", sys.argv[1]]))
