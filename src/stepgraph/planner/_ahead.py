"""The worked answer asked for ahead of need: sent with the plan request, read when wanted.

The cross-check by the model's worked answer (`cross_route` worked, worked-code) asks one
more question after a plan verified, and on a CPU that answer is the largest part of a
verified run (~270 tokens). It does not depend on the plan, so it can be asked at the
same time: llama.cpp's server decodes two slots in one batch, and on two cores the pair
costs far less than one after the other.

The journal stays the run's story, not the wire's: the worked answer's `llm.request` and
`llm.response` are written where the run uses it, as if asked then, so a replay (which
asks in journal order) reads the same journal. An answer never used is stopped and
journaled as `llm.unused` with what it cost.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

from stepgraph.planner._client import LLMReply, Message, StreamingClient

STOP_GRACE_S = 2.0  # a stopped stream ends at its next piece; a queued request may not


class WorkedAhead:
    """One worked-answer request running in the background since the plan was asked for."""

    def __init__(self, client: StreamingClient, messages: Sequence[Message]) -> None:
        self.messages = list(messages)
        self.model = getattr(client, "model", None)
        self._client = client
        self._stop = threading.Event()
        self._reply: Future[LLMReply] = Future()
        self.taken = False  # read or stopped: what happens to the answer is decided
        # A daemon: a process that exits before the answer came must not wait for it.
        thread = threading.Thread(target=self._ask, name="stepgraph-worked-ahead", daemon=True)
        thread.start()

    def _ask(self) -> None:
        try:
            reply = self._client.stream_complete(
                self.messages, on_text=lambda _text: not self._stop.is_set(), attempt=1
            )
        except BaseException as e:  # noqa: BLE001  # the reader gets it, as from a direct call
            self._reply.set_exception(e)
        else:
            self._reply.set_result(reply)

    def reply(self) -> LLMReply:
        """The answer, waiting for it if it is still coming; its error if it failed."""
        self.taken = True
        return self._reply.result()

    def stop(self) -> LLMReply | None:
        """Stop the answer (the stream closes at its next piece); what came back, if anything."""
        self.taken = True
        self._stop.set()
        try:
            return self._reply.result(timeout=STOP_GRACE_S)
        except FutureTimeout:
            return None
        except Exception:  # noqa: BLE001  # an error of an answer nobody needs is no error
            return None
