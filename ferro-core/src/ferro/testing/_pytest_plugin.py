"""The pytest plugin of ferro: ``--ferro-backend``, the ``device`` / ``backend`` fixtures, ``ferro_backends``.

Registered through the ``pytest11`` entry point of ferro-core, so it is active
in every pytest run where ferro is installed. It costs nothing to projects that
never ask for its fixtures: ferro's plugins (and NumPy, and any array library)
are loaded only when a collected test requests ``device`` or ``backend``, or
when ``--ferro-backend`` names backends (which are checked before collection).
A project whose own ``device`` or ``backend`` fixture shadows these is left
alone.

- ``--ferro-backend=all|NAME,...`` (default ``all``; the environment variable
  ``FERRO_TEST_BACKENDS`` is read when the option is not given): the backends
  the fixtures run on. ``NAME`` may be a device string (``opencl:1``) to test
  one device other than the backend's default. A name that is not installed is
  a usage error naming the installed ones.
- ``device``: a ``ferro.device``, one test per selected backend, with ids such
  as ``cpu``, ``opencl:0``, ``cuda:0``. An unavailable backend is reported as
  skipped with its availability reason.
- ``backend``: the :class:`ferro.backends.Backend` of that device.
- ``@pytest.mark.ferro_backends("cpu", ...)``: run a test only on these backends.
- Expected failures of the conformance suite (``ferro.testing.conformance``)
  come from one file per backend (see :mod:`ferro.testing._xfails`): the
  matching tests are marked ``xfail(strict=True)`` with the file's reason.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import ferro

__all__ = ["pytest_addoption", "pytest_configure", "pytest_generate_tests", "pytest_collection_modifyitems",
           "backend", "device"]

ENV = "FERRO_TEST_BACKENDS"
#: The hidden parameter behind ``backend`` and ``device``: a backend name or a device string.
PARAM = "_ferro_device_spec"
_selection_key = pytest.StashKey[list[str]]()
_ids_key = pytest.StashKey[dict[str, str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--ferro-backend``."""
    group = parser.getgroup("ferro", "ferro backends")
    group.addoption("--ferro-backend", action="store", default=None, metavar="all|NAME,...",
                    help=f"backends (or devices, e.g. opencl:1) that ferro's `device` and `backend` fixtures run on: "
                         f"'all' installed (the default) or a comma-separated list; env {ENV}")


def pytest_configure(config: pytest.Config) -> None:
    """Declare the marker; when backends are named, check them now (a usage error, before collection)."""
    config.addinivalue_line("markers", "ferro_backends(*names): run this test only on these ferro backends")
    if _raw(config) != "all":
        _selected(config)


def _raw(config: pytest.Config) -> str:
    raw = config.getoption("--ferro-backend") or os.environ.get(ENV) or "all"
    return raw.strip() or "all"


def _selected(config: pytest.Config) -> list[str]:
    """The selected backend names / device strings (loads ferro's plugins on first call)."""
    cached = config.stash.get(_selection_key, None)
    if cached is not None:
        return cached
    import ferro
    installed = ferro.backends.installed()
    raw = _raw(config)
    if raw == "all":
        names = installed
    else:
        names = list(dict.fromkeys(n.strip() for n in raw.split(",") if n.strip()))
        source = "--ferro-backend" if config.getoption("--ferro-backend") else ENV
        unknown = [n for n in names if n.partition(":")[0] not in installed]
        if unknown:
            raise pytest.UsageError(
                f"{source}={raw}: no installed ferro backend named {', '.join(repr(n) for n in unknown)}; "
                f"installed: {', '.join(installed) or 'none'}" + _broken_note(ferro))
        bad = [n for n in names if n.partition(":")[1] and not n.partition(":")[2].isdigit()]
        if bad:
            raise pytest.UsageError(f"{source}={raw}: {', '.join(repr(n) for n in bad)} is not a backend name "
                                    f"or a device string such as 'opencl:1'")
    config.stash[_selection_key] = names
    return names


def _broken_note(ferro: Any) -> str:
    broken = ferro.backends.broken()
    return "" if not broken else "; broken plugins: " + "; ".join(f"{k}: {v}" for k, v in broken.items())


def _device_id(spec: str) -> str:
    """The test id of ``spec``: ``str`` of the device it names (``cpu``, ``opencl:0``)."""
    import ferro
    name, _, index = spec.partition(":")
    if index:
        return str(ferro.device(spec))
    b = ferro.backends.get(name)
    try:  # the default ordinal may need the library; an unavailable backend says 0
        idx = b.default_device_index() if b.availability() else 0
    except Exception:
        idx = 0
    return str(ferro.device(name, idx))


