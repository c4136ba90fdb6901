"""The hook specification of ferro's plugins (pluggy project ``ferro``).

A plugin is a module named by an entry point in the group ``ferro.backends``;
it holds functions decorated with :data:`hookimpl`. ferro loads entry points
lazily, on the first call that needs a backend, never at ``import ferro``.
Importing a plugin module must be cheap: it must not import its array library
(CuPy, pyopencl); that waits until its backend is used.

Hooks are grouped by when they are called. Unless a hook says "first result
wins", ferro calls every implementation and gathers the results.
Implementations run in pluggy's order: the last registered plugin first,
``tryfirst=True`` before, ``trylast=True`` after.

A backend's optional ``compile`` of a fused group of elementwise ops is a method of its
:class:`~ferro.backends.Backend`, not a hook here: ``Backend.compile_fused``
(:class:`ferro.backends.contract.FusedCompiler`, ``docs/plugins.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from types import FunctionType, MethodType, ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .._core.records import OpDef
    from ..distributed._backend import ProcessGroupBackend
    from ._base import Backend

__all__ = ["hookspec", "hookimpl", "PLUGIN_API_VERSION", "PROCESS_GROUP_API_VERSION", "FerroHookSpec", "Manager"]

PROJECT = "ferro"
#: The plugin API version this ferro speaks. A plugin whose
#: ``ferro_plugin_api_version`` returns another major version is refused.
PLUGIN_API_VERSION = 1
#: The version of the process-group contract (:class:`ferro.distributed.ProcessGroupBackend`).
#: A process-group backend whose ``api_version`` has another value is refused,
#: and its plugin listed as broken, without touching the plugin's compute backends' hooks.
PROCESS_GROUP_API_VERSION = 1

hookspec = pluggy.HookspecMarker(PROJECT)
#: Decorate a plugin's hook functions with this: ``@ferro.backends.hookimpl``.
hookimpl = pluggy.HookimplMarker(PROJECT)


class FerroHookSpec:
    """Every hook a ferro plugin may implement."""

    # ------------------------------------------------------------------ #
    # Validation: called once, right after a plugin module is imported.
    # ------------------------------------------------------------------ #

    @hookspec(firstresult=True)
    def ferro_plugin_api_version(self) -> int:
        """Return the plugin API version the plugin was written against.

        Called once per plugin, straight after its module is registered, on
        that plugin alone. Every plugin must implement it. A plugin whose
        version differs from :data:`PLUGIN_API_VERSION` is unregistered and
        listed as broken with the reason; it never breaks ferro.
        """

    # ------------------------------------------------------------------ #
    # Registration: called once per plugin when the backends are loaded.
    # ------------------------------------------------------------------ #

    @hookspec
    def ferro_register_backends(self) -> list[Backend]:
        """Return the backends this plugin contributes, as :class:`~ferro.backends.Backend` instances.

        Called once per plugin when ferro first needs a backend. Constructing a
        backend must not import its array library; availability is asked
        later through :meth:`Backend.availability`. Two backends with one
        name are an error: the later plugin is listed as broken.
        """

    @hookspec
    def ferro_register_kernels(self, backend: Backend) -> dict[str, Callable[..., Any]] | None:
        """Return kernels to add to, or override in, ``backend``'s table.

        Called once per loaded backend, for every plugin, when that backend is
        first used (its table is resolved then and never again). Return a dict
        from op name to kernel, or None to leave ``backend`` alone; look at
        ``backend.name`` to decide. Kernels take and return the backend's
        native arrays (see :class:`~ferro.backends.Backend`).

        Precedence, for each op name: a kernel from this hook beats the
        backend's own; among several plugins, the first in pluggy's call order
        wins (the last registered, unless ``tryfirst`` / ``trylast`` say otherwise).
        """

    @hookspec
    def ferro_register_ops(self) -> list[OpDef] | None:
        """Return new ops, one record each (:class:`~ferro.backends.OpDef`), or None.

        Called once per plugin when ferro first needs a backend, before any device resolves its
        kernel tables, so that every backend's kernels by the new names (the backend's own, and
        those any plugin adds through :meth:`ferro_register_kernels`) are bound like those of
        ferro's own ops. An op with no kernel on a device runs its record's ``decomposition``.
        Gradients come from the record's backward formulas (``saves`` and ``grads``), and the
        conformance suite tests every op whose record carries ``tests`` (a
        ``ferro.testing.OpInfo``) on every backend. Users call the op as ``ferro.ops.<name>``.
        A name that ferro or another plugin already registered, or anything but an ``OpDef``,
        makes this plugin broken, and none of its ops is added. Adding an op walks through it.
        """

    @hookspec
    def ferro_register_process_groups(self) -> list[ProcessGroupBackend]:
        """Return the collective (process-group) backends this plugin contributes to :mod:`ferro.distributed`.

        Called once per plugin, the first time :mod:`ferro.distributed` needs
        its backends (``init_process_group``, ``is_available``, ``ferro info``),
        never at ``import ferro``. Each item is a
        :class:`~ferro.distributed.ProcessGroupBackend` whose ``name`` is what
        ``init_process_group(backend=...)`` takes and whose ``api_version``
        equals :data:`PROCESS_GROUP_API_VERSION`. Constructing one must not import
        its transport library (mpi4py, CuPy); that waits for ``availability()``
        or ``create()``. A name already taken (``mpi`` is ferro-core's own), a
        wrong type or version, or an exception here marks the plugin broken.
        """

    # ------------------------------------------------------------------ #
    # Reporting: called by ``ferro info``.
    # ------------------------------------------------------------------ #

    @hookspec
    def ferro_report_info(self) -> dict[str, str] | None:
        """Return extra lines (label to text) for ``ferro info`` to print, or None.

        Called only by ``ferro info``; may import the plugin's array library.
        """


_ABSENT = object()
_IMPL = PROJECT + "_impl"


class Manager(pluggy.PluginManager):
    """pluggy's plugin manager, reading a module plugin's names from its ``__dict__``.

    ``register`` asks :meth:`parse_hookimpl_opts` about every name in ``dir(plugin)``; pluggy's answer looks
    each one up with ``inspect.getattr_static`` (about 5 µs a name, 350 names for the first op's plugins).
    For a module, that lookup finds the value in the module's ``__dict__`` (``ModuleType`` defines no data
    descriptor of those names but ``__annotations__``, which is no function either way), so a plain function
    there, or anything that is no function, is answered here the same way; classes, instances and
    method-like values (``staticmethod``, ``classmethod``, bound methods) still go to pluggy.
    """

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        """pluggy's answer for ``plugin``'s attribute ``name``: its hookimpl options, or None."""
        if type(plugin) is ModuleType:
            value = plugin.__dict__.get(name, _ABSENT)
            if type(value) is FunctionType:
                opts = getattr(value, _IMPL, None)
                return opts if isinstance(opts, dict) else None
            if value is not _ABSENT and not isinstance(value, (staticmethod, classmethod, MethodType)):
                return None
        return super().parse_hookimpl_opts(plugin, name)
