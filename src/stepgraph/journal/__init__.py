"""The journal: every Thought, Action and Observation of a run, one JSON line each."""

from stepgraph.journal._events import (
    Action,
    AnswerEvent,
    CheckEvent,
    JournalEvent,
    LLMRequest,
    LLMResponse,
    ObservationEvent,
    PlanApproved,
    PlanInvalid,
    PlanProposed,
    PlanRepair,
    RunEnd,
    RunStart,
    StepReused,
    StepSkipped,
    Thought,
)
from stepgraph.journal._reader import Journal, read_journal
from stepgraph.journal._recording import Prior, Recording
from stepgraph.journal._writer import JOURNAL_VERSION, JournalWriter, Listener, NullJournal

__all__ = [
    "JOURNAL_VERSION",
    "Action",
    "AnswerEvent",
    "CheckEvent",
    "Journal",
    "JournalEvent",
    "JournalWriter",
    "LLMRequest",
    "LLMResponse",
    "Listener",
    "NullJournal",
    "ObservationEvent",
    "PlanApproved",
    "PlanInvalid",
    "PlanProposed",
    "PlanRepair",
    "Prior",
    "Recording",
    "RunEnd",
    "RunStart",
    "StepReused",
    "StepSkipped",
    "Thought",
    "read_journal",
]
