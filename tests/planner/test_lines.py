"""Plans in lines: Python-like lines a code model writes, read into the same plan (never run)."""

import re
from pathlib import Path

import pytest
import yaml

from stepgraph.engine import Engine
from stepgraph.exceptions import PlanningError
from stepgraph.journal import read_journal
from stepgraph.model import RunStatus, Task
from stepgraph.planner import Planner
from stepgraph.planner._lines import LinesError, read_lines
from stepgraph.planner._lines_shown import plan_lines
from stepgraph.planner._parse import parse_plan
from stepgraph.planner._prompt import template
from stepgraph.planner._read_goal import read_inputs
from stepgraph.testing import ScriptedLLM
from stepgraph.tools import default_registry

EXAMPLES = yaml.safe_load(template("examples_lines.yaml"))
CANONICAL = (
    "How many nights does it take to move 2.5 TB over a 450 Mbps link, only from 00:00 to "
    "06:00, at 90% utilisation and with 12% lost to retries?"
)
CANONICAL_LINES = """Sure! Here is the plan:
```python
# one night's share of the data, then whole nights
per_night: "GB" = link * duration * utilisation * (1 - lost)
nights = ceil(data / per_night)
assert nights * per_night >= data, "the nights cover the data"
answer = f"{nights} nights ({per_night} per night)"
```
"""


@pytest.mark.parametrize("example", EXAMPLES, ids=[str(i) for i in range(len(EXAMPLES))])
def test_each_worked_example_lists_what_the_engine_reads_and_reads_into_a_valid_plan(example):
    read = read_inputs(example["goal"])
    assert {name: [str(item.value), item.quote] for name, item in read.items()} == {
        name: [str(value), quote] for name, (value, quote) in example["inputs"].items()
    }
    tools = default_registry()
    data = read_lines(example["lines"], list(read), tools.names())
    import json

    parsed = parse_plan(json.dumps(data), tools, {}, read=read)
    assert parsed.plan is not None, parsed.problems


def test_lines_become_steps_checks_constants_and_an_answer_with_references():
    data = read_lines(
        'per_day = people * rate * "7.5 h"  # the team\'s day\n'
        "days_per_week = 5  # a working week\n"
        'week: "h" = per_day * days_per_week\n'
        'size = unit_convert(value=data, to_unit="GB")\n'
        'assert week >= per_day, "a week holds a day"\n'
        'answer = f"{week} a week, {size}"\n',
        ["people", "rate", "data"],
        ["calculate", "unit_convert"],
    )
    assert data["steps"] == [
        {
            "id": "per_day",
            "thought": "the team's day",
            "tool": "calculate",
            "args": {"expression": "${inputs.people} * ${inputs.rate} * (7.5 h)"},
        },
        {
            "id": "week",
            "tool": "calculate",
            "args": {"expression": "${per_day} * ${inputs.days_per_week}"},
            "expect_unit": "h",
        },
        {
            "id": "size",
            "tool": "unit_convert",
            "args": {"value": "${inputs.data}", "to_unit": "GB"},
        },
    ]
    assert data["constants"] == {"days_per_week": {"value": 5, "why": "a working week"}}
    assert data["checks"] == [{"expression": "${week} >= ${per_day}", "why": "a week holds a day"}]
    assert data["answer"] == "${week} a week, ${size}"


def test_a_name_assigned_again_is_a_new_step_as_in_python():
    data = read_lines("x = a + 1\nx = x * 2\nanswer = f'{x}'", ["a"], ["calculate"])
    assert [s["id"] for s in data["steps"]] == ["x", "x_2"]
    assert data["steps"][1]["args"]["expression"] == "${x} * 2"
    assert data["answer"] == "${x_2}"


def test_a_name_spelled_without_its_underscores_is_the_one_name_spelled_so():
    # GSM8K train 1899: `usd_25` written for the read input `usd_2_5` ($2.50).
    bound: list[str] = []
    data = read_lines("x = usd_25 * n3", ["usd_2_5", "n3"], ["calculate"], bound=bound)
    assert data["steps"][0]["args"]["expression"] == "${inputs.usd_2_5} * ${inputs.n3}"
    assert bound == ["line 1: 'usd_25' read as usd_2_5, the only name spelled so"]
    with pytest.raises(LinesError, match="'n25' is neither an input nor an earlier step"):
        read_lines("x = n25", ["n2_5", "n_25"], ["calculate"])  # two: no guess


