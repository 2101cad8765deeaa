"""Which requests a run has sent: a retry meant as a new draw is one, and a repeat is not sent.

A plan asked again draws again (`unsent`); any other request the run already sent, sampled
the same, takes the answer it had (`answered`): the model would only say it again.
"""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from collections.abc import Sequence
from typing import Any

from stepgraph.journal import JournalWriter
from stepgraph.planner._client import Message


class Draws:
    """Per run (its journal), each request sent and the attempt whose sampling it used.

    A model asked the same messages with the same sampling gives the same answer (greedy,
    or a seeded draw). A fresh plan or another cross-check plan meant as a new draw repeated
    one the run had already asked: on the suite 40 of 178 requests were such repeats (32 of
    them cross-check plans), each waiting for an answer the run had.
    """

    def __init__(self) -> None:
        self._sent: weakref.WeakKeyDictionary[JournalWriter, set[tuple[str, int]]] = (
            weakref.WeakKeyDictionary()
        )
        self._answers: weakref.WeakKeyDictionary[
            JournalWriter, dict[tuple[str, int], tuple[int, str]]
        ] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def unsent(
        self,
        journal: JournalWriter | None,
        messages: Sequence[Message],
        schema: dict[str, Any] | None,
        attempt: int,
    ) -> int:
        """The first attempt from `attempt` on whose sampling this run has not sent these.

        Recorded as sent. Without a journal there is no run to remember, and `attempt` is kept.
        """
        if journal is None:
            return attempt
        key = _key(messages, schema)
        with self._lock:
            sent = self._sent.setdefault(journal, set())
            while (key, attempt) in sent:
                attempt += 1
            sent.add((key, attempt))
        return attempt

    def answered(
        self,
        journal: JournalWriter | None,
        messages: Sequence[Message],
        schema: dict[str, Any] | None,
        sampled: int,
    ) -> tuple[int, str] | None:
        """The attempt and answer of this run's earlier request of these, sampled the same."""
        if journal is None:
            return None
        with self._lock:
            return self._answers.get(journal, {}).get((_key(messages, schema), sampled))

    def answer(
        self,
        journal: JournalWriter | None,
        messages: Sequence[Message],
        schema: dict[str, Any] | None,
        sampled: int,
        attempt: int,
        text: str,
    ) -> None:
        """Remember `text` as this run's answer to these messages, sampled as `sampled`."""
        if journal is None:
            return
        with self._lock:
            answers = self._answers.setdefault(journal, {})
            answers.setdefault((_key(messages, schema), sampled), (attempt, text))


def _key(messages: Sequence[Message], schema: dict[str, Any] | None) -> str:
    return hashlib.sha256(
        json.dumps([list(messages), schema], sort_keys=True, default=str).encode()
    ).hexdigest()
