"""The docs build with ``mkdocs build --strict``, and the backend tutorial's code is the template and runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial-backend.md"
TEMPLATE = ROOT / "examples" / "ferro-backend-template"
FENCE = re.compile(r"^```(\w+)(?: title=\"([^\"]+)\")?\n(.*?)^```", re.M | re.S)


def _blocks(page: Path = TUTORIAL) -> list[tuple[str, str | None, str]]:
    return [(m.group(1), m.group(2), m.group(3)) for m in FENCE.finditer(page.read_text())]


def test_the_template_plugin_is_exactly_the_tutorials_code() -> None:
    titled = {title: code for _, title, code in _blocks() if title}
    assert set(titled) == {"pyproject.toml", "src/ferro_strict/__init__.py", "src/ferro_strict/plugin.py",
                           "src/ferro_strict/_backend.py"}
    for title, code in titled.items():
        assert (TEMPLATE / title).read_text() == code, f"{title} differs from its code block in the tutorial"
    files = {p.relative_to(TEMPLATE).as_posix() for p in TEMPLATE.rglob("*") if p.is_file()
             and "__pycache__" not in p.parts and ".egg-info" not in p.as_posix()}
    assert files == set(titled), "the template holds only what the tutorial writes"


SNIPPETS = [(f"{page.stem}-{i}", code) for page in sorted((ROOT / "docs").glob("*.md"))
            for i, (lang, title, code) in enumerate(_blocks(page)) if lang == "python" and not title]


@pytest.mark.parametrize("code", [c for _, c in SNIPPETS], ids=[n for n, _ in SNIPPETS])
def test_docs_python_snippet_runs(code: str) -> None:
    """Every untitled python block of the docs runs as it is, in a fresh interpreter."""
    if "strict" in code:
        pytest.importorskip("ferro_strict", reason="the template plugin is not installed")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def test_docs_build_strict(tmp_path: Path) -> None:
    if shutil.which("mkdocs") is None and not _has_module("mkdocs"):
        pytest.skip("mkdocs is not installed (tests/requirements.txt installs it)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    matrix = (tmp_path / "site" / "capabilities" / "index.html").read_text()
    assert "<td>matmul</td>" in matrix and "f32" in matrix, "the capability matrix is generated at build time"
    front = (tmp_path / "site" / "index.html").read_text()
    for page in ("getting-started", "tutorial-backend", "capabilities"):
        assert f'href="{page}/' in front, f"the front page links to {page}"


def _has_module(name: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(name) is not None