def test_a_name_written_in_the_plural_is_the_one_name_spelled_so():
    # `dumplings_1` for the read input `dumpling_1` ("1 more dumpling than each female").
    bound: list[str] = []
    scope = ["dumpling_1", "dumplings_3", "males_8"]
    data = read_lines("x = males_8 * (dumplings_1 + dumpling_3)", scope, ["calculate"], bound=bound)
    assert data["steps"][0]["args"]["expression"] == (
        "${inputs.males_8} * (${inputs.dumpling_1} + ${inputs.dumplings_3})"
    )
    assert bound == [
        "line 1: 'dumplings_1' read as dumpling_1, the only name spelled so",
        "line 1: 'dumpling_3' read as dumplings_3, the only name spelled so",
    ]
    with pytest.raises(LinesError, match="'egg_2' is neither an input nor an earlier step"):
        read_lines("x = egg_2", ["eggs_2", "Eggs_2"], ["calculate"])  # two: no guess
    with pytest.raises(LinesError, match="'dumplings_2' is neither"):
        read_lines("x = dumplings_2", ["dumpling_1"], ["calculate"])  # the number differs


def test_an_augmented_assignment_is_a_new_step_of_the_name_and_the_value():
    # GSM8K train 1570: `chocolate_bought += chocolate` was refused as no plan line.
    data = read_lines("x = a + 1\nx += a\nx *= 2\nanswer = f'{x}'", ["a"], ["calculate"])
    assert [s["args"]["expression"] for s in data["steps"]] == [
        "${inputs.a} + 1",
        "${x} + ${inputs.a}",
        "${x_2} * 2",
    ]
    assert data["answer"] == "${x_3}"
    with pytest.raises(LinesError, match="'y' is neither an input nor an earlier step"):
        read_lines("y += a", ["a"], ["calculate"])


@pytest.mark.parametrize("annotation", ['"2"', "4", '"1,000"', '""'])
def test_a_number_written_where_the_unit_goes_is_no_unit(annotation):
    # Qwen2.5-Coder-1.5B on GSM8K train 6942, three times: kangaroos_legs: "2" = ...
    data = read_lines(f"legs: {annotation} = a * 2\nanswer = f'{{legs}}'", ["a"], ["calculate"])
    assert data["steps"] == [
        {"id": "legs", "tool": "calculate", "args": {"expression": "${inputs.a} * 2"}}
    ]
    kept = read_lines('size: "GB" = a * 2\nanswer = f"{size}"', ["a"], ["calculate"])
    assert kept["steps"][0]["expect_unit"] == "GB"


COPY_DAYS = (
    "We copy 50 TB over a 1 Gbps link that is free 4 hours a day; it runs at 65% utilisation "
    "and loses 2% of the traffic to retransmissions. How many days does the copy take?"
)
COPY_DAYS_LINES = """per_day: "TB" = link * day * utilisation * (1 - traffic_share)
days = ceil(data / per_day)
assert days * per_day >= data, "the days copy the whole data"
answer = f"{days} days ({per_day} per day)"
"""


def test_the_whole_a_share_is_taken_from_is_no_input_of_the_goal():
    # The 1.5B model's right plan for a tuning goal: its 1 was read as "1 Gbps link", so a
    # day's volume was Gbps less a share and refused for its units, in all three attempts.
    llm = ScriptedLLM([COPY_DAYS_LINES])
    planner = Planner(llm, plan_retries=0, syntax="lines", numbered_names=True)
    result = Engine(planner=planner).run(Task(name="g", goal=COPY_DAYS))
    # 125 MB/s x 4 h x 0.65 x 0.98 = 1.1466 TB a day; 50 / 1.1466 = 43.6
    assert result.status is RunStatus.VERIFIED, result.answer
    assert result.answer == "44 days (1.1466 TB per day)"
    read = read_inputs(COPY_DAYS, numbered=True)
    numbers = {"link": 1.0, "traffic_share": 0.02}
    lines = "kept = 1 - 0.02\ngrown = 1 + traffic_share"
    written = read_lines(lines, list(read), ["calculate"], numbers=numbers,
                         shares=["traffic_share"], measured=["link"])  # fmt: skip
    assert [step["args"]["expression"] for step in written["steps"]] == [
        "1 - ${inputs.traffic_share}", "1 + ${inputs.traffic_share}",
    ]  # fmt: skip
    # a 1 that is no whole of a share is still the goal's 1
    alone = read_lines("rate = 1 * 8", list(read), ["calculate"], numbers=numbers)
    assert alone["steps"][0]["args"]["expression"] == "${inputs.link} * 8"
    # and so is a read 1 of no unit ("1 pie ... ate a third"): it may be the whole itself
    pie = read_lines("left = 1 - third", ["pie", "third"], ["calculate"],
                     numbers={"pie": 1.0, "third": 1 / 3}, shares=["third"])  # fmt: skip
    assert pie["steps"][0]["args"]["expression"] == "${inputs.pie} - ${inputs.third}"


