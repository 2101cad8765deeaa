"""Names a package exports but imports on first use (PEP 562), to keep start-up short."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_names(
    package: str, namespace: dict[str, Any], modules: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's `__getattr__` and `__dir__` for `modules` (each name: the module holding it).

    A name is imported the first time it is asked for, then kept in the package's
    namespace, so later look-ups never come back here.
    """

    def __getattr__(name: str) -> Any:  # noqa: N807  # the module-level hook's own name
        if name not in modules:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(modules[name]), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted({*namespace, *modules})

    return __getattr__, __dir__
