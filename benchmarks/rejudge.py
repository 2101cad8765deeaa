"""Recorded stepgraph answers judged again by today's engine, offline (no model, no server).

    python -m benchmarks.rejudge DIR [--syntax lines|json] [--method NAME]
        [--cross-route plan|worked|worked-code] [--numbered-names]

DIR holds the cases `benchmarks/small_model.py --record DIR` wrote. Each stepgraph case's
replies are played back through the current planner and engine (a scripted model), so a
change to the verifiers is measured on real answers without asking the model again; the
table sets the recorded outcome beside today's. A method recorded with the cross-check by
the worked answer (`--variant numbered-worked:...`) is played back with its settings given
again (`--method numbered-worked --cross-route worked --numbered-names`); another route
(`worked-code`) judges the same replies by another rule, where the rule needs no other
model call.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import get_args

from stepgraph import Engine, Planner
from stepgraph.evaluation import Suite, run_goal
from stepgraph.planner import CrossRoute
from stepgraph.testing import ScriptedLLM


def rejudge(
    folder: Path,
    syntax: str,
    *,
    method: str = "stepgraph",
    cross_route: CrossRoute | None = None,
    numbered_names: bool = False,
) -> list[dict[str, object]]:
    """Each case's recorded and current outcome: verified, correct."""
    rows = []
    for path in sorted(folder.glob(f"*.{method}.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        replies = [reply["content"] for reply in case.get("replies", [])]
        if not replies:
            continue
        goal = {"id": case["id"], "goal": case["question"], "expect": case["expected"]}
        suite = Suite(name="recorded", tolerance=1e-9, goals=[goal])
        planner = Planner(
            ScriptedLLM(replies),
            plan_retries=2,
            syntax=syntax,  # type: ignore[arg-type]
            cross_route=cross_route or "plan",
            numbered_names=numbered_names,
        )
        engine = Engine(planner=planner, cross_check=cross_route is not None)
        with tempfile.TemporaryDirectory() as scratch:
            where = Path(scratch)
            now = run_goal(suite, suite.goals[0], engine, where, where / "r.jsonl")
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
    parser.add_argument("--method", default="stepgraph", help="the recorded method's name")
    parser.add_argument(
        "--cross-route", choices=get_args(CrossRoute), help="the cross-check's route (none: off)"
    )
    parser.add_argument("--numbered-names", action="store_true")
    args = parser.parse_args()
    rows = rejudge(
        args.folder,
        args.syntax,
        method=args.method,
        cross_route=args.cross_route,
        numbered_names=args.numbered_names,
    )
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