def test_a_colon_typed_for_the_equals_sign_is_an_assignment():
    # The suite's transfer-nights in nine runs: `utilisation_factor: 1 - traffic_share`
    text = "Note: this is it\nkept: 1 - lost\nAnswer: 42\nanswer = f'{kept}'"
    data = read_lines(text, ["lost"], ["calculate"])
    assert data["steps"] == [
        {"id": "kept", "tool": "calculate", "args": {"expression": "1 - ${inputs.lost}"}}
    ]
    with pytest.raises(LinesError, match="a plan line is name = expression"):
        read_lines('size: "GB" # in GB = 1\nanswer = f"{size}"', ["a"], ["calculate"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x = y + 1", "'y' is neither an input nor an earlier step"),
        ("x = = 2", "line 1: not a plan line"),
        ("for i in a: x = 1", "a plan line is name = expression"),
        ("x = a.real", "only arithmetic on names"),
        ("a.b = 1", "assign to one plain name"),
        ("# only a thought", "the plan has no steps"),
        ("x: GB = 2", "write the unit as a string"),
        ("x = unit_convert(a, 'GB')", "name each argument"),
    ],
)
def test_lines_that_are_no_plan_are_refused_with_the_line_named(text, message):
    with pytest.raises(LinesError, match=message):
        read_lines(text, ["a"], ["calculate", "unit_convert"])


def test_lines_are_never_executed():
    # Read with ast into a plan's data; nothing a line says is called or imported.
    with pytest.raises(LinesError, match="call functions by name only"):
        read_lines("x = __import__('os').system('touch /tmp/pwned')", [], ["calculate"])
    with pytest.raises(LinesError, match="call functions by name only"):
        read_lines("x = a\nx += __import__('os').getcwd()", ["a"], ["calculate"])
    with pytest.raises(LinesError, match="a plan line is name = expression"):
        read_lines("a.b += 1", ["a"], ["calculate"])


def test_a_plan_shown_back_in_lines_reads_into_the_same_plan():
    data = read_lines(CANONICAL_LINES, list(read_inputs(CANONICAL)), ["calculate"])
    again = read_lines(plan_lines(data), list(read_inputs(CANONICAL)), ["calculate"])
    assert again == data


def test_the_canonical_goal_planned_in_lines_runs_and_verifies(tmp_path):
    llm = ScriptedLLM([CANONICAL_LINES])
    engine = Engine(planner=Planner(llm, plan_retries=0, syntax="lines"))
    result = engine.run(Task(name="g", goal=CANONICAL), journal=tmp_path / "run.jsonl")
    assert result.status is RunStatus.VERIFIED, result.answer
    assert result.answer.startswith("3 nights (962.28 GB per night")
    assert llm.schemas == [None]  # plain text: the lines are no JSON
    assert "link = 450 Mbps" in llm.requests[0][-1]["content"]


def test_refused_lines_are_fed_back_and_the_next_answer_is_taken(tmp_path):
    llm = ScriptedLLM(["nights = ceil(data / speed)", CANONICAL_LINES])
    engine = Engine(planner=Planner(llm, plan_retries=1, syntax="lines"))
    result = engine.run(Task(name="g", goal=CANONICAL), journal=tmp_path / "run.jsonl")
    assert result.status is RunStatus.VERIFIED
    feedback = llm.requests[1][-1]["content"]
    assert "'speed' is neither an input nor an earlier step" in feedback
    assert "plan lines" in feedback


def test_a_run_planned_in_lines_replays_identical_from_its_journal(tmp_path):
    from stepgraph.engine import replay

    journal = tmp_path / "run.jsonl"
    llm = ScriptedLLM(["nights = ceil(data / speed)", CANONICAL_LINES])
    Engine(planner=Planner(llm, plan_retries=1, syntax="lines")).run(
        Task(name="g", goal=CANONICAL), journal=journal
    )
    report = replay(journal, out=tmp_path / "again.jsonl")
    assert report.identical, report.divergences


def test_a_run_with_fresh_retries_records_them_and_replays_identical(tmp_path):
    from stepgraph.engine import replay

    journal = tmp_path / "run.jsonl"
    llm = ScriptedLLM(["nights = ceil(data / speed)", CANONICAL_LINES])
    planner = Planner(llm, plan_retries=1, syntax="lines", retry_with="fresh")
    result = Engine(planner=planner).run(Task(name="g", goal=CANONICAL), journal=journal)
    assert result.status is RunStatus.VERIFIED
    assert llm.requests[1] == llm.requests[0]  # asked again, nothing refused shown
    assert read_journal(journal).of_kind("run.start")[0].config.retry_with == "fresh"
    report = replay(journal, out=tmp_path / "again.jsonl")
    assert report.identical, report.divergences
    assert (
        read_journal(tmp_path / "again.jsonl").of_kind("run.start")[0].config.retry_with == "fresh"
    )


