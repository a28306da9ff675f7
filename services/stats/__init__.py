"""Statistics for comparing automatic RAG metrics with human ratings (being split by topic)."""

from services.stats import passfail as _whole

globals().update({k: v for k, v in vars(_whole).items() if not k.startswith("__")})
__all__ = list(_whole.__all__)
