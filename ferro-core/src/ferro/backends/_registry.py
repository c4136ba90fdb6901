"""The plugin manager, the installed backends, and binding devices to them.

Plugins are discovered lazily: the entry points of group ``ferro.backends``
are read on the first call that needs a backend, never at ``import ferro``.
Each plugin is loaded and validated alone; one that fails to import, has a
bad hook signature, returns the wrong API version, raises in a hook or in its
backend's ``availability()`` / ``kernels()`` (any exception, ``SystemExit``
and ``GeneratorExit`` included; only ``KeyboardInterrupt`` goes through), or
hands over something malformed (a kernel table that is not a dict of known
kernel names to callables, a backend that is not a named
:class:`~ferro.backends.Backend`) is unregistered, recorded in :func:`broken`
with its error, and warned about once. Nothing it does can break ferro or the
other plugins: what it handed over is checked when it is handed over, so the
error names the plugin instead of surfacing later in somebody's op.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._core.collector import building
from .._core.modes import bind_fast
from .._core.records import REGISTRY, OpDef, register
from ..errors import BackendNotFoundError, BackendUnavailableError, DeviceError
from ._base import Availability
from ._entry_points import entry_points
from .contract import KERNELS, check_argument_checks, check_view_copies, validate_table

if TYPE_CHECKING:
    import pluggy

    from .._core.device import device
    from ._base import Backend

__all__ = ["load", "backends", "broken", "register_plugin", "bind_device", "reset", "FerroPluginWarning"]

ENTRY_POINT_GROUP = "ferro.backends"


class FerroPluginWarning(UserWarning):
    """Warned once for each plugin that is broken and was skipped."""


#: Kernels core calls by name that are neither an op's kernel in the registry nor an op's fused pair
#: (``<op>_forward`` / ``<op>_backward``): creation, random, in-place writes, scatter, linear algebra, fused
#: optimizers.
def _failure(what: str, e: BaseException) -> str:
    return f"{what} raised {type(e).__name__}: {e}"


class _State:
    def __init__(self) -> None:
        self.pm: pluggy.PluginManager | None = None
        self.loaded = False
        self.backends: dict[str, Backend] = {}
        self.broken: dict[str, str] = {}
        self.disabled: list[str] = []
        self.plugins: dict[str, str] = {}  # plugin name -> distribution and version
        self.overrides: dict[str, dict[str, Callable[..., Any]]] = {}  # backend -> kernels from other plugins
        #: plugin -> (distribution, its ferro_register_backends, the backend names it declares): not called yet
        self.deferred: dict[str, tuple[str, Callable[..., Any], tuple[str, ...]]] = {}
        self.lock = threading.RLock()


_state = _State()


def _manager() -> pluggy.PluginManager:
    if _state.pm is None:
        from ._hookspec import PROJECT, FerroHookSpec, Manager
        pm = Manager(PROJECT)
        pm.add_hookspecs(FerroHookSpec)
        _state.pm = pm
    return _state.pm


def _disabled_names() -> set[str]:
    raw = os.environ.get("FERRO_DISABLE_PLUGINS", "")
    return {n.strip() for n in raw.split(",") if n.strip()}


def _mark_broken(name: str, error: str) -> None:
    _state.deferred.pop(name, None)
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
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # pluggy.PluginValidationError and friends
            _mark_broken(name, f"{type(e).__name__}: {e}")
            return False
        _state.plugins[name] = dist
        version_fn = _impl_of("ferro_plugin_api_version", plugin)
        if version_fn is None:
            _mark_broken(name, "it does not implement the required hook ferro_plugin_api_version()")
            return False
        try:
            version = version_fn()
        except KeyboardInterrupt:
            raise
        except BaseException as e:
            _mark_broken(name, _failure("ferro_plugin_api_version()", e))
            return False
        if type(version) is not int or version != PLUGIN_API_VERSION:
            _mark_broken(name, f"it speaks plugin API version {version!r}, this ferro speaks {PLUGIN_API_VERSION}")
            return False
        register_fn = _impl_of("ferro_register_backends", plugin)
        if register_fn is not None:
            names = _declared(register_fn)
            if names is not None and not any(n in _state.backends or _holder(n) for n in names):
                _state.deferred[name] = (dist, register_fn, names)
            else:
                _add_backends(name, dist, register_fn)
        ops_fn = _impl_of("ferro_register_ops", plugin)
        if ops_fn is not None and name not in _state.broken:
            _add_ops(name, ops_fn)
        return name not in _state.broken


#: The attribute of a plugin's ``ferro_register_backends`` that declares the names of the backends it returns
#: (``backend_plugin(..., names=...)``): ferro calls the hook, which imports the backends' modules, only when
#: one of those names is asked for or every backend is listed.
DECLARED = "ferro_backend_names"


def _declared(register_fn: Callable[..., Any]) -> tuple[str, ...] | None:
    names = getattr(register_fn, DECLARED, None)
    if type(names) is tuple and names and all(type(n) is str and n for n in names):
        return names
    return None


def _holder(backend: str) -> str | None:
    """The deferred plugin that declares ``backend``, if any."""
    return next((p for p, (_, _, names) in _state.deferred.items() if backend in names), None)


def _realize(plugins: list[str]) -> None:
    """Call the deferred ``ferro_register_backends`` of ``plugins``, keeping the backends in plugin order."""
    added = False
    for name in plugins:
        entry = _state.deferred.pop(name, None)
        if entry is not None:
            _add_backends(name, entry[0], entry[1])
            added = True
    if added:  # (as if every plugin's backends had been added when it was registered)
        order = {p: i for i, p in enumerate(_state.plugins)}
        ordered = sorted(_state.backends.items(), key=lambda item: order.get(item[1].plugin, len(order)))
        _state.backends.clear()
        _state.backends.update(ordered)


def _add_backends(name: str, dist: str, register_fn: Callable[..., Any]) -> None:
    from ._base import Backend
    try:
        result = register_fn()
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        _mark_broken(name, _failure("ferro_register_backends()", e))
        return
    if result is None:
        return
    if not isinstance(result, (list, tuple)):
        _mark_broken(name, f"ferro_register_backends() returned {_short(result)}, not a list of backends")
        return
    for b in result:
        if not isinstance(b, Backend) or not isinstance(b.name, str) or not b.name or ":" in b.name:
            _mark_broken(name, f"ferro_register_backends() returned {_short(b)}, not a named ferro.backends.Backend")
            return
        holder = _holder(b.name)
        if holder is not None:  # a plugin registered earlier declared that name: it takes it first
            _realize([holder])
        if b.name in _state.backends:
            _mark_broken(name, f"backend name '{b.name}' is already taken by plugin '{_state.backends[b.name].plugin}'")
            return
    if len({b.name for b in result}) < len(result):
        _mark_broken(name, f"ferro_register_backends() returned two backends named alike: {[b.name for b in result]}")
        return
    for b in result:
        b.plugin = name
        _guard_queries(b)
        _state.backends[b.name] = b


def _add_ops(name: str, ops_fn: Callable[..., Any]) -> None:
    """Register the op records a plugin contributes: all of them, or none and the plugin is broken."""
    try:
        result = list(ops_fn() or [])
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        _mark_broken(name, _failure("ferro_register_ops()", e))
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


def _short(obj: Any) -> str:
    text = repr(obj)
    return f"{type(obj).__name__} {text if len(text) <= 80 else text[:77] + '...'}"


def _valid_availability(a: Any) -> str | None:
    return None if isinstance(a, Availability) else "not a ferro.backends.Availability"


def _valid_count(n: Any) -> str | None:
    ok = hasattr(n, "__index__") and not isinstance(n, bool) and n.__index__() >= 0  # NumPy integers too
    return None if ok else "not an int >= 0"


#: Backend methods that callers everywhere (``ferro info``, ``available()``, ``supports``, ``ferro.cuda``...)
#: expect never to raise: method -> (what its result must be, what a broken backend answers).
_GUARDED: dict[str, tuple[Callable[[Any], str | None], Callable[[str], Any]]] = {
    "availability": (_valid_availability, lambda reason: Availability(False, reason)),
    "device_count": (_valid_count, lambda reason: 0),
}


def _guard_queries(b: Backend) -> None:
    """Make the methods in :data:`_GUARDED` safe for every caller.

    A backend whose method raises or returns something malformed has its
    plugin marked broken once, and from then on answers as an unavailable
    backend (``Availability(False, reason)``, 0 devices) instead of raising
    into ferro info, ``available()`` or somebody's op.
    """
    failed: list[str] = []  # the error, shared by the guarded methods of this backend
    for method, (valid, fallback) in _GUARDED.items():
        own = getattr(b, method)

        def guarded(*args: Any, own: Any = own, method: str = method, valid: Any = valid,
                    fallback: Any = fallback) -> Any:
            if failed:
                return fallback(failed[0])
            try:
                result = own(*args)
            except KeyboardInterrupt:
                raise
            except BaseException as e:
                error = _failure(f"backend '{b.name}': {method}()", e)
            else:
                problem = valid(result)
                if problem is None:
                    return result
                error = f"backend '{b.name}': {method}() returned {_short(result)}, {problem}"
            with _state.lock:
                _mark_broken(b.plugin, error)
            failed.append(f"its plugin '{b.plugin}' is broken: {error}")
            return fallback(failed[0])
        guarded.__doc__ = own.__doc__
        setattr(b, method, guarded)


def load() -> None:
    """Discover and register every installed plugin (once; cheap afterwards).

    A plugin whose ``ferro_register_backends`` declares the names of its backends (:data:`DECLARED`) has it
    called when one of them is first asked for (:func:`get_backend`), or every backend is listed
    (:func:`backends`, :func:`broken`): a cpu program does not import the other backends' modules.
    """
    if _state.loaded:
        return
    with _state.lock, building("plugins"):  # (NumPy's import and the plugins' objects: nothing to collect)
        if _state.loaded:
            return
        for ep in entry_points(ENTRY_POINT_GROUP):
            if _manager().get_plugin(ep.name) is not None or ep.name in _state.broken:
                continue
            if ep.name in _disabled_names():
                _state.disabled.append(ep.name)
                continue
            dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist else ""
            try:
                module = ep.load()
            except KeyboardInterrupt:
                raise
            except BaseException as e:  # SystemExit or GeneratorExit at import must not end the user's process
                _mark_broken(ep.name, f"importing {ep.value} failed: {type(e).__name__}: {e}")
                continue
            register_plugin(module, ep.name, dist)
        _state.loaded = True


def _load_all() -> None:
    load()
    if _state.deferred:
        with _state.lock:
            _realize(list(_state.deferred))


def backends() -> dict[str, Backend]:
    """Every installed, validated backend by name (available or not)."""
    _load_all()
    return dict(_state.backends)


def broken() -> dict[str, str]:
    """Plugins that failed to load or validate, with their errors."""
    _load_all()
    return dict(_state.broken)


def get_backend(name: str) -> Backend:
    """The backend called ``name``; :class:`BackendNotFoundError` if none is installed."""
    load()
    b = _state.backends.get(name)
    if b is None and _state.deferred:
        with _state.lock:
            holder = _holder(name)
            if holder is not None:
                _realize([holder])
            b = _state.backends.get(name)
        if b is None:  # (a deferred plugin may hand over backends it did not declare)
            _load_all()
            b = _state.backends.get(name)
    if b is None:
        raise BackendNotFoundError(name, sorted(_state.backends), _state.broken)
    return b


def _table_error(table: Any, known: frozenset[str] | set[str] | None) -> str | None:
    """What is wrong with a kernel table a plugin handed over, or None.

    A table is a dict of kernel name to callable; with ``known``, every name
    must be one of them (a misspelt name would otherwise be silently unused).
    """
    if not isinstance(table, Mapping):
        return f"returned {_short(table)}, not a dict of kernel name to kernel"
    bad = [k for k in table if not isinstance(k, str) or (known is not None and k not in known)]
    if bad:
        shown = ", ".join(repr(k) for k in bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        return f"returned unknown kernel name(s) {shown}: neither an op's kernel nor a kernel ferro calls"
    for k, v in table.items():
        if not callable(v):
            return f"returned {_short(v)} for kernel '{k}', not a callable"
    return None


def _overrides(backend: Backend, own: Mapping[str, Any]) -> dict[str, Callable[..., Any]]:
    """Kernels other plugins contribute to ``backend``, whose own table is ``own``, by the hook's precedence."""
    pm = _manager()
    merged: dict[str, Callable[..., Any]] = {}
    known = _Known(own)  # the valid names (:func:`_known_kernels`)
    # get_hookimpls() lists implementations in reverse call order: applying
    # them in list order lets the first in call order win.
    for impl in list(pm.hook.ferro_register_kernels.get_hookimpls()):
        plugin_name = pm.get_name(impl.plugin) or "?"
        what = f"ferro_register_kernels(backend='{backend.name}')"
        try:
            result = impl.function(backend=backend)
        except KeyboardInterrupt:
            raise
        except BaseException as e:
            _mark_broken(plugin_name, _failure(what, e))
            continue
        if result is None:
            continue
        error = _table_error(result, known)
        if error is not None:
            _mark_broken(plugin_name, f"{what} {error}")
            continue
        merged.update(result)
    return merged


