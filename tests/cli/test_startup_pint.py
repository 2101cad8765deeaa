"""`stepgraph validate` starts fast: pint lean only when no plugin may need numpy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

MIGRATION = EXAMPLES / "migration.yaml"
TRUST = "--trust-plugins"  # plugins may load: what the lean-pint gate must judge

# A plugin that, as it is imported, hands numpy values to the engine's registry: what pint
# supports only when it was imported with numpy.
NUMPY_PLUGIN = '''
import numpy as np

from stepgraph import tool
from stepgraph.units import quantity

PER_NIGHT = np.float64(2.0) * quantity(1.5, "TB")
SIDE = np.sqrt(quantity(16.0, "m**2"))
TOTAL = np.sum(quantity(np.array([1.0, 2.0]), "GB"))


@tool
def nights(data_tb: float) -> float:
    """Nights to move `data_tb` terabytes."""
    return data_tb / PER_NIGHT.to("TB").magnitude
'''

NUMPY_TASK = """
goal: nights
tools: [nights]
plugins: [numpy_tools.py]
plan:
  steps:
    - {id: n, tool: nights, args: {data_tb: 6}}
"""


def _python(code: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


_VALIDATE_AND_REPORT = """
import json, sys
from stepgraph.cli import app
try:
    app(["validate", {path!r}, *{flags!r}], standalone_mode=False)
except SystemExit:
    pass
loaded = sorted(name for name in ("numpy", "dask") if sys.modules.get(name) is not None)
import pint.compat
import numpy, dask.base  # still importable by anyone after
print(json.dumps({{"loaded": loaded, "pint_has_numpy": pint.compat.HAS_NUMPY}}))
"""


def test_validate_without_plugins_imports_pint_without_numpy_or_dask():
    report = json.loads(_python(_VALIDATE_AND_REPORT.format(path=str(MIGRATION), flags=[TRUST])))
    assert report == {"loaded": [], "pint_has_numpy": False}


def test_a_task_with_a_plugin_gets_pint_with_numpy(tmp_path):
    (tmp_path / "numpy_tools.py").write_text(NUMPY_PLUGIN)
    (tmp_path / "task.yaml").write_text(NUMPY_TASK)
    report = json.loads(
        _python(_VALIDATE_AND_REPORT.format(path=str(tmp_path / "task.yaml"), flags=[TRUST]))
    )
    assert "numpy" in report["loaded"]
    assert report["pint_has_numpy"] is True
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "stepgraph",
            "validate",
            str(tmp_path / "task.yaml"),
            "--trust-plugins",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "valid: 1 steps, 0 dependencies")


def test_validate_without_trust_is_lean_even_where_the_text_says_plugins(tmp_path):
    """No plugin loads without --trust-plugins, so the word in a goal costs no numpy."""
    path = tmp_path / "task.yaml"
    path.write_text(MIGRATION.read_text().replace("goal: >\n", "goal: >\n  No plugins.\n", 1))
    assert b"plugins" in path.read_bytes()
    report = json.loads(_python(_VALIDATE_AND_REPORT.format(path=str(path), flags=[])))
    assert report == {"loaded": [], "pint_has_numpy": False}


def test_the_plugin_above_would_break_under_lean_pint(tmp_path):
    """Why the gate exists: lean pint refuses numpy values (the test above can fail)."""
    (tmp_path / "numpy_tools.py").write_text(NUMPY_PLUGIN)
    code = (
        "from pathlib import Path\n"
        "from stepgraph.cli._startup import import_pint_for\n"
        f"assert import_pint_for(Path({str(MIGRATION)!r}))\n"
        "try:\n"
        "    import numpy_tools\n"
        "except TypeError as e:\n"
        "    print('refused:', type(e).__name__)\n"
    )
    assert _python(code, cwd=tmp_path) == "refused: TypeError"


@pytest.mark.parametrize(
    ("text", "lean"),
    [
        (b"goal: x\nplan: {steps: []}\n", True),
        (b"goal: x\nplugins: [tools.py]\n", False),
        (b'{"goal": "x", "plu\\u0067ins": ["tools.py"]}', False),  # an escape spells the key
        (b'goal: "x"\n"plu\\x67ins": [tools.py]\n', False),
        (b"goal: compare the plugins\n", False),  # the word anywhere: not worth the risk
    ],
)
def test_only_a_file_that_cannot_name_a_plugin_is_lean(tmp_path, text, lean):
    path = tmp_path / "task.yaml"
    path.write_bytes(text)
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from stepgraph.cli._startup import import_pint_for\n"
        f"print(import_pint_for(Path({str(path)!r})), 'pint' in sys.modules)"
    )
    assert _python(code) == f"{lean} {lean}"


def test_a_process_that_imported_pint_keeps_it():
    code = (
        "import pint, pint.compat\nfrom pathlib import Path\n"
        "from stepgraph.cli._startup import import_pint_for\n"
        f"print(import_pint_for(Path({str(MIGRATION)!r})), pint.compat.HAS_NUMPY)"
    )
    assert _python(code) == "False True"


MIGRATION_TEXT = MIGRATION.read_text()
# Task files whose checks compare units: lean pint must judge each as full pint does.
WRONG_UNITS = {
    "expect-metres.yaml": MIGRATION_TEXT.replace("expect_unit: GB", "expect_unit: m"),
    "convert-to-kg.yaml": MIGRATION_TEXT.replace("to_unit: GB}", "to_unit: kg}"),
    "add-hours.yaml": MIGRATION_TEXT.replace(
        '"ceil(${total} / ${per_night})"', '"${total} + ${inputs.window}"'
    ),
    "unknown-unit.yaml": MIGRATION_TEXT.replace("to_unit: MB/s", "to_unit: MBps/s"),
    "counts.yaml": MIGRATION_TEXT.replace("2.5 TB", "3 apples").replace("0.88}", "2 people}", 1),
}

_VALIDATE_ALL = """
import contextlib, io, json, sys
{prelude}
from stepgraph.cli import app
results = []
for path in {paths!r}:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            code = app(["validate", path, "--trust-plugins"], standalone_mode=False) or 0
        except SystemExit as e:
            code = e.code
    results.append([path, code, out.getvalue()])
