"""No file in app/, services/ or ragmeta/ over 900 lines and no function over 100 (scripts/long_units.py
measures them): a unit that grows past either is cut at its phases before it lands."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_file_over_900_lines_and_no_function_over_100() -> None:
    spec = importlib.util.spec_from_file_location("long_units", ROOT / "scripts" / "long_units.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    files, functions = module.long_units([ROOT / "app", ROOT / "services", ROOT / "ragmeta"], 100, 900)
    assert files == [] and functions == [], (files, functions)
