"""`/docs`: the HTTP API's reference, drawn here from the OpenAPI schema.

FastAPI's own /docs (Swagger UI) and /redoc load their scripts from a CDN, and no installed
package ships them: offline, or behind a proxy that blocks the CDN, they are blank pages.
This page is served by the server itself, with no script and no other host: each
operation with its parameters, its request body's fields and its responses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

_METHODS = ("get", "post", "put", "patch", "delete")


@dataclass
class Param:
    """A parameter or a body field: its name, where it goes, its type, whether it is needed."""

    name: str
    where: str  # path, query, header, body
    type: str
    required: bool
    description: str


@dataclass
class Operation:
    """One method on one path, as the reference lists it."""

    method: str
    path: str
    summary: str
    description: str
    fields: list[Param] = field(default_factory=list)
    body: str | None = None  # the request body's schema name
    responses: list[tuple[str, str]] = field(default_factory=list)  # (status, description)

    @property
    def anchor(self) -> str:
        """An id for the operation's section, for links to it."""
        return f"{self.method}-{self.path}".replace("/", "-").replace("{", "").replace("}", "")


def _type(schema: dict[str, Any]) -> str:
    """A schema's type in a few words: string, integer <= 5000, StartRun, string or null."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(_type(option) for option in schema["anyOf"])
    kind = str(schema.get("type", "any"))
    if kind == "array" and "items" in schema:
        return f"list of {_type(schema['items'])}"
    if "enum" in schema:
        return " | ".join(str(value) for value in schema["enum"])
    bounds = [
        f"{sign} {schema[key]}"
        for key, sign in (("minimum", ">="), ("maximum", "<="), ("exclusiveMinimum", ">"))
        if key in schema
    ]
    return " ".join([kind, *bounds])


def operations(spec: dict[str, Any]) -> list[Operation]:
    """Every operation of an OpenAPI document, in its order, with what a caller sends."""
    schemas = spec.get("components", {}).get("schemas", {})
    found: list[Operation] = []
    for path, methods in spec.get("paths", {}).items():
        for method in _METHODS:
            op = methods.get(method)
            if op is None:
                continue
            entry = Operation(
                method.upper(),
                path,
                op.get("summary", ""),
                op.get("description", ""),
                responses=[
                    (status, str(answer.get("description", "")))
                    for status, answer in op.get("responses", {}).items()
                ],
            )
            for param in op.get("parameters", []):
                entry.fields.append(
                    Param(
                        param["name"],
                        param.get("in", ""),
                        _type(param.get("schema", {})),
                        bool(param.get("required")),
                        param.get("description", "")
                        or param.get("schema", {}).get("description", ""),
                    )
                )
            content = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            body = content.get("schema")
            if body:
                entry.body = _type(body)
                model = schemas.get(entry.body, {})
                required = set(model.get("required", []))
                for name, prop in model.get("properties", {}).items():
                    entry.fields.append(
                        Param(
                            name,
                            "body",
                            _type(prop),
                            name in required,
                            prop.get("description", ""),
                        )
                    )
            found.append(entry)
    return found


def api_docs_router(templates: Jinja2Templates, csrf_token: str) -> APIRouter:
    """The `/docs` page (not itself part of the schema it shows)."""
    router = APIRouter(include_in_schema=False)

    @router.get("/docs", response_class=HTMLResponse)
    def api_docs(request: Request) -> HTMLResponse:
        spec = request.app.openapi()
        return templates.TemplateResponse(
            request,
            "docs.html",
            {"info": spec.get("info", {}), "operations": operations(spec), "csrf": csrf_token},
        )

    return router
