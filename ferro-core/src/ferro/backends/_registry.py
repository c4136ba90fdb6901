"""The plugin manager, the installed backends, and binding devices to them.

Plugins are discovered lazily: the entry points of group ``ferro.backends``
are read on the first call that needs a backend, never at ``import ferro``.
Each plugin is loaded and validated alone; one that fails to import, has a
bad hook signature, returns the wrong API version, or raises in a hook is
unregistered, recorded in :func:`broken` with its error, and warned about
once. Nothing it does can break ferro or the other plugins.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._core.records import REGISTRY, OpDef, register
from ..errors import BackendNotFoundError, BackendUnavailableError, ShapeError
from .contract import validate_table

if TYPE_CHECKING:
    import pluggy

    from .._core.device import device
    from ._base import Backend

__all__ = ["load", "backends", "broken", "register_plugin", "bind_device", "reset", "FerroPluginWarning"]

ENTRY_POINT_GROUP = "ferro.backends"


class FerroPluginWarning(UserWarning):
    """Warned once for each plugin that is broken and was skipped."""


class _State:
    def __init__(self) -> None:
        self.pm: pluggy.PluginManager | None = None
        self.loaded = False
        self.backends: dict[str, Backend] = {}
        self.broken: dict[str, str] = {}
        self.disabled: list[str] = []
        self.plugins: dict[str, str] = {}  # plugin name -> distribution and version
        self.overrides: dict[str, dict[str, Callable[..., Any]]] = {}  # backend -> kernels from other plugins
        self.lock = threading.RLock()


_state = _State()


def _manager() -> pluggy.PluginManager:
    if _state.pm is None:
        import pluggy

        from ._hookspec import PROJECT, FerroHookSpec
        pm = pluggy.PluginManager(PROJECT)
        pm.add_hookspecs(FerroHookSpec)
        _state.pm = pm
    return _state.pm


def _disabled_names() -> set[str]:
    raw = os.environ.get("FERRO_DISABLE_PLUGINS", "")
    return {n.strip() for n in raw.split(",") if n.strip()}


def _mark_broken(name: str, error: str) -> None:
    for op_name in [n for n, op in REGISTRY.items() if op.plugin == name]:
        del REGISTRY[op_name]
    pm = _state.pm
    if pm is not None and pm.get_plugin(name) is not None:
        pm.unregister(name=name)
    for bname, b in list(_state.backends.items()):
        if b.plugin == name:
            del _state.backends[bname]
    if name not in _state.broken:
        _state.broken[name] = error
        warnings.warn(f"ferro plugin '{name}' is broken and was skipped: {error}", FerroPluginWarning, stacklevel=3)


def _impl_of(hook_name: str, plugin: Any) -> Callable[..., Any] | None:
    hook = getattr(_manager().hook, hook_name)
    for impl in hook.get_hookimpls():
        if impl.plugin is plugin:
            return impl.function
    return None


def register_plugin(plugin: Any, name: str, dist: str = "") -> bool:
    """Register a plugin object (a module or an instance) under ``name``.

    This is what entry-point discovery does for each plugin; tests and
    embedders may call it directly. Returns False, and records the plugin as
    broken, when it fails validation.
    """
    from ._hookspec import PLUGIN_API_VERSION
    with _state.lock:
        pm = _manager()
        if name in _disabled_names():
            if name not in _state.disabled:
                _state.disabled.append(name)
            return False
        if pm.get_plugin(name) is not None or pm.is_registered(plugin):
            # Refuse only the newcomer: the plugin already holding the name keeps working.
            warnings.warn(f"ferro plugin '{name}' was not registered: that name or plugin is already registered",
                          FerroPluginWarning, stacklevel=2)
            return False
        try:
            pm.register(plugin, name=name)
        except Exception as e:  # pluggy.PluginValidationError and friends
            _mark_broken(name, f"{type(e).__name__}: {e}")
            return False
        _state.plugins[name] = dist
        version_fn = _impl_of("ferro_plugin_api_version", plugin)
        if version_fn is None:
            _mark_broken(name, "it does not implement the required hook ferro_plugin_api_version()")
            return False
        try:
            version = version_fn()
        except Exception as e:
            _mark_broken(name, f"ferro_plugin_api_version() raised {type(e).__name__}: {e}")
            return False
        if version != PLUGIN_API_VERSION:
            _mark_broken(name, f"it speaks plugin API version {version!r}, this ferro speaks {PLUGIN_API_VERSION}")
            return False
        register_fn = _impl_of("ferro_register_backends", plugin)
        if register_fn is not None:
            _add_backends(name, dist, register_fn)
        ops_fn = _impl_of("ferro_register_ops", plugin)
        if ops_fn is not None and name not in _state.broken:
            _add_ops(name, ops_fn)
        return name not in _state.broken


def _add_backends(name: str, dist: str, register_fn: Callable[..., Any]) -> None:
    from ._base import Backend
    try:
        result = register_fn() or []
    except Exception as e:
        _mark_broken(name, f"ferro_register_backends() raised {type(e).__name__}: {e}")
        return
    for b in result:
        if not isinstance(b, Backend) or not b.name:
            _mark_broken(name, f"ferro_register_backends() returned {b!r}, not a named ferro.backends.Backend")
            return
        if b.name in _state.backends:
            _mark_broken(name, f"backend name '{b.name}' is already taken by plugin '{_state.backends[b.name].plugin}'")
            return
    for b in result:
        b.plugin = name
        _state.backends[b.name] = b


def _add_ops(name: str, ops_fn: Callable[..., Any]) -> None:
    """Register the op records a plugin contributes: all of them, or none and the plugin is broken."""
    try:
        result = list(ops_fn() or [])
    except Exception as e:
        _mark_broken(name, f"ferro_register_ops() raised {type(e).__name__}: {e}")
        return
    for op in result:
        if not isinstance(op, OpDef):
            _mark_broken(name, f"ferro_register_ops() returned {op!r}, not a ferro.backends.OpDef")
            return
        held = REGISTRY.get(op.name)
        if held is not None and held.plugin != name:  # (its own ops, from an earlier load, it may replace)
            owner = f"plugin '{held.plugin}'" if held.plugin else "ferro"
            _mark_broken(name, f"ferro_register_ops(): op '{op.name}' is already registered by {owner}")
            return
    for op in result:
        REGISTRY.pop(op.name, None)
        op.plugin = name
        register(op)


def load() -> None:
    """Discover and register every installed plugin (once; cheap afterwards)."""
    if _state.loaded:
        return
    with _state.lock:
        if _state.loaded:
            return
        from importlib.metadata import entry_points
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if _manager().get_plugin(ep.name) is not None or ep.name in _state.broken:
                continue
            if ep.name in _disabled_names():
                _state.disabled.append(ep.name)
                continue
            dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist else ""
            try:
                module = ep.load()
            except Exception as e:
                _mark_broken(ep.name, f"importing {ep.value} failed: {type(e).__name__}: {e}")
                continue
            register_plugin(module, ep.name, dist)
        _state.loaded = True


def backends() -> dict[str, Backend]:
    """Every installed, validated backend by name (available or not)."""
    load()
    return dict(_state.backends)


def broken() -> dict[str, str]:
    """Plugins that failed to load or validate, with their errors."""
    load()
    return dict(_state.broken)


def get_backend(name: str) -> Backend:
    """The backend called ``name``; :class:`BackendNotFoundError` if none is installed."""
    load()
    b = _state.backends.get(name)
    if b is None:
        raise BackendNotFoundError(name, sorted(_state.backends), _state.broken)
    return b


def _overrides(backend: Backend) -> dict[str, Callable[..., Any]]:
    """Kernels other plugins contribute to ``backend``, by the hook's precedence."""
    pm = _manager()
    merged: dict[str, Callable[..., Any]] = {}
    # get_hookimpls() lists implementations in reverse call order: applying
    # them in list order lets the first in call order win.
    for impl in pm.hook.ferro_register_kernels.get_hookimpls():
        plugin_name = pm.get_name(impl.plugin)
        try:
            result = impl.function(backend=backend)
        except Exception as e:
            _mark_broken(plugin_name or "?", f"ferro_register_kernels() raised {type(e).__name__}: {e}")
            continue
        if result:
            merged.update(result)
    return merged


