"""The program of last resort: a model's own Python read as plan lines when no plan was valid."""

import pytest

from stepgraph import Engine, Planner
from stepgraph.engine import replay
from stepgraph.evaluation import Suite, run_goal
from stepgraph.exceptions import PlanningError
from stepgraph.journal import read_journal
from stepgraph.model import Task
from stepgraph.planner._program import RESULT_NAME, program_lines, program_messages
from stepgraph.task import PreparedTask, resolve_inputs
from stepgraph.testing import ScriptedLLM
from stepgraph.tools import default_registry

EGGS = (
    "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes "
    "muffins for her friends every day with four. She sells the remainder at the farmers' "
    "market daily for $2 per fresh duck egg. How much in dollars does she make every day?"
)
PROGRAM = """Here it is.
```python
import math
eggs_per_day = 16  # eggs laid
eaten = 3
baked = 4
price = 2
remaining = eggs_per_day - eaten - baked
print(f"She makes ${remaining * price} a day")
```
```output
20
```"""
NOT_A_PLAN = "I cannot write a plan for this."
PROGRAM_PROMPT = program_messages(EGGS)[0]["content"]
FUNCTION = """```python
def solution():
    \"\"\"Janet's eggs.\"\"\"
    eggs_per_day = 16
    eaten = 3  # for breakfast
    baked = 4
    price = 2
    remaining = eggs_per_day - eaten - baked
    return remaining * price

print(solution())
```"""


def test_imports_and_prints_go_and_the_printed_value_is_the_last_step():
    lines = program_lines(PROGRAM, [16, 3, 4, 2])
    assert "import" not in lines and "print(" not in lines
    *_, result, answer = lines.strip().splitlines()
    assert result == f"{RESULT_NAME} = remaining * price"
    assert answer == f'answer = f"{{{RESULT_NAME}}}"'  # the answer is the result, unworded
    assert "eggs_per_day = 16\n" in lines  # the goal's 16: its comment goes, so it binds


def test_a_literal_the_goal_does_not_state_keeps_its_why():
    lines = program_lines("```python\nx = 60  # minutes in an hour\nprint(x)\n```", [16])
    assert "x = 60  # minutes in an hour" in lines


def test_math_calls_are_the_expression_language_s_own():
    lines = program_lines("```python\nimport math\ny = math.ceil(7 / 2)\nprint(y)\n```")
    assert lines.strip() == 'y = ceil(7 / 2)\nanswer = f"{y}"'


def test_a_function_is_read_as_its_body_and_what_it_returns_is_the_answer():
    """The `def solution(): ... return x` a code model writes is read as plan lines."""
    lines = program_lines(FUNCTION, [16, 3, 4, 2])
    assert "def " not in lines and "return" not in lines and "Janet" not in lines
    assert lines.strip().splitlines()[-2] == f"{RESULT_NAME} = remaining * price"
    assert "eaten = 3\n" in lines and lines.startswith("eggs_per_day = 16\n")


@pytest.mark.parametrize(
    "code",
    [
        "def solution(eggs):\n    return eggs * 2\n",  # a parameter: no value to give it
        "def solution():\n    x = 2\n    if x:\n        return x\n    return 3\n",
        "def a():\n    return 1\ndef b():\n    return 2\n",
    ],
)
def test_a_function_that_is_no_plain_program_is_left_for_the_lines_reader_to_refuse(code):
    assert "def " in program_lines(f"```python\n{code}```")


def _suite() -> Suite:
    return Suite(name="program", goals=[{"id": "eggs", "goal": EGGS, "expect": 18}])


def _run(replies: list[str], tmp_path, *, program_plan: bool = True):
    model = ScriptedLLM(replies)
    planner = Planner(
        model,
        plan_retries=0,
        syntax="lines",
        numbered_names=True,
        cross_route="worked-code",
        program_plan=program_plan,
    )
    suite = _suite()
    engine = Engine(planner=planner, cross_check=True)
    outcome = run_goal(suite, suite.goals[0], engine, tmp_path, tmp_path / "r.jsonl")
    return outcome, model


def test_no_valid_plan_then_the_program_runs_and_the_worked_answer_verifies_it(tmp_path):
    worked = "16 - 3 - 4 = 9 eggs; 9 * 2 = 18.\nANSWER: 18"
    outcome, model = _run([NOT_A_PLAN, PROGRAM, worked, "She makes 18 USD every day."], tmp_path)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    assert model.requests[1][0]["content"] == PROGRAM_PROMPT  # the program's own prompt


