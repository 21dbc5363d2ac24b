"""The tree reads as the design: no module imports one that imports it back (at module level or
inside a function, where a circle only waits for the call), and no folder holds more than fifteen
modules side by side."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("dashboard", "projections", "benchmarks")
MOST_MODULES_IN_A_FOLDER = 15


def _module_files() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _imported(node: ast.AST, modules: dict[str, Path], package: str) -> Iterator[str]:
    """The project modules one import statement names: ``from a import b`` names ``a.b`` when that
    is a module, else ``a``."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in modules:
                yield alias.name
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parent = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parent, base]).strip(".")
        for alias in node.names:
            if f"{base}.{alias.name}" in modules:
                yield f"{base}.{alias.name}"
            elif base in modules:
                yield base


def _import_graph() -> dict[str, set[str]]:
    modules = _module_files()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), filename=str(path))
        graph[name] = {
            target
            for node in ast.walk(tree)
            for target in _imported(node, modules, package)
            if target != name
        }
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
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
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert _circles(_import_graph()) == []


def test_the_cycle_finder_finds_a_circle_through_a_function_level_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_no_folder_holds_more_than_fifteen_modules_side_by_side() -> None:
    crowded = {}
    for package in ("dashboard", "projections"):
        for folder in [ROOT / package, *(p for p in (ROOT / package).rglob("*") if p.is_dir())]:
            if folder.name in ("migrations", "__pycache__"):
                continue
            count = len(list(folder.glob("*.py")))
            if count > MOST_MODULES_IN_A_FOLDER:
                crowded[str(folder.relative_to(ROOT))] = count
    assert crowded == {}


def test_every_package_says_what_it_owns() -> None:
    silent = [
        str(init.relative_to(ROOT))
        for package in ("dashboard", "projections")
        for init in (ROOT / package).rglob("__init__.py")
        if "migrations" not in init.parts
        and "commands" not in init.parts
        and "templatetags" not in init.parts
        and ast.get_docstring(ast.parse(init.read_text())) is None
    ]
    assert silent == []
