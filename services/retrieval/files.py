"""Index files written atomically: a reader sees the old file or the new one, never a partial one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` through a temporary file in the same directory and a rename."""
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=path.parent, suffix=".json", delete=False
    ) as tmp:
        json.dump(obj, tmp, ensure_ascii=False)
    os.replace(tmp.name, path)