def test_a_wrong_program_is_caught_by_the_worked_answer(tmp_path):
    wrong = PROGRAM.replace("eggs_per_day - eaten - baked", "eggs_per_day - eaten")
    worked = "16 - 3 - 4 = 9 eggs; 9 * 2 = 18.\nANSWER: 18"
    outcome, _ = _run([NOT_A_PLAN, wrong, worked, NOT_A_PLAN], tmp_path)
    assert not outcome.verified and not outcome.verified_wrong


def test_a_program_no_plan_either_ends_as_no_valid_plan_with_both_reasons(tmp_path):
    model = ScriptedLLM([NOT_A_PLAN, NOT_A_PLAN, "```python\nfor i in range(3):\n    pass\n```"])
    planner = Planner(model, plan_retries=0, syntax="lines", program_plan=True)
    with pytest.raises(PlanningError) as refused:
        Engine(planner=planner).run(Task(name="eggs", goal=EGGS), journal=tmp_path / "j.jsonl")
    assert "no valid plan in 1 attempts" in str(refused.value)
    assert "program was no valid plan either in 2 attempts" in str(refused.value)


def test_without_the_setting_no_program_is_asked(tmp_path):
    outcome, model = _run([NOT_A_PLAN], tmp_path, program_plan=False)
    assert not outcome.verified and len(model.requests) == 1


def _first(replies: list[str], tmp_path):
    model = ScriptedLLM(replies)
    planner = Planner(
        model, plan_retries=0, syntax="lines", numbered_names=True,
        cross_route="worked-code", program_first=True,
    )  # fmt: skip
    suite = _suite()
    outcome = run_goal(
        suite, suite.goals[0], Engine(planner=planner, cross_check=True), tmp_path,
        tmp_path / "r.jsonl",
    )  # fmt: skip
    return outcome, model


def test_program_first_asks_the_program_before_any_plan(tmp_path):
    """With program_first a valid program is the plan: no plan request is sent at all."""
    worked = "16 - 3 - 4 = 9 eggs; 9 * 2 = 18.\nANSWER: 18"
    outcome, model = _first([PROGRAM, worked, "She makes 18 USD every day."], tmp_path)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    assert model.requests[0][0]["content"] == PROGRAM_PROMPT
    assert not any("\nInputs:\n" in r[-1]["content"] for r in model.requests)  # no plan asked
    journal = (tmp_path / "r.jsonl").read_text()
    assert '"purpose":"program"' in journal.replace(" ", "")


def test_program_first_written_as_a_function_is_verified_by_the_worked_answer(tmp_path):
    worked = "16 - 3 - 4 = 9 eggs; 9 * 2 = 18.\nANSWER: 18"
    outcome, model = _first([FUNCTION, worked], tmp_path)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    assert len(model.requests) == 2  # the program and the worked answer: no plan, no wording


def test_a_program_variable_named_answer_is_a_value_not_the_answer_template():
    lines = program_lines("```python\nanswer = 3 * 4\nprint(answer)\n```", [3, 4])
    assert lines == 'answer_value = 3 * 4\nanswer = f"{answer_value}"\n'


def test_program_first_that_is_no_plan_falls_back_to_the_plan_request(tmp_path):
    """A program the engine cannot read costs one request; the plan request follows."""
    loop = "```python\nfor i in range(3):\n    pass\n```"
    plan = "remaining = eggs_16 - 3 - 4\nincome = remaining * usd_2\n"
    worked = "16 - 3 - 4 = 9 eggs; 9 * 2 = 18.\nANSWER: 18"
    outcome, model = _first([loop, plan, worked, "She makes 18 USD every day."], tmp_path)
    assert model.requests[0][0]["content"] == PROGRAM_PROMPT
    assert "\nInputs:\n" in model.requests[1][-1]["content"]  # the plan request
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)


CANDY = (
    "Travis and his brother joined a trick-or-treat event. They collected 68 pieces of candy "
    "altogether. Each of them ate 4 pieces of candy after the event. How many pieces of candy "
    "were left?"
)


def _program_plan(goal: str, code: str, numbers: tuple[float, ...] = (68, 4)):
    """The plan a program is read as, grounded in `goal` (whose numbers are `numbers`)."""
    planner = Planner(ScriptedLLM([]), syntax="lines", numbered_names=True)
    task = PreparedTask(Task(name="p", goal=goal), default_registry(), {})
    task.inputs = resolve_inputs(task.task)
    lines = program_lines(f"```python\n{code}```", [float(n) for n in numbers])
    return planner._grounded(lines, task, "lines")