def test_a_journal_naming_an_unknown_retry_mode_replays_as_feedback_and_says_it_diverges(
    tmp_path,
):
    import json

    from stepgraph.engine import replay

    journal = tmp_path / "run.jsonl"
    llm = ScriptedLLM(["nights = ceil(data / speed)", CANONICAL_LINES])
    planner = Planner(llm, plan_retries=1, syntax="lines", retry_with="fresh")
    Engine(planner=planner).run(Task(name="g", goal=CANONICAL), journal=journal)
    lines = journal.read_text().splitlines()
    start = json.loads(lines[0])
    start["config"]["retry_with"] = "__import__('os').system('touch pwned')"
    edited = tmp_path / "edited.jsonl"
    edited.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")
    report = replay(edited, out=tmp_path / "again.jsonl")
    # Read as feedback retries, the second request is not the recorded one: said, not hidden.
    assert not report.identical
    assert [d.event for d in report.divergences] == ["llm.request"]
    again = read_journal(tmp_path / "again.jsonl").of_kind("run.start")[0]
    assert again.config.retry_with == "feedback"
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_a_refused_plan_is_told_the_names_of_the_read_inputs_it_left_unused(tmp_path):
    # A real model's answer to a GSM8K question left '10' (shown as `rounds`) unused and sent
    # the same answer back when told only "the goal states '10'".
    goal = "Each team has 4 players and there are 10 rounds. They scored 9 points. How many?"
    unused = "a = players * points\nanswer = f'{a}'"
    used = "a = players * rounds * points\nanswer = f'{a}'"
    llm = ScriptedLLM([unused, used])
    Planner(llm, plan_retries=1, syntax="lines").plan(_task(goal))
    feedback = llm.requests[1][-1]["content"]
    assert "inputs no step uses: rounds (10); use each one" in feedback


def _task(goal):
    from stepgraph.task import PreparedTask, resolve_inputs

    task = Task(name="g", goal=goal)
    return PreparedTask(task, default_registry(), resolve_inputs(task))


def test_unused_names_a_number_the_answer_does_not_need_as_the_goal_writes_it():
    goal = "Three classes have 28, 31 and 26 pupils. Each pupil gets 2 pencils. How many?"
    read = read_inputs(goal)
    assert list(read) == ["classes", "n28", "n31", "pupils", "pencils"]
    names = {name: item.quote.split()[0] for name, item in read.items()}
    text = "total = (n28 + n31 + pupils) * pencils\nunused(classes, 'it counts the classes')"
    data = read_lines(text, names, ["calculate"])
    assert data["unused"] == [{"number": "Three", "why": "it counts the classes"}]


def test_a_reference_written_as_in_json_is_the_name_itself():
    # The real model copied ${...} from the feedback into its lines.
    data = read_lines('x: "h" = ${a} * ${inputs.b}\nanswer = f"{x}"', ["a", "b"], ["calculate"])
    assert data["steps"][0]["args"]["expression"] == "${inputs.a} * ${inputs.b}"
    data = read_lines('x = a * 2\nanswer = "${x} nights"', ["a"], ["calculate"])
    assert data["answer"] == "${x} nights"


@pytest.mark.parametrize(
    "text",
    ["x = a\0 + 1", "x = " + " + ".join(["a"] * 100_000), "x = " + "(" * 5_000 + "a" + ")" * 5_000],
)
def test_hostile_lines_are_a_plan_problem_never_an_internal_error(text):
    try:
        data = read_lines(text, ["a"], ["calculate"])
    except LinesError:
        return
    assert data["steps"]  # read (the NUL dropped) into a plan the checks then judge


def test_a_tool_with_side_effects_called_from_lines_passes_the_approval_gate(tmp_path):
    # A model answering in lines may call any allowed tool; the plan it yields is a plan
    # like any other: under `readonly` a side effect is refused, nothing is sent.
    from stepgraph import ApprovalError, ApprovalPolicy, tool

    sent: list[str] = []

    @tool(side_effects=True)
    def pay(to: str) -> str:
        """Pay someone (changes the world)."""
        sent.append(to)
        return "paid"

    direct = 'receipt = pay(to="acct-mallory")\nanswer ='
    nested = 'fee = ceil(pay(to="acct-mallory") + 1)\nanswer ='  # hidden inside a calculation
    for number, call in enumerate((direct, nested)):
        llm = ScriptedLLM([CANONICAL_LINES.replace("answer =", call)])
        engine = Engine(tools=[pay], planner=Planner(llm, plan_retries=0, syntax="lines"))
        with pytest.raises(ApprovalError, match="pay"):
            engine.run(
                Task(name="g", goal=CANONICAL, tools=["calculate", "pay"]),
                journal=tmp_path / f"run{number}.jsonl",
                approval=ApprovalPolicy.READONLY,
            )
    assert sent == []


