"""The exceptions ferro raises, each naming what was wrong and what to do.

Every error type here subclasses the built-in exception a Python user would
catch for the same problem (``NotImplementedError``, ``RuntimeError``,
``TypeError``, ``ValueError``), so ``except NotImplementedError`` keeps working;
where PyTorch raises another built-in for the same problem (``RuntimeError``
for shapes and dtypes), the error subclasses that one too. ``docs/errors.md``
lists where ferro deliberately differs from PyTorch.
"""

from __future__ import annotations

__all__ = [
    "FerroError",
    "UnsupportedOperationError",
    "UnsupportedLayoutError",
    "BackendUnavailableError",
    "BackendNotFoundError",
    "DeviceMismatchError",
    "DeviceError",
    "ShapeError",
    "DTypeError",
    "PluginError",
    "SerializationError",
    "LinAlgError",
    "OutOfMemoryError",
]


class FerroError(Exception):
    """Base class of every error raised by ferro itself."""


class UnsupportedOperationError(FerroError, NotImplementedError):
    """A backend has no kernel for an op at a dtype on a device.

    The message names the op, dtype, backend and device, lists the installed
    backends that do have the op, and says how to opt in to the CPU fallback.
    """

    def __init__(self, op: str, dtype: object, backend: str, device: object,
                 *, reason: str | None = None, others: list[str] | None = None) -> None:
        self.op, self.dtype, self.backend, self.device = op, dtype, backend, device
        self.reason = reason
        self.others = others or []
        msg = f"op '{op}' is not supported for dtype {dtype} by backend '{backend}' on device '{device}'"
        if reason:
            msg += f" ({reason})"
        msg += ". "
        if self.others:
            msg += f"Installed backends that have it: {', '.join(self.others)}. "
        else:
            msg += "No other installed backend has it. "
        msg += ("Move the tensors with .to('cpu'), or set FERRO_FALLBACK=cpu to run "
                "missing kernels on the CPU backend (with a warning).")
        super().__init__(msg)


class UnsupportedLayoutError(FerroError, NotImplementedError):
    """An op got a tensor of a layout (sparse, quantized) for which it has no rule.

    ferro never converts such a tensor to a dense one behind the user's back: the message names the op, the
    argument and the layout, and the way out (``.to_dense()`` / ``.dequantize()``).
    """

    def __init__(self, op: str, argument: str, layout: str, way_out: str) -> None:
        self.op, self.argument, self.layout = op, argument, layout
        super().__init__(f"{op}(): argument '{argument}' is a {layout} tensor, and {op} has no {layout} rule; "
                         f"{way_out} first to run the dense op")


class BackendUnavailableError(FerroError, RuntimeError):
    """A backend is installed but cannot run here; the message gives why."""

    def __init__(self, backend: str, reason: str) -> None:
        self.backend, self.reason = backend, reason
        super().__init__(f"backend '{backend}' is not available: {reason}")


class BackendNotFoundError(FerroError, ValueError):
    """No installed backend has the requested name."""

    def __init__(self, name: str, installed: list[str], broken: dict[str, str] | None = None) -> None:
        self.name = name
        msg = f"no backend named '{name}'; installed backends: {', '.join(installed) or 'none'}"
        if broken:
            msg += "; broken plugins: " + "; ".join(f"{k}: {v}" for k, v in broken.items())
        super().__init__(msg)


class DeviceMismatchError(FerroError, RuntimeError):
    """An op got tensors on different devices; nothing moves silently."""


class DeviceError(FerroError, ValueError, RuntimeError):
    """A device that does not exist (``cpu:5`` where the backend has one device).

    A ``ValueError`` (a bad argument value) and also a ``RuntimeError``, which is
    what PyTorch raises for an invalid device ordinal.
    """


class ShapeError(FerroError, ValueError, RuntimeError):
    """Shapes do not fit an op (broadcasting, matmul, reshape, indexing).

    A ``ValueError`` (what Python code catches for a bad argument) and also a
    ``RuntimeError``, which is what PyTorch raises, so code written for
    PyTorch (``except RuntimeError``) catches it too.
    """


class DTypeError(FerroError, TypeError, RuntimeError):
    """A dtype does not fit an op (an unsafe in-place cast, an integer-only op on floats).

    A ``TypeError`` and also a ``RuntimeError``, which is what PyTorch raises for these.
    """


class LinAlgError(FerroError, ValueError, RuntimeError):
    """A linear-algebra routine failed on its input's values (a singular matrix, one that is not
    positive-definite); ``torch.linalg.LinAlgError`` (a ``RuntimeError``, and a ``ValueError`` as NumPy's)."""


class OutOfMemoryError(FerroError, MemoryError, RuntimeError):
    """A device (or the host) cannot allocate a tensor; the message names the size and the device.
    ``except MemoryError`` and PyTorch's ``except torch.OutOfMemoryError`` (``ferro.OutOfMemoryError``) catch
    it."""


class PluginError(FerroError, RuntimeError):
    """A plugin failed to load or to validate; it is isolated, never fatal to ferro."""


class SerializationError(FerroError, ValueError):
    """A file given to ``ferro.load`` is not a valid safetensors file, or ``ferro.save`` got an object it
    cannot store; the message says what is wrong. Nothing in a loaded file is ever executed."""
