"""The `ragmeta` command is a client of the API for everything but the server commands: a rater running
`ragmeta task rate` once per item must not wait for the service's store, statistics and metrics to load."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICE_ONLY = ("sqlalchemy", "scipy", "numpy", "pandas", "fastapi", "services.workers", "services.resources")


def test_the_command_line_loads_none_of_the_service() -> None:
    script = f"import sys, app.cli; print(sorted(m for m in {SERVICE_ONLY!r} if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