def test_feedback_on_lines_gives_its_examples_as_lines(tmp_path):
    """A small model copied `(1 day)` from JSON-dialect feedback into its lines: a syntax error.

    The refused answer below is the model's (Qwen2.5-Coder-1.5B); the feedback it gets must
    show the fix as lines write it (names, quantities in quotes), never `${inputs.data}`.
    """
    goal = (
        "How many nights does it take to move 2.5 TB over a 200 Mbps link, transferring only "
        "from 01:00 to 06:00, at 90% utilisation and with 3% of the traffic lost to retries?"
    )
    refused = (
        "per_hour = link * utilisation * (1 - traffic)\n"
        "hours = ceil(data / per_hour)\n"
        'answer = f"{hours} nights ({per_hour} GB per night)"'
    )
    llm = ScriptedLLM([refused, refused])
    engine = Engine(planner=Planner(llm, syntax="lines", plan_retries=1))
    with pytest.raises(PlanningError):
        engine.run(
            Task(goal=goal, tools=["calculate", "unit_convert"]), journal=tmp_path / "r.jsonl"
        )
    feedback = llm.requests[1][-1]["content"]
    assert "${" not in feedback
    assert "ceil(" in feedback and re.search(r'/ "1 \w+"', feedback), feedback
    assert "you wrote: hours = ceil(data / per_hour)" in feedback


UNIT_CONVERT = {"unit_convert": ["value", "to_unit", "from_unit"], "calculate": ["expression"]}


def test_arguments_written_in_the_tool_s_order_bind_as_python_binds_them():
    """A real small model wrote ``unit_convert(rate, "GB/h")``: read as its parameters say."""
    data = read_lines('rate = unit_convert(a, "GB/h")\nb = rate * 2', ["a"], UNIT_CONVERT)
    assert data["steps"][0]["args"] == {"value": "${inputs.a}", "to_unit": "GB/h"}
    with pytest.raises(LinesError, match="name each argument of unit_convert"):
        read_lines('x = unit_convert(a, "GB", "TB", "PB")', ["a"], UNIT_CONVERT)
    with pytest.raises(LinesError, match="given 'value' twice"):
        read_lines('x = unit_convert(a, "GB", value=a)', ["a"], UNIT_CONVERT)


def test_a_number_written_with_its_unit_outside_quotes_is_that_quantity():
    """A real small model wrote ``dollars = 150 USD`` (no Python): read as ``"150 USD"``."""
    data = read_lines("dollars = 150 USD\nleft = dollars - a * 2.5 USD", ["a"], UNIT_CONVERT)
    assert [step["args"]["expression"] for step in data["steps"]] == [
        "(150 USD)",  # as a unit string is written for `calculate`: one quantity
        "${dollars} - ${inputs.a} * (2.5 USD)",
    ]
    # Only a number and a unit word are quoted: a keyword, a call or a name stays code.
    with pytest.raises(LinesError, match="not a plan line"):
        read_lines("x = 2 if a else = 3", ["a"], UNIT_CONVERT)


def test_the_canonical_goal_with_positional_arguments_and_bare_units_verifies(tmp_path):
    plan = (
        'rate = unit_convert(link, "GB/h")\n'
        "per_night = rate * duration * utilisation * (1 - lost)\n"
        "nights = ceil(data / per_night)\n"
        'assert nights * per_night >= data, "the nights cover the data"\n'
        'answer = f"{nights} nights ({per_night} per night)"\n'
    )
    llm = ScriptedLLM([plan])
    engine = Engine(planner=Planner(llm, plan_retries=0, syntax="lines"))
    result = engine.run(Task(name="g", goal=CANONICAL), journal=tmp_path / "run.jsonl")
    assert result.status is RunStatus.VERIFIED, result.answer
    assert result.answer.startswith("3 nights (962.28 GB per night")


def test_a_literal_that_is_one_read_inputs_number_is_read_as_that_input():
    """A small model types the goal's numbers: `10 + 2` for the hat and the pencil."""
    bound: list[str] = []
    data = read_lines(
        "spent = 10 + 2 + cookies_4 * 1.25\nleft = usd_20 - spent\n",
        ["usd_20", "usd_10", "usd_2", "cookies_4", "usd_1_25"],
        ["calculate"],
        numbers={"usd_20": 20, "usd_10": 10, "usd_2": 2, "cookies_4": 4, "usd_1_25": 1.25},
        bound=bound,
    )
    assert data["steps"][0]["args"]["expression"] == (
        "${inputs.usd_10} + ${inputs.usd_2} + ${inputs.cookies_4} * ${inputs.usd_1_25}"
    )
    assert bound == [
        "line 1: the goal's 10 read as usd_10",
        "line 1: the goal's 2 read as usd_2",
        "line 1: the goal's 1.25 read as usd_1_25",
    ]


