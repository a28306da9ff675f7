"""Settings live in services.config so that the worker and the domain share one typed configuration."""

from services.config import (
    AuthSettings,
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
    "AuthSettings",
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
