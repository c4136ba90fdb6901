"""ferro's entry-point reader lists what importlib.metadata lists, for real and made-up installs."""

from __future__ import annotations

import importlib.metadata as metadata
import sys
import zipfile
from pathlib import Path

import pytest

from ferro.backends._entry_points import _normalize, entry_points


def _listed(eps: list) -> list[tuple]:
    return [(e.name, e.value, e.group, e.dist.name, e.dist.version) for e in eps]


def _dist(root: Path, folder: str, name: str, version: str, entry_points_txt: str | None) -> None:
    d = root / folder
    d.mkdir(parents=True)
    (d / ("PKG-INFO" if folder.endswith(".egg-info") else "METADATA")).write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nName: not-a-header\n")
    if entry_points_txt is not None:
        (d / "entry_points.txt").write_text(entry_points_txt)


@pytest.mark.parametrize("group", ["ferro.backends", "console_scripts", "pytest11", "no.such.group"])
def test_installed_groups_match_importlib_metadata(group: str) -> None:
    assert _listed(entry_points(group)) == _listed(metadata.entry_points(group=group))


def test_made_up_installs_match_importlib_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    eps = "# comment\n[ferro.backends]\n x = pkg_x.plugin \n\n[other]\ny = pkg_y:obj.attr [extra]\n"
    _dist(a, "Shadowed.Pkg-1.0.dist-info", "Shadowed.Pkg", "1.0", eps)
    _dist(a, "plain-2.0.dist-info", "plain", "2.0", None)
    _dist(a, "old_style.egg-info", "old-style", "0.3", "[ferro.backends]\nz=pkg_z:mod\n")
    _dist(b, "shadowed_pkg-9.0.dist-info", "shadowed-pkg", "9.0", "[ferro.backends]\nlater = never\n")
    monkeypatch.setattr(sys, "path", [str(a), str(tmp_path / "missing"), str(b)])
    for group in ("ferro.backends", "other"):
        got = _listed(entry_points(group))
        assert got == _listed(metadata.entry_points(group=group))
    assert sorted(e.name for e in entry_points("ferro.backends")) == ["x", "z"]  # not "later": shadowed


def test_a_zip_on_sys_path_is_left_to_importlib_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped-1.0.dist-info/METADATA", "Name: zipped\nVersion: 1.0\n")
        z.writestr("zipped-1.0.dist-info/entry_points.txt", "[ferro.backends]\nzipped = zipped.plugin\n")
    monkeypatch.setattr(sys, "path", [str(archive)])
    got = entry_points("ferro.backends")
    assert _listed(got) == _listed(metadata.entry_points(group="ferro.backends"))
    assert [e.name for e in got] == ["zipped"]


def test_load_imports_the_named_object() -> None:
    (ep,) = [e for e in entry_points("ferro.backends") if e.name == "cpu"]
    assert ep.load() is __import__("ferro_cpu.plugin").plugin


@pytest.mark.parametrize("name", ["Foo.Bar", "foo__bar", "a-_.b", "A..B--c", "_x_", "plain", ""])
def test_names_normalize_as_importlib_metadata_does(name: str) -> None:
    assert _normalize(name) == metadata.Prepared.normalize(name)
