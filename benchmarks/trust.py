"""The attacks of the trust report, replayed: ``python -m benchmarks.trust``.

Each reproduction builds a fresh temporary folder (a task, a plugin whose side effect
appends a line to a log file next to it), drives the real command line
(``sys.executable -m stepgraph ...``, so ``PYTHONPATH`` picks the version under test),
a ``stepgraph serve`` subprocess over HTTP, or ``stepgraph mcp`` with the SDK's client,
and reads the log afterwards: the outcome column is what happened, not what should have.

1-3: an approved plan file run with ``--set``, with edited inputs, with a changed plugin;
4-5: a fork of a parked run and a live replay of a rejected one; 6: an MCP client
approving its own run; 7: DNS rebinding against ``serve``; 8: ``mcp --transport http``
on 0.0.0.0 without a token; 9-10: ``validate`` and ``replay`` importing a plugin;
11: ``calculate`` multiplying a text input; 12: a 30 MB request body; 13: two servers
deciding one parked run at the same moment. Works against the code before and after
the fix; an option one version lacks is reported as an outcome.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import httpx

import stepgraph

# `benchmarks._common` is not imported: it follows the current stepgraph, and this file
# must also run against the code before the fix.

PAY_PLUGIN = '''
from pathlib import Path

from stepgraph import tool

LOG = Path(__file__).parent / "payments.log"


@tool(side_effects=True)
def pay(to: str, amount: float) -> str:
    """Pay an amount to an account (moves money).

    Args:
        to: The account paid.
        amount: How much.
    """
    for _ in range(TIMES):
        with LOG.open("a") as log:
            log.write(f"{to}\\n")
    return f"paid {to}"
'''

PAY_TASK = """
name: pay
goal: pay the supplier
inputs:
  to: {value: acct-bob}
  amount: {value: 10}
tools: [pay]
plugins: [pay.py]
plan:
  steps:
    - {id: payment, tool: pay, args: {to: "${inputs.to}", amount: "${inputs.amount}"}}
  answer: "${payment}"
"""

MARKER_PLUGIN = '''
from pathlib import Path

from stepgraph import tool

(Path(__file__).parent / "imported.marker").write_text("imported")


@tool
def echo(text: str) -> str:
    """Return the text.

    Args:
        text: Anything.
    """
    return text
'''

MARKER_TASK = """
name: marker
goal: echo a word
tools: [echo]
plugins: [marker.py]
plan:
  steps:
    - {id: said, tool: echo, args: {text: hello}}
  answer: "${said}"
"""

CALC_TASK = """
name: calc
goal: multiply a text
inputs:
  x: {value: abc}
tools: [calculate]
plan:
  steps:
    - {id: big, tool: calculate, args: {expression: "${inputs.x} * 100000000"}}
  answer: "${big}"
"""

PARKED = 10  # the exit code of a run that parks for a decision


def _env() -> dict[str, str]:
    """This process's environment, with PYTHONPATH naming the stepgraph under test."""
    return {**os.environ, "PYTHONPATH": str(Path(stepgraph.__file__).parents[1])}


def cli(
    folder: Path, *args: str, timeout: float = 120, stdin: int | None = subprocess.DEVNULL
) -> subprocess.CompletedProcess[str]:
    """`stepgraph ARGS` in `folder`, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "stepgraph", *args],
        cwd=folder, env=_env(), stdin=stdin, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


@cache
def has_option(command: str, option: str) -> bool:
    """Whether `stepgraph COMMAND --help` lists `option`."""
    with tempfile.TemporaryDirectory() as folder:
        helped = cli(Path(folder), command, "--help", timeout=60)
    return option in helped.stdout


def message(done: subprocess.CompletedProcess[str], limit: int = 80) -> str:
    """The first `limit` characters of what a command said: its error, status or divergence."""
    lines = [line for line in f"{done.stderr}\n{done.stdout}".splitlines() if line.strip()]
    for wanted in (
        lambda line: line.lower().lstrip().startswith("error"),
        lambda line: line.startswith(("Status:", "divergence")),
        lambda line: "error" in line.lower(),
    ):
        start = next((i for i, line in enumerate(lines) if wanted(line)), None)
        if start is not None:
            break
    text = " ".join(" ".join(lines[start or 0 :]).split())
    return text[:limit].replace("|", "/")


def said(done: subprocess.CompletedProcess[str]) -> str:
    """Exit code and message, as an outcome's parenthesis."""
    code = done.returncode
    if code < 0:  # `timeout` passes on the signal that ended its child
        return f"killed by {signal.Signals(-code).name}: {message(done)}"
    return f"exit {code}: {message(done)}"


