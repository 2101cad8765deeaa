"""Run every benchmark and print the tables: ``python -m benchmarks.run [--quick]``."""

from __future__ import annotations

import argparse
import sys
import time

from benchmarks import (
    cli,
    critical_path,
    dask_overhead,
    economy,
    mcp_calls,
    overhead,
    scale,
    serve,
    streaming,
    telemetry,
)
from benchmarks._common import machine


def main(argv: list[str] | None = None) -> int:
    """Print the machine, then each benchmark's table; --quick for a smaller, faster run."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    args = parser.parse_args(argv)
    print(machine(), flush=True)
    started = time.perf_counter()
    if args.quick:
        sections = [
            lambda: critical_path.run(steps=60, serial=True),
            lambda: overhead.run(steps=2_000, repeats=1),
            lambda: scale.run(sizes=(500, 2_000), events=10_000, replay_steps=1_000),
            economy.run,
            lambda: telemetry.run(steps=300, repeats=2),
            lambda: serve.run(journals=100, repeats=2),
            lambda: mcp_calls.run(steps=100, repeats=1),
            lambda: streaming.run(rate=400, latency=0.1),
            lambda: cli.run((200,), 1, 2_000, (500, 2_000), replay_sizes=(200,), memory_steps=200),
        ]
    else:
        sections = [
            critical_path.run,
            overhead.run,
            scale.run,
            economy.run,
            telemetry.run,
            serve.run,
            mcp_calls.run,
            streaming.run,
            dask_overhead.run,
            cli.run,
        ]
    for section in sections:
        print()
        print(section(), flush=True)
    print(f"total benchmark time: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
