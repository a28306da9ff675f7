"""Settings live in services.config so that the worker and the domain share one typed configuration."""

from services.config import (
    EmbeddingSettings,
    GeneratorSettings,
    JobSettings,
    JudgeSettings,
    LLMEndpoint,
    RatingSettings,
    RetrievalSettings,
    ScoringSettings,
    Settings,
    get_settings,
)

__all__ = [
    "EmbeddingSettings",
    "GeneratorSettings",
    "JobSettings",
    "JudgeSettings",
    "LLMEndpoint",
    "RatingSettings",
    "RetrievalSettings",
    "ScoringSettings",
    "Settings",
    "get_settings",
]
