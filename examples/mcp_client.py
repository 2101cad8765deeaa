"""An MCP client (the `mcp` SDK's) asking `stepgraph mcp` for a verified answer, offline.

    python examples/mcp_client.py                             # starts `stepgraph mcp` over stdio
    python examples/mcp_client.py --url http://127.0.0.1:8000/mcp   # a server already running:
        # stepgraph mcp --transport http --port 8000 --root examples

It runs examples/migration.yaml (3 nights), has a bad plan validated (the problem
is named by step), and replays the run from its journal without calling any tool.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

EXAMPLES = Path(__file__).resolve().parent

BAD_PLAN = {
    "steps": [
        {"id": "rate", "tool": "unit_convert", "args": {"value": "450 Mbps", "to_unit": "GB"}},
        {"id": "nights", "tool": "calculate", "args": {"expression": "ceil(${total} / ${rate})"}},
    ]
}


async def main(server: StdioServerParameters | str) -> None:
    async with Client(server) as client:
        tools = await client.list_tools()
        print("tools:", ", ".join(tool.name for tool in tools.tools))

        ran = (await client.call_tool("run", {"task_file": "migration.yaml"})).structured_content
        print(f"run: {ran['status']}: {ran['answer']}")
        print(f"     journal {ran['journal']}")

        task = {"goal": "nights to move 2.5 TB", "plan": BAD_PLAN}
        checked = (await client.call_tool("validate", {"task": task})).structured_content
        print("validate:", json.dumps(checked["problems"]))

        replayed = await client.call_tool("replay", {"journal": ran["journal"]})
        print("replay identical:", replayed.structured_content["identical"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running `stepgraph mcp --transport http` endpoint")
    parser.add_argument("--root", default=str(EXAMPLES), help="the server's root (stdio)")
    options = parser.parse_args()
    stdio = StdioServerParameters(
        command=sys.executable, args=["-m", "stepgraph", "mcp", "--root", options.root]
    )
    asyncio.run(main(options.url or stdio))
