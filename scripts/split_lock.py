"""Write requirements.lock (serving) and requirements-dev.lock (development and test tools) from the
environment this runs in: `.venv/bin/python scripts/split_lock.py` after `pip install` of a changed set.

A pinned package is a runtime one when it lies in the dependency closure of pyproject's
``[project].dependencies`` (extras and environment markers followed as pip follows them on this platform),
else a development one when it lies in the closure of ``[project.optional-dependencies].dev``. A package in
neither (installed by hand, or an optional import of a judge library such as langchain-classic) stays with
serving, except the coverage tools, which only tests use; both kinds are reported."""

from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
TEST_ONLY = frozenset({"coverage", "pytest-cov"})
RUNTIME_HEADER = """\
# What serving needs (`make run`, the Docker image): exact versions, torch the CPU build. The development and
# test tools are in requirements-dev.lock, which `make setup` (CI, `make test`, `make lint`) adds.
# The four judge libraries pin this set: refchecker needs transformers<5, opik caps litellm<1.106 (openai<3),
# deepeval needs click<8.4; see the commit that introduced them. deepeval itself requires pytest and its
# plugins, so those stay here. After changing dependencies, regenerate both files from a working full
# environment: scripts/split_lock.py (pip freeze, split by the dependency closure of pyproject's two lists).
"""
DEV_HEADER = """\
# Development and test tools on top of requirements.lock (installed together with it by `make setup`):
# pyproject's [dev] list and what only it pulls in. See requirements.lock for how both are regenerated.
"""


def closure(roots: list[str]) -> set[str]:
    seen: set[tuple[str, tuple[str, ...]]] = set()
    stack = [Requirement(r) for r in roots]
    while stack:
        req = stack.pop()
        key = (canonicalize_name(req.name), tuple(sorted(req.extras)))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue
        for text in dist.requires or []:
            sub = Requirement(text)
            if sub.marker is not None:
                extras = sorted(req.extras) or [""]
                if not any(sub.marker.evaluate({"extra": e}) for e in extras):
                    continue
            stack.append(sub)
    return {name for name, _ in seen}


def main() -> int:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = closure(project["dependencies"])
    dev = closure(project["optional-dependencies"]["dev"]) - runtime
    pins = {}
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"])
        if name not in ("ragmeta", "pip", "setuptools", "wheel"):  # what pip freeze leaves out too
            pins[name] = f"{dist.metadata['Name']}=={dist.version}"
    left = set(pins) - runtime - dev
    if left:
        print("in neither closure:", ", ".join(sorted(left)), file=sys.stderr)
    runtime |= left - TEST_ONLY
    dev |= left & TEST_ONLY

    def body(names: set[str]) -> str:
        return "\n".join(pins[n] for n in sorted(names & set(pins), key=lambda n: re.sub("[-_.]", "-", n)))

    (ROOT / "requirements.lock").write_text(RUNTIME_HEADER + body(runtime) + "\n")
    (ROOT / "requirements-dev.lock").write_text(DEV_HEADER + body(dev) + "\n")
    print(
        f"requirements.lock: {len(runtime & set(pins))} pins; requirements-dev.lock: {len(dev & set(pins))}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
