"""The approval gate of a run: every plan passes it before a tool of it runs.

A plan file's approval, the policy, or a person (`Approver`) decides; a person may edit
or revise the plan, and the new plan is shown again, a bounded number of times. Each
decision is journaled with the approval hash of what was decided (the plan with the task
as resolved), signed when it approves. With no one to ask, the run parks (`RunParked`)
with `plan.awaiting` in its journal, to be continued from there.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable

from stepgraph.engine._approval import (
    HOW_TO_APPROVE,
    MAX_REVIEWS,
    Approver,
    ParkingApprover,
    RunParked,
    effective_policy,
    now,
    plan_view,
)
from stepgraph.engine._ledger import Settled
from stepgraph.engine._options import RunOptions, require_planner
from stepgraph.engine._per_step import run_read_only
from stepgraph.engine._planning import revised
from stepgraph.engine._plans import PlanBook
from stepgraph.engine._signing import sign_decision
from stepgraph.exceptions import ApprovalError, ApprovalMismatchError
from stepgraph.executor import Backend, plan_diff
from stepgraph.journal import (
    JournalWriter,
    PlanApproved,
    PlanAwaiting,
    PlanEdited,
    PlanRejected,
    PlanRevise,
)
from stepgraph.model import ApprovalPolicy, StepGraph
from stepgraph.planner import Planner
from stepgraph.task import PreparedTask


class ApprovalGate:
    """Decides whether, and as what, a plan runs; journals who decided and how."""

    def __init__(
        self,
        prepared: PreparedTask,
        journal: JournalWriter,
        options: RunOptions,
        plans: PlanBook,
        *,
        planner: Planner | None,
        max_workers: int,
        backend: Callable[[], Backend],
        settle: Callable[[Settled], None],
        origin: Callable[[StepGraph], str],
    ) -> None:
        self.prepared = prepared
        self.journal = journal
        self.options = options
        self.plans = plans
        self.planner = planner
        self._max_workers = max_workers
        self._backend = backend
        self._settle = settle  # read-only steps run while a per-step plan waits
        self._origin = origin  # where the plan came from, for the reviewer (memory)
        self.awaiting: StepGraph | None = None  # the plan a parked run waits on

    def approve(self, plan: StepGraph) -> StepGraph | None:
        """The plan to run (perhaps edited or revised), or None when it must not run."""
        plan_file = self.options.plan_file
        if plan_file is not None and self.plans.hash(plan) == plan_file.plan_hash:
            # The file's approval covers this plan only in the task it was approved for.
            record = plan_file.check_subject(self.plans.subject(plan))
            self._decided(PlanApproved, plan, who=record.by, how="file", when=record.at)
            return plan
        tools = self.prepared.tools
        risky = sorted(
            {s.tool for s in plan.steps if s.tool in tools and tools.get(s.tool).side_effects}
        )
        approver = self.options.approver
        policy = effective_policy(self.options.policy, bool(risky), approver is not None)
        if policy is ApprovalPolicy.NEVER:
            self._decided(PlanRejected, plan, how="policy:never")
            return None
        if policy is ApprovalPolicy.READONLY and risky:
            raise ApprovalError(
                f"the plan uses tools with side effects ({', '.join(risky)}) and policy "
                f"'{policy.value}' does not run them unasked; {HOW_TO_APPROVE}",
                run_id=self.journal.run_id,
            )
        if policy is ApprovalPolicy.PER_STEP and risky:
            if approver is None:  # what needs nobody's approval runs while the rest waits
                settled = run_read_only(
                    plan, self.prepared, self.journal, max_workers=self._max_workers,
                    backend=self._backend(),
                )  # fmt: skip
                self._settle(settled)
            return self._ask(plan, approver or ParkingApprover())
        if policy is not ApprovalPolicy.ASK:
            self._decided(PlanApproved, plan, how=f"policy:{policy.value}")
            return plan
        return self._ask(plan, approver or ParkingApprover())

    def _ask(self, plan: StepGraph, approver: Approver) -> StepGraph | None:
        prepared, plans = self.prepared, self.plans
        for _ in range(MAX_REVIEWS):
            view = plan_view(plan, prepared, subject=plans.subject(plan), origin=self._origin(plan))
            try:
                decision = approver.review(view)
            except RunParked:
                self.awaiting = plan
                self.journal.emit(
                    PlanAwaiting(
                        plan_hash=plans.hash(plan),
                        approval_hash=view.approval_hash,
                        side_effects=view.side_effect_tools,
                        critical_path=view.critical_path,
                    )
                )
                raise
            bound = decision.approval_hash
            if bound is not None and bound != view.approval_hash:
                raise ApprovalMismatchError(
                    "the decision was made about another plan or task than the one waiting "
                    f"(decided {bound[:12]}, waiting {view.approval_hash[:12]}); nothing ran",
                    run_id=self.journal.run_id,
                )
            journaled = decision is self.options.recorded
            if decision.action == "approve":
                if not journaled:
                    self._decided(PlanApproved, plan, who=decision.who, how=decision.how)
                return plan
            if decision.action == "reject":
                if not journaled:
                    self._decided(PlanRejected, plan, who=decision.who, how=decision.how)
                return None
            if decision.action == "edit" and decision.plan is not None:
                plans.check_given(decision.plan)
                dumped = decision.plan.model_dump(mode="json")
                self.journal.emit(
                    PlanEdited(
                        who=decision.who,
                        how=decision.how,
                        when=now(),
                        plan_hash_before=plans.hash(plan),
                        plan_hash=plans.hash(decision.plan, dumped),
                        plan=dumped,
                        diff=plan_diff(plan, decision.plan),
                    )
                )
                plan = decision.plan
            elif decision.action == "revise":
                planner = require_planner(self.planner, prepared)
                self.journal.emit(PlanRevise(who=decision.who, comment=decision.comment))
                plan = revised(planner, prepared, plan, decision.comment, self.journal, plans)
        raise ApprovalError(f"no decision after {MAX_REVIEWS} reviews")

    def _decided(
        self,
        kind: type[PlanApproved | PlanRejected],
        plan: StepGraph,
        *,
        how: str,
        who: str = "",
        when: str = "",
    ) -> None:
        if not self.journal.heard:
            return
        who, when, approval_hash = (
            who or getpass.getuser(),
            when or now(),
            self.plans.subject(plan).digest(),
        )
        signature = sign_decision(who, how, when, approval_hash) if kind is PlanApproved else None
        self.journal.emit(
            kind(
                who=who,
                how=how,
                when=when,
                plan_hash=self.plans.hash(plan),
                approval_hash=approval_hash,
                signature=signature,
            )
        )