def test_a_number_the_goal_does_not_state_is_a_constant_where_a_comment_says_why():
    """The model's comment above the line, or after the expression, is the constant's why."""
    above = "total = 68\n# Travis and his brother\npeople = 2\nprint(total - 4 * people)\n"
    parsed = _program_plan(CANDY, above)
    assert parsed.plan is not None, parsed.problems
    assert parsed.plan.constants["people"].why == "Travis and his brother"
    after = "total = 68\nleft = total - 4 * 2  # Travis and his brother\nprint(left)\n"
    parsed = _program_plan(CANDY, after)
    assert parsed.plan is not None, parsed.problems
    assert parsed.plan.constants["left_factor"].why == "Travis and his brother"


@pytest.mark.parametrize(
    "code",
    [
        "total = 68\npeople = 2\nprint(total - 4 * people)\n",  # no why at all
        "total = 68\nleft = total - 4 * 2 * 3  # two of them\nprint(left)\n",  # one why, two
        # a why in units converts by hand (GSM8K train 4978: 18 inches "in feet" stayed inches)
        "total = 68\nleft = total / 2  # in feet\nprint(left)\n",
        "total = 68\n# minutes per hour\nper = 2\nprint(total / per)\n",
    ],
)
def test_a_number_without_a_why_of_its_own_stays_refused(code):
    parsed = _program_plan(CANDY, code)
    assert parsed.plan is None
    assert any("is not a number of the goal" in str(p) for p in parsed.problems)


def test_a_percentage_written_over_100_is_the_goal_s_share():
    """`60 / 100` for "60%" binds to the share, not to the goal's other 60 (60 pounds)."""
    code = "w = 60\nup = w * (1 + 60 / 100)\nless = up / 60 / 100\nprint(less)\n"
    lines = program_lines(f"```python\n{code}```", [60.0, 0.6])
    assert "up = w * (1 + 0.6)" in lines
    assert "less = up / 60 / 100" in lines  # 60 / 100 is no share after a division
    assert "x = 70 / 100" in program_lines("x = 70 / 100\n", [60.0, 0.6])  # no 70% stated


def test_a_program_first_run_replays_identically_from_its_journal(tmp_path):
    """The journal records the setting, so replay asks for the program first again."""
    worked = "16 - 3 - 4 = 9 eggs; 9 * 2 = 18.\nANSWER: 18"
    outcome, _ = _first([FUNCTION, worked], tmp_path)
    assert outcome.verified
    assert replay(tmp_path / "r.jsonl").identical


def test_a_program_that_calls_a_tool_with_side_effects_passes_the_approval_gate(tmp_path):
    """A program is a plan like any other: under `readonly` its side effect is refused, and
    nothing is sent, whether asked first, as a last resort or alone."""
    from stepgraph import ApprovalError, ApprovalPolicy, tool

    sent: list[str] = []

    @tool(side_effects=True)
    def pay(to: str) -> str:
        """Pay someone (changes the world)."""
        sent.append(to)
        return "paid"

    program = FUNCTION.replace(
        "    return remaining * price",
        '    receipt = pay(to="acct-mallory")\n    return remaining * price',
    )
    asked = ({"program_first": True}, {"program_plan": True}, {"program_only": True})
    for number, options in enumerate(asked):
        replies = [NOT_A_PLAN, program] if options.get("program_plan") else [program]
        planner = Planner(
            ScriptedLLM(replies), plan_retries=0, syntax="lines", numbered_names=True, **options
        )
        with pytest.raises(ApprovalError, match="pay"):
            Engine(tools=[pay], planner=planner).run(
                Task(name="eggs", goal=EGGS, tools=["calculate", "pay"]),
                journal=tmp_path / f"run{number}.jsonl",
                approval=ApprovalPolicy.READONLY,
            )
    assert sent == []


class SamplingScript(ScriptedLLM):
    """A scripted model that notes each request's attempt: 1 is greedy, later ones sample."""

    def __init__(self, responses: list[str]) -> None:
        super().__init__(responses)
        self.attempts: list[int] = []

    def complete(self, messages, *, schema=None, attempt=1):
        self.attempts.append(attempt)
        return super().complete(messages, schema=schema, attempt=attempt)


def _only(replies: list[str], tmp_path, *, suite: Suite | None = None, **options):
    model = SamplingScript(replies)
    planner = Planner(
        model, syntax="lines", numbered_names=True, cross_route="worked-code",
        program_only=True, **options,
    )  # fmt: skip
    suite = suite or _suite()
    outcome = run_goal(
        suite, suite.goals[0], Engine(planner=planner, cross_check=True), tmp_path,
        tmp_path / "r.jsonl",
    )  # fmt: skip
    return outcome, model