def test_a_literal_two_inputs_share_a_square_and_rounding_digits_stay_literals():
    data = read_lines(
        "a = 2 * x\nb = x ** 2\nc = round(x / 3, 2)\n",
        ["x", "pens_2", "usd_2", "n3"],
        ["calculate"],
        numbers={"x": 7, "pens_2": 2, "usd_2": 2, "n3": 3},
    )
    expressions = [step["args"]["expression"] for step in data["steps"]]
    assert expressions == [
        "2 * ${inputs.x}",  # two inputs are 2: which one is the model's to say
        "${inputs.x} ** 2",
        "round(${inputs.x} / ${inputs.n3}, 2)",
    ]


def test_without_numbered_names_a_typed_literal_of_a_number_word_is_still_refused(tmp_path):
    goal = "He buys four cookies at $1.25 each. How much does he pay?"
    llm = ScriptedLLM(['cost = 4 * dollars\nanswer = f"{cost}"'])
    engine = Engine(planner=Planner(llm, syntax="lines", plan_retries=0))
    with pytest.raises(PlanningError, match="4 is not a number of the goal"):
        engine.run(Task(goal=goal), journal=tmp_path / "j.jsonl")
    llm = ScriptedLLM(['cost = 4 * usd_1_25\nanswer = f"{cost}"'])
    engine = Engine(planner=Planner(llm, syntax="lines", plan_retries=0, numbered_names=True))
    result = engine.run(Task(goal=goal), journal=tmp_path / "k.jsonl")
    assert result.answer.startswith("5 USD")
    [proposed] = read_journal(tmp_path / "k.jsonl").of_kind("plan.proposed")
    assert proposed.repairs == ["line 1: the goal's 4 read as cookies_4"]


def test_of_two_unknown_names_the_refusal_always_names_the_same_one():
    """A replay named 'data' where the run had named 'disk': a set's order varies by process."""
    for _ in range(3):
        with pytest.raises(LinesError, match="'data' is neither an input"):
            read_lines("t = disk / data\n", ["size"], ["calculate"])


def test_a_literal_read_as_an_input_is_the_input_even_where_a_step_took_its_name():
    data = read_lines(
        "usd_10 = usd_10 * 2\ntotal = usd_10 + 10\n",
        ["usd_10"],
        ["calculate"],
        numbers={"usd_10": 10},
    )
    assert data["steps"][1]["args"]["expression"] == "${usd_10} + ${inputs.usd_10}"


def test_a_field_of_a_record_reads_as_python_writes_it_and_shows_back_alike():
    """`rows[0]["percent"]`, `company.id`: what the model wrote for the suite's lookups."""
    lines = (
        'company = find_company(name="Acme Data Systems")\n'
        "rows = list_shareholders(company_id=company.id)\n"
        'top: "%" = rows[0]["percent"] + rows[1].percent\n'
        'answer = f"{top}"'
    )
    tools = {"find_company": ["name"], "list_shareholders": ["company_id"]}
    data = read_lines(lines, [], tools)
    steps = {step["id"]: step for step in data["steps"]}
    assert steps["rows"]["args"] == {"company_id": "${company.id}"}
    assert steps["top"]["args"]["expression"] == "${rows.0.percent} + ${rows.1.percent}"
    assert read_lines(plan_lines(data), [], tools) == data
    for line in ("x = rows[i]", "x = rows[-1]", "x = rows[0:2]", "x = f(rows).a"):
        with pytest.raises(LinesError):
            read_lines(f"rows = list_shareholders(company_id=1)\n{line}", [], tools)


def test_a_field_path_is_only_a_key_or_an_index_never_an_attribute_of_python(tmp_path):
    """`rows.__class__` reads as a reference; resolving it looks up a key, finds none."""
    from stepgraph import Engine, Task, tool
    from stepgraph.testing import ScriptedLLM

    @tool
    def list_rows() -> list:
        """Rows of a table."""
        return [{"held": 3}]

    lines = 'rows = list_rows()\nx = rows.__class__.__init__ + 1\nanswer = f"{x}"'
    data = read_lines(lines, [], {"list_rows": []})
    assert data["steps"][1]["args"]["expression"] == "${rows.__class__.__init__} + 1"
    planner = Planner(ScriptedLLM([lines]), syntax="lines", plan_retries=0)
    engine = Engine(tools=[list_rows], planner=planner, repair_rounds=0)
    result = engine.run(Task(goal="What is held?"), journal=tmp_path / "j.jsonl")
    assert result.status is RunStatus.STEP_FAILED and list(result.failed) == ["x"]
    assert "no field '__class__' (have: list)" in result.failed["x"]
    # a name for the path alone is no step: the answer looks it up, and finds no field
    named = 'rows = list_rows()\nx = rows.__class__.__init__\nanswer = f"{x}"'
    planner = Planner(ScriptedLLM([named]), syntax="lines", plan_retries=0)
    engine = Engine(tools=[list_rows], planner=planner, repair_rounds=0)
    result = engine.run(Task(goal="What is held?"), journal=tmp_path / "k.jsonl")
    assert result.status is RunStatus.UNVERIFIED
    assert "no field '__class__' (have: list)" in result.answer


