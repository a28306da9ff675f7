"""List the functions over 100 lines and the files over 900 lines in app/ and services/.

A function's length runs from its ``def`` line to its last line (docstring and comments included,
decorators not); methods and nested functions count on their own, under their qualified name. Prints one
line per unit, longest first, and exits 0 whatever it finds: a listing to read, not a gate.

    python scripts/long_units.py [--max-function 100] [--max-file 900] [paths ...]
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PATHS = ("app", "services")


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int, int]]:
    """(qualified name, first line, length) of every function under ``tree``, nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{node.name}"
            assert node.end_lineno is not None
            yield name, node.lineno, node.end_lineno - node.lineno + 1
            yield from _functions(node, f"{name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def long_units(
    paths: list[Path], max_function: int, max_file: int
) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(files over ``max_file`` lines, functions over ``max_function`` lines) as (length, label) pairs."""
    files: list[tuple[int, str]] = []
    functions: list[tuple[int, str]] = []
    for base in paths:
        for path in sorted(base.rglob("*.py")) if base.is_dir() else [base]:
            text = path.read_text(encoding="utf-8")
            rel = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
            n_lines = len(text.splitlines())
            if n_lines > max_file:
                files.append((n_lines, str(rel)))
            for name, line, length in _functions(ast.parse(text, filename=str(path))):
                if length > max_function:
                    functions.append((length, f"{rel}:{line} {name}"))
    return sorted(files, reverse=True), sorted(functions, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, default=[ROOT / p for p in DEFAULT_PATHS])
    parser.add_argument("--max-function", type=int, default=100)
    parser.add_argument("--max-file", type=int, default=900)
    args = parser.parse_args()
    files, functions = long_units(args.paths, args.max_function, args.max_file)
    print(f"files over {args.max_file} lines: {len(files)}")
    for n, label in files:
        print(f"  {n:5d}  {label}")
    print(f"functions over {args.max_function} lines: {len(functions)}")
    for n, label in functions:
        print(f"  {n:5d}  {label}")


if __name__ == "__main__":
    main()
