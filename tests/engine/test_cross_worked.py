"""The cross-check by the model's own worked answer in words (``cross_route="worked"``)."""

import json

import pytest

from stepgraph import Engine, Planner, RunStatus, Task
from stepgraph.engine import replay
from stepgraph.exceptions import LLMError
from stepgraph.journal import read_journal
from stepgraph.planner import LLMReply
from stepgraph.planner._read_goal import read_inputs
from stepgraph.planner._route import route_for
from stepgraph.task import parse_input
from stepgraph.testing import ScriptedLLM
from stepgraph.units import parse_unit, quantity

GOAL = "Apples are packed 24 to a crate. How many full crates can be packed from 1,000 apples?"
WORDS_41 = "1000 / 24 = 41.67, and only full crates count.\nANSWER: 41"


def _plan(*steps, answer="${crates} crates"):
    listed = [{"id": i, "tool": "calculate", "args": {"expression": e}} for i, e in steps]
    return json.dumps({"steps": listed, "answer": answer})


def _run(tmp_path, responses, model=None):
    model = model or ScriptedLLM(responses)
    engine = Engine(planner=Planner(model, cross_route="worked"), cross_check=True)
    result = engine.run(Task(goal=GOAL), journal=tmp_path / "j.jsonl")
    return result, model, read_journal(tmp_path / "j.jsonl")


def _cross(result):
    [cross] = [v for v in result.verdicts if v.kind == "cross_check"]
    return cross


def test_a_worked_answer_that_agrees_verifies_the_run(tmp_path):
    result, model, journal = _run(tmp_path, [_plan(("crates", "floor(1000 / 24)")), WORDS_41])
    assert result.status is RunStatus.VERIFIED and result.answer == "41 crates"
    cross = _cross(result)
    assert cross.passed and cross.values == {"first": "41", "second": "41"}
    assert "worked answer, in words, agrees" in cross.description
    asked = model.requests[1]
    assert [m["role"] for m in asked] == ["system", "user"] and asked[1]["content"] == GOAL
    assert "ANSWER" in asked[0]["content"] and "floor" not in json.dumps(asked)  # no plan shown
    purposes = [e.purpose for e in journal.of_kind("llm.request")]
    assert purposes == ["plan", "worked"]


def test_a_plan_that_misreads_the_goal_is_caught_by_the_words(tmp_path):
    """ceil for full crates: every check of that plan passes; the worked answer says 41."""
    result, model, _ = _run(tmp_path, [_plan(("crates", "ceil(1000 / 24)")), WORDS_41])
    assert result.status is RunStatus.UNVERIFIED
    cross = _cross(result)
    assert not cross.passed and "disagrees: 41 against 42" in cross.description
    assert len(model.requests) == 2  # no repair: the words cannot say which route misread


@pytest.mark.parametrize(
    ("plan", "status", "said"),
    [
        ("floor(1000 / 24)", RunStatus.VERIFIED, "agrees: 41 against 41"),
        ("ceil(1000 / 24)", RunStatus.UNVERIFIED, "disagrees: 41 against 42"),
    ],
)
def test_a_final_sum_the_words_got_wrong_is_worked_out_by_the_engine(tmp_path, plan, status, said):
    """GSM8K test 128: "180 + 300 + 400 = 980" in both worked answers, the plan's 880 right."""
    slipped = "24 x 40 = 960 apples fill 40 crates; 40 + 1 = 42 full crates.\nANSWER: 42"
    result, _, _ = _run(tmp_path, [_plan(("crates", plan)), slipped])
    assert result.status is status
    cross = _cross(result)
    assert said in cross.description, cross.description
    assert "its last sum worked out by the engine (40 + 1 = 42)" in cross.description


def test_words_without_a_number_leave_the_run_unverified(tmp_path):
    result, _, _ = _run(tmp_path, [_plan(("crates", "floor(1000 / 24)")), "I cannot tell."])
    assert result.status is RunStatus.UNVERIFIED
    assert _cross(result).description == "the model's worked answer states no number"


def test_a_quoted_number_the_words_never_reach_fails_the_check(tmp_path):
    """The final values agree, but the answer also states a number the words do not hold."""
    plan = _plan(
        ("left", "1000 - 24"),  # a wrong remainder the answer quotes: 16 are left
        ("crates", "floor(1000 / 24)"),
        answer="${crates} crates, ${left} apples left",
    )
    result, _, _ = _run(tmp_path, [plan, WORDS_41])
    cross = _cross(result)
    assert result.status is RunStatus.UNVERIFIED and not cross.passed
    assert "the answer's 976 (${left}) is not among the numbers of the worked answer" in (
        cross.description
    )