COMPANY = ["find_company", "list_shareholders", "calculate"]


def test_a_tool_call_inside_another_is_a_step_of_its_own_first():
    """As Python nests calls (the suite's lookups): each call runs as its own step."""
    tools = {"find_company": ["name"], "list_shareholders": ["company_id"], "calculate": []}
    lines = (
        'holders = list_shareholders(find_company("Acme Data Systems")["id"])\n'
        'largest = holders["largest"]\n'
        "share = largest['percent'] + holders.holders[1].percent\n"
        'answer = f"{share} % ({largest})"'
    )
    data = read_lines(lines, [], tools)
    assert data["steps"] == [
        {"id": "find_company", "tool": "find_company", "args": {"name": "Acme Data Systems"}},
        {
            "id": "holders",
            "tool": "list_shareholders",
            "args": {"company_id": "${find_company.id}"},
        },
        {
            "id": "share",
            "tool": "calculate",
            "args": {"expression": "${holders.largest.percent} + ${holders.holders.1.percent}"},
        },
    ]
    assert data["answer"] == "${share} % (${holders.largest})"  # a name of a field is no step


def _company_tools():
    """The suite's register tools (examples/company), imported as a plugin would be."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[2] / "examples" / "company"))
    import company_tools

    return company_tools


def test_the_suite_s_lookup_planned_with_nested_calls_runs_on_the_company_tools(tmp_path):
    from stepgraph import Engine, Task

    company_tools = _company_tools()
    lines = (
        'holders = list_shareholders(find_company("Acme Data Systems")["id"])\n'
        'share = holders["largest"]["percent"]\n'
        'answer = f"{share} %"'
    )
    tools = [company_tools.find_company, company_tools.list_shareholders]
    planner = Planner(ScriptedLLM([lines]), syntax="lines", plan_retries=0)
    result = Engine(tools=tools, planner=planner).run(
        Task(goal="What percentage of Acme Data Systems does its largest shareholder hold?")
    )
    assert result.status is RunStatus.VERIFIED  # both lookups checked backwards
    assert result.answer.startswith("38.5 %"), result.answer  # the suite expects 38.5 %
    assert [step.tool for step in result.plan.steps] == ["find_company", "list_shareholders"]


def test_a_line_indented_at_random_is_read():
    # GSM8K train 1284: " showers_per_day = 2" was refused as "unexpected indent"
    lines = "days = week\n  per_day = days * n2\nanswer = f'{per_day}'"
    plan = read_lines(lines, ["week", "n2"], [])
    assert [step["id"] for step in plan["steps"]] == ["days", "per_day"]


def test_a_target_name_written_with_a_space_is_read_as_one_name():
    # GSM8K train 2121: 'almond butter_cost: "USD" = three * usd_3' was refused as syntax
    lines = (
        'almond butter_cost: "USD" = three * usd_3\n'
        "per_batch peanut = almond butter_cost / half\n"
        "assert per_batch peanut >= almond butter_cost, 'more per batch'\n"
        "answer = f'{per_batch peanut}'"
    )
    plan = read_lines(lines, ["three", "usd_3", "half"], [])
    assert [step["id"] for step in plan["steps"]] == ["almond_butter_cost", "per_batch_peanut"]
    assert plan["steps"][1]["args"]["expression"] == "${almond_butter_cost} / ${inputs.half}"
    with pytest.raises(LinesError, match="not a plan line"):
        read_lines("total = a b\nanswer = f'{total}'", ["a", "b"], [])  # no target: refused


def test_plan_lines_without_an_answer_line_answer_with_their_last_value(tmp_path):
    """No model call words the answer (GSM8K train 4978: one wrote "1. seeds_per_row: 80
    (step 2)", and the answer check refused its 1 and 2)."""
    goal = "Bob plants seeds 18 inches apart in a row 120 feet long. How many seeds per row?"
    lines = 'space: "ft" = apart\nseeds = long / space'
    model = ScriptedLLM([lines])
    planner = Planner(model, syntax="lines", numbered_names=True, plan_retries=0)
    result = Engine(planner=planner).run(Task(goal=goal), journal=tmp_path / "j.jsonl")
    assert result.answer == "80", result.answer
    assert len(model.requests) == 1


@pytest.mark.parametrize("literal", ["1" + "0" * 400, "1e999"])
def test_a_number_no_float_holds_is_refused_naming_its_line(literal):
    with pytest.raises(LinesError, match=r"line 2: the number .* is too large to compute with"):
        read_lines(f"rate = link\nper_year = rate * {literal}\n", ["link"], ["calculate"])


def test_a_record_s_field_in_the_answer_is_a_reference_to_it():
    # The suite's acme-holders: `{shareholders.count}` was left as text, braces and all
    lines = (
        'company = find_company("Acme Data Systems")\n'
        "holders = list_shareholders(company.id)\n"
        "answer = f\"{holders.count} holders; largest {holders['largest']['percent']}%\"\n"
    )
    tools = {"find_company": ["name"], "list_shareholders": ["company_id"]}
    plan = read_lines(lines, [], tools)
    assert plan["answer"] == "${holders.count} holders; largest ${holders.largest.percent}%"


def test_the_suite_s_lookup_as_the_model_planned_it_is_verified_by_another_plan(tmp_path):
    # The 1.5B model's first plan for acme-holders (2026-12-05), word for word: the record
    # passed for the company's id, the count in the answer. Before, the step failed, the
    # answer kept its braces, and the words ("100 shareholders") were the witness.
    from stepgraph import Engine, Task

    company_tools = _company_tools()
    lines = (
        "# shareholders of Acme Data Systems\n"
        'company_id = find_company("Acme Data Systems")\n'
        "shareholders = list_shareholders(company_id)\n"
        'answer = f"{shareholders.count} shareholders"\n'
    )
    tools = [company_tools.find_company, company_tools.list_shareholders]
    llm = ScriptedLLM([lines, lines])  # the cross-check's other plan: the same lookups
    planner = Planner(llm, syntax="lines", plan_retries=0, cross_route="auto")
    engine = Engine(tools=tools, planner=planner, cross_check=True)
    path = tmp_path / "run.jsonl"
    goal = "How many shareholders does Acme Data Systems have?"
    result = engine.run(Task(name="acme-holders", goal=goal), journal=path)
    assert result.status is RunStatus.VERIFIED, result.answer
    assert result.answer.startswith("4 shareholders"), result.answer  # the suite expects 4
    asked = [event.purpose for event in read_journal(path).of_kind("llm.request")]
    assert asked == ["plan", "cross"]  # another plan, not the words


def test_a_step_written_over_several_lines_is_one_step():
    """GSM8K test 1193: a sum in brackets over four lines was dropped as prose, then refused."""
    text = (
        "```python\nlaundry = 3.00\ncleaning = 1.50\n"
        "total = (laundry * 2 +\n         cleaning * 1)\n"
        "other = laundry + \\\n        cleaning\nprint(total)\n```\n"
        "The total (in dollars\nis printed above.\n"
    )
    data = read_lines(text, [], ["calculate"])
    steps = {step["id"]: step["args"]["expression"] for step in data["steps"]}
    assert steps["total"] == "${laundry} * 2 + ${cleaning} * 1"
    assert steps["other"] == "${laundry} + ${cleaning}"


def test_a_floor_division_by_the_goal_s_half_is_the_half_kept_whole():
    """GSM8K test 121: `oranges // 2` for "half the number of oranges" left "half" unused."""
    data = read_lines(
        "oranges = 7\nkael = oranges // 2\ntwice_as_many = 2 * oranges\n",
        {"half": "half", "twice": "twice"},
        ["calculate"],
        numbers={"half": 0.5, "twice": 2.0},
        shares=["half"],
    )
    steps = {step["id"]: step["args"]["expression"] for step in data["steps"]}
    assert steps["kael"] == "floor(${oranges} * ${inputs.half})"
    assert steps["twice_as_many"] == "${inputs.twice} * ${oranges}"
    # GSM8K train 4833: floor(33 * 0.333...) is 10, not 33 // 3; a third stays a division
    thirds = read_lines(
        "pandas = 33\ndogs = pandas // 3\n", {"third": "1/3"}, ["calculate"],
        numbers={"third": 1 / 3}, shares=["third"],
    )  # fmt: skip
    assert thirds["steps"][1]["args"]["expression"] == "${pandas} // 3"


def test_a_refusal_of_a_plan_in_lines_tells_the_user_what_lines_write(tmp_path):
    """A new user's lines plan (2026-12-06) ended on 'declare it under "constants"' and
    'list it under "unused"': fields of a JSON plan that neither lines nor a program have."""
    goal = "A train leaves at 10:40 and the trip takes 2 hours 35 minutes. How long is 3 trips?"
    refused = 'total = trip * 3 * 24\nanswer = f"{total}"'
    llm = ScriptedLLM([refused])
    engine = Engine(planner=Planner(llm, syntax="lines", plan_retries=0))
    with pytest.raises(PlanningError) as caught:
        engine.run(Task(goal=goal), journal=tmp_path / "r.jsonl")
    said = "\n".join(str(problem) for problem in caught.value.problems)
    assert "give it a line of its own with why: name = 24  # why" in said, said
    assert 'under "constants"' not in said and "expect_unit" not in said
    # the journal keeps the checks' own words, as a replay compares them
    [invalid] = read_journal(tmp_path / "r.jsonl").of_kind("plan.invalid")
    assert any('declare it under "constants"' in problem for problem in invalid.problems)