LOOP = "```python\nfor i in range(3):\n    pass\n```"
WORKED = "16 - 3 - 4 = 9 eggs; 9 * 2 = 18.\nANSWER: 18"


def test_program_only_samples_another_program_where_one_is_refused_and_asks_no_plan(tmp_path):
    outcome, model = _only([LOOP, FUNCTION, WORKED], tmp_path)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    assert [r[0]["content"] for r in model.requests[:2]] == [PROGRAM_PROMPT] * 2
    assert model.attempts[:2] == [1, 2]  # greedy, then sampled: not the same answer again
    assert not any("\nInputs:\n" in r[-1]["content"] for r in model.requests)


def test_program_only_with_no_valid_program_ends_without_a_plan_request(tmp_path):
    outcome, model = _only([LOOP, LOOP, LOOP], tmp_path)
    assert not outcome.verified and "2 attempts" in (outcome.error or ""), outcome
    assert len(model.requests) == 2 and not outcome.verified_wrong  # greedy, one sample


def test_more_program_tries_are_asked_for_journaled_and_replayed(tmp_path):
    """`STEPGRAPH_PROGRAM_TRIES=3`: a third program; the record says so, and replays it."""
    outcome, model = _only([LOOP, LOOP, FUNCTION, WORKED], tmp_path, program_tries=3)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    assert model.attempts[:3] == [1, 2, 3]
    [start] = read_journal(tmp_path / "r.jsonl").of_kind("run.start")
    assert start.config.program_tries == 3
    assert replay(tmp_path / "r.jsonl").identical


def test_program_only_holds_a_fresh_program_to_the_same_words_after_they_disagree(tmp_path):
    """The words said 18, the program 34: a fresh program (sampled) says 18 and answers.

    Unverified: the first program, which passed its own checks, still says 34.
    """
    wrong = FUNCTION.replace("- baked", "+ baked")
    outcome, model = _only(
        [wrong, WORKED, FUNCTION], tmp_path, retry_with="fresh", afresh_on_disagreement=True
    )
    assert not outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    assert "the first plan disagreed with them" in (tmp_path / "r.jsonl").read_text()
    assert len(model.requests) == 3  # one worked answer: the same words judge the fresh one
    assert model.requests[2][0]["content"] == PROGRAM_PROMPT and model.attempts[2] > 1
    assert replay(tmp_path / "r.jsonl").identical


def test_program_only_never_verifies_a_fresh_program_the_words_do_not_confirm(tmp_path):
    wrong = FUNCTION.replace("- baked", "+ baked")
    outcome, _ = _only(
        [wrong, WORKED, wrong, wrong], tmp_path, retry_with="fresh", afresh_on_disagreement=True
    )
    assert not outcome.verified and not outcome.verified_wrong, outcome.status


def test_the_output_a_model_imagines_after_its_program_is_not_read_as_the_program():
    """Train 7335: ```output and a sentence after the code; the code is the program."""
    text = (
        "```python\nsaved = 4 * 12\nprint(saved)\n```\n```output\n48\n```\n"
        "She would save \\(\\boxed{48}\\) dollars."
    )
    assert program_lines(text, [4, 12]).strip() == 'saved = 4 * 12\nanswer = f"{saved}"'


WRONG_WORDS = "16 - 3 = 13 eggs; 13 * 2 = 26.\nANSWER: 26"


WORKED_BACKED = WORKED + "\n```python\nleft = 16 - 3 - 4\nprint(left * 2)\n```\n"


def test_second_words_backed_by_their_own_code_outvote_the_first(tmp_path):
    """Program 18, words 26, words again (sampled) 18 and their code 18: three against one."""
    outcome, model = _only([FUNCTION, WRONG_WORDS, WORKED_BACKED], tmp_path, second_words=True)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    assert model.attempts == [1, 1, 2]  # the second worked answer is sampled
    assert model.requests[2] == model.requests[1]  # the same question, asked again
    journal = (tmp_path / "r.jsonl").read_text()
    assert "the first said 26: three routes against one" in journal
    assert replay(tmp_path / "r.jsonl").identical


def test_second_words_without_code_of_their_own_answer_but_verify_nothing(tmp_path):
    """Program 18, words 26, words again 18 in prose only: a two-to-one vote, unverified.

    On GSM8K train such second samples agreed with a wrong program 4 times in 12.
    """
    outcome, model = _only(
        [FUNCTION, WRONG_WORDS, WORKED], tmp_path,
        second_words=True, retry_with="fresh", afresh_on_disagreement=True,
    )  # fmt: skip
    assert not outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    assert len(model.requests) == 3  # no fresh program against the first words: two against two
    journal = (tmp_path / "r.jsonl").read_text()
    assert "unbacked by code; the first said 26" in journal
    assert "no verification" in journal
    assert replay(tmp_path / "r.jsonl").identical


