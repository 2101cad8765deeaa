"""Task files: reading YAML into a `Task`, and the inputs a run starts from."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson
import pint
import yaml
from pydantic import ValidationError

from stepgraph.exceptions import (
    PlanProblem,
    PlanValidationError,
    StepgraphError,
    TaskFileError,
    UnitError,
)
from stepgraph.model import Check, StepGraph, Task, fits_a_float, shortened
from stepgraph.tools import ToolRegistry
from stepgraph.units import dimension_name, parse_quantity, parse_unit

_NUMBER_FIRST = re.compile(r"^\s*[-+]?(\d|\.\d)")

# A real task file is a few kilobytes; a limit keeps a wrong path (a log, a dump)
# from being read into memory whole. A generated plan of 100,000 steps is about 9 MB of
# JSON; a larger one is allowed by setting the variable below.
MAX_TASK_FILE_BYTES = 10_000_000
MAX_BYTES_VARIABLE = "STEPGRAPH_MAX_TASK_BYTES"

# libyaml refuses nesting deeper than 1,000 levels with a clear error; the pure-Python
# loader recurses into a RecursionError instead, which is caught below.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Deeper structures are refused before the recursive code downstream (validation,
# references, the journal) meets them; real plans nest a handful of levels.
MAX_NESTING = 100
_TOO_DEEP = f"lists and mappings nest more than {MAX_NESTING} levels deep; not a task file"


def too_deep(value: Any, limit: int = MAX_NESTING) -> bool:
    """Tell whether lists and mappings in `value` nest more than `limit` levels, without recursion.

    A node shared through YAML aliases is visited again only when reached deeper, so
    an alias bomb costs at most nodes x limit visits.
    """
    deepest: dict[int, int] = {}
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list) or deepest.get(id(item), 0) >= depth:
            continue
        if depth > limit:
            return True
        deepest[id(item)] = depth
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return False


def max_task_bytes() -> int:
    """The size limit of a task file: `STEPGRAPH_MAX_TASK_BYTES` if set, else 10 MB."""
    text = os.environ.get(MAX_BYTES_VARIABLE, "").strip().replace("_", "")
    if not text:
        return MAX_TASK_FILE_BYTES
    if not text.isdigit() or int(text) == 0:
        raise TaskFileError(
            f"{MAX_BYTES_VARIABLE}={os.environ[MAX_BYTES_VARIABLE]!r}: "
            "give the largest task file to accept, in bytes (e.g. 50000000)"
        )
    return int(text)


def load_task(path: Path, *, max_bytes: int | None = None) -> Task:
    """Read and validate a task file; every problem becomes a `TaskFileError` naming the file.

    A file whose text starts with ``{`` is read as JSON first (what a program that writes
    plans produces: a hundred times faster than YAML); if it is not JSON, as YAML.
    `max_bytes` (default: `max_task_bytes()`) refuses larger files before reading them.
    """
    limit = max_task_bytes() if max_bytes is None else max_bytes
    try:
        size = path.stat().st_size
        if size > limit:
            raise TaskFileError(
                f"the file is {size:,} bytes; a task file may be at most {limit:,} bytes "
                f"(to accept it: {MAX_BYTES_VARIABLE}={size})",
                path=str(path),
            )
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise TaskFileError("no such task file", path=str(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise TaskFileError(f"cannot read the file: {e}", path=str(path)) from e
    data = _parse(raw, text, path)
    if too_deep(data):
        raise TaskFileError(_TOO_DEEP, path=str(path))
    if data is None:
        raise TaskFileError("the file is empty; a task needs at least a 'goal'", path=str(path))
    if not isinstance(data, dict):
        raise TaskFileError(
            f"a task file must be a mapping of keys (goal, inputs, plan, ...), "
            f"not a {type(data).__name__}",
            path=str(path),
        )
    data.setdefault("name", path.stem)
    try:
        return Task.model_validate(data)
    except ValidationError as e:
        raise TaskFileError(_describe_errors(e), path=str(path)) from e


def _parse(raw: bytes, text: str, path: Path) -> Any:
    if raw.lstrip()[:1] == b"{":
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # a YAML flow mapping such as {goal: x}: YAML reads it below
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        raise TaskFileError(f"not valid YAML: {e}", path=str(path)) from e
    except RecursionError as e:  # only without libyaml
        raise TaskFileError(_TOO_DEEP, path=str(path)) from e


def _describe_errors(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"])
        if item["type"] == "extra_forbidden":
            lines.append(f"- {where}: unknown key (check the spelling)")
        else:
            lines.append(f"- {where}: {item['msg']}")
    return f"does not match the task schema ({error.error_count()} problem(s)):\n" + "\n".join(
        lines
    )


def plugins_outside(task: Task, base_dir: Path, folder: Path) -> list[str]:
    """The task's plugin files that resolve outside `folder` (as the engine finds them).

    A server trusts the code in its own folder only; the task names the rest.
    """
    root = folder.resolve()
    return [p for p in task.plugins if not (base_dir / p).resolve().is_relative_to(root)]


def parse_input(value: Any) -> Any:
    """An input value as the engine uses it: numbers with units become quantities."""
    if isinstance(value, str) and not _NUMBER_FIRST.match(value):
        return value  # text such as a company name
    return parse_quantity(value)


def resolve_inputs(task: Task, overrides: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The task's inputs with `--set name=value` overrides, each checked against its dimension."""
    values: dict[str, Any] = {}
    for name, spec in task.inputs.items():
        try:
            values[name] = _finite(parse_input(spec.value))
        except StepgraphError as e:
            raise TaskFileError(f"input '{name}': {e}") from e
    for name, text in (overrides or {}).items():
        if name not in task.inputs:
            known = ", ".join(sorted(task.inputs)) or "none"
            raise TaskFileError(
                f"--set {name}=...: the task has no input '{name}' (inputs: {known})"
            )
        try:
            new = _finite(parse_input(text))
        except StepgraphError as e:
            raise TaskFileError(f"--set {name}={text}: {e}") from e
        _check_same_kind(name, text, values[name], new)
        values[name] = new
    return values


# "inf GB", "-infinity", "NaN": text to the input reader, a number to a tool that parses it
_NOT_FINITE = re.compile(r"\s*[+-]?(?:inf(?:inity)?|nan)(?:\s+(?P<unit>.+?))?\s*", re.IGNORECASE)


def _is_not_finite(text: str) -> bool:
    """Whether `text` is inf or nan, alone or with a unit ("Inf Ltd" is a name)."""
    match = _NOT_FINITE.fullmatch(text)
    if match is None:
        return False
    if match.group("unit") is None:
        return True
    try:
        parse_unit(match.group("unit"), counts=False)
    except StepgraphError:
        return False
    return True


def _finite(value: Any) -> Any:
    """`value`, unless it is a number no float holds (inf, nan, a 400-digit int).

    Every check compares values as floats: ``1e999 TB`` converted back to itself was
    reported verified, and a 400-digit input ended `Engine.run` with an OverflowError.
    """
    if isinstance(value, str) and _is_not_finite(value):  # text, but a number to a tool
        raise UnitError(f"{value} is not a finite number the engine can compute with")
    magnitude = value.magnitude if isinstance(value, pint.Quantity) else value
    if isinstance(magnitude, bool) or not isinstance(magnitude, int | float):
        return value
    if not fits_a_float(magnitude):
        shown = shortened(str(value), 40)
        raise UnitError(f"{shown} is not a finite number the engine can compute with")
    return value


def _check_same_kind(name: str, text: str, declared: Any, new: Any) -> None:
    if type(new) is str and type(declared) is not str:  # text where a number belongs
        kind = dimension_name(declared) if isinstance(declared, pint.Quantity) else "a number"
        raise TaskFileError(f"--set {name}={text}: {text!r} is not a quantity ('{name}' is {kind})")
    if isinstance(declared, pint.Quantity) or isinstance(new, pint.Quantity):
        if dimension_name(declared) != dimension_name(new):
            raise TaskFileError(
                f"--set {name}={text}: '{name}' is {dimension_name(declared)}, "
                f"but {text!r} is {dimension_name(new)}"
            )
    elif type(declared) is str and type(new) is not str:
        raise TaskFileError(f"--set {name}={text}: '{name}' is text")


def parse_assignments(pairs: list[str]) -> dict[str, str]:
    """Parse ``name=value`` pairs from the command line."""
    result = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise TaskFileError(f"--set expects name=value, got {pair!r}")
        result[name.strip()] = value.strip()
    return result


@dataclass
class PreparedTask:
    """A task ready to plan or run: its tools and its input values."""

    task: Task
    tools: ToolRegistry
    inputs: dict[str, Any]
    base_dir: Path = field(default_factory=Path.cwd)
    declared: frozenset[str] = frozenset()  # inputs that came from the plan, not the task
    # What the task started and a run stops when it ends: its MCP servers.
    resources: ExitStack = field(default_factory=ExitStack)

    @property
    def plan(self) -> StepGraph | None:
        """The task's own plan, if it has one."""
        return self.task.plan

    @property
    def extra_checks(self) -> list[Check]:
        """Checks the task adds to any plan's."""
        return self.task.checks

    @property
    def answer(self) -> str | None:
        """The task's answer template, which replaces the plan's."""
        return self.task.answer

    @property
    def grounded(self) -> bool:
        """Whether plans are held to the goal's text: a typed goal, or a task that opts in."""
        return self.task.grounded or not set(self.inputs) - self.declared

    def for_plan(self, plan: StepGraph) -> PreparedTask:
        """This task with the inputs and constants the plan declares, for running that plan.

        Raises `PlanValidationError` when a declared value is unreadable or takes the name
        of one of the task's own inputs.
        """
        if not plan.inputs and not plan.constants:
            return self
        values, problems = declared_values(plan, taken=self.inputs)
        if problems:
            raise PlanValidationError(problems)
        return replace(self, inputs={**self.inputs, **values}, declared=frozenset(values))


def declared_values(
    plan: StepGraph, taken: Mapping[str, Any]
) -> tuple[dict[str, Any], list[PlanProblem]]:
    """The values of a plan's declared inputs and constants, and what is wrong with them.

    `taken` are the task's own inputs: a plan may not declare one of them again.
    """
    values: dict[str, Any] = {}
    problems = [
        PlanProblem(None, f"inputs.{name}: the task already has this input; refer to it")
        for name in sorted((set(plan.inputs) | set(plan.constants)) & set(taken))
    ]
    for name in sorted(set(plan.inputs) & set(plan.constants)):
        problems.append(PlanProblem(None, f"'{name}' is both an input and a constant: rename one"))
    declared: dict[str, str | float | int] = {
        **{name: item.value for name, item in plan.constants.items()},
        **{name: item.value for name, item in plan.inputs.items()},
    }
    for name, value in declared.items():
        try:
            values[name] = parse_input(value)
        except StepgraphError as e:
            problems.append(PlanProblem(None, f"inputs.{name}: {e}"))
    return values, problems