def test_money_agrees_by_its_magnitude(tmp_path):
    goal = "A pen costs $3. How much do 4 pens cost?"
    plan = json.dumps(
        {
            "steps": [{"id": "cost", "tool": "calculate", "args": {"expression": "4 * 3 USD"}}],
            "answer": "${cost}",
        }
    )
    model = ScriptedLLM([plan, "4 pens at $3 each: 4 * 3 = $12.\nANSWER: $12"])
    engine = Engine(planner=Planner(model, cross_route="worked"), cross_check=True)
    result = engine.run(Task(goal=goal), journal=tmp_path / "j.jsonl")
    assert _cross(result).passed and result.status is RunStatus.VERIFIED


def test_a_quantity_is_compared_in_the_unit_the_question_asks_for(tmp_path):
    """'How many GB': the plan's 10 Mbps·h is the words' 4.5 GB; 10 against 4.5 was no match."""
    goal = "A video stream uses 5 Mbps. How many GB do 2 hours of streaming use?"
    plan = json.dumps(
        {
            "steps": [{"id": "used", "tool": "calculate", "args": {"expression": "5 Mbps * 2 h"}}],
            "answer": "${used}",
        }
    )
    words = "5 Mbps for 7200 s is 36000 Mbit, / 8 = 4500 MB = 4.5 GB.\nANSWER: 4.5"
    model = ScriptedLLM([plan, words])
    engine = Engine(planner=Planner(model, cross_route="worked", read_goal=False), cross_check=True)
    result = engine.run(Task(goal=goal), journal=tmp_path / "j.jsonl")
    cross = _cross(result)
    assert cross.passed, cross.description
    assert cross.values == {"first": "4.5 GB", "second": "4.5"}
    wrong = ScriptedLLM([plan, words.replace("ANSWER: 4.5", "ANSWER: 10")])  # Mbps·h, not GB
    engine = Engine(planner=Planner(wrong, cross_route="worked", read_goal=False), cross_check=True)
    result = engine.run(Task(goal=goal), journal=tmp_path / "k.jsonl")
    assert not _cross(result).passed


def test_an_endpoint_failure_leaves_the_run_unverified_with_why(tmp_path):
    class FailsSecond(ScriptedLLM):
        def complete(self, messages, *, schema=None, attempt=1) -> LLMReply:
            if self.requests:
                self.requests.append(list(messages))
                raise LLMError("the endpoint timed out after 300 s")
            return super().complete(messages, schema=schema, attempt=attempt)

    model = FailsSecond([_plan(("crates", "floor(1000 / 24)"))])
    result, _, _ = _run(tmp_path, [], model=model)
    assert result.status is RunStatus.UNVERIFIED
    assert "no worked answer to compare with (the endpoint timed out" in _cross(result).description


def test_a_run_checked_by_words_replays_identically(tmp_path):
    _, _, journal = _run(tmp_path, [_plan(("crates", "floor(1000 / 24)")), WORDS_41])
    assert journal.of_kind("run.start")[0].config.cross_route == "worked"
    report = replay(journal.path, out=tmp_path / "again.jsonl")
    assert report.identical, report.divergences


def test_a_worked_answer_edited_into_a_slipped_sum_replays_as_a_divergence(tmp_path):
    """An attacker edits the journal's words into "40 + 2 = 41": replay never verifies silently.

    The plan says 42 crates (ceil) and the run was unverified; a worked answer rewritten so
    that its last sum, worked out, agrees would make the replayed verdict pass: replay
    reports that as a divergence from the record, not as the run's own verdict.
    """
    result, _, journal = _run(tmp_path, [_plan(("crates", "ceil(1000 / 24)")), WORDS_41])
    assert result.status is RunStatus.UNVERIFIED
    lines = journal.path.read_text().splitlines()
    edited = [
        line.replace(json.dumps(WORDS_41)[1:-1], "40 + 2 = 41 full crates.\\nANSWER: 41")
        for line in lines
    ]
    assert edited != lines
    journal.path.write_text("\n".join(edited) + "\n")
    report = replay(journal.path, out=tmp_path / "again.jsonl")
    assert not report.identical
    assert any("cross_check" in str(divergence) for divergence in report.divergences)


