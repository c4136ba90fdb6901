"""``copyview``: a backend whose arrays cannot alias and whose kernels refuse some arguments.

ferro's generic Array API backend over NumPy, changed in the two ways the
contract lets a backend say it is limited:

- every view kernel (``reshape``, ``view``, ``permute``, ``expand``,
  ``getitem``, ``real``, ``imag``, ``view_as_real``) returns a fresh copy, and
  the backend says so (``view_copies``): core keeps PyTorch's write-through
  semantics by itself, or refuses the write naming the op;
- some kernels refuse argument values (``argument_checks``): ``sum`` over
  more than two dims (no decomposition: the CPU fallback or an error),
  ``angle`` of tensors of more than three dims (its decomposition runs), and the fused
  ``softmax`` kernel (which this backend adds, counting its calls in
  :data:`calls`) along any dim but the last (the decomposition runs).

Not an entry point: tests register it in process
(``ferro.backends.register_plugin(ferro_testplugins.copyviews, "testcopyviews")``),
so the conformance suite does not run on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ferro.backends import ArrayAPIBackend, backend_plugin
from ferro.backends.contract import VIEW_OPS, ArgumentCheck

#: How many times the fused softmax kernel and the angle kernel ran.
calls = {"softmax": 0, "angle": 0}

#: The refused values, checked by the tests against explain() and the errors.
SUM_MAX_DIMS, ANGLE_MAX_NDIM = 2, 3


def _copying(kernel: Callable[..., Any]) -> Callable[..., Any]:
    def copy(*args: Any) -> Any:
        return np.array(kernel(*args), copy=True)
    return copy


def _ndims(x: Any, dim: Any) -> int:
    if dim is None or dim == ():
        return x.ndim
    return len(dim) if isinstance(dim, (tuple, list)) else 1


def _sum_check(x: Any, dim: Any = None, keepdim: bool = False, *args: Any, **kwargs: Any) -> tuple[str, str] | None:
    n = _ndims(x, dim)
    return None if n <= SUM_MAX_DIMS else ("dim", f"it reduces over at most {SUM_MAX_DIMS} dims, not {n}")


def _angle_check(x: Any) -> tuple[str, str] | None:
    return None if x.ndim <= ANGLE_MAX_NDIM else ("input", f"it takes at most {ANGLE_MAX_NDIM} dims, not {x.ndim}")


def _softmax_check(x: Any, dim: Any = -1, *args: Any, **kwargs: Any) -> tuple[str, str] | None:
    dim = kwargs.get("dim", dim)
    last = isinstance(dim, int) and dim in (-1, x.ndim - 1)
    return None if last else ("dim", "it normalizes along the last dim only")


def _softmax(x: Any, dim: int) -> Any:
    calls["softmax"] += 1
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _softmax_backward(grad: Any, y: Any, dim: int) -> Any:
    return y * (grad - (grad * y).sum(axis=dim, keepdims=True))


class CopyViewsBackend(ArrayAPIBackend):
    """NumPy through the generic backend, with copying view kernels and argument checks."""

    name = "copyview"
    description = "test backend: view kernels return copies; sum, angle and softmax refuse some arguments"
    module_name = "numpy"

    def kernels(self, index: int) -> dict[str, Callable[..., Any]]:
        table = super().kernels(index)
        for name in self.view_copies(index):
            table[name] = _copying(table[name])
        table["softmax"], table["softmax_backward"] = _softmax, _softmax_backward
        angle = table["angle"]

        def counting_angle(x: Any) -> Any:
            calls["angle"] += 1
            return angle(x)
        table["angle"] = counting_angle
        return table

    def view_copies(self, index: int) -> frozenset[str]:
        table = super().kernels(index)
        return frozenset(n for n in VIEW_OPS if n in table)

    def argument_checks(self, index: int) -> dict[str, ArgumentCheck]:
        return {"sum": ArgumentCheck(_sum_check, f"a reduction over more than {SUM_MAX_DIMS} dims"),
                "angle": ArgumentCheck(_angle_check, f"tensors of more than {ANGLE_MAX_NDIM} dims"),
                "softmax": ArgumentCheck(_softmax_check, "a dim other than the last")}


ferro_plugin_api_version, ferro_register_backends = backend_plugin("ferro_testplugins.copyviews:CopyViewsBackend")
