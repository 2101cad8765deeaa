"""What a run's last round did to each step, folded one event at a time.

A repaired run executes again after each approval of a repaired plan; what was verified
is what its last round checked: a check that failed in the first round and passed after
the repair does not leave a step `check_failed`, and a step the repair removed is no
step of the run. `StepFacts` keeps, for the last round only, which steps ran (and
whether they succeeded), which were skipped, which are running now, and the verdicts;
`stepgraph.verifiers.step_states` turns those into states (the engine's
`recorded_step_states` does, for every face alike).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stepgraph.model import Verdict, VerdictKind

_KINDS = {kind.value: kind for kind in VerdictKind}


@dataclass
class StepFacts:
    """The last round's steps: ran (step -> succeeded), skipped, running, and its verdicts."""

    ran: dict[str, bool] = field(default_factory=dict)
    skipped: dict[str, None] = field(default_factory=dict)  # a dict: ordered, each once
    running: dict[str, None] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    rounds: int = 0  # plans approved so far: the round the next events belong to

    def take(self, kind: str, step: str | None, data: Mapping[str, Any]) -> None:
        """Fold one event (its kind, step and fields) in."""
        if kind == "plan.approved":  # a new round: what the last one did is not this one's
            self.ran.clear()
            self.skipped.clear()
            self.running.clear()
            self.verdicts.clear()
            self.rounds += 1
        elif kind == "check":
            verdict_kind = _KINDS.get(str(data.get("kind", "")))
            if verdict_kind is None:  # a kind this version does not know checks nothing here
                return
            values = data.get("values")
            self.verdicts.append(
                Verdict.model_construct(  # from the journal's own line: already validated
                    kind=verdict_kind,
                    step=step,
                    passed=bool(data.get("passed")),
                    description=str(data.get("description", "")),
                    values=values if isinstance(values, dict) else {},
                    tolerance=data.get("tolerance"),
                )
            )
        elif step is None:
            return
        elif kind == "action":
            self.running[step] = None
        elif kind == "observation" and data.get("final"):
            self.ran[step] = bool(data.get("ok"))
            self.running.pop(step, None)
        elif kind == "step.reused":
            self.ran[step] = True
        elif kind == "step.skipped":
            self.skipped[step] = None
            self.running.pop(step, None)