def test_second_words_that_disagree_again_leave_the_run_unverified(tmp_path):
    outcome, model = _only([FUNCTION, WRONG_WORDS, WRONG_WORDS], tmp_path, second_words=True)
    assert not outcome.verified and not outcome.verified_wrong, outcome.status
    assert len(model.requests) == 3


def test_words_their_own_code_backs_are_not_outvoted_by_a_second_sample(tmp_path):
    """GSM8K test 118, twice: words and their code said 4, a second sample 20 with the program.

    Two routes against the plan's one: no second worked answer is asked, nothing verifies.
    """
    backed = WRONG_WORDS + "\n```python\nleft = 16 - 3\nprint(left * 2)\n```\n"
    outcome, model = _only([FUNCTION, backed, WORKED], tmp_path, second_words=True)
    assert not outcome.verified and not outcome.verified_wrong, outcome.status
    assert len(model.requests) == 2
    assert "its own code says so too: no second worked answer" in (tmp_path / "r.jsonl").read_text()
    # code that works out another number backs nothing: the second sample is asked
    unbacked = WRONG_WORDS + "\n```python\nleft = 16 - 3\nprint(left * 3)\n```\n"
    replies = [FUNCTION, unbacked, WORKED_BACKED]
    outcome, model = _only(replies, tmp_path / "b", second_words=True)
    assert outcome.verified and len(model.requests) == 3


def test_without_second_words_a_disagreement_asks_nothing_more(tmp_path):
    outcome, model = _only([FUNCTION, WRONG_WORDS], tmp_path)
    assert not outcome.verified and len(model.requests) == 2


SEEDS = (
    "Bob is going to plant corn in part of his garden. The rows are 120 feet long, and each "
    "seed needs its own dedicated space of 18 inches to its right. How many seeds can Bob "
    "plant in each row?"
)
SEEDS_PROGRAM = """```python
row_length = 120  # in feet
space_per_seed = 18  # in inches

# Convert the space required per seed to feet
space_per_seed_feet = space_per_seed / 12  # in feet

seeds_per_row = row_length // space_per_seed_feet  # integer division
print(seeds_per_row)
```"""


def test_a_conversion_whose_comment_names_the_unit_is_left_to_the_units(tmp_path):
    """Train 4978: `18 / 12  # in feet` declares feet; the engine converts the 18 inches."""
    suite = Suite(name="p", goals=[{"id": "seeds", "goal": SEEDS, "expect": 80}])
    outcome, _ = _only([SEEDS_PROGRAM, "1.5 feet each: 120 / 1.5 = 80.\nANSWER: 80"],
                       tmp_path, suite=suite)  # fmt: skip
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    proposed = [e for e in read_journal(tmp_path / "r.jsonl").of_kind("plan.proposed")]
    tools = [step["tool"] for step in proposed[0].plan["steps"]]
    assert "unit_convert" in tools  # the 12 dropped: the units convert, and convert back


def test_a_comment_in_units_over_a_number_the_units_cannot_explain_stays_refused():
    """`* 7  # in hours`: 7 is no factor of any conversion to hours; it is not declared."""
    lines = program_lines("```python\nx = 3\ny = x * 7  # in hours\nprint(y)\n```", [3])
    assert 'y: "hours" = x * 7' in lines  # declared as the unit: the 7 is left to grounding
    goal = "It takes 3 days. How many hours?"
    refused = _program_plan(goal, "x = 3\ny = x * 7  # in hours\n", (3,))
    assert refused.plan is None and "7 looks like a conversion factor" in str(refused.problems)
    converted = _program_plan(goal, "x = 3\ny = x * 24  # in hours\n", (3,))
    assert converted.plan is not None, converted.problems  # 24 h a day: the units say so


GIRLS = (
    "At the beginning of an academic year, there were 15 boys in a class and the number of "
    "girls was 20% greater. Later in the year, transfer students were admitted such that the "
    "number of girls doubled but the number of boys remained the same. How many students are "
    "in the class now?"
)


def test_a_share_greater_and_a_doubling_are_the_goal_s_numbers(tmp_path):
    """Train 4078: `boys * 1.2` for "20% greater", `* 2` for "doubled"."""
    program = (
        "```python\nboys = 15\ngirls = boys * 1.2\ngirls_final = girls * 2\n"
        "print(boys + girls_final)\n```"
    )
    suite = Suite(name="p", goals=[{"id": "girls", "goal": GIRLS, "expect": 51}])
    outcome, _ = _only([program, "18 girls, doubled 36; 15 + 36 = 51.\nANSWER: 51"],
                       tmp_path, suite=suite)  # fmt: skip
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)


