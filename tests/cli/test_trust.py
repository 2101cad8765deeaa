"""A task file is code only where the user says so: looking at one runs none of it.

`validate`, `tools` and `plan --show-prompt` refuse a task that loads plugins or starts
MCP servers unless given --trust-plugins; `run` trusts the task it is asked to run.
Each task below leaves a marker file when its code runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepgraph import Engine, McpServerSpec, Task, UntrustedTaskError
from stepgraph.cli import ExitCode
from tests.conftest import EXAMPLES, flat, invoke

PLUGIN_MARKER = "plugin-ran"
SERVER_MARKER = "server-ran"

# Importing this file is what would run a stranger's code: it leaves a marker first.
MARKING_PLUGIN = f'''
from pathlib import Path

Path(__file__).with_name("{PLUGIN_MARKER}").write_text("imported")

from stepgraph import tool


@tool
def double(x: float) -> float:
    """Twice a number.

    Args:
        x: The number.
    """
    return 2 * x
'''

PLUGIN_TASK = """
name: mailed
goal: twice two
plugins: [marking.py]
tools: [double, calculate]
plan:
  steps:
    - {id: a, tool: double, args: {x: 2}}
"""

# The example server, started by a command that first leaves a marker in its folder
# (a server's working folder is the task file's).
SERVER_COMMAND = (
    f"import pathlib, runpy, sys; pathlib.Path({SERVER_MARKER!r}).touch(); "
    f"sys.argv = ['mcp_server.py']; "
    f"runpy.run_path({str(EXAMPLES / 'mcp_server.py')!r}, run_name='__main__')"
)
SERVER_TASK = {
    "name": "mailed-server",
    "goal": "the uplink's speed",
    "mcp_servers": [
        {"name": "harmless", "command": "python", "args": ["-c", SERVER_COMMAND], "timeout": 10}
    ],
    "tools": ["link_speed", "calculate"],
    "plan": {"steps": [{"id": "link", "tool": "link_speed", "args": {"link": "office-uplink"}}]},
}


@pytest.fixture
def plugin_task(tmp_path: Path) -> Path:
    """A task file whose plugin leaves `plugin-ran` beside it when imported."""
    (tmp_path / "marking.py").write_text(MARKING_PLUGIN, encoding="utf-8")
    path = tmp_path / "mailed.yaml"
    path.write_text(PLUGIN_TASK, encoding="utf-8")
    return path


@pytest.fixture
def server_task(tmp_path: Path) -> Path:
    """A task file whose MCP server command leaves `server-ran` beside it when started."""
    path = tmp_path / "mailed-server.json"
    path.write_text(json.dumps(SERVER_TASK), encoding="utf-8")
    return path


LOOKS = {
    "validate": ["validate"],
    "tools": ["tools"],
    "plan --show-prompt": ["plan", "--show-prompt"],
}


def _look(command: str, path: Path, *flags: str) -> list[str | Path]:
    first, *rest = LOOKS[command]
    return [first, path, *rest, *flags]


@pytest.mark.parametrize("command", LOOKS)
def test_looking_at_a_task_imports_no_plugin_and_says_how_to_trust_it(plugin_task, command):
    """Without --trust-plugins the plugin is not imported; exit 2 names the file and the flag."""
    result = invoke(*_look(command, plugin_task))
    assert result.exit_code == ExitCode.USAGE
    message = flat(result.output)
    assert "task 'mailed' loads plugins (marking.py): that runs code on this machine" in message
    assert "pass --trust-plugins if you trust this task file" in message
    assert not (plugin_task.parent / PLUGIN_MARKER).exists()


@pytest.mark.parametrize("command", LOOKS)
def test_looking_at_a_task_starts_no_mcp_server_and_names_its_command(server_task, command):
    """Without --trust-plugins the server is not started; the message shows its command line."""
    result = invoke(*_look(command, server_task))
    assert result.exit_code == ExitCode.USAGE
    message = flat(result.output)
    assert "task 'mailed-server' starts MCP servers (python -c import pathlib" in message
    assert "--trust-plugins" in message
    assert not (server_task.parent / SERVER_MARKER).exists()


@pytest.mark.parametrize("command", LOOKS)
def test_trust_plugins_imports_the_plugin_and_the_command_proceeds(plugin_task, command):
    """With --trust-plugins the plugin is imported and the command does its work (exit 0)."""
    result = invoke(*_look(command, plugin_task, "--trust-plugins"))
    assert result.exit_code == ExitCode.OK, result.output
    assert (plugin_task.parent / PLUGIN_MARKER).exists()
    if command != "validate":  # the plugin's tool is listed, or described to the model
        assert "double" in result.output


@pytest.mark.parametrize("command", LOOKS)
def test_trust_plugins_starts_the_server_and_the_command_proceeds(server_task, command):
    """With --trust-plugins the MCP server starts, its tools are read, and exit is 0."""
    result = invoke(*_look(command, server_task, "--trust-plugins"))
    assert result.exit_code == ExitCode.OK, result.output
    assert (server_task.parent / SERVER_MARKER).exists()


@pytest.mark.parametrize("command", LOOKS)
def test_a_task_without_plugins_or_servers_needs_no_flag(command):
    """Where a task declares no code, validate, tools and plan --show-prompt work as before."""
    result = invoke(*_look(command, EXAMPLES / "migration.yaml"))
    assert result.exit_code == ExitCode.OK, result.output


def test_running_a_task_trusts_it_without_the_flag(plugin_task, tmp_path):
    """`run` imports the plugin unasked: running a task file is the user's decision."""
    result = invoke("run", plugin_task, "--journal", tmp_path / "j.jsonl", "--json")
    assert result.exit_code == ExitCode.UNCHECKED, result.output  # the plugin has no check
    assert json.loads(result.stdout)["unverified_values"]["a"] == 4
    assert (plugin_task.parent / PLUGIN_MARKER).exists()


