"""The Ragas adapter's per-process JSON schema of an output model: what pydantic itself builds, per set of
arguments, and a copy each time (a caller editing it changes nothing for the next)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from services.metrics.judges.ragas import _cache_json_schema, _wrapper_shape


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


def test_instructors_wrapper_classes_share_the_models_schema_and_are_not_kept() -> None:
    # instructor wraps the output model in a new subclass on every call: each one's schema is pydantic's,
    # served from one entry, and no wrapper class outlives its call (a key per class kept them all).
    import gc

    from instructor.v2.core.function_calls import ResponseSchema, response_schema

    class Claims(BaseModel):
        """Claims made by the answer."""

        claims: list[Verdict]

    _cache_json_schema(Claims)
    before = len(ResponseSchema.__subclasses__())
    for _ in range(50):
        wrapper = response_schema(Claims)
        assert _wrapper_shape(wrapper, Claims) is not None  # served from the one entry
        fresh = BaseModel.model_json_schema.__func__(wrapper)  # type: ignore[attr-defined]
        assert wrapper.model_json_schema() == fresh
        serialization = BaseModel.model_json_schema.__func__(wrapper, mode="serialization")  # type: ignore[attr-defined]
        assert wrapper.model_json_schema(mode="serialization") == serialization
    del wrapper
    gc.collect()
    assert len(ResponseSchema.__subclasses__()) <= before
    assert Claims.model_json_schema() == BaseModel.model_json_schema.__func__(Claims)  # type: ignore[attr-defined]

    class WithField(Claims):
        note: str

    class WithConfig(Claims):
        model_config = ConfigDict(title="Other")

    assert _wrapper_shape(WithField, Claims) is None and _wrapper_shape(WithConfig, Claims) is None
    assert "note" in WithField.model_json_schema()["properties"]  # a subclass with fields: its own schema
    assert WithConfig.model_json_schema()["title"] == "Other"
