"""What the side-by-side benches share: a free loopback port, and another revision's tree to run beside."""

from __future__ import annotations

import socket
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def extract(rev: str) -> Path:
    """The tree of ``rev`` in a temporary directory (git archive), to run the same measurement on."""
    base = Path(tempfile.mkdtemp()) / "baseline"
    base.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    return base
