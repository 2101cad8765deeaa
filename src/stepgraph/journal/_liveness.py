"""Whether a journal without `run.end` is still being written, or its process is gone.

A writer holds a shared open-file-description lock (Linux `F_OFD_SETLK`) on its journal
for as long as it is open; the kernel lets go of it when the process dies, however it
dies (`kill -9` included). `writer_alive` asks for the lock without taking it
(`F_OFD_GETLK`), so looking never gets in a writer's way. These locks are apart from
the `flock` a decider holds on a parked run's journal (`stepgraph.engine`): that one
is looked at too, for the moment between a decision's line and the run it starts.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import sys
from pathlib import Path
from stat import S_ISREG

# struct flock on 64-bit Linux: l_type, l_whence (short), l_start, l_len (off_t), l_pid, pad.
_FLOCK = "hhqqi4x"
_SUPPORTED = (
    sys.platform == "linux"
    and hasattr(fcntl, "F_OFD_SETLK")
    and struct.calcsize("q") == struct.calcsize("P") == 8
)


def _whole_file(kind: int) -> bytes:
    return struct.pack(_FLOCK, kind, os.SEEK_SET, 0, 0, 0)  # length 0: to the end, and on


def hold_journal(path: Path, file_fd: int) -> int | None:
    """A descriptor holding the writer's lock on the journal open as `file_fd`, or None.

    A device or a FIFO (`/dev/null` as a journal) is not locked, nor a file that is no
    longer at `path`; where the system has no such locks, nothing is held and a run
    without an end stays "running" to the index.
    """
    if not _SUPPORTED:
        return None
    try:
        written = os.fstat(file_fd)
        if not S_ISREG(written.st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (written.st_dev, written.st_ino):
            os.close(fd)
            return None
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _whole_file(fcntl.F_RDLCK))
    except OSError:
        os.close(fd)
        return None
    return fd


def writer_alive(path: Path | str) -> bool | None:
    """True while a process writes or decides the journal; False once none does; None: unknown.

    Unknown where the system has no such locks, or the file cannot be opened.
    """
    if not _SUPPORTED:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not S_ISREG(os.fstat(fd).st_mode):
            return None
        asked = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, _whole_file(fcntl.F_WRLCK))
        if struct.unpack(_FLOCK, asked)[0] != fcntl.F_UNLCK:
            return True  # a writer's lock
        try:  # a decider's lock: taken for an instant, and let go at once
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError:
        return None
    finally:
        os.close(fd)


def release(fd: int | None) -> None:
    """Let go of a writer's lock (closing its descriptor)."""
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
