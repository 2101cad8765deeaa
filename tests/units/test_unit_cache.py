"""The unit registry's disk cache: the units of a registry built in memory, never in the way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stepgraph import _unit_cache
from stepgraph._unit_cache import CACHE_VARIABLE, build_registry
from stepgraph.units import _registry

DEFINITIONS = _registry._definitions()


def _build(folder: Path | str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(CACHE_VARIABLE, str(folder))
    return build_registry(DEFINITIONS, autoconvert_offset_to_baseunit=True)


def _assert_data_units(ureg: Any) -> None:
    """The engine's own patches hold: a bit has a dimension, Mbps is megabit per second."""
    assert ureg.Quantity(450, "Mbps").to("MB/s").magnitude == pytest.approx(56.25)
    assert str(ureg.Quantity(1, "b").dimensionality) == "[information]"
    assert ureg.Quantity(1, "TB").to("Tb").magnitude == pytest.approx(8)
    assert not ureg.Quantity(1, "TB").is_compatible_with("m")
    assert ureg.Quantity(2.5, "TB").to("GB").magnitude == pytest.approx(2500)


def _home(folder: Path) -> Path:
    """The one cache folder inside `folder`."""
    [home] = folder.glob("registry-*")
    return home


def test_the_second_build_reads_what_the_first_wrote(tmp_path, monkeypatch):
    folder = tmp_path / "units"
    first = _build(folder, monkeypatch)
    assert _unit_cache.last_source == "cache (built)"
    written = {str(path): path.stat().st_mtime_ns for path in folder.rglob("*")}
    assert any(name.endswith(".pickle") for name in written)
    assert [path.name for path in folder.iterdir()] == [_home(folder).name]  # one folder

    second = _build(folder, monkeypatch)
    assert _unit_cache.last_source == "cache"
    assert {str(path): path.stat().st_mtime_ns for path in folder.rglob("*")} == written
    _assert_data_units(first)
    _assert_data_units(second)


def test_a_cached_registry_knows_every_unit_as_one_built_in_memory(tmp_path, monkeypatch):
    _build(tmp_path, monkeypatch)
    cached = _build(tmp_path, monkeypatch)
    assert _unit_cache.last_source == "cache"
    monkeypatch.setenv(CACHE_VARIABLE, "off")
    fresh = build_registry(DEFINITIONS, autoconvert_offset_to_baseunit=True)
    assert _unit_cache.last_source.startswith("memory")
    assert set(cached._units) == set(fresh._units)
    assert set(cached._prefixes) == set(fresh._prefixes)
    for name in sorted(fresh._units):
        expected = _root(fresh, name)
        got = _root(cached, name)
        assert got[1:] == expected[1:], name
        assert got[0] == pytest.approx(expected[0], rel=1e-12), name


def _root(ureg: Any, name: str) -> tuple[Any, ...]:
    """What `name` is in base units: the factor and the base units, or the error raised."""
    try:
        factor, root = ureg.get_root_units(name)
    except Exception as e:
        return (0, type(e).__name__)
    return (factor, str(root))


def test_with_the_cache_off_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # where the default folder would be
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(CACHE_VARIABLE, "off")
    _assert_data_units(build_registry(DEFINITIONS, autoconvert_offset_to_baseunit=True))
    assert _unit_cache.last_source == f"memory: {CACHE_VARIABLE} is off"
    assert list(tmp_path.iterdir()) == []


def test_by_default_the_cache_lives_in_the_users_cache_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(CACHE_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if sys.platform != "linux":
        pytest.skip("the XDG variable names the cache folder on Linux only")
    assert _unit_cache.cache_folder() == tmp_path / "stepgraph" / "units"
    _assert_data_units(build_registry(DEFINITIONS, autoconvert_offset_to_baseunit=True))
    assert _unit_cache.last_source == "cache (built)"
    assert (tmp_path / "stepgraph" / "units").stat().st_mode & 0o777 == 0o700


def test_a_folder_that_cannot_be_made_falls_back_to_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    ureg = _build(blocker / "units", monkeypatch)
    _assert_data_units(ureg)
    assert _unit_cache.last_source.startswith(f"memory: the unit cache in {blocker / 'units'}")
    assert blocker.read_text() == "not a folder"


@pytest.mark.skipif(
    not hasattr(os, "getuid") or os.getuid() == 0, reason="root may write in any folder"
)
def test_a_folder_this_user_may_not_write_in_falls_back_to_memory(tmp_path, monkeypatch):
    folder = tmp_path / "units"
    folder.mkdir(mode=0o500)
    try:
        _assert_data_units(_build(folder, monkeypatch))
        assert _unit_cache.last_source.startswith("memory: the unit cache")
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o700)


def test_a_folder_others_may_write_in_is_never_read(tmp_path, monkeypatch):
    """A pickle runs code when read: a cache that anyone could have replaced is not used."""
    folder = tmp_path / "units"
    _build(folder, monkeypatch)
    pickles = list(folder.rglob("*.pickle"))
    assert pickles
    for pickle in pickles:
        pickle.write_bytes(b"cos\nsystem\n(S'echo pwned > " + str(tmp_path).encode() + b"/x'\ntR.")
    folder.chmod(0o777)
    ureg = _build(folder, monkeypatch)
    _assert_data_units(ureg)
    assert _unit_cache.last_source == (
        f"memory: the unit cache in {folder} is unusable (PermissionError: "
        f"others may write in {folder})"
    )
    assert not (tmp_path / "x").exists()


def test_processes_building_the_cache_at_once_all_get_the_right_units(tmp_path):
    probe = (
        "from stepgraph import units, _unit_cache\n"
        "q = units.quantity(450, 'Mbps').to('MB/s')\n"
        "print(round(q.magnitude, 6), _unit_cache.last_source)"
    )
    env = {**os.environ, CACHE_VARIABLE: str(tmp_path)}
    runs = [
        subprocess.Popen([sys.executable, "-c", probe], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [run.communicate(timeout=120)[0].strip() for run in runs]
    assert all(run.returncode == 0 for run in runs)
    assert all(out.startswith("56.25 cache") for out in outputs), outputs
    again = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert again.stdout.strip() == "56.25 cache"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(("building-", "writing-"))]
