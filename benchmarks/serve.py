"""The figures of `stepgraph serve`: ``python -m benchmarks.serve [--journals N] [--repeats N]``.

- approval click to the first step starting: a parked run's page, the Approve button
  clicked by Playwright in Debian's chromium, to the `ts` of the first `action` in the
  journal (one clock: the same machine);
- server-sent event latency: each live event's journal `ts` to its arrival in the page
  (`Date.now()` in the page's `onmessage`);
- the index rebuilt from N journals (real journals of the canonical example, copied
  with fresh run ids), and one refresh when nothing changed (what every read costs);
- the resident memory of a `stepgraph serve` process with N runs indexed, after it has
  served the run list and the API's list of all of them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path

import httpx

from benchmarks._common import machine, table
from stepgraph import ApprovalPolicy, Engine
from stepgraph.journal import RunIndex, read_journal

ROOT = Path(__file__).resolve().parent.parent
MIGRATION = ROOT / "examples" / "migration.yaml"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(runs: Path, workspace: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "stepgraph", "serve", "--runs", str(runs), "--port", str(port),
         "--workspace", str(workspace)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/api/session", timeout=1)
            return process, url
        except httpx.TransportError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the server did not start")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def browser_figures(repeats: int) -> list[list[str]]:
    """Click-to-first-step and SSE latency, in a real browser."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return [["approval click to first step", "skipped: playwright is not installed"]]
    if not Path(CHROMIUM).exists():
        return [["approval click to first step", "skipped: no chromium"]]

    work = Path(tempfile.mkdtemp())
    shutil.copy(MIGRATION, work / "migration.yaml")
    process, url = _serve(work / "runs", work)
    clicks: list[float] = []
    latencies: list[float] = []
    try:
        with httpx.Client(base_url=url) as api, sync_playwright() as playwright:
            csrf = api.get("/api/session").json()["csrf_token"]
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page()
            watcher = browser.new_page()  # a second tab follows the run while `page` decides
            for _ in range(repeats):
                started = api.post(
                    "/api/runs", json={"task": "migration.yaml", "approval": "ask"},
                    headers={"X-CSRF-Token": csrf},
                )  # fmt: skip
                run_id = started.json()["run_id"]
                while api.get(f"/api/runs/{run_id}").json()["status"] != "awaiting_approval":
                    time.sleep(0.01)
                watcher.goto(f"{url}/runs/{run_id}")  # its stream is open before the decision
                watcher.wait_for_function("window.stepgraphArrivals.length >= 3")
                page.goto(f"{url}/runs/{run_id}/approve")
                page.fill("#by", "bench")
                clicked = time.time()
                page.click("#approve")
                page.wait_for_url(f"**/runs/{run_id}")
                page.wait_for_function(
                    "document.getElementById('status').textContent === 'verified'"
                )
                watcher.wait_for_function(
                    "document.getElementById('status').textContent === 'verified'"
                )
                arrivals = watcher.evaluate("window.stepgraphArrivals")
                path = Path(api.get("/api/runs", params={"limit": 1}).json()[0]["path"])
                journal = read_journal(work / "runs" / path)
                first = next(e for e in journal.events if e.event == "action")
                clicks.append((_ts(first.ts) - clicked) * 1000)
                decided = next(e.seq for e in journal.events if e.event == "plan.approved")
                # The watcher opened before the decision: every event after it came live.
                latencies += [a["at"] - _ts(a["ts"]) * 1000 for a in arrivals if a["seq"] > decided]
            browser.close()
    finally:
        _stop(process)
        shutil.rmtree(work, ignore_errors=True)
    click = f"{statistics.median(clicks):.0f} ms (min {min(clicks):.0f}, max {max(clicks):.0f})"
    p95 = statistics.quantiles(latencies, n=20)[-1]
    return [
        [f"approval click to first step (median of {repeats})", click],
        [
            f"SSE journal event to page (median, p95 of {len(latencies)} events)",
            f"{statistics.median(latencies):.0f} ms, {p95:.0f} ms",
        ],
    ]


def make_journals(folder: Path, count: int) -> None:
    """`count` real journals: a few runs of the example, copied with fresh run ids."""
    seeds = folder / "seeds"
    Engine().run(MIGRATION, journal=seeds / "verified.jsonl")
    Engine().run(MIGRATION, journal=seeds / "parked.jsonl", approval=ApprovalPolicy.ASK)
    texts = [path.read_text() for path in sorted(seeds.glob("*.jsonl"))]
    runs = folder / "runs"
    runs.mkdir()
    for number in range(count):
        text = texts[number % len(texts)]
        old = text.split('"run_id":"', 1)[1].split('"', 1)[0]
        new = uuid.uuid4().hex[:12]
        (runs / f"{number:05d}-migration.jsonl").write_text(text.replace(old, new))


def index_figures(count: int) -> list[list[str]]:
    """The index rebuilt from `count` journals; a refresh with nothing changed; server memory."""
    work = Path(tempfile.mkdtemp())
    try:
        make_journals(work, count)
        index = RunIndex(work / "runs")
        started = time.perf_counter()
        indexed = index.rebuild()
        rebuilt = time.perf_counter() - started
        started = time.perf_counter()
        index.refresh()
        refresh_ms = (time.perf_counter() - started) * 1000
        process, url = _serve(work / "runs", work)
        try:
            idle = _rss_mb(process.pid)
            for _ in range(3):
                httpx.get(f"{url}/", timeout=30)
                listed = httpx.get(f"{url}/api/runs", params={"limit": count}, timeout=30)
            served = _rss_mb(process.pid)
        finally:
            _stop(process)
        assert len(listed.json()) == indexed == count
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [
        [f"index rebuilt from {count:,} journals", f"{rebuilt:.2f} s"],
        [f"index refresh, {count:,} journals, nothing changed", f"{refresh_ms:.0f} ms"],
        [f"server memory (RSS), {count:,} runs indexed, idle", f"{idle:.0f} MB"],
        [f"server memory (RSS) after listing all {count:,}", f"{served:.0f} MB"],
    ]


def run(journals: int = 1000, repeats: int = 10) -> str:
    """The table of figures."""
    rows = browser_figures(repeats) + index_figures(journals)
    return table("serve: approval, live events, the index", ["figure", "measured"], rows)


def main() -> int:
    """Print the machine and the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--journals", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    print(machine(), f"(load average {os.getloadavg()[0]:.1f})")
    print(run(args.journals, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
