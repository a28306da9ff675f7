"""Field types shared by request schemas."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

# The largest value of an INTEGER column: 32-bit signed on PostgreSQL (SQLite's holds 64 bits, but a study
# must fit both), the type of every id column (services.models) and of the offsets, positions, versions and
# scores stored beside them. It bounds every integer a request carries, ids included: a larger one would reach
# PostgreSQL as an out-of-range parameter (a 500), where SQLite would have looked it up. Two billion rows per
# table is beyond what a study holds, so the ids are bounded rather than the columns widened to BIGINT (a
# rewrite of every table and foreign key of a deployed store for ids no one reaches).
MAX_INT = 2**31 - 1
MAX_ID = MAX_INT


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
