"""The SDK's wiring: four tools over `StepgraphMcp`, described so a client needs no manual.

Each parameter carries its description in the input schema, each result is a pydantic
model (the SDK publishes its JSON schema as `outputSchema` and checks what is sent), the
hints say what a tool may change, an argument the tool does not take is refused (not
silently dropped: `approve` is no way to approve), and a `run` reports each step that
settles as a progress notification when the client asks for progress.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Callable
from typing import Annotated, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import Field

import stepgraph
from stepgraph.journal import JournalEvent, Listener
from stepgraph.mcp_server._face import StepgraphMcp
from stepgraph.mcp_server._progress import ProgressNote, StepProgress
from stepgraph.mcp_server._results import Planned, Replayed, RunReport, Validation

INSTRUCTIONS = (
    "stepgraph runs a plan of tool calls (unit conversions, calculations, lookups) and "
    "re-checks every number. Give a task as `task_file` (a YAML file under the server's "
    "root), as `task` (an object with goal, inputs, tools, plan) or as a plain `goal`. "
    "Use `validate` to check a plan, `plan` to have the model write one, `run` to get a "
    "verified answer with its journal, and `replay` to re-run a journal without tools. "
    "Values come as data: a quantity's value and unit apart, with a display string."
)

TaskFile = Annotated[
    str | None,
    Field(description="A task file (YAML) under the server's root, e.g. 'migration.yaml'."),
]
TaskObject = Annotated[
    dict[str, Any] | None,
    Field(
        description="A task as an object: goal, inputs, tools, plan (not plugins or "
        "mcp_servers, which run code on the server: those need a task file)."
    ),
]
Goal = Annotated[
    str | None,
    Field(description="A goal in plain language, its numbers and units included; needs a model."),
]
PlanObject = Annotated[
    dict[str, Any] | None,
    Field(
        description="A plan (steps, checks, answer), as the `plan` tool returns it, in place "
        "of the task's own (or the model's)."
    ),
]
Inputs = Annotated[
    dict[str, str] | None,
    Field(description="Input overrides, name to value with its unit, e.g. {'data': '10 TiB'}."),
]
JournalFile = Annotated[
    str, Field(description="A journal file (.jsonl) under the server's root, as `run` names it.")
]


class StrictServer(MCPServer[Any]):
    """An MCP server whose tools refuse arguments they do not take, with a clear tool error.

    The SDK drops unknown arguments silently; a client that misspells `inputs` or thinks
    `approve` approves would get a run it did not ask for, and believe otherwise.
    """

    def __init__(self, tools: list[Tool], **settings: Any) -> None:
        for tool in tools:
            tool.parameters["additionalProperties"] = False  # said in the schema, too
        self.parameters = {tool.name: list(tool.parameters.get("properties", {})) for tool in tools}
        super().__init__(tools=tools, **settings)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool by name, refusing arguments it does not take.

        Raises:
            ToolError: an argument the tool does not take, and what the SDK raises.
        """
        known = self.parameters.get(name)
        unknown = sorted(set(arguments) - set(known)) if known is not None else []
        if unknown:
            names = ", ".join(repr(argument) for argument in unknown)
            raise ToolError(
                f"Error executing tool {name}: unknown argument {names}; "
                f"{name} takes {', '.join(known or []) or 'no arguments'}"
            )
        return await super().call_tool(name, arguments, context)


def build_server(face: StepgraphMcp) -> MCPServer[Any]:
    """The MCP server: four tools over `face`, with hints a client may rely on."""
    checks_only = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)

    def validate(
        task_file: TaskFile = None, task: TaskObject = None, plan: PlanObject = None
    ) -> Validation:
        """Check a plan before anything runs: graph, tools, argument schemas, references, units.

        Imports and starts nothing: a task with plugins or MCP servers is refused.
        """
        return face.validate(task_file, task, plan)

    def plan(
        task_file: TaskFile = None,
        task: TaskObject = None,
        goal: Goal = None,
        inputs: Inputs = None,
    ) -> Planned:
        """Have the model write a validated plan (a step graph) for a task; nothing runs."""
        return face.plan(task_file, task, goal, inputs)

    async def run(
        ctx: Context[Any, Any],
        task_file: TaskFile = None,
        task: TaskObject = None,
        goal: Goal = None,
        plan: PlanObject = None,
        inputs: Inputs = None,
    ) -> RunReport:
        """Run a task: plan if needed, execute, re-verify every number, answer; journaled.

        A plan with side effects is not run unasked, and not on the client's word: the
        run parks (status 'awaiting_approval', with the plan, its inputs and the run id)
        until a person decides with `stepgraph approve RUN_ID` or the web page. With a
        progress token, each step that settles is a progress notification.
        """

        def work(listener: Listener) -> RunReport:
            return face.run(task_file, task, goal, plan, inputs, listeners=[listener])

        return await _reporting_progress(ctx, work)

    def replay(journal: JournalFile) -> Replayed:
        """Re-run a recorded run from its journal, with no tool and no model; report differences."""
        return face.replay(journal)

    def described(fn: Callable[..., Any], title: str, hints: ToolAnnotations) -> Tool:
        # The docstring without its indentation: clients show the description as it is.
        return Tool.from_function(
            fn, title=title, description=inspect.cleandoc(fn.__doc__ or ""), annotations=hints
        )

    tools = [
        described(validate, "Validate a plan", checks_only),
        described(plan, "Plan a task", ToolAnnotations(readOnlyHint=True, openWorldHint=True)),
        # run may run tools with side effects (after a person's approval), and calls the
        # model and whatever the task's tools reach.
        described(
            run,
            "Run a task, verified",
            ToolAnnotations(
                readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True
            ),
        ),
        described(replay, "Replay a journal", checks_only),
    ]
    return StrictServer(
        tools,
        name="stepgraph",
        version=stepgraph.__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
    )


async def _reporting_progress(
    ctx: Context[Any, Any], work: Callable[[Listener], RunReport]
) -> RunReport:
    """`work` in a worker thread, its settled steps sent to the client as they settle.

    The engine calls listeners on its own threads, holding the journal's lock: a listener
    only hands the note to the event loop (never waits on the client), and a task there
    sends it. Progress is a courtesy: a client gone away does not stop the run.
    """
    progress = StepProgress()
    token = anyio.lowlevel.current_token()
    send, receive = anyio.create_memory_object_stream[ProgressNote](max_buffer_size=math.inf)

    def listener(event: JournalEvent) -> None:
        note = progress.see(event)
        if note is None:
            return
        # The loop or the forwarding task may be gone: the journal has the step all the same.
        with contextlib.suppress(
            RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError
        ):
            anyio.from_thread.run_sync(send.send_nowait, note, token=token)

    async def forward() -> None:
        with receive:
            async for note in receive:
                try:
                    await ctx.report_progress(note.progress, note.total, note.message)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return  # the client went away: the run goes on, journaled

    outcome: RunReport | Exception
    async with anyio.create_task_group() as group:
        group.start_soon(forward)
        with send:  # closed when the run ends: the forwarding task then stops
            try:
                outcome = await anyio.to_thread.run_sync(work, listener)
            except Exception as e:  # raised below as it is: the group would wrap it in a group
                outcome = e
    if isinstance(outcome, Exception):
        raise outcome
    return outcome
