"""Switches that keep every library offline and quiet, set once at start-up (not in each user's shell).

Without them Ragas posts telemetry on every LLM call, DeepEval and Opik phone home at exit, litellm fetches
its cost map, and Hugging Face libraries try the hub (docs/judges.md, offline and telemetry switches).
"""

from __future__ import annotations

import os

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "RAGAS_DO_NOT_TRACK": "true",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "OPIK_TRACK_DISABLE": "true",
    "OPIK_SENTRY_ENABLE": "false",
    "OPIK_ANALYTICS_ENABLE": "false",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "ANONYMIZED_TELEMETRY": "False",
    "DO_NOT_TRACK": "1",
    "MPLBACKEND": "Agg",
}


def apply_offline_env() -> dict[str, str]:
    """Set the offline switches unless the user set them explicitly; returns what is in effect."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    return {key: os.environ[key] for key in OFFLINE_ENV}
