"""The @tool decorator: a typed Python function becomes a tool with a JSON schema."""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from types import CodeType
from typing import TYPE_CHECKING, Any, get_type_hints, overload

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from stepgraph.exceptions import ToolArgumentError, ToolDefinitionError, ToolError

if TYPE_CHECKING:
    from stepgraph.model import Verdict

# The value a static check sees for an argument that is only known at run time.
UNKNOWN: Any = type("Unknown", (), {"__repr__": lambda self: "UNKNOWN"})()

Inferrer = Callable[[dict[str, Any]], Any]
# Given the step id, the arguments the tool ran with and its result: a verdict, or None
# when this result has no inverse to check.
Reverser = Callable[[str, dict[str, Any], Any], "Verdict | None"]


def _docstring_parts(doc: str) -> tuple[str, dict[str, str]]:
    """A Google-style docstring's text and ``Returns:`` section, and its ``Args:`` entries.

    The text is the description a planner reads, so a tool's "use it for / not for"
    paragraphs reach the model, not only the summary line; so does what it returns (the
    fields of a record), which a plan refers to as ``${step.field}``.
    """
    parsed = docstring_parser.parse(doc, style=docstring_parser.DocstringStyle.GOOGLE)
    text = "\n\n".join(part for part in (parsed.short_description, parsed.long_description) if part)
    paragraphs = [" ".join(part.split()) for part in text.split("\n\n") if part.strip()]
    if parsed.returns is not None and (
        returned := " ".join((parsed.returns.description or "").split())
    ):
        paragraphs.append(f"Returns: {returned}")
    arg_docs = {p.arg_name: " ".join((p.description or "").split()) for p in parsed.params}
    return "\n\n".join(paragraphs), arg_docs


def _format_validation_error(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(loc) for loc in item["loc"]) or "arguments"
        given, kind = item.get("input"), item["type"]
        hint = ""
        scalar = kind.endswith(("_type", "_parsing")) and kind not in ("dict_type", "model_type")
        if isinstance(given, dict) and given and scalar:
            # A small model passes the record a lookup returned where one of its fields is
            # wanted (`list_shareholders(company)` for the company's id)
            names = [str(name) for name in list(given)[:8]]
            hint = (
                f" (got a record with {', '.join(names)}: pass one of its fields, "
                f"e.g. ${{step.{names[0]}}})"
            )
        parts.append(f"'{where}': {item['msg']}{hint}")
    return "; ".join(parts)


def _fields_of_records(args: dict[str, Any], error: ValidationError) -> dict[str, Any]:
    """`args` with each record refused as a plain value replaced by its field of that name."""
    picked = dict(args)
    for item in error.errors():
        where, given = item["loc"], item.get("input")
        if len(where) != 1 or not isinstance(given, dict) or where[0] not in args:
            continue
        name = str(where[0])
        key = name if name in given else "id" if name.endswith("_id") and "id" in given else None
        if key is not None and not isinstance(given[key], dict | list):
            picked[name] = given[key]
    return picked