def test_the_environment_chooses_the_route_for_the_command_line(tmp_path, monkeypatch):
    from stepgraph.cli._model_options import ModelOptions

    script = tmp_path / "s.yaml"
    script.write_text("scripted: true\nresponses: ['x']\n")
    monkeypatch.delenv("STEPGRAPH_CROSS_ROUTE", raising=False)
    planner = ModelOptions(scripted=script).planner()
    assert planner is not None and planner.cross_route == "plan"
    monkeypatch.setenv("STEPGRAPH_CROSS_ROUTE", "worked")
    planner = ModelOptions(scripted=script).planner()
    assert planner is not None and planner.cross_route == "worked"


def test_a_plan_ending_on_a_record_is_never_confirmed_by_a_number_in_words(tmp_path):
    """Words that state 42 cannot vouch for a lookup's record: not verified."""
    from stepgraph import tool

    @tool
    def find(name: str) -> dict:
        """Find a company by name."""
        return {"id": 42, "name": name}

    step = json.dumps({"steps": [{"id": "c", "tool": "find", "args": {"name": "Acme"}}]})
    model = ScriptedLLM([step, "Acme's id is 42.\nANSWER: 42"])
    planner = Planner(model, cross_route="worked")
    engine = Engine(tools=[find], planner=planner, cross_check=True)
    result = engine.run(Task(goal="Which id has Acme?"), journal=tmp_path / "j.jsonl")
    assert result.status is not RunStatus.VERIFIED
    assert not _cross(result).passed


def test_auto_takes_another_plan_where_units_convert_and_the_words_elsewhere(tmp_path):
    """Words convert units in the model's head; another plan's units the engine converts."""
    minutes = (
        "A batch job takes 135 minutes, then a check takes 45 minutes. How many hours is that?"
    )
    lines = 'hours: "h" = duration + duration_2\nanswer = f"{hours}"'
    model = ScriptedLLM([lines, lines])  # the plan, then the second plan
    planner = Planner(model, cross_route="auto", syntax="lines")
    result = Engine(planner=planner, cross_check=True).run(
        Task(goal=minutes), journal=tmp_path / "m.jsonl"
    )
    assert result.status is RunStatus.VERIFIED, result.answer
    assert "a second plan, by its own route, agrees" in _cross(result).description
    purposes = [e.purpose for e in read_journal(tmp_path / "m.jsonl").of_kind("llm.request")]
    assert purposes == ["plan", "cross"]
    assert replay(tmp_path / "m.jsonl").identical  # the route is chosen again alike
    # Counts: the words.
    model = ScriptedLLM([_plan(("crates", "floor(1000 / 24)")), WORDS_41])
    engine = Engine(planner=Planner(model, cross_route="auto"), cross_check=True)
    result = engine.run(Task(goal=GOAL), journal=tmp_path / "c.jsonl")
    assert "worked answer" in _cross(result).description


BUSES = "A bus has 48 seats. How many buses are needed to carry 350 people?"
WORDS_8 = "350 / 48 = 7.29, and a part of a bus is a whole bus.\nANSWER: 8"


def _buses(tmp_path, replies, **planner):
    model = ScriptedLLM(replies)
    options = {"cross_route": "worked", "retry_with": "fresh", **planner}
    engine = Engine(planner=Planner(model, **options), cross_check=True)
    path = tmp_path / f"buses-{len(list(tmp_path.iterdir()))}.jsonl"
    return engine.run(Task(goal=BUSES), journal=path), model, path


def test_words_that_disagree_ask_for_a_fresh_plan_held_to_the_same_words(tmp_path):
    # rounded to the nearest: a floor would drop a remainder, which a verdict refuses first
    nearest = _plan(("buses", "round(350 / 48)"), answer="${buses} buses")
    ceil_plan = _plan(("buses", "ceil(350 / 48)"), answer="${buses} buses")
    result, model, path = _buses(
        tmp_path, [nearest, WORDS_8, ceil_plan], afresh_on_disagreement=True
    )
    # the fresh plan's value is kept apart, unverified: the first plan still disagrees, and
    # a two-to-one vote is no verification
    assert result.status is RunStatus.UNVERIFIED and result.answer.startswith("no answer")
    assert not result.values and result.unverified_values == {"buses": 8}
    verdict = _cross(result)
    assert not verdict.passed and "no verification" in verdict.description
    assert "a fresh plan: the model's own worked answer, in words, now agrees" in (
        verdict.description
    )
    journal = read_journal(path)
    assert [e.purpose for e in journal.of_kind("llm.request")] == ["plan", "worked", "repair"]
    fresh = json.dumps(model.requests[2][1:])  # after the system prompt: the goal, a note
    assert "round" not in fresh and "ANSWER" not in fresh and "7.29" not in fresh  # no copy
    assert replay(path).identical


