"""A damaged unit cache is built again, once, with one line on stderr: never wrong units.

A pickle that loads is no proof of the right registry: one of another registry loads
fine and every run then fails, blaming the task, until someone deletes the cache.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pint
import pytest

from stepgraph import _unit_cache
from stepgraph._unit_cache import CACHE_VARIABLE
from tests.conftest import EXAMPLES, ROOT
from tests.units.test_unit_cache import _assert_data_units, _build, _home


def _pickle(home: Path, converter: str) -> Path:
    """pint's pickle of one stage: "parse_file" (the definitions) or "build_cache"."""
    for header in home.rglob("*.json"):
        if (
            header.name != "manifest.json"
            and json.loads(header.read_text()).get("converter_id") == converter
        ):
            return header.with_suffix(".pickle")
    raise AssertionError(f"no {converter} pickle in {home}")


def _another_registry(home: Path, stock: Path) -> None:
    """pint's own registry (a bit without a dimension), as another pint version's cache."""
    pint.UnitRegistry(cache_folder=stock)
    shutil.copy(_pickle(stock, "parse_file"), _pickle(home, "parse_file"))


def _folder_in_place(home: Path) -> None:
    path = _pickle(home, "parse_file")
    path.unlink()
    path.mkdir()
    (path / "x").write_text("x")


def _cache_is_a_file(home: Path) -> None:
    shutil.rmtree(home)
    home.write_text("not a folder")


def _edit_definitions(home: Path) -> None:
    source = home / "definitions.txt"
    source.write_text(source.read_text().replace("bit = [information] = b", "bit = [] = b"))


DAMAGE: dict[str, Callable[[Path], Any]] = {
    "cut short": lambda home: _pickle(home, "parse_file").write_bytes(
        _pickle(home, "parse_file").read_bytes()[:100]
    ),
    "a wrong object": lambda home: _pickle(home, "parse_file").write_bytes(
        pickle.dumps({"not": "a registry"})
    ),
    "garbage that unpickles to a number": lambda home: _pickle(home, "parse_file").write_bytes(
        b"I42\n."
    ),
    "garbage that unpickles to None": lambda home: _pickle(home, "parse_file").write_bytes(b"N."),
    "the registry of another pint": lambda home: _another_registry(
        home, home.parent.parent / "stock"
    ),
    "classes of an older pint": lambda home: _pickle(home, "parse_file").write_bytes(
        b"cpint.definitions\nUnitDefinition\n."
    ),
    "a wrong registry table": lambda home: _pickle(home, "build_cache").write_bytes(
        pickle.dumps([1, 2, 3])
    ),
    "a folder in place of a pickle": _folder_in_place,
    "edited definitions": _edit_definitions,
    "no manifest": lambda home: (home / "manifest.json").unlink(),
    "a manifest that is not JSON": lambda home: (home / "manifest.json").write_bytes(b"\x00{"),
    "a file in place of the cache": _cache_is_a_file,
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_cache_is_replaced_at_once_with_one_line_on_stderr(
    tmp_path, monkeypatch, capsys, damage
):
    folder = tmp_path / "units"
    _build(folder, monkeypatch)
    home = _home(folder)
    damage(home)
    capsys.readouterr()

    _assert_data_units(_build(folder, monkeypatch))
    assert _unit_cache.last_source.startswith("cache (rebuilt: ")
    warning = capsys.readouterr().err
    assert warning.count("\n") == 1 and warning.endswith("; built it again\n")
    assert f"the unit cache {home} was damaged" in warning

    _assert_data_units(_build(folder, monkeypatch))
    assert _unit_cache.last_source == "cache"
    assert capsys.readouterr().err == ""
    assert [path.name for path in folder.iterdir()] == [home.name]  # nothing else left


def _without_root_override() -> list[str]:
    """A command prefix under which file permissions hold for this user (root: setpriv)."""
    if os.getuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root reads any file; setpriv is needed to drop that power")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


PROBE = (
    "from stepgraph import units, _unit_cache\n"
    "q = units.quantity(450, 'Mbps').to('MB/s')\n"
    "print(round(q.magnitude, 6), str(units.quantity(1, 'b').dimensionality), "
    "_unit_cache.last_source)"
)


def _probe(folder: Path, prefix: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, CACHE_VARIABLE: str(folder)}
    return subprocess.run(
        [*prefix, sys.executable, "-c", PROBE],
        env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
@pytest.mark.parametrize("target", ["a pickle", "the cache folder"])
def test_a_cache_this_user_may_not_read_is_replaced(tmp_path, monkeypatch, target):
    prefix = _without_root_override()
    secret = tmp_path / "secret"
    secret.write_text("x")
    secret.chmod(0)
    if _probe_reads(secret, prefix):
        pytest.skip("this user reads files whatever their permissions")
    folder = tmp_path / "units"
    _build(folder, monkeypatch)
    home = _home(folder)
    (_pickle(home, "parse_file") if target == "a pickle" else home).chmod(0)

    first = _probe(folder, prefix)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("56.25 [information] cache (rebuilt: PermissionError")
    assert first.stderr.count("\n") == 1 and "was damaged" in first.stderr
    again = _probe(folder, prefix)
    assert (again.stdout.strip(), again.stderr) == ("56.25 [information] cache", "")


def _probe_reads(path: Path, prefix: list[str]) -> bool:
    code = f"open({str(path)!r}).read()"
    return subprocess.run([*prefix, sys.executable, "-c", code], check=False).returncode == 0


def test_a_run_with_another_registrys_cache_verifies_and_heals_it(tmp_path, monkeypatch):
    """The reported failure: every run exited 3 ("the plan has 1 problem"), and went on so."""
    folder = tmp_path / "units"
    _build(folder, monkeypatch)
    _another_registry(folder, tmp_path / "stock")  # wherever the cache keeps its pickles
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env[CACHE_VARIABLE] = str(folder)

    def run(name: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "stepgraph", "run", str(EXAMPLES / "migration.yaml"),
                   "--journal", str(tmp_path / name)]  # fmt: skip
        return subprocess.run(
            command, env=env, cwd=ROOT, capture_output=True, text=True, check=False, timeout=120
        )

    first = run("first.jsonl")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Status: verified" in first.stdout
    assert first.stderr.count("\n") == 1 and "unit cache" in first.stderr
    second = run("second.jsonl")
    assert second.returncode == 0 and second.stderr == ""