def test_second_words_that_state_no_number_verify_nothing(tmp_path):
    """A second reading that only echoes agreement ("Yes, that is right.") is no witness."""
    outcome, model = _only(
        [FUNCTION, WRONG_WORDS, "Yes, the program is right."], tmp_path, second_words=True
    )
    assert not outcome.verified and len(model.requests) == 3, outcome.status
    assert "two of three" not in (tmp_path / "r.jsonl").read_text()


# Qwen2.5-Coder-1.5B's first program for the suite's tables-needed (2026-12-05), refused
# three times for its `if`.
TABLES = "A conference seats its 230 attendees at tables of 8. How many tables are needed?"
TABLES_PROGRAM = """```python
# Number of attendees
attendees = 230

# Number of attendees per table
attendees_per_table = 8

# Calculate the number of tables needed
tables_needed = attendees // attendees_per_table

# If there are any remaining attendees, an additional table is needed
if attendees % attendees_per_table != 0:
    tables_needed += 1

# Return the number of tables needed
print(tables_needed)
```"""


@pytest.mark.parametrize("test", ["a % b != 0", "a % b > 0", "a % b", "(a % b) != 0"])
def test_whole_division_plus_one_for_a_remainder_is_read_as_rounding_up(test):
    code = f"```python\na = 230\nb = 8\nn = a // b\nif {test}:\n    n += 1\nprint(n)\n```"
    assert program_lines(code, [230, 8]).strip().splitlines() == [
        "a = 230", "b = 8", "n = ceil(a / b)", 'answer = f"{n}"'
    ]  # fmt: skip


@pytest.mark.parametrize(
    "body",
    [
        "n = a // b\nif a % b == 0:\n    n += 1",  # one more where nothing is left: no ceiling
        "n = a // b\nif a % 3 != 0:\n    n += 1",  # another divisor
        "n = a // b\nif a % b != 0:\n    n += 2",
        "n = a // b\nif a % b != 0:\n    n += 1\nelse:\n    n -= 1",
        "n = a / b\nif a % b != 0:\n    n += 1",  # no whole division first
    ],
)
def test_other_conditions_stay_as_written_for_the_lines_reader_to_refuse(body):
    code = f"```python\na = 230\nb = 8\n{body}\nprint(n)\n```"
    assert "if " in program_lines(code, [230, 8])


def test_a_program_that_rounds_up_with_an_if_is_verified(tmp_path):
    model = ScriptedLLM([TABLES_PROGRAM, "230 / 8 = 28.75, so 29 tables.\nANSWER: 29"])
    planner = Planner(
        model, syntax="lines", numbered_names=True, cross_route="auto", retry_with="fresh",
        program_only="auto",
    )  # fmt: skip
    result = Engine(planner=planner, cross_check=True).run(
        Task(name="tables", goal=TABLES), journal=tmp_path / "r.jsonl"
    )
    assert result.status.value == "verified" and result.answer.startswith("29"), result.answer
    assert len(model.requests) == 2  # the first program was valid


def test_a_remainder_named_first_is_kept_and_the_count_rounded_up():
    code = (
        "```python\na = 230\nb = 8\nn = a // b\nleft = a % b\nif left > 0:\n    n += 1\n"
        "print(n)\n```"
    )
    assert program_lines(code, [230, 8]).strip().splitlines() == [
        "a = 230", "b = 8", "n = ceil(a / b)", "left = a % b", f"{RESULT_NAME} = n",
        f'answer = f"{{{RESULT_NAME}}}"',
    ]  # fmt: skip


PRINTERS = (
    "A print job of 20,000 pages must finish within 2 hours. Each printer prints 25 pages "
    "per minute. How many printers are needed?"
)
# what Qwen2.5-Coder-1.5B wrote for the suite's printers-needed (the third of three tries)
PRINTERS_PROGRAM = """```python
# Given values
total_pages = 20000
pages_per_minute = 25
time_limit = 2 * 60  # Convert hours to minutes

# Calculate the number of printers needed
printers_needed = total_pages / (pages_per_minute * time_limit)

# Since we can't have a fraction of a printer, we round up to the nearest whole number
import math
printers_needed = math.ceil(printers_needed)

print(printers_needed)
```"""


