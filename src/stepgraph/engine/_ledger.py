"""The calls of one run across its rounds: what settled is reused, what keeps failing refused.

A repair round runs a new plan, but a step whose call (tool and resolved arguments, its
signature) already succeeded is not called again, and a call that ran twice without
success is refused a third time: the loop guard. The last round is settled only when the
next one needs it, because most runs verify in one round and hashing every step costs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, NamedTuple

import networkx as nx

from stepgraph.exceptions import StepgraphError
from stepgraph.executor import Execution, resolve_args, step_signatures
from stepgraph.journal import Prior
from stepgraph.references import ReferenceError_
from stepgraph.tools import ToolRegistry

MAX_RUNS_OF_ONE_CALL = 2  # the loop guard: a third request for the same call is refused

Settled = dict[str, tuple[Any, dict[str, Any]]]  # signature -> (value, arguments)


class _Round(NamedTuple):
    """One execution of a plan, kept until a next round needs its calls by signature."""

    graph: nx.DiGraph
    signatures: dict[str, str]  # empty: not computed yet
    execution: Execution
    reused: set[str]
    refused: set[str]


class Planned(NamedTuple):
    """What a round is to reuse and refuse, by step id, and the signatures that say so."""

    signatures: dict[str, str]
    reused: dict[str, Any]
    refused: dict[str, str]


class CallLedger:
    """The values that settled, by signature, and how often each call ran without success."""

    def __init__(self) -> None:
        self.completed: Settled = {}
        self.runs_of_call: Counter[str] = Counter()
        self._last: _Round | None = None

    def settle(self, settled: Settled) -> None:
        """Count these calls as done (a parked run's, or the read-only steps run early)."""
        self.completed.update(settled)

    def plan_round(self, graph: nx.DiGraph, prior: Prior | None) -> Planned:
        """What the round about to run `graph` reuses and refuses (`prior`: a resumed run)."""
        self._settle_last()
        # Signatures matter only where calls may be reused or refused: after an earlier
        # round or a crash.
        needed = prior is not None or self.completed or self.runs_of_call
        signatures = step_signatures(graph) if needed else {}
        if prior is not None:  # a resumed run: what settled before the crash counts as done
            for sid, value in prior.values.items():
                self.completed[signatures[sid]] = (value, prior.actions.get(sid, {}))
        reused = {
            sid: self.completed[sig][0] for sid, sig in signatures.items() if sig in self.completed
        }
        refused = {
            sid: f"refused: this call already ran {self.runs_of_call[sig]} times without success"
            for sid, sig in signatures.items()
            if sid not in reused and self.runs_of_call[sig] >= MAX_RUNS_OF_ONE_CALL
        }
        if prior is not None:
            refused.update(prior.failed)
        return Planned(signatures, reused, refused)

    def ran(
        self,
        graph: nx.DiGraph,
        planned: Planned,
        execution: Execution,
        tools: ToolRegistry,
        inputs: Mapping[str, Any],
    ) -> None:
        """The round ran: reused steps get their arguments back; it is settled by the next.

        The arguments are the step's own, bound to this round's values: the call that
        settled may be another plan's, whose references name its own steps. A fresh plan
        that computes the same ``printers_needed`` under other names was held to the
        first plan's ``${total_pages}``, so changing an input moved nothing the check
        could see, and every input was reported as never reaching the answer (the
        suite's printers-needed).
        """
        scope = {"inputs": dict(inputs), **execution.values}
        for sid in planned.reused:  # verifiers need the arguments
            step = graph.nodes[sid]["step"]
            try:
                args = resolve_args(tools.get(step.tool), step.args, scope)
            except (ReferenceError_, StepgraphError):
                args = self.completed[planned.signatures[sid]][1]
            execution.record(sid).args = args
        self._last = _Round(
            graph, planned.signatures, execution, set(planned.reused), set(planned.refused)
        )

    def _settle_last(self) -> None:
        """Count the last round's calls and keep its values by signature, for reuse now."""
        last, self._last = self._last, None
        if last is None:
            return
        signatures = last.signatures or step_signatures(last.graph)
        execution = last.execution
        for sid, sig in signatures.items():
            if sid in last.reused:
                continue
            if sid in execution.actions and sid not in last.refused:
                self.runs_of_call[sig] += 1
            if sid in execution.values:
                self.completed[sig] = (execution.values[sid], execution.actions.get(sid, {}))
