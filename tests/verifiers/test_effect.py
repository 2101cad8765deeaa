"""A number the plan names but its answer ignores is not "used": the run is not verified."""

from stepgraph import Engine, Planner, Task
from stepgraph.model import RunStatus
from stepgraph.testing import ScriptedLLM

TOYS = (
    "When Emma watches her cousin, she gets out a variety of toys for him. The bag of building "
    "blocks has 70 blocks in it. The bin of stuffed animals has 43 stuffed animals inside. The "
    "tower of stacking rings has 30 multicolored rings on it. Emma recently bought a tube of "
    "bouncy balls, bringing her total number of toys for her cousin up to 228. How many bouncy "
    "balls came in the tube?"
)
# The answer a real small model (Qwen2.5-Coder-1.5B, llama.cpp) gave, reported verified with
# 143: 228 is added and taken away again, so the answer is 70 + 43 + 30 whatever the total.
CANCELS = """# toys Emma has in total
total_toys = blocks + stuffed + multicolored + n228

# bouncy balls in the tube, which is the difference between total toys and original toys
bouncy_balls = total_toys - n228
assert bouncy_balls >= 0, "the number of bouncy balls cannot be negative"
answer = f"{bouncy_balls} bouncy balls"
"""
RIGHT = """before = blocks + stuffed + multicolored
balls = n228 - before
answer = f"{balls} bouncy balls"
"""


def _run(tmp_path, *answers):
    llm = ScriptedLLM(list(answers))
    engine = Engine(planner=Planner(llm, syntax="lines"), repair_rounds=len(answers) - 1)
    return engine.run(
        Task(name="goal", goal=TOYS, tools=["calculate"]), journal=tmp_path / "r.jsonl"
    )


def test_a_number_added_and_taken_away_again_does_not_verify(tmp_path):
    """143 is not verified: the answer does not change with 228, the one number that matters."""
    result = _run(tmp_path, CANCELS)
    assert result.status is RunStatus.UNVERIFIED
    [inert] = [v for v in result.verdicts if not v.passed]
    assert inert.kind == "coverage" and "'228' (n228)" in inert.description


def test_the_repair_that_uses_the_number_verifies_with_the_right_answer(tmp_path):
    """Sent back, a plan whose answer depends on 228 verifies: 228 - (70 + 43 + 30) = 85."""
    result = _run(tmp_path, CANCELS, RIGHT)
    assert result.status is RunStatus.VERIFIED
    assert result.answer.startswith("85 bouncy balls")


def test_every_number_that_reaches_the_answer_passes(tmp_path):
    """The canonical plan: each of the five numbers changes the nights or the volume a night."""
    goal = (
        "How many nights does it take to move 2.5 TB over a 450 Mbps link, transferring only "
        "from 00:00 to 06:00, at 90% utilisation and with 12% of the traffic lost to retries?"
    )
    lines = (
        'rate: "GB/h" = link\n'
        "per_night = rate * duration * utilisation * (1 - traffic)\n"
        "nights = ceil(data / per_night)\n"
        'answer = f"{nights} nights ({per_night} per night)"\n'
    )
    llm = ScriptedLLM([lines])
    engine = Engine(planner=Planner(llm, syntax="lines"), repair_rounds=0)
    result = engine.run(Task(name="goal", goal=goal), journal=tmp_path / "r.jsonl")
    assert result.status is RunStatus.VERIFIED, [v.description for v in result.verdicts]
