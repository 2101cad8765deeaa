"""The machine's approval key: a plan file's approval is signed, so editing the file forges none.

An approval record names who approved and the approval hash; anyone who can write the
file could write both. The record therefore carries an HMAC of what it says, keyed by a
secret only this user can read (``STEPGRAPH_APPROVAL_KEY`` names the key file; by default
``~/.config/stepgraph/approval.key``, made on first use, mode 0600). A file approved on
another machine, or edited after approval, is refused until someone approves it here.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from stepgraph.exceptions import ApprovalError, ApprovalMismatchError

KEY_VARIABLE = "STEPGRAPH_APPROVAL_KEY"


def key_path() -> Path:
    """Where the approval key lives."""
    named = os.environ.get(KEY_VARIABLE)
    if named:
        return Path(named)
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "stepgraph" / "approval.key"


def _key(*, create: bool) -> bytes:
    path = key_path()
    try:
        status = path.lstat()
    except FileNotFoundError:
        if not create:
            raise ApprovalMismatchError(
                f"no approval key at {path}: nothing approved on this machine can be checked; "
                "approve the plan file here (`stepgraph approve FILE`)"
            ) from None
        return _new_key(path)
    except OSError as e:
        raise ApprovalError(f"cannot read the approval key {path}: {e.strerror}") from e
    # A key others can read or write proves nothing: refuse it rather than trust it.
    if not stat.S_ISREG(status.st_mode) or status.st_mode & 0o077 or status.st_uid != os.getuid():
        raise ApprovalError(
            f"the approval key {path} must be a file of this user that no one else may read "
            "or write (chmod 600)"
        )
    return path.read_bytes()


def _new_key(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_hex(32).encode()
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use that one
        return _key(create=False)
    except OSError as e:
        raise ApprovalError(f"cannot write the approval key {path}: {e.strerror}") from e
    with os.fdopen(descriptor, "wb") as file:
        file.write(key)
    return key


def sign(message: str) -> str:
    """The HMAC-SHA256 of `message` under this machine's approval key (made if missing)."""
    return hmac.new(_key(create=True), message.encode(), hashlib.sha256).hexdigest()


def check_signature(message: str, signature: str | None) -> None:
    """Refuse a signature this machine's key did not make."""
    if signature is None:
        raise ApprovalMismatchError(
            "the approval in this file is not signed (an older stepgraph wrote it, or it was "
            "written by hand): approve it again with `stepgraph approve FILE`"
        )
    wanted = hmac.new(_key(create=False), message.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(wanted, signature):
        raise ApprovalMismatchError(
            "the approval in this file was not signed with this machine's approval key: it "
            "was edited after approval, or approved elsewhere; nothing ran. Approve it here "
            "(`stepgraph approve FILE`) after reviewing it"
        )


def _decision_text(who: str, how: str, when: str, approval_hash: str) -> str:
    return f"decision\n{who}\n{how}\n{when}\n{approval_hash}"


def sign_decision(who: str, how: str, when: str, approval_hash: str) -> str:
    """The signature a journaled approval carries."""
    return sign(_decision_text(who, how, when, approval_hash))


def signed_here(who: str, how: str, when: str, approval_hash: str, signature: str | None) -> bool:
    """Whether a journaled approval was signed with this machine's key."""
    try:
        check_signature(_decision_text(who, how, when, approval_hash), signature)
    except ApprovalError:
        return False
    return True


def _memory_text(run_id: str, goal: str, plan_hash: str, tools: Mapping[str, str]) -> str:
    prints = json.dumps(dict(tools), sort_keys=True, separators=(",", ":"))
    return f"memory\n{run_id}\n{goal}\n{plan_hash}\n{prints}"


def seal_verified(run_id: str, goal: str, plan_hash: str, tools: Mapping[str, str]) -> str:
    """The seal a verified run's `run.end` carries: plan memory recalls only sealed runs."""
    return sign(_memory_text(run_id, goal, plan_hash, tools))


def sealed_here(
    run_id: str, goal: str, plan_hash: str, tools: Mapping[str, str], seal: str | None
) -> bool:
    """Whether this machine's key sealed this run's goal, plan and tools as verified."""
    try:
        check_signature(_memory_text(run_id, goal, plan_hash, tools), seal)
    except ApprovalError:
        return False
    return True
