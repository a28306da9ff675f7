"""Write the committed OpenAPI contract: `python scripts/openapi.py` (or `make openapi`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "openapi" / "openapi.json"


def render() -> str:
    from app.main import create_app
    from app.settings import Settings

    app = create_app(Settings(database_url="sqlite://"))
    return json.dumps(app.openapi(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


if __name__ == "__main__":
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