class Tool:
    """A callable the engine may run as one step, with a schema for its arguments."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        side_effects: bool = False,
        idempotent: bool = False,
        infer: Inferrer | None = None,
        reverse: Reverser | None = None,
        expression_args: Iterable[str] = (),
    ) -> None:
        self.func = func
        self.idempotent = idempotent
        self.expression_args = frozenset(expression_args)
        self.name = name or func.__name__
        self.side_effects = side_effects
        self.infer = infer
        self.reverse = reverse
        self.is_async = inspect.iscoroutinefunction(func)
        description, arg_docs = _docstring_parts(func.__doc__ or "")
        if not description:
            raise ToolDefinitionError(
                f"tool '{self.name}' needs a docstring: it is the tool's description"
            )
        self.description = description
        self.args_model = self._build_args_model(arg_docs)

    def _build_args_model(self, arg_docs: dict[str, str]) -> type[BaseModel]:
        try:
            hints = get_type_hints(self.func, include_extras=True)
        except Exception as e:  # unresolvable annotations come in many exception types
            raise ToolDefinitionError(f"tool '{self.name}': cannot read type hints: {e}") from e
        fields: dict[str, Any] = {}
        for param in inspect.signature(self.func).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolDefinitionError(f"tool '{self.name}': *args and **kwargs are not allowed")
            if param.name not in hints:
                raise ToolDefinitionError(
                    f"tool '{self.name}': argument '{param.name}' needs a type hint"
                )
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (
                hints[param.name],
                Field(default, description=arg_docs.get(param.name, "")),
            )
        config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
        model_name = "".join(part.title() for part in self.name.split("_")) + "Args"
        return create_model(model_name, __config__=config, **fields)

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the arguments, as a planner is shown it."""
        schema = self.args_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return schema

    def schema(self) -> dict[str, Any]:
        """Name, description, side effects and argument schema in one JSON-ready dict."""
        return {
            "name": self.name,
            "description": self.description,
            "side_effects": self.side_effects,
            "idempotent": self.idempotent,
            "parameters": self.parameters,
        }

    def code_fingerprint(self) -> str:
        """A short hash of the code behind the tool: the whole file that defines it.

        The file, not the function: a plugin's helpers change what its tools do too. An
        approval and a resume are bound to it, so changed code is never run unasked.
        """
        return code_fingerprint(self.func)

    def validate_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """Validate and coerce arguments; raise `ToolArgumentError` with every problem.

        A record given where a plain value is wanted, and that has a field of the
        argument's name (``company_id`` of a record with ``company_id``, or ``id`` for an
        argument named ``..._id``), gives that field: ``list_shareholders(company)`` with
        the record ``find_company`` returned is the company's id (the suite's lookups, the
        1.5B model: the step failed and the fresh plan made the same call again). Only for
        a tool without side effects.
        """
        try:
            model = self.args_model.model_validate(args)
        except ValidationError as e:
            refused = ToolArgumentError(
                f"tool '{self.name}': {_format_validation_error(e)}", tool=self.name
            )
            # only where nothing changes in the world: a side effect runs on what was
            # written, never on a field the engine picked
            picked = args if self.side_effects else _fields_of_records(args, e)
            if picked == args:
                raise refused from e
            try:
                model = self.args_model.model_validate(picked)
            except ValidationError:
                raise refused from e
        return {name: getattr(model, name) for name in type(model).model_fields}

    def literal_arg_problems(self, args: dict[str, Any], referenced: Iterable[str]) -> list[str]:
        """Check the arguments known before the run; referenced ones are checked when resolved."""
        referenced = set(referenced)
        fields = self.args_model.model_fields
        problems = [
            f"unknown argument '{name}' for tool '{self.name}' (allowed: "
            f"{', '.join(fields) or 'none'})"
            for name in args
            if name not in fields
        ]
        for name, field in fields.items():
            if name not in args:
                if field.is_required():
                    problems.append(f"missing required argument '{name}' of tool '{self.name}'")
                continue
            if name in referenced:
                continue
            try:
                self.args_model.__pydantic_validator__.validate_assignment(
                    self.args_model.model_construct(), name, args[name]
                )
            except ValidationError as e:
                problems.append(f"argument {_format_validation_error(e)}")
        return problems

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly, as plain Python."""
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r}, side_effects={self.side_effects})"


@overload
def tool(func: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    side_effects: bool = False,
    idempotent: bool = False,
    infer: Inferrer | None = None,
    reverse: Reverser | None = None,
    expression_args: Iterable[str] = (),
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    side_effects: bool = False,
    idempotent: bool = False,
    infer: Inferrer | None = None,
    reverse: Reverser | None = None,
    expression_args: Iterable[str] = (),
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function (sync or async) into a `Tool`.

    The docstring's first paragraph becomes the description and its ``Args:``
    section the argument descriptions; type hints become the JSON schema.

    Args:
        func: The function, when used as a bare ``@tool``.
        name: Tool name; defaults to the function's name.
        side_effects: True for tools that change the world (they are never re-run blindly).
        idempotent: True when running the tool twice has the effect of running it once; only
            then is a side-effecting step retried, and never while an attempt may still run.
        infer: Optional static hook: given arguments (run-time ones as `UNKNOWN`), raise
            on arguments that can never work and return a prototype of the output.
        reverse: Optional check after the run: given the step id, the arguments and the
            result, return a `Verdict` from undoing the operation (None: nothing to undo).
        expression_args: String arguments that are expressions: their references are bound
            to the exact values (an `Expression`), not interpolated as the text people read.
    """

    def wrap(inner: Callable[..., Any]) -> Tool:
        return Tool(
            inner,
            name=name,
            side_effects=side_effects,
            idempotent=idempotent,
            infer=infer,
            reverse=reverse,
            expression_args=expression_args,
        )

    return wrap(func) if func is not None else wrap


