"""The Ragas adapter's per-process JSON schema of an output model: what pydantic itself builds, per set of
arguments, and a copy each time (a caller editing it changes nothing for the next)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from services.metrics.judges.ragas import _cache_json_schema


class Verdict(BaseModel):
    statement: str = Field(description="a statement")
    verdict: int


class Verdicts(BaseModel):
    statements: list[Verdict]


def test_the_cached_schema_is_pydantics_and_a_copy_each_time() -> None:
    own = Verdicts.model_json_schema()
    serialization = Verdicts.model_json_schema(mode="serialization", by_alias=False)
    _cache_json_schema(Verdicts)
    _cache_json_schema(Verdicts)  # once is enough; twice changes nothing
    first = Verdicts.model_json_schema()
    assert first == own
    first["properties"]["statements"]["title"] = "edited"
    assert Verdicts.model_json_schema() == own
    assert Verdicts.model_json_schema(mode="serialization", by_alias=False) == serialization
    # another class is untouched, and a subclass gets its own schema
    assert Verdict.model_json_schema() == BaseModel.model_json_schema.__func__(Verdict)  # type: ignore[attr-defined]

    class More(Verdicts):
        extra: str

    assert "extra" in More.model_json_schema()["properties"]