def test_a_comment_that_says_a_conversion_declares_the_unit_it_converts_into(tmp_path):
    """`2 * 60  # Convert hours to minutes`: minutes declared, the 60 left to the units."""
    suite = Suite(name="p", goals=[{"id": "printers", "goal": PRINTERS, "expect": 7}])
    words = "2 hours is 120 minutes; 25 x 120 = 3000 pages each; 20000 / 3000 = 6.67.\nANSWER: 7"
    outcome, _ = _only([PRINTERS_PROGRAM, words], tmp_path, suite=suite)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.answer)
    [proposed] = read_journal(tmp_path / "r.jsonl").of_kind("plan.proposed")
    assert any("dropped the 60" in repair for repair in proposed.repairs)


@pytest.mark.parametrize(
    ("comment", "declared"),
    [
        ("Convert hours to minutes", "minutes"),
        ("2 hours in minutes", "minutes"),
        ("convert to seconds", "seconds"),
        ("time to finish", None),  # "finish" is no unit
        ("pages in a minute", None),  # a rate's words, not what the value is in
        ("Convert the rate to per minute", None),
    ],
)
def test_only_a_conversion_into_a_unit_declares_it(comment, declared):
    lines = program_lines(f"```python\nx = 3\ny = x * 60  # {comment}\nprint(y)\n```", [3])
    if declared:
        assert f'y: "{declared}" = x * 60' in lines, lines
    else:
        assert 'y: "' not in lines, lines  # no unit declared: grounding judges the 60


TICKETS = (
    "There are one hundred tickets to be sold for a volleyball game. Andrea sold twice as many "
    "tickets as Jude while Sandra sold 4 more than half the number of tickets Jude sold. If "
    "Jude sold 16 tickets, how many tickets need to be sold?"
)


def test_dividing_by_two_for_half_uses_the_half_not_the_twice():
    """Train 2913: `jude / 2` bound to "twice" left "half" unused; it is the half's share."""
    code = (
        "jude = 16\nandrea = 2 * jude\nsandra = (jude / 2) + 4\n"
        "sold = jude + andrea + sandra\nprint(100 - sold)\n"
    )
    parsed = _program_plan(TICKETS, code, (100, 2, 4, 0.5, 16))
    assert parsed.plan is not None, parsed.problems
    [sandra] = [step for step in parsed.plan.steps if step.id == "sandra"]
    assert "* ${inputs.number_0_5}" in sandra.args["expression"]
    [andrea] = [step for step in parsed.plan.steps if step.id == "andrea"]
    assert "${inputs.twice}" in andrea.args["expression"]  # twice is still the twice


PHONES = (
    "Miley bought two cellphones for her parents. Each cellphone costs $800 but, since she is "
    "buying two units, she will receive a 5% discount for the total cost. How much did Miley pay?"
)


def test_a_number_the_goal_states_twice_is_the_first_of_its_inputs():
    """Train 2986: the 2 of "two cellphones ... two units" had two names and was refused."""
    code = "cost = 800\ntotal = cost * 2\nprint(total - total * 0.05)\n"
    parsed = _program_plan(PHONES, code, (2, 800, 2, 0.05))
    assert parsed.plan is not None, parsed.problems
    [total] = [step for step in parsed.plan.steps if step.id == "total"]
    assert total.args["expression"] == "${cost} * ${inputs.cellphones_2}"


def test_equal_numbers_in_other_units_stay_unbound():
    """ "5 meters of silk ... all 5 of them": which 5 a literal is, the number cannot say."""
    goal = "Each dress needs 5 meters of silk. He gives all 5 friends 20 meters each. Silk given?"
    parsed = _program_plan(goal, "given = 20 * 5\nprint(given)\n", (5, 5, 20))
    assert parsed.plan is not None, parsed.problems
    assert parsed.plan.steps[0].args["expression"] == "${inputs.distance} * 5"


# The suite's printers-needed asks "How many printers are needed?", whose fraction now fails
# the whole-count verdict before any words (`tests/engine/test_whole_count.py`); asked as a
# share, a fraction is an answer, and the fresh program's reuse is still what is held here.
JOB = (
    "A print job of 300 pages must finish within 2 hours. Each printer prints 5 pages per "
    "minute. What share of one printer's two hours does the job take?"
)


