"""The engine: one run, stage by stage (plan, approve, execute, verify, repair, answer).

Replay and resume drive the same pipeline from a journal, through `Engine.run`.
"""

# The names are imported on first use (PEP 562): `stepgraph validate` needs `Engine` and
# the static checks, not the session, the journal and the planner that a run needs.
from typing import TYPE_CHECKING as _TYPE_CHECKING

from stepgraph._lazy import lazy_names as _lazy_names

if _TYPE_CHECKING:
    from stepgraph.engine._approval import (
        ApprovalSubject,
        Approver,
        Decision,
        ParkingApprover,
        PlanFile,
        PlanView,
        approval_subject,
        plan_view,
    )
    from stepgraph.engine._budget import (
        BUDGET_LABELS,
        BudgetKeeper,
        journal_budget,
        model_cost,
    )
    from stepgraph.engine._cancel import Cancellation
    from stepgraph.engine._compare import Divergence, compare
    from stepgraph.engine._engine import Engine, check_journal_free, run
    from stepgraph.engine._given import check_given_plan
    from stepgraph.engine._memory import PlanMemory, RecallOutcome, Remembered
    from stepgraph.engine._options import RunConfig, RunOptions
    from stepgraph.engine._park import (
        ParkedRun,
        PendingDecision,
        continue_decided,
        decide,
        parked,
        record_decision,
    )
    from stepgraph.engine._replay import ReplayReport, code_inside, replay
    from stepgraph.engine._resume import resume
    from stepgraph.engine._states import journal_step_states, recorded_step_states

__all__ = [
    "BUDGET_LABELS",
    "ApprovalSubject",
    "Approver",
    "BudgetKeeper",
    "Cancellation",
    "Decision",
    "Divergence",
    "Engine",
    "ParkedRun",
    "ParkingApprover",
    "PendingDecision",
    "PlanFile",
    "PlanMemory",
    "PlanView",
    "RecallOutcome",
    "Remembered",
    "ReplayReport",
    "RunConfig",
    "RunOptions",
    "approval_subject",
    "check_given_plan",
    "check_journal_free",
    "code_inside",
    "compare",
    "continue_decided",
    "decide",
    "journal_budget",
    "journal_step_states",
    "model_cost",
    "parked",
    "plan_view",
    "record_decision",
    "recorded_step_states",
    "replay",
    "resume",
    "run",
]

_MODULES = {
    "ApprovalSubject": "stepgraph.engine._approval",
    "Approver": "stepgraph.engine._approval",
    "BUDGET_LABELS": "stepgraph.engine._budget",
    "BudgetKeeper": "stepgraph.engine._budget",
    "Cancellation": "stepgraph.engine._cancel",
    "Decision": "stepgraph.engine._approval",
    "Divergence": "stepgraph.engine._compare",
    "Engine": "stepgraph.engine._engine",
    "ParkedRun": "stepgraph.engine._park",
    "ParkingApprover": "stepgraph.engine._approval",
    "PendingDecision": "stepgraph.engine._park",
    "PlanFile": "stepgraph.engine._approval",
    "PlanMemory": "stepgraph.engine._memory",
    "PlanView": "stepgraph.engine._approval",
    "RecallOutcome": "stepgraph.engine._memory",
    "Remembered": "stepgraph.engine._memory",
    "ReplayReport": "stepgraph.engine._replay",
    "RunConfig": "stepgraph.engine._options",
    "RunOptions": "stepgraph.engine._options",
    "approval_subject": "stepgraph.engine._approval",
    "check_given_plan": "stepgraph.engine._given",
    "check_journal_free": "stepgraph.engine._engine",
    "code_inside": "stepgraph.engine._replay",
    "compare": "stepgraph.engine._compare",
    "continue_decided": "stepgraph.engine._park",
    "decide": "stepgraph.engine._park",
    "journal_budget": "stepgraph.engine._budget",
    "journal_step_states": "stepgraph.engine._states",
    "model_cost": "stepgraph.engine._budget",
    "parked": "stepgraph.engine._park",
    "plan_view": "stepgraph.engine._approval",
    "record_decision": "stepgraph.engine._park",
    "recorded_step_states": "stepgraph.engine._states",
    "replay": "stepgraph.engine._replay",
    "resume": "stepgraph.engine._resume",
    "run": "stepgraph.engine._engine",
}


__getattr__, __dir__ = _lazy_names(__name__, globals(), _MODULES)
