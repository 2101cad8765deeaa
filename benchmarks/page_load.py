"""How long a run's page takes to load: ``python -m benchmarks.page_load [--repeats N]``.

A run of 20 steps and one of 2,000 (each step a `calculate` of its parent's value, a
binary tree, so every step has a reverse check: two verdicts a step with the plan's
own), journaled by the engine, served by `stepgraph serve` (a subprocess), opened in
Debian's chromium through Playwright. For each: the page's `load` event and its first
contentful paint (the browser's own clock, from navigation start), and until the page
has replayed the journal: the stream's `run.end` arrived and the verification panel
is filled (what a person waits for to read what was verified).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks._common import machine, table
from benchmarks.serve import ARGS, CHROMIUM, _serve, _stop
from stepgraph import Engine, StepGraph, Task


def tree_task(steps: int) -> Task:
    """`steps` steps, step i adding one to step i // 2: a plan wide and deep like a real one."""
    rows = [{"id": "s0", "tool": "calculate", "args": {"expression": "1 + 1"}}]
    rows += [
        {"id": f"s{i}", "tool": "calculate", "args": {"expression": f"${{s{(i - 1) // 2}}} + 1"}}
        for i in range(1, steps)
    ]
    plan = StepGraph.model_validate({"steps": rows, "answer": f"${{s{steps - 1}}}"})
    return Task(name=f"tree-{steps}", goal=f"a tree of {steps} additions", plan=plan)


def measure(sizes: list[int], repeats: int) -> list[list[str]]:
    """Load, first paint and journal replayed, median of `repeats`, per plan size."""
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp())
    runs = work / "runs"
    ids = {}
    for size in sizes:
        result = Engine(journal_dir=runs).run(tree_task(size))
        ids[size] = result.run_id
    process, url = _serve(runs, work)
    rows = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for size in sizes:
                loads, paints, replays = [], [], []
                for _ in range(repeats):
                    page = browser.new_page(viewport={"width": 1280, "height": 900})
                    started = time.perf_counter()
                    page.goto(f"{url}/runs/{ids[size]}", wait_until="load")
                    page.wait_for_function(
                        "window.stepgraphArrivals.some((a) => a.event === 'run.end')"
                        " && document.querySelector('#verification tr[data-kind]') !== null",
                        timeout=120_000,
                    )
                    replays.append((time.perf_counter() - started) * 1000)
                    timing = page.evaluate(
                        "(() => { const n = performance.getEntriesByType('navigation')[0];"
                        " const p = performance.getEntriesByName('first-contentful-paint')[0];"
                        " return [n.loadEventEnd, p ? p.startTime : null]; })()"
                    )
                    loads.append(timing[0])
                    if timing[1] is not None:
                        paints.append(timing[1])
                    page.close()
                paint = f"{statistics.median(paints):.0f} ms" if paints else "not reported"
                rows.append(
                    [
                        f"{size:,} steps",
                        f"{statistics.median(loads):.0f} ms",
                        paint,
                        f"{statistics.median(replays):.0f} ms",
                    ]
                )
            browser.close()
    finally:
        _stop(process)
        shutil.rmtree(work, ignore_errors=True)
    return rows


def run(repeats: int = 3) -> str:
    """The table of page-load figures."""
    if not Path(CHROMIUM).exists():
        return "page load: skipped, no chromium (apt-get install -y chromium)"
    rows = measure([20, 2000], repeats)
    return (
        machine()
        + "\n\n"
        + table(
            f"Run page load (median of {repeats})",
            ["plan", "load event", "first contentful paint", "journal replayed, verdicts shown"],
            rows,
        )
    )


def main() -> int:
    """Print the machine and the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    print(run(parser.parse_args().repeats))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
