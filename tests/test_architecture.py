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


def _imports(*, typing_too: bool = False) -> nx.DiGraph:
    """Module -> module it imports at import time (imports under TYPE_CHECKING excluded,
    unless `typing_too`: then every import the module names, wherever it stands)."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = _all_imports(tree) if typing_too else _runtime_imports(tree)
        for node in found:
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


def _all_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


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


def _is_package(module: str) -> bool:
    return (PACKAGE.parent / module.replace(".", "/") / "__init__.py").is_file()


def test_no_two_modules_of_a_folder_name_each_other_even_for_types():
    """Inside each folder no circle of imports, counting those under TYPE_CHECKING: a
    type-only import back is still two modules that must be read together. A folder's
    `__init__` only re-exports, and is left out."""
    graph = _imports(typing_too=True)
    inside = nx.DiGraph(
        (a, b)
        for a, b in graph.edges
        if a.rpartition(".")[0] == b.rpartition(".")[0]
        and not _is_package(a)
        and not _is_package(b)
    )
    cycles = [sorted(group) for group in nx.strongly_connected_components(inside) if len(group) > 1]
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


FACES = {"cli", "serve", "mcp_server", "evaluation"}
STAGES = {"tools", "planner", "executor", "verifiers", "engine", "journal", "telemetry"}


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        ("journal", {"engine", "planner", "executor", "verifiers", *FACES}),
        ("telemetry", {"engine", "planner", "executor", "verifiers", *FACES}),
        ("tools", {"engine", "planner", "executor", "verifiers", "journal", *FACES}),
        ("executor", {"engine", "planner", "verifiers", *FACES}),
        ("verifiers", {"engine", "planner", "executor", *FACES}),
        ("planner", {"engine", *FACES}),
        ("engine", FACES),
        ("evaluation", FACES - {"evaluation"}),
        ("serve", FACES - {"serve"}),
        ("mcp_server", FACES - {"mcp_server"}),
        ("guards", {*FACES, *STAGES}),
        ("units", {*FACES, *STAGES}),
    ],
)
def test_a_stage_does_not_import_later_stages_or_faces(folder, forbidden):
    """A face imports no other face (each installs alone, with its own extra)."""
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


@pytest.mark.parametrize("face", ["serve", "mcp_server"])
def test_nothing_but_the_command_line_imports_a_network_face(face):
    """serve/ and mcp_server/ are faces like cli/: only cli/ (`serve`, `mcp` commands) uses them."""
    importers = sorted(
        a for a, b in GRAPH.edges if _folder(b) == face and _folder(a) not in {face, "cli"}
    )
    assert importers == []


def test_only_the_faces_use_the_network_guards():
    """guards/ is what faces check before a request acts; no stage has a request to check."""
    importers = sorted(
        a for a, b in GRAPH.edges if _folder(b) == "guards" and _folder(a) not in FACES | {"guards"}
    )
    assert importers == []


def _eager_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported: none inside a function or TYPE_CHECKING."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _third_party_at_import(folder: str) -> dict[str, list[str]]:
    """Each package outside stepgraph that importing `folder` imports, with the modules that do."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    eager = nx.DiGraph()
    outside: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _eager_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.level or node.module is None):
                tops = []  # relative: inside stepgraph
            elif isinstance(node, ast.ImportFrom):
                tops = [node.module.split(".")[0]]
            else:
                tops = [alias.name.split(".")[0] for alias in node.names]
            for top in set(tops) - {"stepgraph", "__future__"}:
                outside.setdefault(name, set()).add(top)
            for target in _targets(node, package):
                if target in modules and target != name:
                    eager.add_edge(name, target)
    reached = {name for name in modules if _folder(name) == folder}
    reached |= {
        found for name in list(reached) if name in eager for found in nx.descendants(eager, name)
    }
    # Importing a module imports its packages first (stepgraph.serve before stepgraph.serve._app).
    reached |= {
        ".".join(name.split(".")[:i]) for name in reached for i in range(1, name.count(".") + 1)
    }
    by_package: dict[str, list[str]] = {}
    for name in sorted(reached):
        for top in outside.get(name, ()):
            by_package.setdefault(top, []).append(name)
    return by_package


@pytest.mark.parametrize(
    ("face", "other_extra"),
    [("serve", {"mcp"}), ("mcp_server", {"fastapi", "jinja2", "multipart"})],
)
def test_a_network_face_imports_nothing_of_the_other_face_s_extra(face, other_extra):
    """`stepgraph serve` starts with only [serve] installed, `stepgraph mcp` with only [mcp]."""
    reached = _third_party_at_import(face)
    own = {"serve": "fastapi", "mcp_server": "mcp"}[face]
    assert own in reached  # the reading finds a face's own extra: it would find the other's
    assert {package: via for package, via in reached.items() if package in other_extra} == {}


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
        "values.py",
    ]


# What tests the package as a whole, not one folder of it: these stay at the top of tests/.
CROSS_CUTTING_TESTS = {
    "test_architecture.py", "test_examples.py", "test_extras.py", "test_public_api.py",
    "test_readme.py", "test_task.py", "test_task_files.py",
}  # fmt: skip


def test_tests_mirror_the_package():
    """A test of one folder lives in its folder under tests/ (CONVENTIONS.md): found by place."""
    tests = Path(__file__).resolve().parent
    flat = {path.name for path in tests.glob("test_*.py")}
    assert flat <= CROSS_CUTTING_TESTS, sorted(flat - CROSS_CUTTING_TESTS)
    folders = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists()}
    mirrored = {path.relative_to(tests).parts[0] for path in tests.glob("*/**/test_*.py")}
    assert mirrored <= folders | {"bench"}, sorted(mirrored - folders - {"bench"})
