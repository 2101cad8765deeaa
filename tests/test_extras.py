"""Each extra installs and works alone: the built wheel, in a fresh environment per extra.

`pip install 'stepgraph[mcp]'` must serve MCP without the web stack, and
`pip install 'stepgraph[serve]'` the web page without the MCP SDK. The wheel is built
once; each environment installs it with one extra through pip as configured on this
machine (its package index), and the face is started and spoken to, not just asked for
`--help`. About a minute in all, most of it pip: deselect with `-m "not install"`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment

from tests.conftest import EXAMPLES, ROOT
from tests.tools.conftest import free_port, wait_for_port

pytestmark = pytest.mark.install


def clean_environment() -> dict[str, str]:
    """This process's environment without what would make a venv import the source tree."""
    dropped = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    kept = {name: value for name, value in os.environ.items() if name not in dropped}
    return {**kept, "COLUMNS": "200"}  # rich wraps messages at the terminal's width


def pip(*args: str) -> None:
    """Run this interpreter's pip; its output only when it fails (it is long)."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True, text=True, env=clean_environment(), check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, f"pip {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"


@dataclass(frozen=True)
class Installed:
    """A fresh virtual environment holding the wheel with one extra."""

    folder: Path
    version: str

    @property
    def stepgraph(self) -> str:
        return str(self.folder / "bin" / "stepgraph")

    def imports(self, module: str) -> bool:
        """Whether `module` is importable in this environment."""
        probe = (
            f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
        )
        done = subprocess.run(
            [str(self.folder / "bin" / "python"), "-c", probe], env=clean_environment(), check=False
        )
        return done.returncode == 0

    def command(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.stepgraph, *args], capture_output=True, text=True, cwd=cwd,
            env=clean_environment(), stdin=subprocess.DEVNULL, check=False, timeout=120,
        )  # fmt: skip


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built once from this checkout."""
    out = tmp_path_factory.mktemp("wheel")
    pip("wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(ROOT))
    [built] = out.glob("stepgraph-*.whl")
    return built


def install(wheel: Path, extra: str, folder: Path) -> Installed:
    # No pip inside (this interpreter's pip installs into it): seconds saved per extra.
    venv.create(folder, with_pip=False, symlinks=True)
    target = str(folder / "bin" / "python")
    pip("--python", target, "install", "--quiet", "--no-compile", f"{wheel}[{extra}]")
    return Installed(folder, version=wheel.name.split("-")[1])


@pytest.fixture(scope="module")
def with_mcp(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return install(wheel, "mcp", tmp_path_factory.mktemp("venv-mcp"))


@pytest.fixture(scope="module")
def with_serve(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return install(wheel, "serve", tmp_path_factory.mktemp("venv-serve"))


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    shutil.copy(EXAMPLES / "migration.yaml", tmp_path / "migration.yaml")
    return tmp_path


def test_the_mcp_extra_alone_serves_a_verified_run_over_stdio(with_mcp, tasks):
    """No fastapi: initialize, list the tools, run the migration to 3 nights."""
    assert with_mcp.imports("mcp")
    assert not with_mcp.imports("fastapi")
    server = StdioServerParameters(
        command=with_mcp.stepgraph,
        args=["mcp", "--root", str(tasks)],
        env=get_default_environment(),  # no PYTHONPATH: the installed wheel answers
    )

    async def scenario() -> tuple[str, list[str], dict[str, object] | None]:
        async with Client(server) as client:
            assert client.server_info is not None
            tools = await client.list_tools()
            ran = await client.call_tool("run", {"task_file": "migration.yaml"})
            assert not ran.is_error, ran.content
            names = sorted(tool.name for tool in tools.tools)
            return client.server_info.version, names, ran.structured_content

    version, names, outcome = asyncio.run(scenario())
    assert version == with_mcp.version
    assert names == ["plan", "replay", "run", "validate"]
    assert outcome is not None and outcome["status"] == "verified"
    assert str(outcome["answer"]).startswith("3 nights")


def test_the_mcp_extra_alone_says_serve_needs_its_extra(with_mcp, tasks):
    refused = with_mcp.command("serve", "--port", "0", cwd=tasks)
    assert refused.returncode == 2, refused.stderr
    assert "pip install 'stepgraph[serve]'" in refused.stderr
    assert "Traceback" not in refused.stderr


@pytest.fixture
def serving(with_serve: Installed, tasks: Path) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [with_serve.stepgraph, "serve", "--port", str(port), "--runs", str(tasks / "runs")],
        cwd=tasks, env=clean_environment(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=10)
        assert b"Traceback" not in stderr, stderr.decode()


def test_the_serve_extra_alone_serves_the_run_list(with_serve, serving):
    """No mcp SDK: `stepgraph serve` starts and GET / answers with the page."""
    assert with_serve.imports("fastapi")
    assert not with_serve.imports("mcp")
    page = httpx.get(serving + "/", timeout=30)
    assert page.status_code == 200 and "stepgraph" in page.text
    runs = httpx.get(serving + "/api/runs", timeout=30)
    assert runs.status_code == 200 and runs.json() is not None


def test_the_serve_extra_alone_says_mcp_needs_its_extra(with_serve, tasks):
    refused = with_serve.command("mcp", "--root", str(tasks), cwd=tasks)
    assert refused.returncode != 0
    assert "pip install 'stepgraph[mcp]'" in refused.stderr
    assert "Traceback" not in refused.stderr
