"""Recorded stepgraph answers judged again by today's engine, offline (no model, no server).

    python -m benchmarks.rejudge DIR [--syntax lines|json]

DIR holds the cases `benchmarks/small_model.py --record DIR` wrote. Each stepgraph case's
replies are played back through the current planner and engine (a scripted model), so a
change to the verifiers is measured on real answers without asking the model again; the
table sets the recorded outcome beside today's.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from stepgraph import Engine, Planner
from stepgraph.evaluation import Suite, run_goal
from stepgraph.testing import ScriptedLLM


def rejudge(folder: Path, syntax: str) -> list[dict[str, object]]:
    """Each case's recorded and current outcome: verified, correct."""
    rows = []
    for path in sorted(folder.glob("*.stepgraph.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        replies = [reply["content"] for reply in case.get("replies", [])]
        if not replies:
            continue
        goal = {"id": case["id"], "goal": case["question"], "expect": case["expected"]}
        suite = Suite(name="recorded", tolerance=1e-9, goals=[goal])
        planner = Planner(ScriptedLLM(replies), plan_retries=2, syntax=syntax)  # type: ignore[arg-type]
        with tempfile.TemporaryDirectory() as scratch:
            where = Path(scratch)
            now = run_goal(suite, suite.goals[0], Engine(planner=planner), where, where / "r.jsonl")
        rows.append(
            {
                "id": case["id"],
                "then_verified": bool(case.get("verified")),
                "then_correct": bool(case.get("correct")),
                "now_verified": now.verified,
                "now_correct": now.correct,
                "now_status": now.status,
            }
        )
    return rows


def main() -> None:
    """Print each case, then the totals then and now."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--syntax", default="lines", choices=["lines", "json"])
    args = parser.parse_args()
    rows = rejudge(args.folder, args.syntax)
    for row in rows:
        print(
            f"{row['id']}: then verified={row['then_verified']} correct={row['then_correct']}"
            f" | now {row['now_status']} correct={row['now_correct']}"
        )
    for when in ("then", "now"):
        verified = [r for r in rows if r[f"{when}_verified"]]
        right = [r for r in verified if r[f"{when}_correct"]]
        print(
            f"{when}: {len(rows)} cases, verified {len(verified)}, verified-correct "
            f"{len(right)}, verified-wrong {len(verified) - len(right)}"
        )


if __name__ == "__main__":
    main()
