"""Readings of ambiguous literals: which one is taken, and when none is."""

from stepgraph.model import StepGraph
from stepgraph.planner._by_units import MAX_READINGS, read_by_units
from stepgraph.planner._lines import Ambiguous
from stepgraph.planner._parse import ParsedPlan

PLAN = StepGraph.model_validate(
    {"steps": [{"id": "a", "tool": "calculate", "args": {"expression": "1 + 1"}}]}
)


def _parse_valid_for(*valid: tuple[str, ...]):
    tried: list[tuple[str, ...]] = []

    def parse(choices):
        reading = tuple(choices[n] for n in sorted(choices))
        tried.append(reading)
        return ParsedPlan(PLAN if reading in valid else None, [], [])

    return parse, tried


def _two(value: float = 2.0) -> list[Ambiguous]:
    return [
        Ambiguous("line 1", value, ("count", "feet")),
        Ambiguous("line 2", value, ("count", "feet")),
    ]


def test_the_one_valid_reading_is_taken_and_said():
    parse, tried = _parse_valid_for(("feet", "count"))
    parsed = read_by_units(parse, _two(), plain={"count"})
    assert parsed is not None and parsed.plan is PLAN
    assert len(tried) == 4
    assert parsed.repairs == [
        "line 1: the goal's 2 is both count and feet; read as feet, where the units agree",
        "line 2: the goal's 2 is both count and feet; read as count, where the units agree",
    ]


def test_of_several_valid_readings_the_one_keeping_most_numbers_plain_is_taken():
    parse, _ = _parse_valid_for(("feet", "count"), ("feet", "feet"))
    parsed = read_by_units(parse, _two(), plain={"count"})
    assert parsed is not None and "read as count" in parsed.repairs[1]


def test_valid_readings_that_tie_are_no_reading():
    parse, _ = _parse_valid_for(("feet", "count"), ("count", "feet"))
    assert read_by_units(parse, _two(), plain={"count"}) is None


def test_no_valid_reading_is_none():
    parse, _ = _parse_valid_for()
    assert read_by_units(parse, _two(), plain={"count"}) is None


def test_too_many_readings_are_not_tried():
    many = [Ambiguous(f"line {n}", 2.0, ("a", "b")) for n in range(6)]  # 64 readings
    assert 2 ** len(many) > MAX_READINGS
    parse, tried = _parse_valid_for(("a",) * 6)
    assert read_by_units(parse, many, plain=set()) is None
    assert tried == []


def _program_run(question: str, program: str, expected: float, tmp_path):
    """A program the model wrote for `question`, with words that give Python's own value."""
    from stepgraph import Engine, Planner
    from stepgraph.evaluation import Suite, run_goal
    from tests.planner.test_recorded_programs import ProgramAndWords

    words = f"ANSWER: {expected:g}"
    planner = Planner(
        ProgramAndWords(program, words), syntax="lines", numbered_names=True,
        cross_route="worked-code", program_only=True,
    )  # fmt: skip
    suite = Suite(name="plain", goals=[{"id": "q", "goal": question, "expect": expected}])
    engine = Engine(planner=planner, cross_check=True)
    journal = tmp_path / "r.jsonl"
    return run_goal(suite, suite.goals[0], engine, tmp_path, journal), journal


def test_a_program_whose_units_compound_is_read_in_plain_numbers(tmp_path):
    """GSM8K train 955: "Each gallon has 10 cups" read as 10 cups made gallons x cups cup²."""
    question = (
        "Mr. Williams bought 10 gallons of juice for a party. Each gallon has 10 cups. At the "
        "party, 5 cups of juice were left. How many cups of juice were drunk?"
    )
    program = (
        "total_gallons = 10\ncups_per_gallon = 10\ncups_left = 5\n"
        "total_cups = total_gallons * cups_per_gallon\ncups_drunk = total_cups - cups_left\n"
        "print(cups_drunk)"
    )
    outcome, journal = _program_run(question, program, 95, tmp_path)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.error)
    assert "read as plain numbers" in journal.read_text()


def test_a_program_that_adds_a_duration_to_a_count_stays_refused(tmp_path):
    """GSM8K train 4962: 5 weekdays + 1 shirt; the units were right to refuse it."""
    question = (
        "Kendra wears one shirt to school for each of the five weekdays. Three days a week, "
        "she changes into a different shirt for a club. How many shirts does she need?"
    )
    program = "weekdays = 5\nclub_days = 3\nshirts = weekdays + club_days + 1\nprint(shirts)"
    outcome, journal = _program_run(question, program, 9, tmp_path)
    assert outcome.error_kind == "invalid" and not outcome.verified
    assert "read as plain numbers" not in journal.read_text()


