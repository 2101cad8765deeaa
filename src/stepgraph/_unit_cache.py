"""The unit registry kept on disk between processes: pint's own cache, used with care.

Building the registry parses about 1,000 definitions: 0.09 s, a sixth of `stepgraph
validate`. pint can keep the parsed definitions and the registry's tables as pickles
(``UnitRegistry(cache_folder=...)``); loaded from them the same registry takes 0.03 s.
Around pint's cache this module adds what a shared tool needs:

- The folder is ours: ``STEPGRAPH_UNIT_CACHE`` names it (``off`` turns the cache off);
  by default it is the user's cache folder (``~/.cache/stepgraph/units`` on Linux).
- A pickle runs code when it is read, so a folder is used only when it belongs to this
  user and no one else may write in it.
- A cache is one folder inside ours, ``registry-<key>``, named by a hash of our
  definitions, pint's version and Python's: a new pint release or a changed definition
  builds a new cache beside the old one. pint writes its pickles in place, so a cache is
  built in a scratch folder and renamed into place whole: a process running at the same
  moment sees no cache or a complete one, and of two built at once the first stays.
- The cache lists each of its files with its SHA-256 (``manifest.json``), checked before
  pint reads a pickle. A file changed since it was written (cut short, garbage, a pickle
  of another registry or another pint, a folder in its place, one that cannot be read)
  is a damaged cache: a pickle that loads is no proof of the right units, and a wrong
  registry would fail every run and blame the task. It is moved aside and built again,
  with one line on stderr.
- Whatever else goes wrong (a read-only or full disk, a foreign folder) the registry is
  built in memory, as without a cache, and `last_source` says why.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import stat
import sys
import tempfile
import uuid
from contextlib import suppress
from pathlib import Path
from typing import Any

import pint

CACHE_VARIABLE = "STEPGRAPH_UNIT_CACHE"
_OFF = {"off", "0", "no", "false", "none"}
_LAYOUT = 2  # of a cache folder; another layout is another key, built beside this one
_SOURCE = "definitions.txt"
_MANIFEST = "manifest.json"

# How the last registry was made: "cache" (read), "cache (built)" (written now),
# "cache (rebuilt: <why>)" (a damaged one replaced) or "memory: <why>". For tests and
# for people asking why start-up is slow.
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
    except Exception as e:  # any failure of the shortcut: a read-only disk, a foreign folder...
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
    versions = f"{_LAYOUT}/{pint.__version__}/{sys.version}/{platform.system()}"
    made = f"{definitions}\0{versions}\0{sorted(options.items())}"
    home = folder / f"registry-{hashlib.sha256(made.encode()).hexdigest()[:32]}"
    if not os.path.lexists(home):
        _build(folder, home, definitions, options)
        return _load(home, options), "cache (built)"
    why = _damage(home)
    if why is None:
        try:
            return _read(home, options), "cache"
        except Exception as e:  # intact files this pint cannot read
            why = f"{type(e).__name__}: {e}"
    why = " ".join(why.split())[:300]  # one line
    _discard(folder, home)
    _build(folder, home, definitions, options)
    ureg = _load(home, options)
    print(f"stepgraph: the unit cache {home} was damaged ({why}); built it again", file=sys.stderr)
    return ureg, f"cache (rebuilt: {why})"


def _load(home: Path, options: dict[str, Any]) -> pint.UnitRegistry[Any]:
    """The registry of a cache just built, refused unless every file is as written.

    Read back from where later processes read it: the registry in use is the one they get.
    """
    why = _damage(home)
    if why is not None:  # another process's cache, damaged already
        raise OSError(f"the unit cache {home} is damaged: {why}")
    return _read(home, options)


def _read(home: Path, options: dict[str, Any]) -> pint.UnitRegistry[Any]:
    return pint.UnitRegistry(home / _SOURCE, cache_folder=home, **options)


def _damage(home: Path) -> str | None:
    """What is wrong with a cache folder, or None when each file is the one it lists."""
    try:
        if not stat.S_ISDIR(home.lstat().st_mode):
            return "not a folder"
        listed = json.loads((home / _MANIFEST).read_bytes())
        if not isinstance(listed, dict) or _SOURCE not in listed:
            return f"{_MANIFEST} lists no files"
        for name, digest in sorted(listed.items()):
            path = home / str(name)
            if not stat.S_ISREG(path.lstat().st_mode):
                return f"{name} is not a file"
            if _digest(path) != digest:
                return f"{name} changed since it was written"
    except (OSError, ValueError) as e:  # missing, unreadable, a manifest that is not JSON
        return f"{type(e).__name__}: {e}"
    return None


def _build(folder: Path, home: Path, definitions: str, options: dict[str, Any]) -> None:
    """Build a cache in a scratch folder and rename it to `home`, unless another got there."""
    scratch = Path(tempfile.mkdtemp(dir=folder, prefix="building-"))
    try:
        (scratch / _SOURCE).write_bytes(definitions.encode("utf-8"))
        pint.UnitRegistry(scratch / _SOURCE, cache_folder=scratch, **options)
        listed = {path.name: _digest(path) for path in scratch.iterdir()}
        (scratch / _MANIFEST).write_text(json.dumps(listed, sort_keys=True), encoding="utf-8")
        try:
            os.rename(scratch, home)  # whole, at once
        except OSError:
            if not os.path.lexists(home):
                raise
            # Another process renamed its cache there first: that one is as good.
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # gone already after the rename


def _discard(folder: Path, home: Path) -> None:
    """Move a damaged cache out of the way, then remove it as far as it can be."""
    aside = folder / f"damaged-{uuid.uuid4().hex}"
    try:
        os.rename(home, aside)
    except FileNotFoundError:  # another process moved it first
        return
    if stat.S_ISDIR(aside.lstat().st_mode):
        with suppress(OSError):
            aside.chmod(0o700)  # a folder made unreadable is still ours to remove
        shutil.rmtree(aside, ignore_errors=True)
    else:
        aside.unlink(missing_ok=True)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _private_folder(folder: Path) -> None:
    """Create `folder` for this user only, or refuse one that others could write in."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise PermissionError(f"{folder} belongs to another user")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PermissionError(f"others may write in {folder}")
