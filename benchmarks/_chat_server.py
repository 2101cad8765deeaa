"""A local OpenAI-compatible Chat Completions server that streams scripted answers.

It writes each answer as server-sent events at a simulated token rate, the way a
model on a CPU does, so streamed planning can be measured and tested over real HTTP
with the real openai client. ``streaming=False`` plays a server that ignores
``stream`` and answers with one JSON body after the whole answer's generation time.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_TOKEN = re.compile(r"\s*[A-Za-z_]+|\s*\d|\s*\S")


def tokens(text: str) -> list[str]:
    """The answer cut roughly as a tokenizer would: words, single digits, punctuation."""
    pieces = _TOKEN.findall(text)
    rest = len(text) - sum(map(len, pieces))  # trailing spaces belong to the last piece
    if rest and pieces:
        pieces[-1] += text[-rest:]
    return pieces


@dataclass
class Served:
    """What one request got: its body, how many tokens were sent, whether it was cut off."""

    body: dict[str, Any]
    sent: int = 0
    total: int = 0
    stopped: bool = False  # the client closed the stream before the answer ended
    started_at: float = 0.0  # time.monotonic() when the request came in
    chosen: bool = False  # answered by `answer_for`, not from the answers in order
    finished_at: float = 0.0  # time.monotonic() when the last byte went out


@dataclass
class ChatStreamServer:
    """Serves `answers` in order (the last one again when they run out) on 127.0.0.1."""

    answers: Sequence[str]
    tokens_per_second: float = 20.0
    streaming: bool = True
    fail_after: int | None = None  # send an error event after this many tokens
    # An older server: a request with ``stream_options`` is refused (400), as unknown.
    refuses_stream_options: bool = False
    # Answers chosen by the request instead of by order, where it returns one: requests
    # sent side by side arrive in either order (the answers in order serve the rest).
    answer_for: Callable[[dict[str, Any]], str | None] | None = None
    served: list[Served] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL for the openai client, ending in /v1."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> ChatStreamServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def next_answer(self, body: dict[str, Any]) -> tuple[str, Served]:
        """The answer for this request, and the record of serving it."""
        chosen = self.answer_for(body) if self.answer_for is not None else None
        with self._lock:
            in_order = sum(1 for served in self.served if not served.chosen)
            index = min(in_order, len(self.answers) - 1)
            record = Served(body, started_at=time.monotonic(), chosen=chosen is not None)
            self.served.append(record)
        return (self.answers[index] if chosen is None else chosen), record

    def delay(self) -> float:
        """Seconds between two tokens."""
        return 1.0 / self.tokens_per_second


def _chunk(text: str | None, finish: str | None = None) -> bytes:
    delta = {} if text is None else {"content": text}
    payload = {
        "id": "chatcmpl-stream",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "stream-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(payload)}\n\n".encode()


def _usage_chunk(completion_tokens: int) -> bytes:
    """The last chunk a server sends for ``stream_options.include_usage``: no choices."""
    payload = {
        "id": "chatcmpl-stream",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "stream-model",
        "choices": [],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": completion_tokens,
            "total_tokens": 100 + completion_tokens,
        },
    }
    return f"data: {json.dumps(payload)}\n\n".encode()


def _completion(text: str, completion_tokens: int) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-whole",
            "object": "chat.completion",
            "created": 0,
            "model": "stream-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": 100,
                "completion_tokens": completion_tokens,
                "total_tokens": 100 + completion_tokens,
            },
        }
    ).encode()


def _paced(pieces: list[str], delay: float) -> Iterator[str]:
    """The pieces at the token rate, on a fixed timetable (no drift from slow writes)."""
    started = time.monotonic()
    for number, piece in enumerate(pieces, start=1):
        pause = started + number * delay - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        yield piece


def _handler(owner: ChatStreamServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  # the base's name
            """Quiet: tests and benchmarks print their own output."""

        def do_POST(self) -> None:  # noqa: N802  # the name http.server calls
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            if owner.refuses_stream_options and "stream_options" in body:
                error = json.dumps({"error": {"message": "unknown field stream_options"}})
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(error)))
                self.end_headers()
                self.wfile.write(error.encode())
                return
            text, record = owner.next_answer(body)
            pieces = tokens(text)
            record.total = len(pieces)
            if not (body.get("stream") and owner.streaming):
                for _ in _paced(pieces, owner.delay()):  # the whole generation, then one body
                    record.sent += 1
                data = _completion(text, len(pieces))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                record.finished_at = time.monotonic()
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")  # the body ends when the stream does
            self.end_headers()
            self.close_connection = True
            try:
                for piece in _paced(pieces, owner.delay()):
                    if record.sent == owner.fail_after:  # as a server whose model crashed
                        error = {"error": {"message": "the model crashed", "type": "server"}}
                        self.wfile.write(f"data: {json.dumps(error)}\n\n".encode())
                        self.wfile.flush()
                        break
                    self.wfile.write(_chunk(piece))
                    self.wfile.flush()
                    record.sent += 1
                self.wfile.write(_chunk(None, "stop"))
                if (body.get("stream_options") or {}).get("include_usage"):
                    self.wfile.write(_usage_chunk(record.sent))
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                record.stopped = True
            record.finished_at = time.monotonic()

    return Handler
