"""Field types shared by request schemas."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

# The largest id the store holds (a signed 64-bit integer on both databases), and the bound of every other
# integer a request may carry (offsets, positions, versions, rubric levels, counts): nothing larger is
# meaningful, and a larger one would reach the database as an out-of-range parameter.
MAX_ID = 2**63 - 1
MAX_INT = 2**31 - 1


def _not_a_boolean(value: Any) -> Any:
    # pydantic's lax mode reads true/false as 1/0; a number field of a JSON body must hold a number.
    if isinstance(value, bool):
        raise ValueError("must be a number, not true or false")
    return value


Number = Annotated[float, BeforeValidator(_not_a_boolean)]
# A whole number that is not true or false, for fields with bounds of their own. The optional ones check
# before the union, so that the field's bounds reach the integer in the schema (minimum/maximum).
Int = Annotated[int, BeforeValidator(_not_a_boolean)]
OptionalInt = Annotated[int | None, BeforeValidator(_not_a_boolean)]
OptionalNumber = Annotated[float | None, BeforeValidator(_not_a_boolean)]
Integer = Annotated[int, Field(ge=-MAX_INT, le=MAX_INT), BeforeValidator(_not_a_boolean)]
