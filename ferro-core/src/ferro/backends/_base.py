"""The backend contract: what a plugin implements so ferro can run on it.

A backend owns devices of one type, maps ferro dtypes to native ones, moves
data to and from NumPy, and offers a kernel table: op name to a function on
native arrays. Kernels know nothing of autograd, promotion or broadcasting
errors: the op registry checks arguments and promotes dtypes first, so a
kernel receives inputs already cast to the op's compute dtype (Python
scalars stay scalars) and returns a native array of the declared result
dtype. :mod:`ferro.backends.contract` lists every kernel name with its typed
signature (``docs/plugins.md`` shows it as a table).

Every method not implemented here raises :class:`NotImplementedError` naming
the backend and the method, so a new backend can be grown one piece at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .._core.dtypes import DType, all_dtypes
from .._core.records import REGISTRY, get
from ._resolve import Resolution, facts_of, resolve
from .contract import ArgumentCheck

__all__ = ["Backend", "Availability"]


class Availability(NamedTuple):
    """Whether a backend can run here, and if not, why (``bool(a)`` works)."""

    available: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.available


class Backend:
    """Base class of every backend. Subclass it, then return an instance from
    the ``ferro_register_backends`` hook.

    Class attributes to set: :attr:`name` (also its device type, as in
    ``"mine:0"``) and, optionally, :attr:`description`.
    """

    #: Name of the backend; devices are spelled ``f"{name}:{index}"``.
    name: str = ""
    #: One line for ``ferro info``.
    description: str = ""
    #: The distribution that provides it (filled in by the plugin manager).
    plugin: str = ""
    #: Whether its kernel tables have every required primitive of :mod:`ferro.backends.contract`
    #: (then every op runs, by its kernel or its decomposition); the contract tests hold it to that.
    complete: bool = False
    #: The optional primitive groups of the contract its tables have whole (``"linalg"``, ``"fft"``...).
    optional_groups: frozenset[str] = frozenset()

    # -- availability and devices ------------------------------------------

    def availability(self) -> Availability:
        """Say whether the backend runs here; called lazily, may import its library."""
        return Availability(True)

    def device_count(self) -> int:
        """How many devices the backend has here (0 when unavailable)."""
        return 1

    def default_device_index(self) -> int:
        """The ordinal used when a device string has none (``"opencl"``)."""
        return 0

    def device_name(self, index: int) -> str:
        """A human-readable name of device ``index``, for ``ferro info``."""
        return f"{self.name}:{index}"

    def device_info(self, index: int) -> dict[str, str]:
        """Extra facts about device ``index`` (memory, extensions) for ``ferro info``."""
        return {}

    def dtypes(self, index: int) -> frozenset[DType]:
        """The dtypes device ``index`` supports at all."""
        return frozenset(all_dtypes)

    # -- kernels ----------------------------------------------------------

    def kernels(self, index: int) -> dict[str, Callable[..., Any]]:
        """The kernel table of device ``index``: kernel name to kernel.

        Every name must be one of :mod:`ferro.backends.contract` (checked when
        the table is handed over: an unknown name or a value that is not
        callable makes the plugin broken).

        Called once per device, when the device is first used; the result is
        merged with plugin overrides and then frozen for the hot path.
        """
        return {}

    def unsupported(self, index: int) -> dict[str, frozenset[DType]]:
        """Op name to dtypes whose kernel exists but refuses them: they are not bound (an op with a
        decomposition as its fallback runs that instead), and the capability queries say so."""
        return {}

    def refuses(self, kernel: str, dtype: DType, index: int) -> str | None:
        """Why ``kernel`` (any name of the table, raw kernels included) cannot take ``dtype`` on device
        ``index``, or None; the resolver asks it for every kernel it would use."""
        return None

    def argument_checks(self, index: int) -> Mapping[str, ArgumentCheck]:
        """Op name to the argument values its kernel on device ``index`` does not take
        (:class:`~ferro.backends.contract.ArgumentCheck`): a conv kernel without dilation, a sort that is
        not stable, a reduction over at most two dims. Refused calls run the op's decomposition, else the
        opt-in CPU fallback, else fail naming the op, the argument and the reason. Asked once per device."""
        return {}

    def view_copies(self, index: int) -> frozenset[str]:
        """The view ops (:data:`~ferro.backends.contract.VIEW_OPS`) whose kernel on device ``index``
        returns a copy rather than a view sharing memory (arrays that cannot alias). Core then keeps
        PyTorch's semantics: writes through such a view reach its base and writes to the base show in the
        view, or the write is refused naming the op and why. Asked once per device."""
        return frozenset()

    def compile_fused(self, group: Any, index: int | None = None) -> Callable[..., Any] | None:
        """Optional: a fused group of elementwise ops (:class:`ferro.backends.fusion.FusedGroup`) as one kernel
        on device ``index`` (None: the default device), or None (the default) to have it replayed step by step
        through the kernel table (:func:`ferro.backends.fusion.replay`). The returned callable takes the
        inputs' native arrays and returns the outputs' (fresh arrays of the group's shape); it may build its
        kernel on its first call, and is called again for every run of the group. See
        :class:`~ferro.backends.contract.FusedCompiler`."""
        return None

    def compile_into(self, name: str, kernel: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                     out: Any, index: int | None = None) -> Callable[..., Any] | None:
        """Optional (``ferro.compile``'s planned buffers): for a kernel call of a captured step (``args`` and
        ``out``: its arrays as captured), ``f(buffer, *args, **kwargs)`` writing the kernel's result, bitwise,
        into ``buffer`` (made by :meth:`into_buffer`) and returning it; or None (the default) for a call the
        backend does not take, which then allocates its result at every replay as eager execution does."""
        return None

    def into_buffer(self, out: Any, index: int | None = None) -> Any:
        """A buffer for results like the native array ``out`` (its shape and dtype, row-major): asked only by a
        backend whose :meth:`compile_into` takes calls."""
        raise self._missing("into_buffer")

    def compile_step(self, optimizer: Any, index: int | None = None) -> Callable[[], bool] | None:
        """Optional (``ferro.compile``'s multi-tensor optimizer steps, ``ferro._compile.passes.steps``): for an
        optimizer whose parameters are all on device ``index``, ``update()`` doing what ``optimizer.step()`` does,
        bitwise, and returning True, or writing nothing and returning False where the state is not as it expects
        (then the optimizer's own step runs); or None (the default) for an optimizer the backend does not take."""
        return None

    # -- data movement ----------------------------------------------------

    def native_dtype(self, dtype: DType) -> Any:
        """The native dtype for ``dtype``."""
        raise self._missing("native_dtype")

    def from_numpy(self, array: Any, index: int) -> Any:
        """Copy a NumPy array (already of a supported dtype) to device ``index``."""
        raise self._missing("from_numpy")

    def to_numpy(self, array: Any) -> Any:
        """Copy a native array to a NumPy array on the host."""
        raise self._missing("to_numpy")

    def from_dlpack(self, obj: Any, index: int) -> Any:
        """Import a DLPack-capable object on device ``index`` without a copy where possible."""
        return self.from_numpy(_host(obj), index)

    def to_dlpack(self, array: Any, stream: Any = None) -> Any:
        """Export ``array`` as a DLPack capsule (``Tensor.__dlpack__``)."""
        return array.__dlpack__() if stream is None else array.__dlpack__(stream=stream)

    def dlpack_device(self, array: Any) -> tuple[int, int]:
        """``(device_type, device_id)`` of ``array`` in DLPack's codes."""
        return array.__dlpack_device__()

    # -- runtime ----------------------------------------------------------

    def synchronize(self, index: int) -> None:
        """Wait for all work queued on device ``index``."""

    def name_deferred_errors(self, index: int, label: str) -> None:
        """An op is about to queue, on device ``index``, kernels that check its indices: ``label`` (the op and
        the argument, ``"index_select: argument 'index' ..."``) names it in the IndexError of a backend that
        reports out-of-range indices late (at the next synchronization), until that synchronization. By
        default nothing: a backend that raises where the error happens needs no label."""

    def manual_seed(self, seed: int, index: int) -> None:
        """Seed the random number generator of device ``index``."""
        raise self._missing("manual_seed")

    def get_rng_state(self, index: int) -> bytes:
        """The RNG state of device ``index`` as bytes."""
        raise self._missing("get_rng_state")

    def set_rng_state(self, state: bytes, index: int) -> None:
        """Restore an RNG state from :meth:`get_rng_state`."""
        raise self._missing("set_rng_state")

    def memory_stats(self, index: int) -> dict[str, int]:
        """Allocator statistics of device ``index`` (bytes); empty if unknown."""
        return {}

    # -- capability queries (implemented here, from the resolved tables) ----

    def supports(self, op: str, dtype: DType, index: int | None = None) -> bool:
        """Whether ``op`` runs on device ``index`` (default device) at input ``dtype``.

        True when the backend is available and :func:`ferro.backends.explain`
        finds a kernel (fused kernels included) or a decomposition whose parts
        run; it agrees with what really runs.
        """
        if not self.availability():
            return False
        get(op)  # a clear KeyError for a name that is no op
        return resolve(op, dtype, facts_of(self._device(index))).supported

    def capabilities(self, index: int | None = None) -> dict[str, list[str]]:
        """Op name to the names of the input dtypes it supports on device ``index``."""
        if not self.availability():
            return {}
        facts = facts_of(self._device(index))
        memo: dict[tuple[str, DType], Resolution] = {}
        return {op: [d.name for d in all_dtypes if resolve(op, d, facts, memo).supported] for op in sorted(REGISTRY)}

    def _index(self, index: int | None) -> int:
        return self.default_device_index() if index is None else index

    def _device(self, index: int | None) -> Any:
        from .._core.device import device
        dev = device(self.name, self._index(index))
        dev.backend  # binds it  # noqa: B018
        return dev

    # -- helpers ------------------------------------------------------------

    def _missing(self, what: str) -> NotImplementedError:
        return NotImplementedError(f"backend '{self.name}' ({type(self).__name__}) does not implement {what}()")

    def __repr__(self) -> str:
        return f"<ferro backend '{self.name}' ({type(self).__module__}.{type(self).__qualname__})>"


def _host(obj: Any) -> Any:
    import numpy as np
    return np.from_dlpack(obj)
