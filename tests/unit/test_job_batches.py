"""How a job's items are cut into batches: an equal share per worker, never more than the configured cap."""

from __future__ import annotations

import math
import os

import pytest

from services.config import Settings
from services.jobs.processes import job_workers
from services.jobs.queue import batches
from services.jobs.worker import batch_size, even_batches
from services.metrics.scoring import ScoringHandler


def _shares(items: int, size: int, workers: int) -> list[int]:
    """Items each worker scores when the batches are taken in turn (what the lease loop and the queue do
    when every batch takes about as long)."""
    sizes = [min(size, items - i) for i in range(0, items, size)]
    shares = [0] * workers
    for i, n in enumerate(sizes):
        shares[i % workers] += n
    return shares


@pytest.mark.parametrize(
    ("items", "workers", "cap", "expected"),
    [
        (576, 2, 512, 288),  # Opik alone: 288 + 288, not 512 + 64
        (2880, 2, 512, 480),  # 30 metrics x 96 outputs: three rounds of two batches
        (2880, 4, 512, 360),
        (10, 3, 512, 4),
        (1, 2, 512, 1),
        (7, 1, 2, 2),
        (5, 0, 3, 3),  # no worker count: one worker
    ],
)
def test_even_batches(items: int, workers: int, cap: int, expected: int) -> None:
    size = even_batches(items, workers, cap)
    assert size == expected
    assert 1 <= size <= cap
    n_batches = math.ceil(items / size)
    rounds = math.ceil(items / (max(1, workers) * cap))
    # as few batches as the cap allows, per worker
    assert n_batches <= max(1, workers) * rounds


@pytest.mark.parametrize("items", [1, 2, 17, 63, 64, 65, 511, 512, 513, 576, 1000, 2880, 9999])
@pytest.mark.parametrize("workers", [1, 2, 3, 4])
def test_every_worker_gets_an_equal_share(items: int, workers: int) -> None:
    cap = 512
    size = even_batches(items, workers, cap)
    shares = _shares(items, size, workers)
    assert sum(shares) == items and size <= cap
    # no worker scores more than its equal share plus one item of rounding per round (a cap-sized batch
    # first would leave 512 + 64 for 576 items on two workers)
    rounds = math.ceil(items / (workers * cap))
    assert max(shares) <= items / workers + rounds


def _settings(**jobs: object) -> Settings:
    return Settings(jobs=jobs)  # type: ignore[arg-type]


def test_the_scoring_handler_sizes_batches_from_the_job_and_the_workers() -> None:
    handler = ScoringHandler()
    two = _settings(worker_processes=2, scoring_batch_size=512)
    assert job_workers(two) == 2
    assert batch_size(two, handler) == 512  # no job size: the cap
    assert batch_size(two, handler, 576) == 288
    assert batch_size(two, handler, 2880) == 480
    thread = _settings(worker_processes=0, scoring_batch_size=512)
    assert job_workers(thread) == 1
    assert batch_size(thread, handler, 576) == 288  # one worker thread: two batches under the cap
    assert batch_size(thread, handler, 300) == 300
    assert batch_size(_settings(worker_processes=2, scoring_batch_size=2), handler, 6) == 2
    # the default: one embedded worker process per core
    cores = os.cpu_count() or 1
    assert job_workers(_settings()) == cores
    assert batch_size(_settings(), handler, 96 * cores) == 96
    # workers elsewhere (`ragmeta worker`): as many as jobs.worker_processes says, else one
    assert job_workers(_settings(embedded_worker=False)) == 1
    assert job_workers(_settings(embedded_worker=False, worker_processes=3)) == 3
    assert batch_size(_settings(embedded_worker=False, worker_processes=3), handler, 576) == 192


def test_queue_batches_of_an_even_size_cover_every_item_once() -> None:
    ids = list(range(100, 676))  # 576 items
    ranges = batches(ids, even_batches(len(ids), 2, 512))
    assert ranges == [(100, 387), (388, 675)]