def _directly_parametrized(metafunc: pytest.Metafunc) -> set[str]:
    names: set[str] = set()
    for marker in metafunc.definition.iter_markers("parametrize"):
        argnames = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
        if isinstance(argnames, str):
            argnames = argnames.split(",")
        names.update(n.strip() for n in argnames)
    for callspec in getattr(metafunc, "_calls", ()):  # parametrized by another pytest_generate_tests
        names.update(getattr(callspec, "params", {}))
    return names


@pytest.hookimpl(trylast=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize every test that uses ferro's ``device`` or ``backend`` fixture over the selected backends."""
    if PARAM not in metafunc.fixturenames:  # no test of ours, or the project's own fixtures shadow ours
        return
    if _directly_parametrized(metafunc) & {"device", "backend"}:
        return
    specs = _selected(metafunc.config)
    marker_names: set[str] | None = None
    for marker in metafunc.definition.iter_markers("ferro_backends"):
        names = set(marker.args)
        marker_names = names if marker_names is None else marker_names & names
    if marker_names is not None:
        specs = [s for s in specs if s.partition(":")[0] in marker_names]
    if not specs:
        why = (f"runs only on ferro backends {', '.join(sorted(marker_names))}, none of them selected"
               if marker_names is not None else "no ferro backend is installed")
        metafunc.parametrize(PARAM, [pytest.param(None, marks=pytest.mark.skip(reason=why), id="no-backend")])
        return
    ids = metafunc.config.stash.setdefault(_ids_key, {})
    for s in specs:
        if s not in ids:
            ids[s] = _device_id(s)
    metafunc.parametrize(PARAM, specs, ids=[ids[s] for s in specs])


CONFORMANCE = "ferro.testing.conformance"


def _conformance_key(item: pytest.Item) -> tuple[str, str, str, str] | None:
    """``(backend, op, kind, dtype)`` of a conformance test item, or None for any other test."""
    module = getattr(getattr(item, "module", None), "__name__", "")
    callspec = getattr(item, "callspec", None)
    if not module.startswith(CONFORMANCE) or callspec is None or not callspec.params.get(PARAM):
        return None
    params = callspec.params
    info = params.get("info")
    op = getattr(info, "name", None) or params.get("op")
    if not isinstance(op, str):
        return None
    kind = getattr(item, "originalname", item.name).removeprefix("test_")
    return str(params[PARAM]).partition(":")[0], op, kind, str(params.get("dtype", "-"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the conformance tests a backend's expected-failures file names ``xfail(strict=True)``."""
    keys = [(item, _conformance_key(item)) for item in items]
    if not any(k for _, k in keys):
        return
    import ferro

    from ._xfails import load
    tables: dict[str, Any] = {}
    for item, key in keys:
        if key is None:
            continue
        name, op, kind, dtype = key
        if name not in tables:
            b = ferro.backends.get(name)
            tables[name] = load(name, type(b).__module__)
        entry = tables[name].get((op, kind, dtype))
        if entry is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"{entry.reason} ({entry.where})"))
            # an expected failure's traceback is never shown; formatting it (pytest parses the source of every
            # frame) would cost more than the suite itself
            item.repr_failure = _one_line  # type: ignore[method-assign]


def _one_line(excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
    """The failure of an expected failure in one line: the exception and the first line of its message."""
    return f"{excinfo.typename}: {str(excinfo.value).splitlines()[0] if str(excinfo.value) else ''}"


@pytest.fixture
def backend(_ferro_device_spec: str) -> ferro.backends.Backend:
    """The ferro backend under test; the test is skipped, with the reason, when it cannot run here."""
    import ferro
    b = ferro.backends.get(_ferro_device_spec.partition(":")[0])
    avail = b.availability()
    if not avail:
        pytest.skip(f"ferro backend '{b.name}' is not available: {avail.reason}")
    return b


@pytest.fixture
def device(backend: ferro.backends.Backend, _ferro_device_spec: str) -> ferro.device:
    """The device under test, a ``ferro.device``: the backend's default one unless ``--ferro-backend`` named one."""
    import ferro
    _, _, index = _ferro_device_spec.partition(":")
    idx = int(index) if index else backend.default_device_index()
    count = backend.device_count()
    if not 0 <= idx < count:
        pytest.skip(f"ferro backend '{backend.name}' has no device {idx} here ({count} device(s))")
    return ferro.device(backend.name, idx)
