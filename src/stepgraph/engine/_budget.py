"""Budgets: limits on model calls, tokens, tool calls, wall time and cost.

Every model call is journaled (`llm.request`) before it is sent, and every tool call
(`thought`, then `action`) before its tool starts. `BudgetKeeper.check` is a journal
guard: it sees those events before they are written and refuses the one whose call
would pass a limit, so the call is never made and nothing of it is in the journal.
Counts (calls) are refused when one more would pass the limit; amounts that are only
known after a call (tokens, cost, wall time) when they have reached it: the call that
crosses such a limit completes, and the next one is refused.

Cost is the user's price per million tokens when given, else genai-prices' bundled
data for the model's name (offline; imported only when a price is needed).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from stepgraph.exceptions import BudgetExceededError, TaskFileError
from stepgraph.journal import (
    Action,
    BudgetExceeded,
    JournalEvent,
    LLMRequest,
    LLMResponse,
    LLMUnused,
    ObservationEvent,
    RunResume,
    RunStart,
    Thought,
    read_journal,
)
from stepgraph.model import Budget, BudgetReport, BudgetUsage, Price

# What each limit is called by people and by the command line.
BUDGET_LABELS = {
    "model_calls": "model calls",
    "prompt_tokens": "prompt tokens",
    "completion_tokens": "completion tokens",
    "tool_calls": "tool calls",
    "wall_time": "wall time (s)",
    "cost": "cost (USD)",
}
_COUNTED = {"model_calls", "tool_calls"}  # known before the call: one more must still fit
_BEFORE_MODEL = ("model_calls", "prompt_tokens", "completion_tokens", "cost", "wall_time")
_BEFORE_TOOL = ("tool_calls", "wall_time")
_PROMPT_KEYS = ("prompt_tokens", "input_tokens")  # OpenAI's names, then the Responses API's
_COMPLETION_KEYS = ("completion_tokens", "output_tokens")


def option_name(limit: str) -> str:
    """The command-line option that sets a limit: ``model_calls`` -> ``--max-model-calls``."""
    return "--max-" + limit.replace("_", "-")


@functools.cache
def _catalogue_price(model: str) -> Any:
    """genai-prices' entry for a model name, or None (not installed, or an unknown model)."""
    try:
        import genai_prices  # a 1.5 MB table: imported on the first price asked for
    except ImportError:
        return None
    try:
        genai_prices.calc_price(genai_prices.Usage(input_tokens=0, output_tokens=0), model)
    except (LookupError, ValueError):
        return None
    return genai_prices


def model_cost(
    model: str, prompt: int, completion: int, price: Price | None, when: datetime | None = None
) -> float | None:
    """Dollars for one call: the user's price if given, else genai-prices', else None.

    No tokens cost nothing, whatever the model (a scripted model reports none).
    """
    if not prompt and not completion:
        return 0.0
    if price is not None:
        return (prompt * price.input + completion * price.output) / 1_000_000
    catalogue = _catalogue_price(model)
    if catalogue is None:
        return None
    usage = catalogue.Usage(input_tokens=prompt, output_tokens=completion)
    calculation = catalogue.calc_price(usage, model, genai_request_timestamp=when)
    return float(calculation.total_price)


def price_known(model: str, price: Price | None) -> bool:
    """True when a call to `model` can be priced: a price is given or genai-prices knows it."""
    return price is not None or _catalogue_price(model) is not None


def _tokens(usage: dict[str, int], keys: tuple[str, ...]) -> int:
    return next((usage[key] for key in keys if key in usage), 0)


