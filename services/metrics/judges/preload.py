"""Importing the judge libraries ahead of the first job: litellm alone takes seconds (more with Opik
installed, which it imports), and each scoring process pays it once. Worker processes call ``preload`` in a
background thread when they start with a judge configured, so the first scoring batch does not wait for it."""

from __future__ import annotations

import logging

log = logging.getLogger("ragmeta.worker")


def preload() -> None:
    """Import every installed judge library with its offline switches set; a library that fails to import is
    only logged (its metrics report it when scored)."""
    from services.offline import apply_offline_env

    apply_offline_env()
    from services.metrics.judges import deepeval, opik, ragas, ragchecker

    def sdk() -> None:
        # The SDK's resources are imported on a client's first ``.chat``: seconds of a worker's first batch.
        import openai.resources  # noqa: F401

    def embeddings() -> None:
        # Ragas' answer relevancy loads its embedding model in the first batch; the import is most of it.
        import sentence_transformers  # noqa: F401

    steps = {
        "openai": sdk,
        "sentence-transformers": embeddings,
        "deepeval": deepeval._deepeval_metrics,
        "opik": opik._load,
        "ragchecker": ragchecker._library,
        "ragas": ragas.import_library,
    }
    for name, step in steps.items():
        try:
            step()
        except Exception:
            log.warning("preloading %s failed", name, exc_info=True)