def _known_kernels(own: Mapping[str, Any]) -> set[str]:
    """The kernel names a plugin may contribute to a backend whose own table is ``own``: the ops' kernels,
    an op's fused pair (``softmax`` / ``softmax_backward``, ``conv2d_forward`` / ``conv2d_backward``, see
    ``ferro/_ops/fused.py``), every kernel of the contract (``ferro.backends.contract.KERNELS``), and whatever
    the backend itself has."""
    names = set(KERNELS).union(own)
    for name, op in REGISTRY.items():
        names.update(op.kernels)
        names.update((f"{name}_forward", f"{name}_backward"))
    return names


class _Known:
    """``name in _Known(own)`` is ``name in _known_kernels(own)``, without gathering the ~1500 names (0.3 ms)
    for a name found directly: in the contract, in ``own``, an op's own kernel, or an op's fused pair."""

    def __init__(self, own: Mapping[str, Any]) -> None:
        self.own = own
        self.all: set[str] | None = None

    def __contains__(self, name: object) -> bool:
        if name in KERNELS or name in self.own:
            return True
        if isinstance(name, str):
            op = REGISTRY.get(name)
            if op is not None and name in op.kernels:
                return True
            for suffix in ("_forward", "_backward"):
                if name.endswith(suffix) and name[:-len(suffix)] in REGISTRY:
                    return True
        if self.all is None:
            self.all = _known_kernels(self.own)
        return name in self.all


