"""Install pinned requirements into a virtualenv with uv, reading the package sources pip is configured with.

    python scripts/install_locked.py VENV_PYTHON REQUIREMENTS [REQUIREMENTS ...]

uv installs the same pinned wheels as pip, fetching and unpacking them in parallel; on a 2-core machine a
fresh environment of this project takes about half pip's time. uv does not read pip's configuration, so the
sources pip would use (``index-url``, ``extra-index-url``, ``find-links``, ``constraint`` from ``pip config
list``, which covers pip.conf and PIP_* variables) are passed to it as options. Dependencies are resolved as
pip resolves them (the lock pins what it lists; a build tool it leaves out, such as setuptools, is added), so
both give the same environment. Exit status is uv's; the Makefile falls back to pip when uv cannot be
installed or fails.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

UV_OPTION = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}


def pip_sources(python: str) -> list[str]:
    """uv options for the package sources in pip's configuration (every scope; the environment's last)."""
    out = subprocess.run(
        [python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    ).stdout
    values: dict[str, list[str]] = {}
    for line in out.splitlines():
        key, _, raw = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        if name in UV_OPTION:
            values[name] = shlex.split(raw.strip().strip("'\""))
    args: list[str] = []
    for name, urls in values.items():
        for url in urls:
            if name in {"find-links", "constraint"} and "://" not in url and not Path(url).exists():
                continue
            args += [UV_OPTION[name], url]
    if "extra-index-url" in values or "find-links" in values:
        # A pinned wheel may sit on a local index and on PyPI (torch's CPU build): take it where it is found.
        args += ["--index-strategy", "unsafe-best-match"]
    return args


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    python, requirements = argv[0], argv[1:]
    uv = Path(python).parent / "uv"
    # Bytecode compiled at install, as pip does: uv leaves it to the first import, which never writes it
    # where PYTHONDONTWRITEBYTECODE is set or site-packages is read-only, so that every process (the API,
    # each report and job worker) compiled its thousands of modules from source at every start.
    cmd = [str(uv), "pip", "install", "--python", python, "--quiet", "--compile-bytecode"]
    for path in requirements:
        cmd += ["-r", path]
    return subprocess.call(cmd + pip_sources(python))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
