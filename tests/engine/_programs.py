"""A scripted model that answers program requests with programs, and a goal run through it."""

from pathlib import Path
from typing import Any

from stepgraph import Engine, Planner
from stepgraph.evaluation import GoalOutcome, Suite, run_goal
from stepgraph.model import Step
from stepgraph.planner._client import LLMReply, Message
from stepgraph.planner._prompt import render
from stepgraph.testing import ScriptedLLM
from stepgraph.tools.expression import Expression


class Programs(ScriptedLLM):
    """Each program request gets the next program; the worked answer gets `words`."""

    def __init__(self, programs: list[str], words: str) -> None:
        super().__init__([])
        self.programs, self.words = list(programs), words

    def complete(
        self, messages: list[Message], *, schema: dict | None = None, attempt: int = 1
    ) -> LLMReply:
        self.requests.append([dict(message) for message in messages])
        is_program = messages[0]["content"] == render("program.md")
        text = self.programs.pop(0) if is_program and self.programs else self.words
        return LLMReply(text=text, usage={}, mode="text", model="scripted")


def run_programs(
    goal: str, expect: Any, programs: list[str], words: str, tmp_path: Path, **options: Any
) -> tuple[GoalOutcome, Programs]:
    """One goal with programs only and the words' code as the witness, as the preset runs."""
    model = Programs(programs, words)
    planner = Planner(
        model, syntax="lines", numbered_names=True, cross_route="worked-code",
        program_only=True, retry_with="fresh", **options,
    )  # fmt: skip
    suite = Suite(name="programs", goals=[{"id": "g", "goal": goal, "expect": expect}])
    engine = Engine(planner=planner, cross_check=True)
    return run_goal(suite, suite.goals[0], engine, tmp_path, tmp_path / "r.jsonl"), model


def one_step(text: str, **bindings: Any) -> tuple[list[Step], dict[str, dict[str, Any]]]:
    """A plan's one calculate step `s` of `text` and its action, for an answer verdict."""
    step = Step(id="s", tool="calculate", args={"expression": text})
    expression = Expression(text, {f"${{{name}}}": value for name, value in bindings.items()})
    return [step], {"s": {"expression": expression}}