import pint.compat
print(json.dumps({{"has_numpy": pint.compat.HAS_NUMPY, "results": results}}))
"""


def test_lean_and_full_pint_validate_every_task_alike(tmp_path):
    for name, text in WRONG_UNITS.items():
        assert text != MIGRATION_TEXT, name
        (tmp_path / name).write_text(text)
    paths = [str(MIGRATION), str(EXAMPLES / "mcp_task.yaml")]
    paths += [str(tmp_path / name) for name in sorted(WRONG_UNITS)]
    lean = json.loads(_python(_VALIDATE_ALL.format(prelude="", paths=paths), cwd=EXAMPLES))
    full = json.loads(
        _python(_VALIDATE_ALL.format(prelude="import pint", paths=paths), cwd=EXAMPLES)
    )
    assert (lean["has_numpy"], full["has_numpy"]) == (False, True)
    assert lean["results"] == full["results"]
    outcomes = {Path(path).name: code for path, code, _ in lean["results"]}
    assert outcomes["migration.yaml"] == outcomes["mcp_task.yaml"] == 0
    assert all(outcomes[name] != 0 for name in WRONG_UNITS if name != "counts.yaml"), outcomes


def test_the_collector_pauses_for_imports_and_comes_back_as_it_was():
    import gc

    from stepgraph.cli._startup import frozen_imports

    assert gc.isenabled()
    try:
        with pytest.raises(ImportError), frozen_imports():
            assert not gc.isenabled()
            import stepgraph_no_such_module  # noqa: F401
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0  # what was imported: left out of later collections
        gc.disable()
        with frozen_imports():
            pass
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.unfreeze()
        gc.enable()
