"""`stepgraph serve` names the port it listens on, and a taken port is an error, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from pathlib import Path


def _serve(*args: str) -> list[str]:
    return [sys.executable, "-m", "stepgraph", "serve", *args]


def test_port_zero_prints_the_chosen_port_and_a_taken_port_exits_2(tmp_path: Path) -> None:
    env = {**os.environ, "NO_PROXY": "*", "no_proxy": "*"}
    runs = str(tmp_path / "runs")
    process = subprocess.Popen(
        _serve("--port", "0", "--runs", runs), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        line = process.stderr.readline().strip()
        assert line.startswith("stepgraph serve: http://127.0.0.1:"), line
        port = int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"http://127.0.0.1:{port}/", timeout=30) as page:
            assert page.status == 200
        taken = subprocess.run(
            _serve("--port", str(port), "--runs", runs), capture_output=True, text=True,
            env=env, cwd=tmp_path, check=False, timeout=60,
        )  # fmt: skip
        assert taken.returncode == 2, taken.stderr
        assert f"cannot listen on 127.0.0.1:{port}" in taken.stderr
        assert "Traceback" not in taken.stderr and "stepgraph serve: http" not in taken.stderr
    finally:
        process.terminate()
        process.communicate(timeout=10)
