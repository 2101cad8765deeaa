"""Replay, resume and park rebuild the engine and the task from the recording, one way."""

from stepgraph import Engine
from stepgraph.engine._recorded import engine_from, prepared_from
from stepgraph.journal import Recording
from tests.conftest import EXAMPLES


def test_the_engine_is_set_as_the_recorded_run_s_and_given_settings_win(tmp_path):
    Engine(repair_rounds=1, cross_check=False).run(
        EXAMPLES / "migration.yaml", journal=tmp_path / "j.jsonl", overrides={"data": "10 TB"}
    )
    recording = Recording.load(tmp_path / "j.jsonl")
    assert engine_from(recording).config.repair_rounds == 1
    assert engine_from(recording, repair_rounds=3).config.repair_rounds == 3
    prepared = prepared_from(recording, engine_from(recording))
    assert prepared.inputs == recording.inputs  # the run's inputs, `--set` included
    assert prepared.task.name == recording.task.name
