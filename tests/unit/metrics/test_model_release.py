"""Loaded models are kept while batches use them and released once none has for ``jobs.model_idle_s``: an
idle worker releases them, and the next batch that needs one loads it again."""

from __future__ import annotations

from pathlib import Path

from services.config import Settings
from services.jobs.registry import JobContext
from services.jobs.worker import Worker
from services.metrics.resources import ScoringResources


def _resources(tmp_path: Path, idle_s: float) -> ScoringResources:
    settings = Settings(data_dir=tmp_path, jobs={"model_idle_s": idle_s})  # type: ignore[arg-type]
    return ScoringResources(settings)


def test_a_model_used_recently_is_kept_and_an_idle_one_released(tmp_path: Path) -> None:
    resources = _resources(tmp_path, 300.0)
    loads: list[object] = []

    def load() -> object:
        loads.append(object())
        return loads[-1]

    try:
        first = resources.model(("embeddings", "m"), load)
        assert resources.release_models(3600.0) == []  # used a moment ago
        assert resources.model(("embeddings", "m"), load) is first
        assert resources.release_models(0.0) == [("embeddings", "m")]
        again = resources.model(("embeddings", "m"), load)
        assert again is not first and len(loads) == 2  # loaded again when asked for
    finally:
        resources.close()


def test_an_idle_worker_releases_the_models_no_batch_used(tmp_path: Path) -> None:
    resources = _resources(tmp_path, 0.0)
    try:
        resources.model(("bertscore", "m"), object)
        worker = Worker(JobContext(None, resources.settings, resources))  # type: ignore[arg-type]
        worker.release_idle()
        assert resources.release_models(0.0) == []  # nothing left to release
        kept = _resources(tmp_path, 3600.0)
        try:
            model = kept.model(("bertscore", "m"), object)
            Worker(JobContext(None, kept.settings, kept)).release_idle()  # type: ignore[arg-type]
            assert kept.model(("bertscore", "m"), object) is model
        finally:
            kept.close()
    finally:
        resources.close()
