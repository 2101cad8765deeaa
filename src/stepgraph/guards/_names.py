"""Names from a client or a task file, checked before they reach the file system.

A path with a NUL, or text that has no bytes on this system (a lone surrogate, which
JSON can escape), makes the operating system's calls raise `ValueError` / `UnicodeEncodeError`
rather than `OSError`: asked first, it is a clear refusal instead of an internal error.
"""

from __future__ import annotations

import os
import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_PART = 80  # characters of a task name or step id kept in a journal's file name


def path_problem(name: str) -> str | None:
    """Why `name` cannot name a file here, or None when it can."""
    if "\x00" in name:
        return "contains a NUL character, which no file name can hold"
    try:
        os.fsencode(name)
    except UnicodeEncodeError:
        return "contains text that no file name can hold (an unpaired surrogate)"
    return None


def file_part(text: str, default: str) -> str:
    """`text` as a piece of a file name in the runs folder: no separators, dots or controls.

    A task's name or a step's id is data: `../../x` must not put a journal outside the
    folder, nor a NUL stop it being written.
    """
    part = _UNSAFE.sub("_", text).strip("._")[:MAX_PART]
    return part or default
