"""Field types shared by request schemas."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator


def _not_a_boolean(value: Any) -> Any:
    # pydantic's lax mode reads true/false as 1/0; a number field of a JSON body must hold a number.
    if isinstance(value, bool):
        raise ValueError("must be a number, not true or false")
    return value


Number = Annotated[float, BeforeValidator(_not_a_boolean)]
Integer = Annotated[int, BeforeValidator(_not_a_boolean)]