def payments(folder: Path) -> list[str]:
    """The accounts paid so far, one per line of the plugin's log."""
    log = folder / "payments.log"
    return log.read_text().split() if log.exists() else []


def paid_outcome(folder: Path, why: str, before: int = 0) -> str:
    """'side effect ran (...)' or 'refused, nothing ran (...)' from the payment log."""
    paid = payments(folder)[before:]
    if paid:
        return f"side effect ran (paid {', '.join(paid)}; {why})"
    return f"refused, nothing ran ({why})"


def pay_folder(times: int = 1) -> Path:
    """A fresh folder holding pay.yaml and pay.py."""
    folder = Path(tempfile.mkdtemp(prefix="trust-"))
    (folder / "pay.yaml").write_text(PAY_TASK, encoding="utf-8")
    (folder / "pay.py").write_text(f"TIMES = {times}\n{PAY_PLUGIN}", encoding="utf-8")
    return folder


def approved_plan(folder: Path) -> None:
    """`plan pay.yaml --out p.json` and `approve p.json --by bob`, or raise."""
    for args in (("plan", "pay.yaml", "--out", "p.json"), ("approve", "p.json", "--by", "bob")):
        done = cli(folder, *args)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])}: {said(done)}")


def park(folder: Path, journal: str = "j.jsonl") -> None:
    """`run pay.yaml --approve ask --journal J < /dev/null`: it must park (exit 10)."""
    done = cli(folder, "run", "pay.yaml", "--approve", "ask", "--journal", journal)
    if done.returncode != PARKED or payments(folder):
        raise RuntimeError(f"parking: {said(done)}")


def trust_flag() -> list[str]:
    """`--trust-plugins` where `replay` has it, else nothing."""
    return ["--trust-plugins"] if has_option("replay", "--trust-plugins") else []


# -- 1-5: the command line ---------------------------------------------------------------


def plan_file_with_set() -> str:
    """1: an approved plan file run with --set to=acct-mallory."""
    folder = pay_folder()
    approved_plan(folder)
    done = cli(folder, "run", "--plan", "p.json", "--set", "to=acct-mallory")
    return paid_outcome(folder, said(done))


def plan_file_edited() -> str:
    """2: the approved plan file's task.inputs.to edited to acct-mallory."""
    folder = pay_folder()
    approved_plan(folder)
    plan = json.loads((folder / "p.json").read_text())
    plan["task"]["inputs"]["to"]["value"] = "acct-mallory"
    (folder / "p.json").write_text(json.dumps(plan, indent=2))
    done = cli(folder, "run", "--plan", "p.json")
    return paid_outcome(folder, said(done))


def plan_file_forged() -> str:
    """2b: as 2, and the file's approval subject and hash recomputed to match the edit."""
    try:
        from stepgraph.engine._approval import ApprovalSubject
    except ImportError:
        return "not applicable: this version binds no approval hash (see 2)"
    folder = pay_folder()
    approved_plan(folder)
    plan = json.loads((folder / "p.json").read_text())
    plan["task"]["inputs"]["to"]["value"] = "acct-mallory"
    subject = plan["approval"]["subject"]
    subject["inputs"]["to"] = "acct-mallory"
    plan["approval"]["approval_hash"] = ApprovalSubject.model_validate(subject).digest()
    (folder / "p.json").write_text(json.dumps(plan, indent=2))
    done = cli(folder, "run", "--plan", "p.json")
    return paid_outcome(folder, said(done))