def test_a_goal_in_data_units_is_never_read_in_plain_numbers(tmp_path):
    """TB against GB is the answer's whole point: a compounding program stays refused."""
    question = (
        "A lab bought 10 TB of disks. Each TB has 10 GB of spare space. 5 GB of it were "
        "used. How many GB of spare space are left?"
    )
    program = (
        "total_tb = 10\ngb_per_tb = 10\nused = 5\n"
        "spare = total_tb * gb_per_tb\nleft = spare - used\nprint(left)"
    )
    outcome, journal = _program_run(question, program, 95, tmp_path)
    assert outcome.error_kind == "invalid" and "units do not match" in outcome.error
    assert "read as plain numbers" not in journal.read_text()


def test_a_literal_of_two_readings_that_no_digit_states_is_read_by_units(tmp_path):
    """GSM8K train 4317: `2 * books` is "twice" or "two months"; the bare 2 was refused."""
    question = (
        "For this month, Lily wants to finish reading twice as many books as she finished "
        "last month. If she finished reading 4 books last month, what will be the total "
        "number of books that she will finish for two months?"
    )
    program = (
        "books_last_month = 4\nbooks_this_month = 2 * books_last_month\n"
        "total_books = books_last_month + books_this_month\nprint(total_books)"
    )
    outcome, journal = _program_run(question, program, 12, tmp_path)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.error)
    assert "read as twice, where the units agree" in journal.read_text()


def test_a_literal_that_is_cents_written_in_dollars_is_read_as_the_cents(tmp_path):
    """GSM8K train 6068: `5 * 0.5` for "5 items that cost 50 cents" beside "25 dollars".

    The 0.5 is also the story's "half"; read so, dollars less a plain number was refused.
    """
    question = (
        "Tabitha has 25 dollars. She gives her mom 8 dollars and invests half what is left "
        "in a money market. She spends some money on 5 items that costs 50 cents each. How "
        "much money does Tabitha have left?"
    )
    program = (
        "initial = 25\ngiven = 8\nleft = initial - given\ninvested = left / 2\n"
        "after_investment = left - invested\ncost_of_items = 5 * 0.5\n"
        "final = after_investment - cost_of_items\nprint(final)"
    )
    outcome, journal = _program_run(question, program, 6, tmp_path)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.error)
    assert "0.5 is the goal's dollars in another of its units" in journal.read_text()


def test_a_literal_that_only_converts_a_quantity_stays_refused_where_no_reading_adds_up(
    tmp_path,
):
    """0.5 is "30 minutes" in hours, but the program adds it to dollars: no reading works."""
    question = (
        "A plumber charges 40 dollars for each hour of work and worked for 2 hours and 30 "
        "minutes. How many dollars did he charge?"
    )
    program = "hours = 2\nrate = 40\ncharge = rate * hours + 0.5\nprint(charge)"
    outcome, _ = _program_run(question, program, 100, tmp_path)
    assert not outcome.verified


def test_a_fraction_the_goal_writes_is_its_input_not_a_number_of_another(tmp_path):
    """GSM8K train 2153: the 2 of ``oil = 1/2`` ("a 1/2 cup of oil") was "2 cups of flour"."""
    question = (
        "Felicia needs 2 cups of flour and a 1/2 cup of oil. Her only measuring scoop is 1/4 "
        "cup. How many times does she fill it?"
    )
    program = (
        "flour = 2\noil = 1/2\nscoop = 1/4\nscoops = flour / scoop + oil / scoop\nprint(scoops)"
    )
    outcome, journal = _program_run(question, program, 10, tmp_path)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.error)
    assert "the goal's 1 / 2 read as oil" in journal.read_text()


def test_a_third_of_a_cup_is_read_to_twelve_digits_so_whole_scoops_stay_whole(tmp_path):
    """GSM8K train 7230: "a 1/3 cup scoop" read as 0.333333 cup made 3 cups 9.00001 scoops."""
    question = (
        "Mitch is baking a cake and needs 3 cups of flour and two cups of sugar. He doesn't "
        "have a one cup scoop, only a 1/3 cup scoop. How many total scoops will he need?"
    )
    program = (
        "flour_cups = 3\nsugar_cups = 2\nscoop_size = 1/3\n"
        "total_scoops = flour_cups / scoop_size + sugar_cups / scoop_size\nprint(total_scoops)"
    )
    outcome, _ = _program_run(question, program, 15, tmp_path)
    assert outcome.verified and outcome.correct, (outcome.status, outcome.error)


def test_a_program_with_a_400_digit_quantity_is_refused_not_an_internal_error(tmp_path):
    """Found by mutating recorded programs: `10**400` gallons overflowed pint's floats."""
    question = (
        "Mr. Williams bought 10 gallons of juice for a party. Each gallon has 10 cups. At the "
        "party, 5 cups of juice were left. How many cups of juice were drunk?"
    )
    program = (
        "total_gallons = 10**400\ncups_per_gallon = 10\ncups_left = 5\n"
        "total_cups = total_gallons * cups_per_gallon\ncups_drunk = total_cups - cups_left\n"
        "print(cups_drunk)"
    )
    outcome, _ = _program_run(question, program, 95, tmp_path)
    assert outcome.error_kind == "invalid", outcome.error
