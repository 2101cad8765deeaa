"""Families of goals with one shape and other numbers, each with its true answer worked out here.

- ``transfer``: the README's question (data, link, window, utilisation, retries), its
  answer computed below in plain arithmetic, never by stepgraph;
- ``gsm_symbolic``: GSM8K-style templates of reasoning-gym 0.1.25 (Apache-2.0), read out of
  its wheel (``pip download --no-deps reasoning-gym==0.1.25``; never installed, its
  package imports pull heavy dependencies). Each template draws its numbers from a seeded
  generator; its names and words are pinned (the first choice of each list) so that one
  template gives one sentence with other numbers. A *variant* takes the second choice:
  the same question in other words, another shape, for near reuse.
"""

from __future__ import annotations

import math
import random
import types
import zipfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

RG_WHEEL_NAME = "reasoning_gym-0.1.25-py3-none-any.whl"
_RG_GENERATORS = "reasoning_gym/arithmetic/gsm_symbolic/generators_00_49.py"
_RG_UTILS = "reasoning_gym/utils.py"


@dataclass(frozen=True)
class FamilyGoal:
    """One goal of a family, with its true answer."""

    family: str
    number: int  # 0: the first asked; variants count on
    goal: str
    expected: float


TRANSFER = (
    "How many nights does it take to move {data} TB over a {link} link, transferring only "
    "from {start}:00 to 06:00, at {use}% utilisation and with {lost}% of the traffic lost to "
    "retries?"
)
_LINKS = {"100 Mbps": 100e6, "200 Mbps": 200e6, "450 Mbps": 450e6, "800 Mbps": 800e6, "1 Gbps": 1e9}


def transfer_family(rng: random.Random, size: int) -> list[FamilyGoal]:
    """The data-migration question with other sizes, links, windows and losses."""
    goals = []
    for number in range(size):
        data = rng.choice([1.5, 2, 2.5, 3, 4, 6])
        link = rng.choice(list(_LINKS))
        start = rng.choice([22, 23, 0, 1])
        use, lost = rng.randint(70, 95), rng.randint(3, 15)
        hours = (6 - start) % 24
        bytes_a_night = _LINKS[link] / 8 * hours * 3600 * use / 100 * (1 - lost / 100)
        nights = math.ceil(data * 1e12 / bytes_a_night)
        text = TRANSFER.format(
            data=f"{data:g}", link=link, start=f"{start:02d}", use=use, lost=lost
        )
        goals.append(FamilyGoal("transfer", number, text, float(nights)))
    return goals


class _Pinned(random.Random):
    """A seeded generator whose `choice` always takes the same element (names, foods)."""

    def __init__(self, seed: int, pick: int) -> None:
        super().__init__(seed)
        self.pick = pick

    def choice(self, seq: Any) -> Any:  # noqa: D102 - random.Random's
        items = list(seq)
        if all(isinstance(item, str) for item in items):
            return items[min(self.pick, len(items) - 1)]
        return super().choice(seq)


class ReasoningGymUnavailable(Exception):
    """The reasoning-gym wheel is missing; the message says how to get it."""


def _generators(wheel: Path) -> types.ModuleType:
    """The template module, run from the wheel's text with its one helper module beside it."""
    if not wheel.is_file():
        raise ReasoningGymUnavailable(
            f"no reasoning-gym wheel at {wheel}: fetch it with `pip download --no-deps "
            f"reasoning-gym==0.1.25 -d {wheel.parent}` (do not install it), or pass --rg-wheel"
        )
    with zipfile.ZipFile(wheel) as archive:
        utils_source = archive.read(_RG_UTILS).decode()
        source = archive.read(_RG_GENERATORS).decode()
    utils = types.ModuleType("reasoning_gym.utils")
    exec(compile(utils_source, _RG_UTILS, "exec"), utils.__dict__)  # noqa: S102 - benchmark data
    module = types.ModuleType("gsm_symbolic_generators")
    module.__dict__.update({"Fraction": Fraction})
    source = source.replace("from reasoning_gym.utils import", "from _rg_utils import")
    import sys

    sys.modules["_rg_utils"] = utils
    exec(compile(source, _RG_GENERATORS, "exec"), module.__dict__)  # noqa: S102 - benchmark data
    return module


def gsm_symbolic_families(
    wheel: Path, templates: list[int], seed: int, size: int
) -> tuple[list[FamilyGoal], list[FamilyGoal]]:
    """`size` goals of each template (pinned words) and one variant each (other words)."""
    module = _generators(wheel)
    goals: list[FamilyGoal] = []
    variants: list[FamilyGoal] = []
    for template in templates:
        generate = getattr(module, f"generate_{template}")
        family = f"gsm_symbolic_{template}"
        for number in range(size):
            example = generate(_Pinned(seed * 1000 + template * 10 + number, 0))
            value = float(example["metadata"]["answer_value"])
            goals.append(FamilyGoal(family, number, example["question"], value))
        example = generate(_Pinned(seed * 1000 + template * 10 + 9, 1))
        variants.append(
            FamilyGoal(
                family, size, example["question"], float(example["metadata"]["answer_value"])
            )
        )
    return goals, variants
