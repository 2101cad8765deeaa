r"""What a short command does to start fast: imports without the collector, pint lean.

Importing builds a few hundred thousand objects and no garbage, yet Python's cyclic
collector walks the growing heap again and again meanwhile, and again at each collection
while the command works. `frozen_imports` pauses the collector while a command imports
its stages and then freezes what they built (``gc.freeze``: modules, classes and tables
that live as long as the process), so later collections walk only the command's own
objects: a quarter of `stepgraph validate`.

When they are installed (numpy always is: matplotlib needs it), pint imports numpy and
``dask.base`` as it is imported, to accept arrays as magnitudes: 0.18 s, a third of
`stepgraph validate`. Whether pint supports arrays is decided once, at that import, and
cannot be changed afterwards.

`stepgraph validate` compares units of values read from a task file (numbers and strings
from YAML or JSON) and runs no tool: no array can reach pint, unless the task loads a
plugin, whose code may build quantities of numpy values with our registry as it is
imported. So pint is imported lean only when

- nothing has imported pint yet (a caller that did keeps the pint it has), and
- no plugin may be loaded: the command was not given ``--trust-plugins`` (a task with
  plugins is then refused before any is imported), or the task file cannot name a
  plugin: its bytes hold no ``plugins`` (the only key that loads code) and no backslash
  (an escape such as ``"plu\u0067ins"`` could spell the key).

numpy and Dask stay importable afterwards; only pint goes without them, in this process.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stepgraph.executor import collector_paused, freeze_imports

# What pint imports when installed; hidden while pint is imported, then importable again.
_ARRAY_PACKAGES = ("numpy", "dask")
# Bigger task files are left to the loader, which reports its own size limit.
_PEEK_BYTES = 50_000_000


def import_pint_for(task_file: Path, *, plugins_allowed: bool = True) -> bool:
    """Import pint without numpy and Dask when `task_file` runs no code of the user's.

    `plugins_allowed=False` says the command refuses any plugin, so the file need not be
    read. Returns whether it did; when it did not, pint is imported later as usual.
    """
    if "pint" in sys.modules or (plugins_allowed and not _runs_no_user_code(task_file)):
        return False
    hidden = [name for name in _ARRAY_PACKAGES if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # Python's "not installed"
    try:
        import pint  # noqa: F401  # imported now, without the packages hidden above
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
    return True


def _runs_no_user_code(task_file: Path) -> bool:
    try:
        if task_file.stat().st_size > _PEEK_BYTES:
            return False
        text = task_file.read_bytes()
    except OSError:
        return False  # the loader reports what is wrong with the file
    return b"plugins" not in text and b"\\" not in text


@contextmanager
def frozen_imports() -> Iterator[None]:
    """Import without the collector, then freeze the heap (the collector left off if it was)."""
    with collector_paused():
        try:
            yield
        finally:  # stepgraph's own freeze: a run's frozen heap hands it back when it ends
            freeze_imports()