class BudgetKeeper:
    """Counts what a run uses and refuses, as a journal guard, a call that would pass a limit."""

    def __init__(
        self,
        limits: Budget,
        *,
        used: BudgetUsage | None = None,
        journal: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits
        self.used = used.model_copy() if used is not None else BudgetUsage()
        self.journal = journal
        self._clock = clock
        self._earlier_wall = self.used.wall_time  # the segments before a resume
        self._started = clock()
        set_limits = limits.limits()  # only these are checked: a run without limits pays little
        self._before = {
            "model": tuple(name for name in _BEFORE_MODEL if name in set_limits),
            "tool": tuple(name for name in _BEFORE_TOOL if name in set_limits),
        }
        # Most events of a big run need no look: a result (its call was counted) and,
        # with no limit to check before a tool call, a thought.
        self._passed: frozenset[type[JournalEvent]] = frozenset(
            {ObservationEvent} if self._before["tool"] else {ObservationEvent, Thought}
        )

    def check(self, event: JournalEvent) -> None:
        """The guard: refuse a model or tool call past a limit, then count the event."""
        if type(event) in self._passed:
            return
        if isinstance(event, LLMRequest):
            self._refuse_past("model")
        elif isinstance(event, Thought | Action):
            self._refuse_past("tool")
        self.count(event)

    def count(self, event: JournalEvent) -> None:
        """Add what the event says was used (a request, an action, a reply's tokens)."""
        used = self.used
        if isinstance(event, LLMRequest | LLMUnused):  # asked ahead and never used counts too
            used.model_calls += 1
        elif isinstance(event, Action):
            used.tool_calls += 1
        if isinstance(event, LLMResponse | LLMUnused):
            prompt = _tokens(event.usage, _PROMPT_KEYS)
            completion = _tokens(event.usage, _COMPLETION_KEYS)
            used.prompt_tokens += prompt
            used.completion_tokens += completion
            when = datetime.fromisoformat(event.ts) if event.ts else None
            model = str(getattr(event, "model", "") or "")
            cost = model_cost(model, prompt, completion, self.limits.price, when)
            used.cost = None if cost is None or used.cost is None else used.cost + cost

    @property
    def recorded(self) -> Budget | None:
        """The limits for the run's first event to record; None when nothing is limited."""
        return self.limits if self.limits.model_dump(exclude_none=True) else None

    def usage(self) -> BudgetUsage:
        """What has been used so far, wall time up to now."""
        self.used.wall_time = round(self._earlier_wall + self._clock() - self._started, 3)
        return self.used.model_copy()

    def report(self) -> BudgetReport:
        """Usage against each limit."""
        return BudgetReport(limits=self.limits, used=self.usage())

    def _refuse_past(self, before: str) -> None:
        names = self._before[before]
        if not names:
            return
        used = self.used  # read in place: this runs before every call
        used.wall_time = round(self._earlier_wall + self._clock() - self._started, 3)
        for name in names:
            allowed = getattr(self.limits, name)
            value = getattr(used, name)
            if value is None:  # a cost limit, and a reply whose price is unknown
                self._stop(name, allowed, before, "cannot be known: no price for a model")
            over = value + 1 > allowed if name in _COUNTED else value >= allowed
            if over:
                self._stop(name, allowed, before, f"{value:g} used of {allowed:g}")

    def _stop(self, name: str, allowed: float, before: str, why: str) -> NoReturn:
        usage = self.usage()
        where = self.journal or "JOURNAL"
        raise BudgetExceededError(
            f"budget: {BUDGET_LABELS[name]} {why}; the run stopped before the next {before} call. "
            f"Continue it with a higher limit: stepgraph resume {where} {option_name(name)} N",
            limit=name,
            allowed=allowed,
            before=before,
            usage=usage.model_dump(mode="json"),
            journal=self.journal,
        )


def stop_event(error: BudgetExceededError) -> BudgetExceeded:
    """The journal event of a run stopped by its budget."""
    return BudgetExceeded(
        limit=error.limit, allowed=error.allowed, used=error.usage, before=error.before
    )


def recorded_limits(events: Iterable[JournalEvent]) -> Budget:
    """The budget a journal's run had last: `run.start` and each `run.resume` record it."""
    limits = Budget()
    for event in events:
        if isinstance(event, RunStart | RunResume) and event.budget is not None:
            limits = event.budget
    return limits


def journal_usage(events: Iterable[JournalEvent], price: Price | None = None) -> BudgetUsage:
    """What a recorded run used; wall time sums its segments (start or resume to last event)."""
    keeper = BudgetKeeper(Budget(price=price))
    wall = 0.0
    first: datetime | None = None
    last: datetime | None = None
    for event in events:
        keeper.count(event)
        if not event.ts:
            continue
        stamp = datetime.fromisoformat(event.ts)
        if isinstance(event, RunStart | RunResume):
            if first is not None and last is not None:
                wall += (last - first).total_seconds()
            first = stamp
        last = stamp
    if first is not None and last is not None:
        wall += (last - first).total_seconds()
    keeper.used.wall_time = round(wall, 3)
    return keeper.used


def journal_budget(events: list[JournalEvent]) -> BudgetReport:
    """A recorded run's usage against the limits it had last."""
    limits = recorded_limits(events)
    return BudgetReport(limits=limits, used=journal_usage(events, limits.price))


def budget_keeper(
    task_budget: Budget | None,
    asked: Budget | None,
    *,
    resumed: bool,
    model: str | None,
    journal: Path,
) -> BudgetKeeper:
    """The keeper of one run: the task's limits, then a resumed run's, then the caller's.

    Its `recorded` limits are for `run.start` (or `run.resume`) to record, so `show` and a
    later resume know them; a resumed run starts from what its journal says was used.

    Raises:
        TaskFileError: a cost limit for a model whose price is not known.
    """
    limits = task_budget or Budget()
    used = None
    if resumed:
        events = read_journal(journal).events
        limits = limits.merged(recorded_limits(events))
        used = journal_usage(events, limits.price)
    limits = limits.merged(asked)
    if limits.cost is not None and model and not price_known(model, limits.price):
        raise TaskFileError(
            f"a cost limit needs the price of model '{model}', and genai-prices does not "
            "know it: give one, e.g. --price-per-mtok input=0.15,output=0.6 (dollars per "
            "million tokens), or 'price:' under the task's 'budget:'"
        )
    return BudgetKeeper(limits, used=used, journal=str(journal))
