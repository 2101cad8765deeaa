"""What plan memory gives one run: a remembered plan re-bound to its goal, or worked examples.

Memory applies to a typed goal with no plan and no inputs of its own. A replay takes what
memory gave the recorded run from its record (`RunOptions.recalled`, `.examples`), not
from memory as it is now, so it replays the same plan and the same prompt.
"""

from __future__ import annotations

from stepgraph.engine._approval import tool_fingerprints
from stepgraph.engine._memory import PlanMemory
from stepgraph.engine._options import RunOptions
from stepgraph.engine._plans import PlanBook
from stepgraph.engine._recall import Recalled, recall_note
from stepgraph.journal import JournalWriter, PlanExamples, PlanProposed, PlanRecalled
from stepgraph.model import StepGraph, WorkedExample
from stepgraph.task import PreparedTask

NEAR_EXAMPLES = 2  # remembered plans shown in place of fixed examples: a short prompt


class Remembering:
    """Plan memory as one run uses it; it keeps the plan it gave until that is replaced."""

    def __init__(
        self,
        memory: PlanMemory | None,
        prepared: PreparedTask,
        journal: JournalWriter,
        options: RunOptions,
        plans: PlanBook,
    ) -> None:
        self.memory = memory
        self.prepared = prepared
        self.journal = journal
        self.options = options
        self.plans = plans
        self.plan: StepGraph | None = None  # the plan memory gave
        self.source: Recalled | None = None  # ... and where it came from

    def applies(self) -> bool:
        """Whether memory applies: a typed goal, with no plan and no inputs of its own."""
        if self.memory is None or self.options.plan_file is not None:
            return False
        return self.prepared.plan is None and not self.prepared.task.inputs

    def recall(self) -> StepGraph | None:
        """The verified plan of a goal of this shape, re-bound to this goal, if memory has one."""
        recalled = self.options.recalled
        if recalled is None and self.applies():
            assert self.memory is not None
            outcome = self.memory.recall(self.prepared, tool_fingerprints(self.prepared.tools))
            if outcome.refused is not None:
                self.journal.emit(
                    PlanRecalled(
                        from_run=outcome.refused.run_id,
                        from_journal=outcome.refused.path,
                        from_goal=outcome.refused.goal,
                        refused=outcome.reasons or [],
                    )
                )
            recalled = outcome.recalled
        if recalled is None:
            return None
        dumped = recalled.plan.model_dump(mode="json")
        plan_hash = self.plans.hash(recalled.plan, dumped)
        self.journal.emit(
            PlanRecalled(
                from_run=recalled.from_run,
                from_journal=recalled.from_journal,
                from_goal=recalled.from_goal,
                rebound=recalled.rebound,
                plan_hash=plan_hash,
            )
        )
        self.journal.emit(PlanProposed(source="memory", plan=dumped, plan_hash=plan_hash))
        self.plan, self.source = recalled.plan, recalled
        return recalled.plan

    def origin(self, plan: StepGraph) -> str:
        """For a reviewer: the note that this plan came from memory, or ""."""
        if self.source is None or plan is not self.plan:
            return ""
        return recall_note(self.source.from_run, self.source.from_goal, self.source.rebound)

    def from_run(self, plan: StepGraph | None) -> str | None:
        """The verified run the plan was recalled from, if it is the recalled plan."""
        return self.source.from_run if self.source is not None and plan is self.plan else None

    def examples(self) -> list[WorkedExample]:
        """Remembered plans of the goals nearest this one, as the planner's worked examples."""
        examples = self.options.examples
        if examples is None:
            if not self.applies():
                return []
            assert self.memory is not None
            examples = self.memory.nearest(self.prepared.task.goal, NEAR_EXAMPLES)
        if examples:
            self.journal.emit(
                PlanExamples(examples=[example.model_dump(mode="json") for example in examples])
            )
        return examples
