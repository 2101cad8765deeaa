"""What each command imports: `--help` and `validate` must not load the model client or pictures."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import get_args

from stepgraph.cli._model_options import ResponseFormat
from stepgraph.planner._client import ResponseFormat as PlannerResponseFormat
from tests.conftest import EXAMPLES

HEAVY = ("openai", "matplotlib", "distributed", "httpx")
# What only a run needs: the journal's structlog, the planner's settings and JSON repair;
# and what pint imports for arrays, which a task without plugins never holds.
RUN_ONLY = ("structlog", "pydantic_settings", "json_repair", "numpy", "dask")


def _loaded_after(code: str) -> set[str]:
    """The top-level packages a fresh interpreter holds after running `code`."""
    names = "sorted({m.split('.')[0] for m in sys.modules})"
    probe = f"{code}\nimport json, sys\nprint(json.dumps({names}))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_the_command_line_loads_no_stage_until_a_command_runs():
    loaded = _loaded_after("import stepgraph.cli")
    assert loaded.isdisjoint({*HEAVY, "pint", "numpy", "networkx", "structlog"}), loaded


def test_validate_loads_neither_the_model_client_nor_the_pictures():
    code = (
        "from stepgraph.cli import app\n"
        f"app(['validate', {str(EXAMPLES / 'migration.yaml')!r}], standalone_mode=False)"
    )
    loaded = _loaded_after(code)
    assert "pint" in loaded  # the check did run: units were compared
    assert loaded.isdisjoint(HEAVY), loaded & set(HEAVY)
    assert loaded.isdisjoint(RUN_ONLY), loaded & set(RUN_ONLY)


def test_the_package_root_still_offers_every_name():
    import stepgraph

    assert all(getattr(stepgraph, name) is not None for name in stepgraph.__all__)


def test_the_response_format_option_offers_what_the_planner_takes():
    assert get_args(ResponseFormat) == get_args(PlannerResponseFormat)