def plan_file_changed_plugin() -> str:
    """3: the plugin changed after approval (it now pays twice)."""
    folder = pay_folder()
    approved_plan(folder)
    (folder / "pay.py").write_text(f"TIMES = 2\n{PAY_PLUGIN}", encoding="utf-8")
    done = cli(folder, "run", "--plan", "p.json")
    return paid_outcome(folder, f"{len(payments(folder))} payment(s); {said(done)}")


def fork_of_parked() -> tuple[str, str]:
    """4: `replay --from payment` of a run parked for approval."""
    folder = pay_folder()
    park(folder)
    flags = trust_flag()
    done = cli(folder, "replay", "j.jsonl", "--from", "payment", *flags, timeout=120)
    label = " ".join(["replay j.jsonl --from payment", *flags])
    return label, paid_outcome(folder, said(done))


def live_replay_of_rejected() -> tuple[str, str]:
    """5: `replay --live` of a parked run that bob rejected."""
    folder = pay_folder()
    park(folder)
    rejected = cli(folder, "approve", "j.jsonl", "--reject", "--by", "bob")
    if "not_run" not in rejected.stdout:  # a rejected run ends not run (exit 6)
        raise RuntimeError(f"reject: {said(rejected)}")
    flags = trust_flag()
    done = cli(folder, "replay", "j.jsonl", "--live", *flags, timeout=120)
    label = " ".join(["replay j.jsonl --live", *flags])
    return label, paid_outcome(folder, said(done))


# -- 6: MCP ------------------------------------------------------------------------------