def test_a_fresh_program_that_reuses_the_first_one_s_calls_is_judged_by_its_own_names(tmp_path):
    """The suite's printers-needed: the fresh program computed the same values under other
    names, its steps were reused, and the check whether each input reaches the answer was
    run on the first program's arguments: every input "never reached the answer"."""
    first = (
        "pages = 300\nrate = 5\nminutes = 2 * 60  # in minutes\n"
        "printers = pages / (rate * minutes)\nprint(printers)\n"
    )
    fresh = (
        "total_pages = 300\nper_minute = 5\ntime = 2 * 60  # 2 hours in minutes\n"
        "printers = total_pages / (per_minute * time)\nprint(printers)\n"
    )
    words = "300 / (5 x 120) = 0.5, so 1 printer.\nANSWER: 1"
    suite = Suite(name="p", goals=[{"id": "job", "goal": JOB, "expect": 1}])
    outcome, _ = _only(
        [f"```python\n{first}```", words, words, f"```python\n{fresh}```"], tmp_path,
        suite=suite, retry_with="fresh", afresh_on_disagreement=True, second_words=True,
    )  # fmt: skip
    assert not outcome.verified
    journal = read_journal(tmp_path / "r.jsonl")
    reused = journal.of_kind("step.reused")
    assert reused, "the fresh program's calls are the first one's"
    checks = [event.description for event in journal.of_kind("check")]
    assert not any("does not change with" in check for check in checks), checks
    assert any("still disagrees: 1 against 0.5" in check for check in checks), checks


def test_dividing_by_two_is_no_share_of_money():
    """ "$0.50" is money, not a share: `pens / 2` stays a division, in no dollars."""
    goal = "Pens cost $0.50 each. She shares 10 pens between 2 friends. What are each's worth?"
    parsed = _program_plan(goal, "pens = 10\neach = pens / 2\nprint(each * 0.50)\n", (0.5, 10, 2))
    assert parsed.plan is not None, parsed.problems
    [each] = [step for step in parsed.plan.steps if step.id == "each"]
    assert "usd" not in each.args["expression"], each.args
    assert each.args["expression"].startswith("${pens} /")


@pytest.mark.parametrize("tries", [0, 1000])
def test_a_record_cannot_ask_a_replay_for_more_programs_than_the_setting_allows(tries):
    """A tampered journal's `program_tries` is refused when the record is read."""
    from pydantic import ValidationError

    from stepgraph.journal._events import RecordedConfig

    with pytest.raises(ValidationError):
        RecordedConfig(program_tries=tries)
    assert RecordedConfig(program_tries=2).program_tries == 2


HUGE = "1" + "0" * 400


@pytest.mark.parametrize("literal", [HUGE, "1e999"])
def test_a_number_no_float_holds_is_a_problem_fed_back_not_an_internal_error(tmp_path, literal):
    # A real 1.5B reply padded a program with ever larger factors (a transfer goal): the
    # first comparison with the goal's numbers raised OverflowError and ended the run.
    padded = f"```python\neggs = 16\nper_year = eggs * {literal}\nprint(per_year)\n```"
    model = ScriptedLLM([padded, padded])
    planner = Planner(model, plan_retries=0, syntax="lines", program_only=True)
    with pytest.raises(PlanningError, match="line 2: the number .* is too large to compute with"):
        Engine(planner=planner).run(Task(name="eggs", goal=EGGS), journal=tmp_path / "j.jsonl")
    assert len(model.requests) == 2  # the second program was asked for: nothing crashed


def test_a_power_of_ten_by_hand_with_its_unit_in_a_comment_is_the_goal_s_quantity(tmp_path):
    # The suite's transfer goal, the 1.5B model's program: `2.5 * 10**12  # in bytes` was
    # refused as "10 is not a number of the goal" and "12 is not": one factor, by hand
    program = "```python\ntotal_data = 2.5 * 10**12  # in bytes\nprint(total_data)\n```"
    planner = Planner(
        ScriptedLLM([program]), syntax="lines", numbered_names=True, program_only=True
    )
    path = tmp_path / "j.jsonl"
    result = Engine(planner=planner).run(
        Task(name="b", goal="How many bytes is 2.5 TB?"), journal=path
    )
    assert result.values["total_data"].to("B").magnitude == pytest.approx(2.5e12)
    [proposed] = read_journal(path).of_kind("plan.proposed")
    assert any("dropped the 1e+12 that converted data (TB) to bytes" in r for r in proposed.repairs)


def test_a_program_nested_too_deeply_is_refused_by_name_not_an_internal_error(tmp_path):
    # A sum of 3,000 terms: Python's own parser gives up with RecursionError, which
    # escaped the program reader and ended `Engine.run` with it.
    padded = "```python\neggs = " + " + ".join(["16"] * 3000) + "\nprint(eggs)\n```"
    model = ScriptedLLM([padded, padded])
    planner = Planner(model, plan_retries=0, syntax="lines", program_only=True)
    with pytest.raises(PlanningError, match="too deeply nested"):
        Engine(planner=planner).run(Task(name="eggs", goal=EGGS), journal=tmp_path / "j.jsonl")
    assert len(model.requests) == 2
