"""A backend's optional capabilities are declared Protocols, and the scheduler honours them."""

from concurrent.futures import Future

from stepgraph import Engine, RunStatus
from stepgraph.executor import AheadBackend, ThreadBackend, ThreadLimited
from tests.conftest import EXAMPLES


class _Plain:
    """A backend with only the three required methods: runs each call inline."""

    def __init__(self) -> None:
        self.limits: list[int] = []

    def submit(self, call):
        future: Future = Future()
        try:
            future.set_result(call.run())
        except Exception as e:
            future.set_exception(e)
        return future

    def cancel(self, future):
        future.cancel()

    def shutdown(self):
        pass


class _Limited(_Plain):
    """The same, declaring `ThreadLimited`: it is told the run's worker count."""

    def limit_threads(self, count: int) -> None:
        self.limits.append(count)


def test_the_thread_backend_declares_a_thread_limit_and_no_ahead_submission():
    backend = ThreadBackend()
    try:
        assert isinstance(backend, ThreadLimited)
        assert not isinstance(backend, AheadBackend)
    finally:
        backend.shutdown()


def test_a_backend_that_declares_a_thread_limit_is_given_the_worker_count(tmp_path):
    made: list[_Plain] = []

    def limited() -> _Plain:
        made.append(_Limited())
        return made[-1]

    result = Engine(backend=limited, max_workers=3).run(
        EXAMPLES / "migration.yaml", journal=tmp_path / "j.jsonl"
    )
    assert result.status is RunStatus.VERIFIED
    assert made and made[0].limits == [3]


def test_a_backend_without_optional_capabilities_still_runs_a_plan(tmp_path):
    plain = _Plain()
    assert not isinstance(plain, ThreadLimited) and not isinstance(plain, AheadBackend)
    result = Engine(backend=lambda: plain).run(
        EXAMPLES / "migration.yaml", journal=tmp_path / "j.jsonl"
    )
    assert result.status is RunStatus.VERIFIED and result.answer
