"""contextfork's modules import each other without a cycle, function-local imports included.

A function-local import hides a cycle from Python but not from a reader: the two modules still
need each other. Counting those imports too means a shared piece has to move to a lower module
(as ``lifecycle/notes.py``, ``forkstub.py``, ``jinjafilters.py`` and
``package/handoff_input.py`` did) instead of being imported late.
"""

from __future__ import annotations

import ast
from pathlib import Path

import contextfork

PKG = Path(contextfork.__file__).parent


def _module_names(pkg: Path) -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in pkg.rglob("*.py"):
        parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _imported(node: ast.AST, base: str, mods: dict[str, tuple[Path, bool]]) -> set[str]:
    """The project modules one import statement loads (``from pkg import sub`` → ``pkg.sub``)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            parts = base.split(".")
            parts = parts[: len(parts) - node.level + 1]
            mod = ".".join([*parts, *([node.module] if node.module else [])])
        else:
            mod = node.module or ""
        subs = [f"{mod}.{a.name}" for a in node.names]
        names = subs if all(s in mods for s in subs) else [*subs, mod]
    else:
        return set()
    found = set()
    for name in names:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        if name:
            found.add(name)
    return found


def import_graph(pkg: Path, *, local: bool) -> dict[str, set[str]]:
    """module → the project modules it imports (``if TYPE_CHECKING`` blocks left out)."""
    mods = _module_names(pkg)
    graph: dict[str, set[str]] = {m: set() for m in mods}

    def visit(node: ast.AST, mod: str, base: str, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            nested = in_function or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            if local or not nested:
                graph[mod] |= _imported(child, base, mods) - {mod}
            visit(child, mod, base, nested)

    for mod, (path, is_pkg) in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        visit(tree, mod, mod if is_pkg else mod.rpartition(".")[0], False)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def _describe(graph: dict[str, set[str]], comps: list[list[str]]) -> str:
    lines = []
    for comp in comps:
        inside = set(comp)
        lines.append(" <-> ".join(comp))
        lines += [f"    {a} -> {b}" for a in comp for b in sorted(graph[a] & inside)]
    return "\n".join(lines)


def test_module_level_imports_form_no_cycle() -> None:
    graph = import_graph(PKG, local=False)
    assert cycles(graph) == [], _describe(graph, cycles(graph))


def test_function_local_imports_hide_no_cycle() -> None:
    graph = import_graph(PKG, local=True)
    assert cycles(graph) == [], _describe(graph, cycles(graph))


def test_the_cycle_check_finds_a_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    pkg = tmp_path / "demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from demo import b\n")
    (pkg / "b.py").write_text("def f():\n    from demo.a import x\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from demo import a\n")
    assert cycles(import_graph(pkg, local=False)) == []
    assert cycles(import_graph(pkg, local=True)) == [["demo.a", "demo.b"]]
