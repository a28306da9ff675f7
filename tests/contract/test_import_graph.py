"""The import graph of app/ and services/: no circle between modules, no import from a lower layer up.

Every import counts, wherever it is written: at the top, inside a function, under ``TYPE_CHECKING`` (a
type-only import still ties the lower module to the higher one). The layers, top to bottom:

- ``app``: HTTP, the command line, the demo;
- ``composition``: where the domains meet (the worker's handlers, the resources a process owns);
- ``domain``: one package per concern (datasets, runs, ratings, metrics, reports, ...); they may import one
  another, without circles;
- ``engines``: generic machinery the domains share and that knows none of them (jobs, the judge gateway,
  retrieval algorithms, statistics);
- ``foundation``: configuration, models, the database, errors, types, parsing helpers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LAYERS: list[tuple[str, set[str]]] = [
    ("app", {"app"}),
    ("composition", {"services.workers", "services.resources"}),
    (
        "domain",
        {
            "services.accounts",
            "services.annotations",
            "services.datasets",
            "services.deletion",
            "services.metrics",
            "services.otlp",
            "services.pairjudge",
            "services.rag",
            "services.ratings",
            "services.reports",
            "services.runs",
            "services.scores",
            "services.studies",
            "services.tasks",
        },
    ),
    (
        "engines",
        {
            "services.jobs",
            "services.judge",
            "services.retrieval",
            "services.stats",
            "services.ppi",
            "services.active_ppi",
        },
    ),
    (
        "foundation",
        {
            "services",
            "services.config",
            "services.corpus",
            "services.csvread",
            "services.db",
            "services.errors",
            "services.ingest",
            "services.kinds",
            "services.locate",
            "services.models",
            "services.offline",
            "services.repository",
            "services.stats_kernels",
            "services.types",
            "services.validation",
        },
    ),
]


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for top in ("app", "services"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def owner(name: str, known: dict[str, Path]) -> str | None:
    """The project module an imported name lives in (``a.b.c`` -> ``a.b`` when ``c`` is not a module)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Project modules ``module`` imports anywhere in its file."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            # `from a import b` imports the module a.b when there is one, else a name of a.
            names = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
        for name in names:
            target = owner(name, known)
            if target is not None and target != module:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imports(m, p, known) for m, p in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def layer_of(module: str) -> int | None:
    """The rank of the layer whose longest prefix holds ``module`` (0 is the top)."""
    best: tuple[int, int] | None = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), rank)
    return None if best is None else best[1]


def upward(edges: dict[str, set[str]]) -> list[str]:
    found = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            low, high = layer_of(source), layer_of(target)
            if low is not None and high is not None and high < low:
                found.append(f"{source} ({LAYERS[low][0]}) -> {target} ({LAYERS[high][0]})")
    return found


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in modules() if layer_of(m) is None)
    assert not unplaced, f"modules in no layer (add them to LAYERS): {unplaced}"


def test_no_import_circle() -> None:
    edges = graph()
    found = circles(edges)
    described = [
        ", ".join(c) + f"  edges: {sorted((a, b) for a in c for b in edges[a] if b in c)}" for c in found
    ]
    print("\n".join(described))
    assert not found, "import circles:\n" + "\n".join(described)


def test_no_import_from_a_lower_layer_to_a_higher_one() -> None:
    found = upward(graph())
    print("\n".join(found))
    assert not found, "upward imports:\n" + "\n".join(found)


# The checker itself, on small graphs: it must see what it is meant to see.
@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set()}, []),
        ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["a", "b"], ["c", "d"]]),
    ],
)
def test_circles_are_the_components_of_more_than_one_module(
    edges: dict[str, set[str]], expected: list[list[str]]
) -> None:
    assert circles(edges) == expected


def test_an_upward_import_is_named_with_its_layers() -> None:
    edges = {"services.jobs.worker": {"services.metrics.resources"}, "app.main": {"services.jobs.worker"}}
    assert upward(edges) == ["services.jobs.worker (engines) -> services.metrics.resources (domain)"]


def test_imports_inside_functions_and_under_type_checking_count(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from services.metrics.resources import ScoringResources\n"
        "def f():\n    from services.jobs import queue\n    import services.db\n"
    )
    known = modules()
    assert imports("services.jobs.x", source, known) == {
        "services.metrics.resources",
        "services.jobs.queue",
        "services.db",
    }
