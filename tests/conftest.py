"""Shared helpers for ferro's tests (ferro.testing's pytest plugin is loaded through its entry point)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest


def run_python(code: str, env: dict[str, str] | None = None, expect_ok: bool = True) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (plugin discovery happens once per process)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("FERRO_")}
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, timeout=120)
    if expect_ok and proc.returncode != 0:
        raise AssertionError(f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def run_json(code: str, env: dict[str, str] | None = None) -> Any:
    """Run ``code``, which prints one JSON document as its last line, and decode it."""
    out = run_python(code, env).stdout.strip().splitlines()
    return json.loads(out[-1])


@pytest.fixture
def py() -> Any:
    """The subprocess runner, as a fixture."""
    return run_json
