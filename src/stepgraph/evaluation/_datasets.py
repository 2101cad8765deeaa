"""External benchmarks as suites: GSM8K and SVAMP JSONL files, sampled with a seed.

- **GSM8K**: one ``{"question": ..., "answer": "... #### 18"}`` per line; the expected
  answer is the number after the last ``####`` (``18,000`` is 18000, ``-3`` is -3).
- **SVAMP**: one ``{"Body": ..., "Question": ..., "Answer": 145.0}`` per line; the goal is
  the body and the question joined by a space, as the dataset's own evaluation does.

Each line becomes a `SuiteGoal`: id ``<dataset>-<split>-<n>`` (n counts the file's items
from 0, so an id names the same question whatever the sample), category the dataset's
name, expected answer a bare count. A sample of `size` items is
``random.Random(seed).sample`` over the file's items, then put back in file order: the
same seed and size give the same questions on every machine, and a larger size does not
keep the smaller sample's questions (draw again to compare). The answers are whole
numbers, so the tolerance is tight (1e-9 relative): an answer off by one never matches.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, get_args

from stepgraph.evaluation._suite import Suite, SuiteGoal
from stepgraph.exceptions import TaskFileError

DatasetName = Literal["gsm8k", "svamp"]
DATASETS: tuple[str, ...] = get_args(DatasetName)
DATASET_TOLERANCE = 1e-9

_NUMBER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_KEYS: dict[str, frozenset[str]] = {
    "gsm8k": frozenset({"question", "answer"}),
    "svamp": frozenset({"Body", "Question", "Answer"}),
}


def detect_dataset(path: Path) -> str | None:
    """The dataset a file holds, from its first line's keys; None for anything else (YAML)."""
    try:
        with path.open(encoding="utf-8") as handle:
            first = next((line for line in handle if line.strip()), "")
    except (OSError, UnicodeDecodeError):
        return None  # not ours to report: the suite reader says why it cannot read it
    try:
        item = json.loads(first)
    except json.JSONDecodeError:
        return None
    if not isinstance(item, dict):
        return None
    return next((name for name, keys in _KEYS.items() if keys <= item.keys()), None)


def load_dataset(
    path: Path,
    *,
    dataset: str | None = None,
    split: str | None = None,
    seed: int = 0,
    size: int | None = None,
) -> Suite:
    """Read a GSM8K or SVAMP JSONL file as a suite; `size` items drawn with `seed`, or all.

    `dataset` is detected from the first line when not given; `split` defaults to the
    file's name (``test.jsonl`` is ``test``). Every problem is a `TaskFileError` naming
    the file (and the line).
    """
    name = dataset or detect_dataset(path)
    if name not in DATASETS:
        raise TaskFileError(
            "not a dataset file: its first line is neither a GSM8K item (keys question, "
            "answer) nor a SVAMP item (keys Body, Question, Answer)"
            if dataset is None
            else f"unknown dataset '{dataset}' (known: {', '.join(DATASETS)})",
            path=str(path),
        )
    part = _split_name(split or path.stem, name)
    goals = [
        SuiteGoal(id=f"{name}-{part}-{index}", category=name, goal=goal, expect=expected)
        for index, (goal, expected) in enumerate(_items(path, name))
    ]
    if not goals:
        raise TaskFileError("the dataset file holds no items", path=str(path))
    chosen = goals if size is None else _sample(goals, seed, size, path)
    drawn = "all" if size is None else f"{size} drawn with seed {seed}, in file order"
    return Suite(
        name=f"{name}-{part}",
        description=f"{name} {part}: {len(chosen)} of {len(goals)} items ({drawn})",
        tolerance=DATASET_TOLERANCE,
        goals=chosen,
    )


def _sample(goals: list[SuiteGoal], seed: int, size: int, path: Path) -> list[SuiteGoal]:
    if size < 1:
        raise TaskFileError(f"size must be at least 1, not {size}", path=str(path))
    if size > len(goals):
        raise TaskFileError(
            f"size {size} is more than the {len(goals)} items the file holds; "
            f"ask for at most {len(goals)}",
            path=str(path),
        )
    picked = sorted(random.Random(seed).sample(range(len(goals)), size))
    return [goals[index] for index in picked]


def _split_name(text: str, dataset: str) -> str:
    """``test``, ``gsm8k-test`` and ``gsm8k_test`` all name the split ``test``."""
    for sep in ("-", "_"):
        text = text.removeprefix(dataset + sep)
    cleaned = re.sub(r"[^A-Za-z0-9_.]+", "_", text).strip("_.")
    return cleaned[:24] or "data"  # the goal id must stay a short id


def _items(path: Path, dataset: str) -> Iterator[tuple[str, int | float]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise TaskFileError(f"cannot read dataset: {e}", path=str(path)) from e
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            if not isinstance(item, dict):
                raise ValueError("a line must be one JSON object")
            yield _gsm8k(item) if dataset == "gsm8k" else _svamp(item)
        except (ValueError, KeyError, TypeError) as e:  # JSONDecodeError is a ValueError
            problem = f"missing key {e}" if isinstance(e, KeyError) else str(e)
            raise TaskFileError(
                f"line {number}: not a {dataset} item: {problem}", path=str(path)
            ) from e


def _gsm8k(item: dict[str, Any]) -> tuple[str, int | float]:
    question, answer = _text(item["question"]), str(item["answer"])
    if "####" not in answer:
        raise ValueError("the answer has no '#### <number>' line")
    final = answer.rsplit("####", 1)[1].strip()
    if not _NUMBER.fullmatch(final):
        raise ValueError(f"the final answer '{final}' is not a number")
    return question, _whole(float(final.replace(",", "")))


def _svamp(item: dict[str, Any]) -> tuple[str, int | float]:
    goal = _text(f"{str(item['Body']).strip()} {str(item['Question']).strip()}")
    value = item["Answer"]
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"the answer {value!r} is not a number")
    return goal, _whole(float(str(value).replace(",", "")))


def _text(value: Any) -> str:
    text = str(value).strip()
    if not text:
        raise ValueError("the question is empty")
    return text


def _whole(number: float) -> int | float:
    """18.0 as 18, so reports show the answer as the dataset means it."""
    return int(number) if number.is_integer() else number