def _from_backend(backend: Backend, what: str, call: Callable[[], Any]) -> Any:
    """``call()``, a method of ``backend``; if it raises, its plugin is marked broken and the device refused."""
    try:
        return call()
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        error = _failure(f"backend '{backend.name}': {what}", e)
        _mark_broken(backend.plugin, error)
        raise BackendUnavailableError(backend.name, f"its plugin '{backend.plugin}' is broken: {error}") from None


def _refuse(backend: Backend, error: str) -> BackendUnavailableError:
    _mark_broken(backend.plugin, error)
    return BackendUnavailableError(backend.name, f"its plugin '{backend.plugin}' is broken: {error}")


def report_info() -> dict[str, str]:
    """What the plugins' ``ferro_report_info`` hooks add to ``ferro info``; a failing hook shows its error."""
    pm = _state.pm
    extra: dict[str, str] = {}
    if pm is None:
        return extra
    for impl in list(pm.hook.ferro_report_info.get_hookimpls()):
        name = pm.get_name(impl.plugin) or "?"
        try:
            result = impl.function()
        except KeyboardInterrupt:
            raise
        except BaseException as e:
            extra[name] = _failure("ferro_report_info()", e)
            continue
        if isinstance(result, Mapping):
            extra.update({str(k): str(v) for k, v in result.items()})
        elif result is not None:
            extra[name] = f"ferro_report_info() returned {_short(result)}, not a dict"
    return extra


