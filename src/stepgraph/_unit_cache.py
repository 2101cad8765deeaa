"""The unit registry kept on disk between processes: pint's own cache, used with care.

Building the registry parses about 1,000 definitions: 0.09 s, a sixth of `stepgraph
validate`. pint can keep the parsed definitions and the registry's tables as pickles
(``UnitRegistry(cache_folder=...)``); loaded from them the same registry takes 0.03 s.
Around pint's cache this module adds what a shared tool needs:

- The folder is ours: ``STEPGRAPH_UNIT_CACHE`` names it (``off`` turns the cache off);
  by default it is the user's cache folder (``~/.cache/stepgraph/units`` on Linux).
- A pickle runs code when it is read, so a folder is used only when it belongs to this
  user and no one else may write in it.
- pint writes its pickles in place; a cold cache is therefore built in a scratch folder
  inside ours and each file moved in whole (``os.replace``), and only then is a marker
  written that says the cache is complete. A process running at the same moment sees
  either no cache or a whole one.
- The names are content hashes (of our definitions, pint's version, Python's): a new pint
  release or a changed definition builds a new cache beside the old one.
- Whatever goes wrong (a read-only or full disk, a foreign folder, a damaged file) the
  registry is built in memory, as without a cache, and `last_source` says why.
"""

from __future__ import annotations

import hashlib
import os
import platform
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import pint

CACHE_VARIABLE = "STEPGRAPH_UNIT_CACHE"
_OFF = {"off", "0", "no", "false", "none"}

# How the last registry was made: "cache" (read), "cache (built)" (written now) or
# "memory: <why>". For tests and for people asking why start-up is slow.
last_source = ""


def cache_folder() -> Path | None:
    """The folder for the unit cache: `STEPGRAPH_UNIT_CACHE`, else the user's cache folder."""
    value = os.environ.get(CACHE_VARIABLE, "").strip()
    if value.lower() in _OFF:
        return None
    if value:
        return Path(value).expanduser()
    import platformdirs  # pint's own dependency; imported only when needed

    return platformdirs.user_cache_path("stepgraph", appauthor=False) / "units"


def build_registry(definitions: str, **options: Any) -> pint.UnitRegistry[Any]:
    """A registry of `definitions` (pint's format), from the disk cache when it can be."""
    global last_source
    folder = cache_folder()
    if folder is None:
        last_source = f"memory: {CACHE_VARIABLE} is off"
        return _in_memory(definitions, options)
    try:
        ureg, last_source = _cached(folder, definitions, options)
        return ureg
    except Exception as e:  # any failure of the shortcut: a read-only disk, a bad pickle...
        last_source = f"memory: the unit cache in {folder} is unusable ({type(e).__name__}: {e})"
        return _in_memory(definitions, options)


def _in_memory(definitions: str, options: dict[str, Any]) -> pint.UnitRegistry[Any]:
    ureg: pint.UnitRegistry[Any] = pint.UnitRegistry(None, **options)
    ureg.load_definitions(definitions.splitlines())
    return ureg


def _cached(
    folder: Path, definitions: str, options: dict[str, Any]
) -> tuple[pint.UnitRegistry[Any], str]:
    _private_folder(folder)
    digest = hashlib.sha256(definitions.encode("utf-8")).hexdigest()[:32]
    source = folder / f"definitions-{digest}.txt"
    if not source.is_file():
        _write_whole(source, definitions.encode("utf-8"))
    # pint names its pickles by the content, its version and Python's; so does the marker.
    versions = f"{digest}/{pint.__version__}/{sys.version}/{platform.system()}"
    ready = folder / f"ready-{hashlib.sha256(versions.encode()).hexdigest()[:32]}"
    if ready.is_file():
        try:
            return pint.UnitRegistry(source, cache_folder=folder, **options), "cache"
        except Exception:
            ready.unlink(missing_ok=True)  # damaged: the next process builds it again
            raise
    with tempfile.TemporaryDirectory(dir=folder, prefix="building-") as scratch:
        pint.UnitRegistry(source, cache_folder=scratch, **options)
        for item in Path(scratch).iterdir():
            os.replace(item, folder / item.name)
    ready.touch()
    # Read back what was written: the registry in use is the one later processes get.
    return pint.UnitRegistry(source, cache_folder=folder, **options), "cache (built)"


def _private_folder(folder: Path) -> None:
    """Create `folder` for this user only, or refuse one that others could write in."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise PermissionError(f"{folder} belongs to another user")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PermissionError(f"others may write in {folder}")


def _write_whole(path: Path, data: bytes) -> None:
    """Write `path` so that no reader ever sees part of it."""
    handle, scratch = tempfile.mkstemp(dir=path.parent, prefix="writing-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(scratch, path)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise
