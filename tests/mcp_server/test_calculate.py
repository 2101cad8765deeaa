"""`stepgraph mcp`: a text input times a huge number is refused, not built (issue 20)."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment

import stepgraph
from tests.mcp_server.conftest import call

# The SDK starts the server with a scrubbed environment (no PYTHONPATH), so it would
# import whichever stepgraph is installed; this test is about the source under test.
SOURCE = str(Path(stepgraph.__file__).resolve().parents[1])


def stdio(root: Path) -> StdioServerParameters:
    """`stepgraph mcp` over stdio, importing this checkout's stepgraph."""
    args = ["-m", "stepgraph", "mcp", "--root", str(root)]
    env = {**get_default_environment(), "PYTHONPATH": SOURCE}
    return StdioServerParameters(command=sys.executable, args=args, env=env)


TEXT_TIMES_BIG = {
    "goal": "multiply x",
    "inputs": {"x": {"value": "abc"}},
    "plan": {
        "steps": [
            {"id": "big", "tool": "calculate", "args": {"expression": "${inputs.x} * 100000000"}}
        ]
    },
}


def test_validate_over_mcp_names_the_step_and_the_text_input(tmp_path: Path) -> None:
    """The validate tool reports the operand for its step; nothing is evaluated to find it."""
    outcome = call(stdio(tmp_path), "validate", {"task": TEXT_TIMES_BIG}).structured_content
    assert outcome["valid"] is False
    assert outcome["problems"] == [
        {
            "step": "big",
            "problem": "operand `${inputs.x}` is the text 'abc', not a number or quantity; "
            "arithmetic needs numbers",
        }
    ]


def test_run_over_mcp_is_a_clear_tool_error_and_leaves_a_small_journal(tmp_path: Path) -> None:
    """The run tool answers with the message, and the server's journal stays small."""
    result = call(stdio(tmp_path), "run", {"task": TEXT_TIMES_BIG})
    text = " ".join(getattr(item, "text", "") for item in result.content)
    assert "operand `${inputs.x}` is the text 'abc'" in text, result.content
    journals = list(tmp_path.rglob("*.jsonl"))
    assert journals and all(path.stat().st_size < 64_000 for path in journals)