def test_plan_without_show_prompt_loads_plugins_as_before(plugin_task):
    """`plan` (the model is shown the plugin's tools) keeps loading them without the flag."""
    result = invoke("plan", plugin_task)
    assert result.exit_code == ExitCode.OK, result.output
    assert json.loads(result.stdout)["steps"][0]["tool"] == "double"
    assert (plugin_task.parent / PLUGIN_MARKER).exists()


@pytest.mark.parametrize("command", [["validate"], ["tools"], ["plan"]])
def test_each_looking_command_s_help_says_what_trust_plugins_does(command):
    """The flag is documented where it is taken: code on this machine, and the exit status."""
    text = flat(invoke(*command, "--help", env={"COLUMNS": "1000"}).output)  # one line each
    assert "--trust-plugins" in text
    assert "code on this machine" in text and "refused (exit 2)" in text


def test_the_exit_status_table_names_the_refusal_under_usage():
    """Exit 2's documented meaning covers a task that runs code, looked at without the flag."""
    text = flat(invoke("--help").output)
    assert "2 wrong command-line usage (or a task file that runs code" in text


def test_the_engine_refuses_untrusted_code_before_importing_it(plugin_task):
    """`trust_code=False` raises `UntrustedTaskError` with what would have run; nothing ran."""
    with pytest.raises(UntrustedTaskError) as caught:
        Engine().validate(plugin_task, trust_code=False)
    assert (caught.value.task, caught.value.plugins) == ("mailed", ["marking.py"])
    assert not (plugin_task.parent / PLUGIN_MARKER).exists()


def test_the_engine_trusts_by_default(plugin_task):
    """`Engine.prepare` and `validate` keep importing plugins when not told otherwise."""
    graph = Engine().validate(plugin_task)
    assert list(graph.nodes) == ["a"]
    assert (plugin_task.parent / PLUGIN_MARKER).exists()


def test_a_url_server_is_refused_too_and_named_by_its_url():
    """Connecting to a task's URL server is refused as well: it would send requests out."""
    task = Task(goal="g", mcp_servers=[McpServerSpec(url="http://10.0.0.1/mcp")])
    with pytest.raises(
        UntrustedTaskError, match=r"connects to MCP servers \(http://10.0.0.1/mcp\)"
    ):
        Engine().prepare(task, trust_code=False)