def bind_device(dev: device) -> None:
    """Resolve ``dev`` to its backend and freeze its kernel tables (once per device)."""
    if dev._backend is not None:
        return
    with _state.lock:
        if dev._backend is not None:
            return
        backend = get_backend(dev.type)
        avail = backend.availability()
        if not avail:
            raise BackendUnavailableError(backend.name, avail.reason)
        count = backend.device_count()
        if not 0 <= dev.index < count:
            raise ShapeError(f"device '{dev}' does not exist: backend '{backend.name}' has {count} device(s)"
                             + (f" ({', '.join(f'{backend.name}:{i}' for i in range(count))})" if count else ""))
        from .._core.records import bind_tables
        kernels = dict(backend.kernels(dev.index))
        problems = validate_table(kernels)
        if problems:  # the backend's own table breaks the contract: its plugin is broken, not a later op
            _mark_broken(backend.plugin, f"backend '{backend.name}': kernels() {'; '.join(problems)}")
            raise BackendUnavailableError(backend.name, f"its plugin '{backend.plugin}' is broken: {problems[0]}")
        if backend.name not in _state.overrides:  # the hook runs once per backend, not per device
            _state.overrides[backend.name] = _overrides(backend)
        kernels.update(_state.overrides[backend.name])
        dtypes = backend.dtypes(dev.index)
        dev._ops = bind_tables(kernels, dtypes, backend.unsupported(dev.index))
        dev._kernels = kernels
        dev._dtypes = dtypes
        backend.manual_seed(_seed[0] or 0, dev.index)  # the last manual seed applies to devices bound later
        dev._backend = backend


#: The last seed given to ``ferro.manual_seed`` (None: never called); kept across :func:`reset`.
_seed: list[int | None] = [None]


def seed_all(seed: int) -> None:
    """Seed the generators of every bound device, and of devices bound later."""
    _seed[0] = seed
    for dev in bound_devices():
        dev._backend.manual_seed(seed, dev.index)


def last_seed() -> int | None:
    """The last seed given to :func:`seed_all` (None when never called)."""
    return _seed[0]


def set_last_seed(seed: int | None) -> None:
    """Set what :func:`last_seed` returns without seeding anything (restoring a saved RNG state)."""
    _seed[0] = seed


def bound_devices() -> list[device]:
    """Devices already in use in this process."""
    from .._core.device import device
    return [d for d in device._interned.values() if d._backend is not None]


def reset() -> None:
    """Forget every plugin and binding (for tests of discovery)."""
    from .._core.device import device
    with _state.lock:
        new = _State()
        _state.__dict__.update(new.__dict__)
        for d in device._interned.values():
            d._backend = d._kernels = d._ops = None
