r"""Plan memory against planning every goal: the same model, the same goals, one run.

    python -m benchmarks.plan_memory --base-url http://127.0.0.1:8766/v1 --model qwen \
        --rg-wheel /path/reasoning_gym-0.1.25-py3-none-any.whl --seed 7 --size 3 \
        [--templates 0,1,3,4,6,7] [--plan-syntax lines] [--out report.json] [--dir DIR]

Goals come in families of one shape with other numbers (`_families`: the README's data
migration, and reasoning-gym's gsm_symbolic templates), each with its true answer worked
out independently. Three conditions, each in a runs folder of its own:

- **planned**: every goal planned by the model (`Engine(memory=False)`), as before memory;
- **memory**: the same goals in the same order with memory on: the first of a family is
  planned, the next ones recalled when the first verified (a recall that does not fit, or
  does not verify, falls back to the planner);
- **near**: one more goal per family in other words (another shape, so never recalled),
  asked with the *memory* folder's verified plans as worked examples, against the fixed
  examples (`--no-memory`): does near reuse raise the verified-correct rate?

Printed per condition: goals, verified-correct, verified-wrong, model calls per answer,
median and p90 seconds per goal, recalled goals and their median `Engine.run` seconds.
With ``--scripted FILE`` the model is a scripted one (offline; a smoke test only).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from benchmarks._common import machine
from benchmarks._families import (
    RG_WHEEL_NAME,
    FamilyGoal,
    ReasoningGymUnavailable,
    gsm_symbolic_families,
    transfer_family,
)
from stepgraph.cli._model_options import ModelOptions
from stepgraph.engine import Engine
from stepgraph.evaluation import GoalOutcome, Suite, run_goal
from stepgraph.journal import read_journal
from stepgraph.planner import Planner
from stepgraph.testing import ScriptedLLM

DEFAULT_TEMPLATES = "0,1,3,6,7"
TOOLS = ["calculate", "unit_convert"]


def ask(
    goals: Sequence[FamilyGoal], planner: Planner, folder: Path, *, memory: bool
) -> list[dict[str, Any]]:
    """Each goal once, in order, through `Engine.run` with or without memory of `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    engine = Engine(planner=planner, journal_dir=folder, memory=memory)
    rows = []
    for index, item in enumerate(goals):
        suite = Suite(
            name=item.family,
            tolerance=1e-9,
            goals=[
                {
                    "id": f"{item.family}-{item.number}",
                    "goal": item.goal,
                    "expect": item.expected,
                    "tools": TOOLS,
                }
            ],
        )
        journal = folder / f"{index:03d}-{item.family}-{item.number}.jsonl"
        started = time.perf_counter()
        outcome = run_goal(suite, suite.goals[0], engine, folder, journal)
        seconds = time.perf_counter() - started
        rows.append(_row(item, outcome, journal, seconds))
        print(_progress(rows[-1]), file=sys.stderr, flush=True)
    return rows


def seed(goals: Sequence[FamilyGoal], plans_file: Path, folder: Path) -> list[dict[str, Any]]:
    """Each family's first goal run with its plan from `plans_file`, into `folder` (memory)."""
    plans = yaml.safe_load(plans_file.read_text(encoding="utf-8"))
    firsts = [item for item in goals if item.number == 0 and item.family in plans]
    scripted = Planner(ScriptedLLM([plans[item.family] for item in firsts]), syntax="lines")
    return ask(firsts, scripted, folder, memory=False)


def _row(item: FamilyGoal, outcome: GoalOutcome, journal: Path, seconds: float) -> dict[str, Any]:
    kinds = [event.event for event in read_journal(journal).events] if journal.exists() else []
    recalled = "plan.recalled" in kinds and "llm.request" not in kinds
    return {
        "family": item.family,
        "number": item.number,
        "goal": item.goal,
        "expected": item.expected,
        "answer": outcome.answer,
        "status": outcome.status,
        "verified": outcome.verified,
        "correct": outcome.correct,
        "verified_wrong": outcome.verified_wrong,
        "model_calls": outcome.model_calls,
        "recalled": recalled,
        "recall_refused": "plan.recalled" in kinds and not recalled,
        "examples_from_memory": "plan.examples" in kinds,
        "seconds": round(seconds, 4),
        "journal": str(journal),
    }


def _progress(row: dict[str, Any]) -> str:
    how = "recalled" if row["recalled"] else f"{row['model_calls']} calls"
    mark = "right" if row["correct"] else "wrong"
    return (
        f"{row['family']} #{row['number']}: {row['status']}, {mark}, {how}, {row['seconds']:.2f} s"
    )


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of one condition."""
    seconds = sorted(row["seconds"] for row in rows)
    recalled = [row["seconds"] for row in rows if row["recalled"]]
    verified = [row for row in rows if row["verified"]]
    return {
        "goals": len(rows),
        "verified_correct": sum(row["verified"] and row["correct"] for row in rows),
        "verified_wrong": sum(row["verified_wrong"] for row in rows),
        "model_calls_per_goal": round(
            sum(row["model_calls"] for row in rows) / max(1, len(rows)), 2
        ),
        "median_s": round(statistics.median(seconds), 3) if seconds else None,
        "p90_s": round(seconds[int(0.9 * (len(seconds) - 1))], 3) if seconds else None,
        "median_s_to_verified": round(statistics.median(r["seconds"] for r in verified), 3)
        if verified
        else None,
        "recalled": len(recalled),
        "recall_refused": sum(row["recall_refused"] for row in rows),
        "median_recall_s": round(statistics.median(recalled), 4) if recalled else None,
    }


def table(report: dict[str, dict[str, Any]]) -> str:
    """One line per condition."""
    head = (
        f"{'condition':<22} {'goals':>5} {'v-right':>7} {'v-wrong':>7} {'calls/goal':>10} "
        f"{'median s':>9} {'p90 s':>7} {'recalled':>8} {'recall s':>9}"
    )
    lines = [head, "-" * len(head)]
    for name, figures in report.items():
        recall = figures["median_recall_s"]
        lines.append(
            f"{name:<22} {figures['goals']:>5} {figures['verified_correct']:>7} "
            f"{figures['verified_wrong']:>7} {figures['model_calls_per_goal']:>10} "
            f"{figures['median_s'] or 0:>9.2f} {figures['p90_s'] or 0:>7.2f} "
            f"{figures['recalled']:>8} {'' if recall is None else f'{recall:.4f}':>9}"
        )
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    """The command line."""
    parse = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parse.add_argument("--base-url")
    parse.add_argument("--model")
    parse.add_argument("--api-key", default="not-needed")
    parse.add_argument("--scripted", type=Path, help="A scripted responses file (offline smoke).")
    parse.add_argument("--plan-syntax", choices=["json", "lines"], default="lines")
    parse.add_argument("--timeout", type=float, default=600)
    parse.add_argument("--rg-wheel", type=Path, default=Path(".real-model/dl") / RG_WHEEL_NAME)
    parse.add_argument(
        "--templates", default=DEFAULT_TEMPLATES, help="gsm_symbolic templates; '' for none."
    )
    parse.add_argument(
        "--no-transfer", action="store_true", help="Leave out the data-migration family."
    )
    parse.add_argument("--seed", type=int, default=7)
    parse.add_argument(
        "--seed-plans",
        type=Path,
        help="A person's plans of each family's first goal (YAML: family -> lines), put in "
        "memory before the model is asked the others (benchmarks/data/plan_memory_seeds.yaml).",
    )
    parse.add_argument("--size", type=int, default=3, help="Goals per family (one shape).")
    parse.add_argument("--conditions", default="planned,memory,near")
    parse.add_argument("--dir", type=Path, default=Path(".real-model/plan-memory"))
    parse.add_argument("--out", type=Path)
    return parse


def main(argv: list[str] | None = None) -> int:
    """Run the conditions asked for and print the table."""
    args = parser().parse_args(argv)
    planner = ModelOptions(
        scripted=args.scripted,
        base_url=args.base_url,
        model=args.model,
        api_key=args.api_key,
        plan_retries=2,
        plan_syntax=args.plan_syntax,
        timeout=args.timeout,
    ).planner()
    if planner is None:
        print("give --base-url and --model, or --scripted FILE", file=sys.stderr)
        return 2
    goals = [] if args.no_transfer else transfer_family(random.Random(args.seed), args.size)
    variants: list[FamilyGoal] = []
    templates = [int(t) for t in args.templates.split(",") if t.strip()]
    if templates:
        try:
            more, variants = gsm_symbolic_families(args.rg_wheel, templates, args.seed, args.size)
        except ReasoningGymUnavailable as e:
            print(e, file=sys.stderr)
            return 2
        goals += more
    stamp = time.strftime("%Y%m%dT%H%M%S")
    folder = args.dir / stamp
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    rows: dict[str, list[dict[str, Any]]] = {}
    memory = folder / "memory"
    asked = goals
    if args.seed_plans:  # memory holds a person's plan of each family's first goal
        seeded = seed(goals, args.seed_plans, memory)
        rows["seeded (a person's plans)"] = seeded
        asked = [item for item in goals if item.number > 0]
    if "planned" in conditions:
        rows["planned"] = ask(asked, planner, folder / "planned", memory=False)
    if "memory" in conditions:
        rows["memory"] = ask(asked, planner, memory, memory=True)
    if "near" in conditions and variants:
        rows["near: fixed examples"] = ask(variants, planner, folder / "near-fixed", memory=False)
        # The memory folder's verified plans are the examples; its runs stay as they were.
        near = folder / "near-memory"
        near.mkdir(parents=True)
        for journal in memory.glob("*.jsonl"):
            (near / journal.name).write_bytes(journal.read_bytes())
        rows["near: memory examples"] = ask(variants, planner, near, memory=True)
    report = {name: summary(items) for name, items in rows.items()}
    print(table(report))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "machine": machine(),
            "args": {k: str(v) for k, v in vars(args).items()},
            "summary": report,
            "rows": rows,
        }
        args.out.write_text(json.dumps(payload, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
