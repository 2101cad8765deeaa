"""The collector is kept off a run's starting heap, and the heap is always handed back."""

import gc
import sys
import weakref

import pytest

from stepgraph import Engine, PlanValidationError
from stepgraph.executor import frozen_heap, validate_plan
from stepgraph.tools import default_registry
from tests.conftest import EXAMPLES, make_task


class _Node:
    """An object that can sit in a reference cycle and be watched through a weakref."""

    def __init__(self) -> None:
        self.partner: _Node | None = None


def test_a_run_hands_the_heap_back(tmp_path):
    """Nothing stays frozen after a run, so later collections see everything again."""
    result = Engine(journal_dir=tmp_path).run(EXAMPLES / "migration.yaml")
    assert result.verified
    assert gc.get_freeze_count() == 0


def test_a_block_that_raises_still_hands_the_heap_back():
    with pytest.raises(RuntimeError), frozen_heap():
        assert gc.get_freeze_count() > 0
        raise RuntimeError("a run that fails")
    assert gc.get_freeze_count() == 0


def test_an_overlapping_run_leaves_the_freeze_to_its_holder():
    """A second run inside the first neither freezes again nor unfreezes the first's heap."""
    with frozen_heap():
        frozen = gc.get_freeze_count()
        made_since = [[] for _ in range(1000)]  # a second freeze would take these in too
        # Frozen objects that die meanwhile (a finished run's worker threads ending) lower
        # the count: what must not happen is a rise (a second freeze) or zero (an unfreeze).
        with frozen_heap():
            assert 0 < gc.get_freeze_count() <= frozen
        assert 0 < gc.get_freeze_count() <= frozen
        assert len(made_since) == 1000
    assert gc.get_freeze_count() == 0


def test_garbage_left_between_runs_is_freed_once_the_heap_grew_by_a_quarter():
    """Back-to-back runs never let CPython's own full collection fire; a run start does it."""
    first = _Node()
    first.partner = _Node()
    first.partner.partner = first
    watch = weakref.ref(first)
    gc.collect()
    with frozen_heap():  # the heap is measured here
        pass
    del first  # garbage now, in the oldest generation: young collections never see it
    ballast = [[] for _ in range(sys.getallocatedblocks() // 3)]  # the heap grows by a third
    with frozen_heap():
        assert watch() is None
    assert len(ballast) > 0


@pytest.mark.parametrize("enabled", [True, False])
def test_checking_a_plan_leaves_the_collector_as_it_found_it(enabled):
    """Validation pauses the collector while it builds; a valid or a refused plan alike."""
    good = make_task([{"id": "a", "tool": "calculate", "args": {"expression": "1 + 1"}}]).plan
    bad = make_task([{"id": "a", "tool": "nope"}]).plan
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        validate_plan(good, default_registry())
        assert gc.isenabled() is enabled
        with pytest.raises(PlanValidationError):
            validate_plan(bad, default_registry())
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def _frozen_during_a_run(tmp_path, **engine_options) -> list[int]:
    """The frozen-object count seen by a tool while a run calls it."""
    from stepgraph import tool

    seen: list[int] = []

    @tool
    def look(x: float) -> float:
        """Report how much of the heap is frozen; return x."""
        seen.append(gc.get_freeze_count())
        return x

    task = make_task([{"id": "a", "tool": "look", "args": {"x": 1}}])
    Engine(tools=[look], journal_dir=tmp_path, **engine_options).run(task)
    return seen


def test_a_run_freezes_the_heap_by_default_and_not_when_switched_off(tmp_path):
    """`Engine(freeze_heap=False)`: nothing is frozen while the run's tools are called."""
    assert _frozen_during_a_run(tmp_path)[0] > 0
    assert _frozen_during_a_run(tmp_path, freeze_heap=False) == [0]
    assert gc.get_freeze_count() == 0


_HOST = """
import gc, sys
from stepgraph import Engine
gc.freeze()  # the host's, as before forking workers
before = gc.get_freeze_count()
result = Engine(journal_dir=sys.argv[1]).run(sys.argv[2])
assert result.verified
print(before, gc.get_freeze_count())
"""


def test_a_heap_the_host_froze_stays_frozen_after_runs(tmp_path):
    """The pre-fork pattern: a host's `gc.freeze()` is not undone by a run's `unfreeze`.

    In a fresh interpreter: the process's first freeze must be the host's.
    """
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", _HOST, str(tmp_path), str(EXAMPLES / "migration.yaml")],
        capture_output=True,
        text=True,
        check=True,
    )
    before, after = map(int, done.stdout.split())
    assert before > 0 and after > 0.9 * before  # still frozen (a few frozen objects died)


def test_the_command_line_s_own_freeze_is_handed_back_by_a_run(tmp_path):
    """`freeze_imports` is stepgraph's: the run that follows it unfreezes the lot, as before."""
    import subprocess

    script = (
        "import gc, sys\n"
        "from stepgraph import Engine\n"
        "from stepgraph.executor import freeze_imports\n"
        "freeze_imports()\n"
        "assert gc.get_freeze_count() > 0\n"
        "Engine(journal_dir=sys.argv[1]).run(sys.argv[2])\n"
        "print(gc.get_freeze_count())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), str(EXAMPLES / "migration.yaml")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(done.stdout) == 0