def mcp_self_approval() -> str:
    """6: an MCP client calls `run`, then approves what it asked for itself."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import get_default_environment

    folder = pay_folder()
    env = {**get_default_environment(), "PYTHONPATH": _env()["PYTHONPATH"]}
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "stepgraph", "mcp", "--root", str(folder)], env=env
    )
    steps: list[str] = []

    async def call(client: Any, args: dict[str, Any]) -> dict[str, Any]:
        try:
            result = await client.call_tool("run", args)
        except Exception as e:  # the SDK raises for a tool error in some versions
            return {"status": f"error: {type(e).__name__}: {str(e)[:60]}"}
        if result.is_error:
            text = " ".join(getattr(c, "text", "") for c in result.content)
            return {"status": f"tool error: {' '.join(text.split())[:60]}"}
        return dict(result.structured_content or {})

    async def scenario() -> None:
        async with Client(server) as client:
            first = await call(client, {"task_file": "pay.yaml"})
            steps.append(f"run: {first.get('status')}")
            for key in ("plan_hash", "approval_hash"):
                if first.get(key) and first.get("plan"):
                    again = {"task_file": "pay.yaml", "plan": first["plan"], "approve": first[key]}
                    second = await call(client, again)
                    steps.append(f"approve={key}: {second.get('status')}")

    asyncio.run(asyncio.wait_for(scenario(), 120))
    return paid_outcome(folder, "; ".join(steps).replace("|", "/"))


# -- 7, 12, 13: stepgraph serve ----------------------------------------------------------


def free_port() -> int:
    """A port nobody listens on, on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGINT, then kill if it lingers; always reaped."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Served:
    """A `stepgraph serve` subprocess on a free port; a context manager."""

    def __init__(self, runs: Path, workspace: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "stepgraph", "serve", "--runs", str(runs)]
        command += ["--workspace", str(workspace), "--port", str(self.port)]
        self.log = (workspace / f"serve-{self.port}.log").open("wb")
        self.process = subprocess.Popen(
            command, cwd=workspace, env=_env(), stdin=subprocess.DEVNULL,
            stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def __enter__(self) -> Served:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited {self.process.returncode}")
            try:
                httpx.get(f"{self.url}/api/session", timeout=1)
                return self
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError("serve did not start within 40 s")

    def __exit__(self, *exc: object) -> None:
        stop(self.process)
        self.log.close()

    def csrf(self) -> str:
        """The CSRF token, asked as a page on this machine would."""
        return str(httpx.get(f"{self.url}/api/session", timeout=10).json()["csrf_token"])

    def start_parked(self, csrf: str) -> str:
        """POST /api/runs pay.yaml with approval ask; the run id once it is parked."""
        reply = httpx.post(
            f"{self.url}/api/runs", json={"task": "pay.yaml", "approval": "ask"},
            headers={"X-CSRF-Token": csrf}, timeout=60,
        )  # fmt: skip
        if reply.status_code != 201:
            raise RuntimeError(f"start: {reply.status_code} {reply.text[:80]}")
        run_id = str(reply.json()["run_id"])
        self.wait_status(run_id, {"awaiting_approval"})
        return run_id

    def wait_status(self, run_id: str, wanted: set[str], seconds: float = 20) -> str:
        """Poll GET /api/runs/ID until its status is one of `wanted`; the last status."""
        status = "?"
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            reply = httpx.get(f"{self.url}/api/runs/{run_id}", timeout=10)
            if reply.status_code == 200:
                status = str(reply.json().get("status"))
                if status in wanted:
                    return status
            time.sleep(0.1)
        return status


def settle(folder: Path, before: int, seconds: float = 4) -> None:
    """Give an approved run time to pay (returns early once it has)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(payments(folder)) <= before:
        time.sleep(0.1)


def dns_rebinding() -> str:
    """7: a page of evil.example, rebound to 127.0.0.1, asks for the token and approves."""
    folder = pay_folder()
    with Served(folder / "runs", folder) as served:
        run_id = served.start_parked(served.csrf())
        evil = {"Host": "evil.example"}
        session = httpx.get(f"{served.url}/api/session", headers=evil, timeout=10)
        token = session.json().get("csrf_token") if session.status_code == 200 else None
        approve = httpx.post(
            f"{served.url}/api/runs/{run_id}/approve", json={"by": "mallory"},
            headers={**evil, "X-CSRF-Token": token or ""}, timeout=30,
        )  # fmt: skip
        settle(folder, 0)
        handed = "handed out the csrf token" if token else "no token"
        why = f"session {session.status_code}, {handed}; approve {approve.status_code}"
        return paid_outcome(folder, why)


def big_body() -> str:
    """12: approve with a `by` of 30 MB, with a valid CSRF token."""
    folder = pay_folder()
    with Served(folder / "runs", folder) as served:
        csrf = served.csrf()
        run_id = served.start_parked(csrf)
        try:
            reply = httpx.post(
                f"{served.url}/api/runs/{run_id}/approve", json={"by": "m" * 30_000_000},
                headers={"X-CSRF-Token": csrf}, timeout=120,
            )  # fmt: skip
            code = str(reply.status_code)
        except httpx.HTTPError as e:
            code = f"{type(e).__name__}"
        settle(folder, 0)
        size = sum(p.stat().st_size for p in (folder / "runs").glob("*.jsonl"))
        return paid_outcome(folder, f"status {code}; journal {size:,} bytes after")


def race(a: Served, b: Served, run_id: str, csrf: tuple[str, str]) -> dict[str, str]:
    """POST approve to `a` and reject to `b` released by one barrier; each status code."""
    barrier = threading.Barrier(2)
    replies: dict[str, str] = {}

    def decide(server: Served, token: str, action: str) -> None:
        barrier.wait()
        try:
            reply = httpx.post(
                f"{server.url}/api/runs/{run_id}/{action}", json={"by": action},
                headers={"X-CSRF-Token": token}, timeout=60,
            )  # fmt: skip
            replies[action] = str(reply.status_code)
        except httpx.HTTPError as e:
            replies[action] = type(e).__name__

    threads = [
        threading.Thread(target=decide, args=(a, csrf[0], "approve")),
        threading.Thread(target=decide, args=(b, csrf[1], "reject")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    return replies


def two_deciders(trials: int = 8) -> str:
    """13: approve on server A and reject on server B of one runs folder, at once."""
    folder = pay_folder()
    runs = folder / "runs"
    both = ran_though_rejected = 0
    codes: dict[str, int] = {}
    with Served(runs, folder) as a, Served(runs, folder) as b:
        csrf = (a.csrf(), b.csrf())
        for _ in range(trials):
            run_id = a.start_parked(csrf[0])
            b.wait_status(run_id, {"awaiting_approval"})
            before = len(payments(folder))
            replies = race(a, b, run_id, csrf)
            settle(folder, before, seconds=3)
            key = f"approve {replies.get('approve')}/reject {replies.get('reject')}"
            codes[key] = codes.get(key, 0) + 1
            rejected_ok = replies.get("reject", "").startswith("2")
            both += rejected_ok and replies.get("approve", "").startswith("2")
            ran_though_rejected += rejected_ok and len(payments(folder)) > before
    seen = ", ".join(f"{k}: {n}x" for k, n in sorted(codes.items()))
    return (
        f"{ran_though_rejected}/{trials} paid although reject got 2xx; "
        f"{both}/{trials} both 2xx ({seen})"
    )


# -- 8: mcp over HTTP beyond loopback ----------------------------------------------------


def mcp_http_open() -> str:
    """8: `mcp --transport http --host 0.0.0.0` without a token."""
    folder = Path(tempfile.mkdtemp(prefix="trust-"))
    port = free_port()
    command = [sys.executable, "-m", "stepgraph", "mcp", "--transport", "http"]
    command += ["--host", "0.0.0.0", "--port", str(port), "--root", str(folder)]
    process = subprocess.Popen(
        command, cwd=folder, env={k: v for k, v in _env().items() if "TOKEN" not in k},
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return "listening on 0.0.0.0 without a token"
            except OSError:
                time.sleep(0.1)
        if process.poll() is None:
            return "neither listening nor exited within 15 s"
        output = process.stdout.read().decode() if process.stdout else ""
        text = " ".join(output.split())
        at = text.lower().find("error")
        return f"refused to start (exit {process.returncode}: {text[max(at, 0) :][:80]})"
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout:
            process.stdout.close()


# -- 9-11: code and data a command should not run ----------------------------------------


def marker_folder() -> Path:
    """A fresh folder with a task whose plugin leaves imported.marker when imported."""
    folder = Path(tempfile.mkdtemp(prefix="trust-"))
    (folder / "task.yaml").write_text(MARKER_TASK, encoding="utf-8")
    (folder / "marker.py").write_text(MARKER_PLUGIN, encoding="utf-8")
    return folder


def marker_outcome(folder: Path, done: subprocess.CompletedProcess[str]) -> str:
    """Whether the plugin was imported, with what the command said."""
    if (folder / "imported.marker").exists():
        return f"plugin imported, marker created ({said(done)})"
    return f"nothing imported, no marker ({said(done)})"


def validate_imports() -> str:
    """9: `validate task.yaml`."""
    folder = marker_folder()
    return marker_outcome(folder, cli(folder, "validate", "task.yaml"))


def replay_imports() -> str:
    """10: `replay j.jsonl` of a trusted run, the marker deleted in between."""
    folder = marker_folder()
    ran = cli(folder, "run", "task.yaml", "--journal", "j.jsonl")
    if not (folder / "imported.marker").exists():  # exit 11: the answer is unchecked
        raise RuntimeError(f"the trusted run: {said(ran)}")
    (folder / "imported.marker").unlink()
    return marker_outcome(folder, cli(folder, "replay", "j.jsonl"))


def capped_run(folder: Path, task: str) -> subprocess.CompletedProcess[str]:
    """`stepgraph run TASK --journal j.jsonl` under `ulimit -v 4000000` and `timeout 60`."""
    command = f"ulimit -v 4000000; exec timeout 60 {sys.executable} -m stepgraph run {task}"
    return subprocess.run(
        ["bash", "-c", f"{command} --journal j.jsonl"], cwd=folder, env=_env(),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def calculate_text() -> str:
    """11: `${inputs.x} * 100000000` with x = abc, memory capped at 4 GB.

    A control with `* 1000` tells whether the text itself was multiplied: its journal
    then holds 'abc' a thousand times over.
    """
    folder = Path(tempfile.mkdtemp(prefix="trust-"))
    (folder / "calc.yaml").write_text(CALC_TASK, encoding="utf-8")
    done = capped_run(folder, "calc.yaml")
    journal = folder / "j.jsonl"
    size = journal.stat().st_size if journal.exists() else 0
    control = Path(tempfile.mkdtemp(prefix="trust-"))
    (control / "calc.yaml").write_text(CALC_TASK.replace("100000000", "1000"), encoding="utf-8")
    small = capped_run(control, "calc.yaml")
    small_journal = control / "j.jsonl"
    text = small_journal.read_text() if small_journal.exists() else ""
    multiplied = "abc" * 1000 in text
    return (
        f"journal {size:,} bytes ({said(done)}); control x * 1000: "
        f"{'text multiplied into the journal' if multiplied else 'no multiplied text'} "
        f"(exit {small.returncode}, journal {len(text.encode()):,} bytes)"
    )


# -- the table ---------------------------------------------------------------------------

Reproduction = Callable[[], "str | tuple[str, str]"]

REPRODUCTIONS: list[tuple[str, Reproduction]] = [
    ("1 plan file approved, run --plan p.json --set to=acct-mallory", plan_file_with_set),
    ("2 approved p.json, task.inputs.to edited to acct-mallory", plan_file_edited),
    ("2b as 2, approval subject and hash in p.json recomputed", plan_file_forged),
    ("3 approved p.json, plugin changed to pay twice", plan_file_changed_plugin),
    ("4 parked run (exit 10), {}", fork_of_parked),
    ("5 parked run rejected by bob, {}", live_replay_of_rejected),
    ("6 MCP run pay.yaml, then run again approving itself", mcp_self_approval),
    ("7 serve, Host: evil.example: GET /api/session, POST approve", dns_rebinding),
    ("8 mcp --transport http --host 0.0.0.0, no token", mcp_http_open),
    ("9 validate task.yaml (plugin leaves a marker on import)", validate_imports),
    ("10 replay j.jsonl (plugin leaves a marker on import)", replay_imports),
    ("11 calculate ${inputs.x} * 100000000, x: abc", calculate_text),
    ("12 serve: POST approve with a 30 MB `by`", big_body),
    ("13 serve A approves, serve B rejects, same runs folder, 8 trials", two_deciders),
]


def machine() -> str:
    """Cores, Python, platform and date, printed above the table (as `_common.machine`)."""
    return (
        f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
        f"{platform.system()} {platform.machine()}, {datetime.now(UTC):%Y-%m-%d}"
    )


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table, as `_common.table` prints it."""
    cells = [list(header), *[list(row) for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = [f"## {title}", ""]
    for at, row in enumerate(cells):
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
        if at == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines) + "\n"


def attempt(label: str, reproduction: Reproduction) -> tuple[str, str, float]:
    """One row: the reproduction, its outcome (an error is an outcome), seconds taken."""
    started = time.perf_counter()
    try:
        outcome = reproduction()
    except Exception as e:
        outcome = f"error: {type(e).__name__}: {' '.join(str(e).split())[:120]}"
    detail = "replay (see the outcome)"
    if isinstance(outcome, tuple):
        detail, outcome = outcome
    label = label.replace("{}", detail)
    return label, re.sub(r"\s+", " ", outcome).replace("|", "/"), time.perf_counter() - started


def main() -> None:
    """Run every reproduction and print the table."""
    print(machine())
    print(f"stepgraph from {Path(stepgraph.__file__).parent}")
    rows = []
    for label, reproduction in REPRODUCTIONS:
        rows.append(attempt(label, reproduction))
        print(f"  {rows[-1][0].split()[0]}: {rows[-1][2]:.1f} s", file=sys.stderr, flush=True)
    print(table("trust reproductions", ["reproduction", "outcome"], [r[:2] for r in rows]))
    print(f"total {sum(r[2] for r in rows):.0f} s")


if __name__ == "__main__":
    main()
