"""The layout keeps its promises: one-way imports, no cycles, faces on the outside."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "stepgraph"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> nx.DiGraph:
    """Module -> module it imports at import time (imports under TYPE_CHECKING excluded)."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _targets(node, package):
                if target in modules and target != name:
                    graph.add_edge(name, target)
    return graph


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _targets(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(anchor + ([base] if base else []))
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else "(root)"


GRAPH = _imports()


def test_no_module_imports_itself_back():
    """No import cycles between modules, at import time (lazy imports inside functions too)."""
    cycles = [sorted(group) for group in nx.strongly_connected_components(GRAPH) if len(group) > 1]
    assert cycles == []


def test_folders_import_one_way():
    """Between folders, imports flow one way: no two folders import each other."""
    folders = nx.DiGraph(
        (_folder(a), _folder(b)) for a, b in GRAPH.edges if _folder(a) != _folder(b)
    )
    if "(root)" in folders:
        folders.remove_node("(root)")
    groups = nx.strongly_connected_components(folders)
    cycles = [sorted(group) for group in groups if len(group) > 1]
    assert cycles == []


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        ("journal", {"engine", "cli", "serve", "planner", "executor", "verifiers"}),
        ("telemetry", {"engine", "cli", "serve", "planner", "executor", "verifiers", "evaluation"}),
        ("tools", {"engine", "cli", "planner", "executor", "verifiers", "journal"}),
        ("executor", {"engine", "cli", "planner", "verifiers"}),
        ("verifiers", {"engine", "cli", "planner", "executor"}),
        ("planner", {"engine", "cli"}),
        ("engine", {"cli", "evaluation", "serve"}),
        ("evaluation", {"cli", "serve"}),
        ("serve", {"cli"}),
    ],
)
def test_a_stage_does_not_import_later_stages_or_faces(folder, forbidden):
    reached = {
        _folder(b) for a, b in GRAPH.edges if _folder(a) == folder and _folder(b) in forbidden
    }
    assert reached == set()


def test_nothing_outside_the_command_line_imports_it():
    """Only `python -m stepgraph` (the command's own entry point) reaches into cli/."""
    importers = sorted(
        a
        for a, b in GRAPH.edges
        if _folder(b) == "cli" and _folder(a) != "cli" and a != "stepgraph.__main__"
    )
    assert importers == []


def test_nothing_but_the_command_line_imports_the_web_face():
    """serve/ is a face like cli/: it may import anything; only cli/ (`stepgraph serve`) uses it."""
    importers = sorted(
        a for a, b in GRAPH.edges if _folder(b) == "serve" and _folder(a) not in {"serve", "cli"}
    )
    assert importers == []


def test_only_the_shared_vocabulary_sits_at_the_top_of_the_package():
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert top == [
        "__init__.py",
        "__main__.py",
        "_lazy.py",
        "_unit_cache.py",
        "exceptions.py",
        "model.py",
        "references.py",
        "task.py",
        "testing.py",
        "units.py",
        "values.py",
    ]
