"""GSM8K and SVAMP JSONL files read as suites, sampled with a seed, and run by `stepgraph eval`."""

import json
from typing import get_args

import pytest
import yaml

from stepgraph.cli import ExitCode
from stepgraph.cli._eval_command import DatasetOpt
from stepgraph.evaluation import DATASETS, detect_dataset, final_number, load_dataset
from stepgraph.evaluation._correct import value_matches
from stepgraph.exceptions import TaskFileError
from tests.conftest import flat, invoke

GSM8K = [
    {"question": "Janet has 3 ducks and buys 4 more. How many ducks?", "answer": "3+4=7\n#### 7"},
    {"question": "A house costs $9,000 and rises by $9,000. Price?", "answer": "#### 18,000"},
    {"question": "It is 2 degrees and drops by 5. Temperature?", "answer": "2-5=-3\n#### -3"},
    {"question": "Tom has 10 apples and eats 4. How many are left?", "answer": "#### 6"},
    {"question": "5 boxes of 6 eggs. How many eggs?", "answer": "#### 30"},
]
SVAMP = [
    # the extra keys of the real file are ignored
    {"Body": "There are 87 oranges.", "Question": "How many?", "Answer": 87.0, "ID": "chal-1"},
    {"Body": "Jack had 8 pens", "Question": "He gave 3 away. How many are left?", "Answer": 5.0},
]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def gsm8k(tmp_path):
    return _jsonl(tmp_path / "test.jsonl", GSM8K)


def test_gsm8k_answers_are_the_number_after_the_hashes_commas_and_signs_included(gsm8k):
    suite = load_dataset(gsm8k)
    assert [g.id for g in suite.goals] == [f"gsm8k-test-{n}" for n in range(5)]
    assert [g.expect.value for g in suite.goals] == [7, 18000, -3, 6, 30]
    assert {g.category for g in suite.goals} == {"gsm8k"}
    assert suite.goals[1].goal == GSM8K[1]["question"]
    assert value_matches(suite.goals[1].expected(), 18000.0, suite.tolerance)


def test_an_answer_off_by_one_does_not_match_even_for_a_large_number(tmp_path):
    path = _jsonl(tmp_path / "train.jsonl", [{"question": "q?", "answer": "#### 2,880,000"}])
    suite = load_dataset(path)
    assert suite.goals[0].id == "gsm8k-train-0"
    assert not value_matches(suite.goals[0].expected(), 2_879_999, suite.tolerance)
    assert value_matches(suite.goals[0].expected(), 2_880_000, suite.tolerance)


def test_svamp_joins_body_and_question_and_reads_the_answer(tmp_path):
    suite = load_dataset(_jsonl(tmp_path / "svamp-test.jsonl", SVAMP))
    assert [g.id for g in suite.goals] == ["svamp-test-0", "svamp-test-1"]
    assert suite.goals[1].goal == "Jack had 8 pens He gave 3 away. How many are left?"
    assert [g.expect.value for g in suite.goals] == [87, 5]
    assert suite.goals[0].category == "svamp"


def test_the_same_seed_draws_the_same_items_in_file_order_and_another_seed_others(gsm8k):
    first = [g.id for g in load_dataset(gsm8k, seed=7, size=3).goals]
    assert first == [g.id for g in load_dataset(gsm8k, seed=7, size=3).goals]
    assert first == sorted(first, key=lambda name: int(name.rsplit("-", 1)[1]))
    draws = {tuple(g.id for g in load_dataset(gsm8k, seed=s, size=3).goals) for s in range(8)}
    assert len(draws) > 1
    assert "3 of 5 items (3 drawn with seed 7" in load_dataset(gsm8k, seed=7, size=3).description


def test_a_size_larger_than_the_file_is_refused_saying_how_many_there_are(gsm8k):
    with pytest.raises(TaskFileError, match="size 6 is more than the 5 items the file holds"):
        load_dataset(gsm8k, size=6)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"question": "q?", "answer": "no final line"}', "line 2: .*no '#### <number>' line"),
        ('{"question": "q?", "answer": "#### about 3"}', "line 2: .*'about 3' is not a number"),
        ('{"question": "q?"}', "line 2: .*missing key 'answer'"),
        ("not json", "line 2: not a gsm8k item"),
        ('{"question": "  ", "answer": "#### 3"}', "line 2: .*the question is empty"),
    ],
)
def test_a_bad_line_is_refused_naming_the_line(tmp_path, line, problem):
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps(GSM8K[0]) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(TaskFileError, match=problem):
        load_dataset(path)


def test_a_file_of_neither_shape_is_not_taken_for_a_dataset(tmp_path):
    other = _jsonl(tmp_path / "other.jsonl", [{"prompt": "x", "completion": "y"}])
    assert detect_dataset(other) is None
    with pytest.raises(TaskFileError, match="neither a GSM8K item .* nor a SVAMP item"):
        load_dataset(other)
    with pytest.raises(TaskFileError, match="unknown dataset 'math'"):
        load_dataset(other, dataset="math")


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("3 + 4 = 7.\nANSWER: 7", 7),
        ("So 9,000 * 2 = 18,000 dollars.\n**ANSWER:** $18,000.", 18000),
        ("It drops to -3 degrees.\nAnswer: -3", -3),
        ("ANSWER: 5 at first, then 6\nwait, ANSWER: 6", 6),
        ("The result is \\boxed{42} as 6 * 7", 42),
        ("16 - 3 - 4 = 9 eggs, at $2 each that is 18", 18),
        ("no number at all", None),
    ],
)
def test_a_free_text_answer_is_read_by_its_answer_line_else_boxed_else_its_last_number(
    text, number
):
    assert final_number(text) == number


def test_the_dataset_option_offers_what_evaluation_reads():
    assert get_args(DatasetOpt) == DATASETS


def test_eval_runs_a_seeded_sample_of_a_dataset_file(gsm8k, tmp_path):
    script = tmp_path / "script.yaml"
    plan = '{"steps": [{"id": "n", "tool": "calculate", "args": {"expression": "%s"}}]}'
    # seed 7, size 2 draws items 1 and 2 (file order): 18,000 and -3
    responses = [plan % "9000 + 9000", "18000 dollars.", plan % "2 - 5", "-3 degrees."]
    script.write_text(yaml.safe_dump({"scripted": True, "responses": responses}))
    result = invoke("eval", gsm8k, "--seed", 7, "--size", 2, "--scripted", script,
                    "--journal-dir", tmp_path / "j", "--json")  # fmt: skip
    assert result.exit_code == ExitCode.OK, result.output
    document = json.loads(result.stdout)
    assert [g["goal"] for g in document["goals"]] == ["gsm8k-test-1", "gsm8k-test-2"]
    assert (document["dataset"], document["seed"], document["size"]) == ("gsm8k", 7, 2)
    assert [g["correct"] for g in document["goals"]] == [True, True]


def test_eval_reads_a_dataset_given_by_name_and_refuses_size_for_a_yaml_suite(tmp_path):
    data = _jsonl(tmp_path / "items.txt", SVAMP)
    result = invoke("eval", data, "--dataset", "svamp", "--size", 9, "--scripted", data)
    assert result.exit_code == ExitCode.INVALID
    assert "size 9 is more than the 2 items the file holds" in flat(result.output)
    suite = tmp_path / "suite.yaml"
    suite.write_text("goals:\n- {id: a, goal: 'How many?', expect: 3}\n")
    result = invoke("eval", suite, "--size", 1, "--scripted", suite)
    assert result.exit_code == ExitCode.USAGE
    assert "--size and --seed draw items from a dataset file" in flat(result.output)
