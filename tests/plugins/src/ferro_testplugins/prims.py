"""The minimal backend: ``prims``, only the contract's required primitives, over NumPy.

It is ferro's generic Array API backend over NumPy (as ``toy`` in
:mod:`ferro_testplugins.good`) with its kernel table cut down to exactly
``ferro.backends.contract.kernel_names("required")``: no fused kernel, no
optional group (no special functions, complex parts, linear algebra
factorizations or FFT), and so no complex dtypes. Every other op runs through
its decomposition into these primitives; ops that need a missing optional
group are reported unsupported, naming the group. The
conformance suite runs on it like on any installed backend
(``--ferro-backend=prims``), which is how ferro checks that "a backend that
implements only the primitives runs every op".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ferro import DType
from ferro.backends import ArrayAPIBackend, backend_plugin
from ferro.backends.contract import REQUIRED, kernel_names


class PrimsBackend(ArrayAPIBackend):
    """The generic Array API backend over NumPy, with only the required primitives in its table."""

    name = "prims"
    description = "test backend: only the contract's required primitives (NumPy through the generic Array API backend)"
    module_name = "numpy"
    complete = True
    optional_groups: frozenset[str] = frozenset()

    def dtypes(self, index: int) -> frozenset[DType]:
        # The parts of complex numbers decompose into casts, exact for finite values only: imag is
        # cast(z * -1j), whose product turns an infinite real part into nan. With no kernel for them
        # (the optional group ``complex``), complex dtypes are left out.
        return frozenset(d for d in super().dtypes(index) if not d.is_complex)

    def kernels(self, index: int) -> dict[str, Callable[..., Any]]:
        table = super().kernels(index)
        required = kernel_names(REQUIRED)
        missing = [k for k in required if k not in table]
        if missing:  # the generic backend lost a primitive: say so rather than bind a partial table
            raise RuntimeError(f"the generic Array API backend has no kernel for {', '.join(missing)}")
        return {k: table[k] for k in required}


ferro_plugin_api_version, ferro_register_backends = backend_plugin("ferro_testplugins.prims:PrimsBackend")
