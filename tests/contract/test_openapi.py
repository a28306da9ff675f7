from __future__ import annotations

import json

from scripts.openapi import OUT, render


def test_committed_openapi_is_up_to_date() -> None:
    assert OUT.exists(), "openapi/openapi.json is missing: run `make openapi`"
    assert json.loads(OUT.read_text(encoding="utf-8")) == json.loads(render()), (
        "openapi/openapi.json is stale: run `make openapi` and commit it"
    )


def test_every_error_response_uses_the_envelope() -> None:
    spec = json.loads(render())
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            for code, resp in op.get("responses", {}).items():
                if code.startswith(("4", "5")):
                    ref = resp["content"]["application/json"]["schema"].get("$ref", "")
                    assert ref.endswith("/ErrorEnvelope"), (path, method, code)
    assert "ErrorEnvelope" in spec["components"]["schemas"]
