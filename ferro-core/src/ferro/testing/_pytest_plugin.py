"""The pytest plugin of ferro: ``--ferro-backend`` and the ``device`` / ``backend`` fixtures.

Registered through the ``pytest11`` entry point of ferro-core, so it is active
in every pytest run where ferro is installed; it costs nothing to projects
that never ask for its fixtures (backends load only when a test needs one).
"""

from __future__ import annotations

import os
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ferro")
    group.addoption("--ferro-backend", action="store", default=None, metavar="all|NAME,...",
                    help="backends whose default device the `device` fixture runs on (default: all installed; "
                         "env FERRO_TEST_BACKENDS)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ferro_backends(*names): run this test only on these backends")
    raw = config.getoption("--ferro-backend") or os.environ.get("FERRO_TEST_BACKENDS")
    if raw and raw.strip() != "all":
        _selected(config)  # a name that is not installed is a usage error, before collection


def _selected(config: pytest.Config) -> list[str]:
    import ferro
    raw = config.getoption("--ferro-backend") or os.environ.get("FERRO_TEST_BACKENDS") or "all"
    installed = ferro.backends.installed()
    if raw.strip() == "all":
        return installed
    names = [n.strip() for n in raw.split(",") if n.strip()]
    unknown = [n for n in names if n not in installed]
    if unknown:
        raise pytest.UsageError(f"--ferro-backend: no installed backend named {', '.join(unknown)}; installed: "
                                f"{', '.join(installed) or 'none'}" + _broken_note())
    return names


def _broken_note() -> str:
    import ferro
    broken = ferro.backends.broken()
    return "" if not broken else "; broken plugins: " + "; ".join(f"{k}: {v}" for k, v in broken.items())


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" not in metafunc.fixturenames and "backend" not in metafunc.fixturenames:
        return
    names = _selected(metafunc.config)
    marker = metafunc.definition.get_closest_marker("ferro_backends")
    if marker is not None:
        names = [n for n in names if n in marker.args]
    metafunc.parametrize("_ferro_backend_name", names, ids=names)


@pytest.fixture
def backend(_ferro_backend_name: str) -> Any:
    """The ferro Backend under test; skips with its reason when it cannot run here."""
    import ferro
    b = ferro.backends.get(_ferro_backend_name)
    avail = b.availability()
    if not avail:
        pytest.skip(f"backend '{_ferro_backend_name}' unavailable: {avail.reason}")
    return b


@pytest.fixture
def device(backend: Any) -> Any:
    """The default device of the backend under test, as a ``ferro.device``."""
    import ferro
    return ferro.device(backend.name, backend.default_device_index())
