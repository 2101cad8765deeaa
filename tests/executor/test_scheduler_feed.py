"""An open scheduler: steps given while it runs, until it is closed."""

import threading

import networkx as nx

from stepgraph.executor import Scheduler, StepState
from stepgraph.journal import NullJournal
from stepgraph.model import Step
from stepgraph.tools import default_registry


def calc(step_id, expression):
    return Step(id=step_id, tool="calculate", args={"expression": expression})


def open_scheduler():
    scheduler = Scheduler(nx.DiGraph(), default_registry(), {}, NullJournal(), max_workers=2)
    scheduler.open()
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.update(result=scheduler.run()))
    thread.start()
    return scheduler, thread, outcome


def test_steps_given_later_run_with_the_values_of_steps_given_earlier():
    scheduler, thread, outcome = open_scheduler()
    scheduler.add([calc("a", "2 + 3")])
    scheduler.add([calc("b", "${a} * 10"), calc("c", "${b} + ${a}")])
    scheduler.close()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert outcome["result"].values == {"a": 5, "b": 50, "c": 55}


def test_a_step_given_after_its_upstream_failed_is_skipped():
    scheduler, thread, outcome = open_scheduler()
    scheduler.add([calc("a", "1 / 0")])
    scheduler.add([calc("b", "${a} + 1")])
    scheduler.close()
    thread.join(timeout=10)
    records = outcome["result"].records
    assert records["a"].state is StepState.FAILED
    assert records["b"].state is StepState.SKIPPED and "'a'" in (records["b"].error or "")


def test_an_open_scheduler_waits_for_steps_and_ends_when_closed():
    scheduler, thread, outcome = open_scheduler()
    thread.join(timeout=0.05)
    assert thread.is_alive()  # idle, not finished: more steps may come
    scheduler.close()
    thread.join(timeout=10)
    assert not thread.is_alive() and outcome["result"].values == {}