def test_without_the_setting_the_words_disagreeing_end_the_run_unverified(tmp_path):
    nearest = _plan(("buses", "round(350 / 48)"), answer="${buses} buses")
    result, model, _ = _buses(tmp_path, [nearest, WORDS_8])
    assert result.status is RunStatus.UNVERIFIED and len(model.requests) == 2


def test_a_fresh_plan_that_still_disagrees_leaves_the_run_unverified(tmp_path):
    nearest = _plan(("buses", "round(350 / 48)"), answer="${buses} buses")
    other = _plan(("buses", "round(350 / 48)"), answer="about ${buses} buses")
    replies = [nearest, WORDS_8, other, nearest]  # the last repeats the first: stop
    result, model, _ = _buses(tmp_path, replies, afresh_on_disagreement=True)
    assert result.status is RunStatus.UNVERIFIED
    assert "still disagrees" in _cross(result).description
    assert [m[-1]["content"] for m in model.requests].count(BUSES) <= 1  # words asked once


@pytest.mark.parametrize(
    ("goal", "route"),
    [
        ("A batch job takes 135 minutes. How many hours is that?", "plan"),
        ("A car drives 120 miles at 40 mph. How many minutes does it take?", "plan"),
        ("How many GB is 2 TiB?", "plan"),
        # no input is in time: nothing converts, the words count (GSM8K train 1633)
        (
            "Erwin eats 2 chocolates on weekdays and 1 chocolate on weekends. He ate 24 "
            "chocolates in total. How many weeks did it take to finish all the chocolate?",
            "worked-code",
        ),
        ("She walks 3 miles a day. How many miles in 5 days?", "worked-code"),
        ("A toy costs $4. How much do 3 toys cost?", "worked-code"),
    ],
)
def test_auto_takes_another_plan_only_where_an_input_can_convert_to_the_answer(goal, route):
    read = [parse_input(item.value) for item in read_inputs(goal).values()]
    assert route_for(goal, read) == route


def test_a_task_with_a_lookup_tool_is_checked_by_another_plan_not_the_words():
    # The words cannot know what a register holds: on the suite's lookups the model's
    # own answer said "100 shareholders" where the register has 4, every time
    goal = "How many shareholders does Acme Data Systems have?"
    assert route_for(goal, [], ["find_company", "list_shareholders", "calculate"]) == "plan"
    assert route_for(goal, [], ["calculate", "unit_convert"]) == "worked-code"


def test_a_sum_in_cents_is_held_to_the_words_in_dollars_unless_cents_are_asked():
    """GSM8K train 6399: 500,000 cent against the words' 5,000 for "the total she earned"."""
    from stepgraph.engine._cross import in_asked_unit

    cents = quantity(500_000, parse_unit("cent"))
    story = "Emmalyn paints fences for twenty cents per meter. The fences are 25,000 m long."
    earned = f"{story} Calculate the total amount she earned from painting the fences."
    dollars = in_asked_unit(cents, earned)
    assert (dollars.magnitude, str(dollars.units)) == (5000, "USD")  # as the words count it
    kept = in_asked_unit(cents, f"{story} How many cents did she earn?")
    assert (kept.magnitude, str(kept.units)) == (500_000, "cent")


def test_words_that_name_a_cents_sum_s_digits_as_dollars_do_not_agree_with_it():
    """Attack view: 5,000 cent is $50; words saying "5,000" for the total earned disagree."""
    from stepgraph.engine._cross import _agree_magnitude, in_asked_unit

    goal = "She paints for twenty cents per meter. Calculate the total amount she earned."
    plan = in_asked_unit(quantity(5000, parse_unit("cent")), goal)
    assert not _agree_magnitude(plan, 5000.0)
    assert _agree_magnitude(plan, 50.0)
