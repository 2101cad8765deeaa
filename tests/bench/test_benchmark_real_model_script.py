"""benchmarks/real_model.sh on a machine where the server cannot run: it says so at once.

A stand-in for the built llama-server serves /models and dies of SIGILL at the first chat
request, as a llama.cpp built for CPU features the machine does not run does.
"""

import os
import shutil
import socket
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "benchmarks" / "real_model.sh"
FAKE_SERVER = textwrap.dedent(
    """\
    #!/usr/bin/env bash
    port=""
    while [[ $# -gt 0 ]]; do [[ "$1" == --port ]] && port="$2"; shift; done
    exec {python} - "$port" <<'PY'
    import json, os, signal, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            data = json.dumps({{"data": [{{"id": "fake"}}]}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        def do_POST(self):
            print("about to run the kernels", flush=True)
            os.kill(os.getpid(), signal.SIGILL)
    HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
    PY
    """
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.skipif(not shutil.which("curl"), reason="the script talks to the server with curl")
def test_a_server_dying_of_sigill_at_its_first_request_is_reported_with_the_rebuild(tmp_path):
    server = tmp_path / "build" / "bin" / "llama-server"  # where the script builds it
    server.parent.mkdir(parents=True)
    server.write_text(FAKE_SERVER.format(python=sys.executable))
    server.chmod(0o755)
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    env = {**os.environ, "REAL_MODEL_DIR": str(tmp_path), "PORT": str(_free_port())}
    done = subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert "exited (at its first chat request) with status 132" in done.stderr
    assert "about to run the kernels" in done.stderr  # the tail of the server's log
    assert "REBUILD=1 CMAKE_ARGS='-DGGML_NATIVE=OFF" in done.stderr
    assert "running eval" not in done.stderr  # the suite never started


def test_the_script_parses_and_rejects_an_unknown_bench(tmp_path):
    assert subprocess.run(["bash", "-n", str(SCRIPT)], check=False).returncode == 0
    env = {**os.environ, "REAL_MODEL_DIR": str(tmp_path), "BENCH": "nope"}
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "BENCH must be eval or small_model" in done.stderr