def bind_device(dev: device) -> None:
    """Resolve ``dev`` to its backend and freeze its kernel tables (once per device)."""
    if dev._backend is not None:
        return
    with _state.lock, building("device"):  # (the kernel tables live as long as the process)
        if dev._backend is not None:
            return
        backend = get_backend(dev.type)
        avail = backend.availability()
        if not avail:
            raise BackendUnavailableError(backend.name, avail.reason)
        count = backend.device_count()
        if backend.name not in _state.backends:  # its device_count() failed just now
            raise BackendUnavailableError(backend.name, f"its plugin '{backend.plugin}' is broken: "
                                          f"{_state.broken.get(backend.plugin, '')}")
        if not 0 <= dev.index < count:
            raise DeviceError(f"device '{dev.type}:{dev.index}' does not exist: "
                              f"backend '{backend.name}' has {count} device(s)"
                              + (f" ({', '.join(f'{backend.name}:{i}' for i in range(count))})" if count else ""))
        from .._core.records import bind_tables
        own = _from_backend(backend, f"kernels({dev.index})", lambda: backend.kernels(dev.index))
        error = _table_error(own, None)
        if error is None and (problems := validate_table(own)):  # the contract: known names, fused pairs
            error = "; ".join(problems)
        if error is not None:
            raise _refuse(backend, f"backend '{backend.name}': kernels({dev.index}) {error}")
        kernels = dict(own)
        if backend.name not in _state.overrides:  # the hook runs once per backend, not per device
            _state.overrides[backend.name] = _overrides(backend, kernels)
            if backend.name not in _state.backends:  # its own plugin's kernel hook was broken
                raise BackendUnavailableError(backend.name, f"its plugin '{backend.plugin}' is broken: "
                                              f"{_state.broken.get(backend.plugin, '')}")
        kernels.update(_state.overrides[backend.name])
        dtypes = _from_backend(backend, f"dtypes({dev.index})", lambda: backend.dtypes(dev.index))
        unsupported = _from_backend(backend, f"unsupported({dev.index})", lambda: backend.unsupported(dev.index))
        copies = _from_backend(backend, f"view_copies({dev.index})", lambda: backend.view_copies(dev.index))
        checks = _from_backend(backend, f"argument_checks({dev.index})", lambda: backend.argument_checks(dev.index))
        if problems := check_view_copies(copies) + check_argument_checks(checks):
            raise _refuse(backend, f"backend '{backend.name}': " + "; ".join(problems))
        ops = bind_tables(kernels, dtypes, unsupported)
        # ops whose kernel refuses some arguments leave the fast path: dispatch's slow path asks the check
        dev._checked = {n: (*ops.pop(n), c) for n, c in checks.items() if n in ops}
        dev._copies = frozenset(copies)
        dev._ops = ops
        dev._kernels = kernels
        dev._dtypes = dtypes
        backend.manual_seed(_seed[0] or 0, dev.index)  # the last manual seed applies to devices bound later
        dev._backend = backend
        bind_fast(dev)


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


#: the device names whose device cannot change (an explicit index, or a backend whose default index is always
#: 0), filled by ``current_device``; kept here so that :func:`reset` forgets them with the backends
fixed_devices: dict[str | None, Any] = {}


def reset() -> None:
    """Forget every plugin and binding (for tests of discovery)."""
    from .._core.device import device
    fixed_devices.clear()  # (a backend of the same name may come back with another default device)
    with _state.lock:
        new = _State()
        _state.__dict__.update(new.__dict__)
        for d in device._interned.values():
            d._backend = d._kernels = d._ops = d._fast = None
            d._checked, d._copies = {}, frozenset()