class ToolRegistry:
    """The tools an engine knows, by name."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.register(item)

    def register(self, item: Tool | Callable[..., Any]) -> Tool:
        """Add a tool (a plain function is wrapped with `tool`); a second name is refused."""
        new = item if isinstance(item, Tool) else tool(item)
        existing = self._tools.get(new.name)
        if existing is not None and existing.func is not new.func:
            raise ToolDefinitionError(f"a tool named '{new.name}' is already registered")
        self._tools[new.name] = new
        return new

    def get(self, name: str) -> Tool:
        """Return the tool called `name`; raise `ToolError` listing the known ones."""
        try:
            return self._tools[name]
        except KeyError:
            raise ToolError(f"unknown tool '{name}' (known: {', '.join(self.names())})") from None

    def names(self) -> list[str]:
        """Sorted tool names."""
        return sorted(self._tools)

    def restricted(self, allowed: Iterable[str]) -> ToolRegistry:
        """A registry with only the `allowed` tools (all of them when `allowed` is empty)."""
        allowed = list(allowed)
        if not allowed:
            return ToolRegistry(self._tools.values())
        return ToolRegistry(self._tools[name] for name in allowed if name in self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools[name] for name in self.names())

    def __len__(self) -> int:
        return len(self._tools)


def code_fingerprint(func: Callable[..., Any]) -> str:
    """A short hash of `func`'s own bytecode and of the whole source file defining it.

    The file: a plugin's helpers change what its tools do too. The bytecode: two tools
    of one file (or a file edited while loaded) still differ.
    """
    target = inspect.unwrap(func)
    code = getattr(target, "__code__", None)
    parts = [_code_text(code) if code is not None else type(target).__qualname__]
    try:
        source = inspect.getsourcefile(target)
    except TypeError:  # a built-in function or a callable object without a file
        source = None
    if source is not None:
        try:
            stat = os.stat(source)
        except OSError:
            pass
        else:
            parts.append(_file_digest(source, stat.st_mtime_ns, stat.st_size))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _code_text(code: CodeType) -> str:
    """The bytecode, names and constants of a code object, without addresses (stable)."""
    consts = [_const_text(c) for c in code.co_consts]
    return f"{code.co_qualname}|{code.co_code.hex()}|{code.co_names}|{consts}"


def _const_text(const: object) -> str:
    if isinstance(const, CodeType):
        return _code_text(const)
    if isinstance(const, frozenset):  # `x in {...}`: its order changes with the hash seed
        return f"frozenset({sorted(map(_const_text, const))})"
    if isinstance(const, tuple):
        return f"({', '.join(map(_const_text, const))})"
    return repr(const)


@lru_cache(maxsize=256)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    """The hash of one file as it is now (the stat in the key: an edit reads it again)."""
    try:
        with open(path, "rb") as file:
            return hashlib.sha256(file.read()).hexdigest()[:16]
    except OSError:
        return f"unreadable-{mtime_ns}-{size}"


def load_plugin(path: Path) -> list[Tool]:
    """Import a Python file and return the tools defined at its top level."""
    if not path.is_file():
        raise ToolDefinitionError(f"plugin file not found: {path}")
    module_name = f"stepgraph_plugin_{abs(hash(path.resolve()))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ToolDefinitionError(f"cannot import plugin {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the user's module may raise anything while importing
        del sys.modules[module_name]
        raise ToolDefinitionError(f"plugin {path} failed to import: {type(e).__name__}: {e}") from e
    return [value for value in vars(module).values() if isinstance(value, Tool)]
