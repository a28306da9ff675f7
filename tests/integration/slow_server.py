"""Launches the real service with a slowed-down BLEU adapter so a test can kill it mid-job.

Only the launcher is patched (the timing of one metric, small scoring batches); the service, its worker and
its database are the real ones. The worker runs as a thread of this process (``worker_processes=0``): worker
processes would not see the patch.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from services.metrics import classic

_original = classic.BleuAdapter.compute


async def _slow(self: Any, samples: Any, ctx: Any) -> Any:
    await asyncio.sleep(0.15 * len(samples))
    return await _original(self, samples, ctx)


classic.BleuAdapter.compute = _slow  # type: ignore[method-assign]
os.environ["RAGMETA_JOBS__WORKER_PROCESSES"] = "0"
os.environ["RAGMETA_JOBS__SCORING_BATCH_SIZE"] = "2"

if __name__ == "__main__":
    from app.cli import main

    sys.exit(main(["serve", "--host", "127.0.0.1", "--port", sys.argv[1]]))
