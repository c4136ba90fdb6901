"""The resolver: what runs op X at dtype D on a device, and why.

One answer for every question ferro asks about capabilities:
``Backend.supports`` / ``capabilities``, ``ferro.backends.explain``, ``ferro
ops`` and the docs' matrix, and ferro-cuda's bfloat16 claims all call
:func:`resolve`. It follows the hot path's own rules (``ferro.dispatch``): the
kernel bound for the op where the device's table has the op's kernels and
they take the dtype (:func:`~ferro._core.records.kernel_table`, the function
``bind_tables`` uses), else the decomposition, whose parts are resolved the
same way, else the opt-in CPU fallback, else unsupported with the reason.

An op whose kernels are an optional fast path (fused kernels) resolves to its
decomposition where the kernels are missing or refuse the dtype; any other op
whose kernel refuses the dtype is unsupported, as on the hot path.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from .._core.dtypes import DType, complex64, complex128, float32, float64
from .._core.records import REGISTRY, kernel_table
from .contract import KERNELS, REQUIRED

__all__ = ["Resolution", "DeviceFacts", "resolve", "facts_of", "RUNS", "missing_group"]

_REAL_OF = {complex64: float32, complex128: float64}


def _use_dtype(at: str, compute: DType) -> DType:
    """The dtype a ``uses`` entry ``op:at`` runs at: ``real`` the compute dtype's real part, ``wide`` its
    double-precision form (float64, complex128: ``float_power``), nothing the compute dtype itself."""
    if at == "real":
        return _REAL_OF.get(compute, compute)
    if at == "wide":
        return complex128 if compute.is_complex else float64
    return compute

#: The routes that run on the device itself.
RUNS = frozenset({"kernel", "override", "decomposition"})


class Resolution(NamedTuple):
    """How op (or raw kernel) ``op`` runs at input ``dtype`` on ``device``.

    ``route`` is ``"kernel"`` (the backend's own), ``"override"`` (a kernel a
    plugin contributed), ``"decomposition"`` (into ``parts``, each resolved),
    ``"fallback"`` (on the CPU backend, ``FERRO_FALLBACK=cpu``) or
    ``"unsupported"``; ``reason`` says why for the last; ``notes`` why a
    kernel present was not used, ``refused`` the kernels the backend's
    per-kernel check (``Backend.refuses``) turned down.
    """

    op: str
    dtype: DType
    device: str
    route: str
    kernels: tuple[str, ...] = ()
    provider: str = ""
    parts: tuple[Resolution, ...] = ()
    reason: str = ""
    notes: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    #: the dtype the op computes in for this input dtype (None: not defined for it, or a raw kernel)
    compute: DType | None = None

    @property
    def supported(self) -> bool:
        """Whether it runs on the device (by a kernel or the decomposition), as ``Backend.supports`` says."""
        return self.route in RUNS

    def lines(self, depth: int = 0) -> list[str]:
        """The explanation as indented lines (parts under their decomposition)."""
        pad = "  " * depth
        head = f"{pad}{self.op} [{self.dtype.name}] on {self.device}: "
        if self.route == "kernel":
            head += f"kernel {', '.join(self.kernels)} of backend '{self.provider}'"
        elif self.route == "override":
            head += f"kernel {', '.join(self.kernels)} overridden by plugin '{self.provider}'"
        elif self.route == "decomposition":
            head += "decomposition into " + ", ".join(p.op for p in self.parts)
        elif self.route == "fallback":
            head += f"runs on the CPU backend (FERRO_FALLBACK=cpu): {self.reason}"
        else:
            head += f"unsupported: {self.reason}"
        out = [head] + [f"{pad}  ({n})" for n in self.notes]
        for p in self.parts:
            out += p.lines(depth + 1)
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


class DeviceFacts(NamedTuple):
    """What the resolver knows of a device: its kernel names, dtypes, the backend's refusals per op,
    the kernels plugins overrode (name -> plugin), a per-kernel refusal check (``kernel_refusal(name, dtype)``
    -> why not, or None), and whether the CPU fallback is on."""

    device: str
    backend: str
    kernels: Collection[str]
    dtypes: frozenset[DType]
    refused: Mapping[str, frozenset[DType]] = MappingProxyType({})
    overrides: Mapping[str, str] = MappingProxyType({})
    kernel_refusal: Callable[[str, DType], str | None] | None = None
    fallback: bool = False


def missing_group(kernels: Iterable[str]) -> str:
    """Where missing ``kernels`` belong to an optional group of the contract, words naming it (else "")."""
    groups = {k: KERNELS[k].group for k in kernels if k in KERNELS and KERNELS[k].group not in (REQUIRED, "fused")}
    if not groups:
        return ""
    names = ", ".join(f"'{k}'" for k in groups)
    return f"; {names} {'is' if len(groups) == 1 else 'are'} in the contract's optional group " + \
        " / ".join(f"'{g}'" for g in dict.fromkeys(groups.values())) + ", which the backend does not have"


def _kernel_refusals(facts: DeviceFacts, kernels: tuple[str, ...], dtype: DType) -> dict[str, str]:
    check = facts.kernel_refusal
    if check is None:
        return {}
    return {k: f"kernel {k}: {why}" for k in kernels if (why := check(k, dtype)) is not None}


def resolve(name: str, dtype: DType, facts: DeviceFacts,
            memo: dict[tuple[str, DType], Resolution] | None = None) -> Resolution:
    """How ``name`` (a registry op, or a raw kernel a decomposition calls) runs at ``dtype`` there."""
    memo = {} if memo is None else memo
    key = (name, dtype)
    got = memo.get(key)
    if got is not None:
        return got
    # a decomposition that comes back to an op being resolved adds nothing new
    memo[key] = Resolution(name, dtype, facts.device, "decomposition", reason="(resolved above)")
    out = _resolve(name, dtype, facts, memo)
    op = REGISTRY.get(name)
    cr = op.table.get(dtype) if op is not None else None
    if cr is not None:
        out = out._replace(compute=cr[0])
    memo[key] = out
    return out


def _raw(name: str, dtype: DType, facts: DeviceFacts) -> Resolution:
    where = facts.device
    if name not in facts.kernels:
        return Resolution(name, dtype, where, "unsupported",
                          reason=f"the backend has no kernel '{name}'{missing_group((name,))}")
    refusals = _kernel_refusals(facts, (name,), dtype)
    if refusals:
        return Resolution(name, dtype, where, "unsupported", (name,), reason="; ".join(refusals.values()),
                          refused=(name,))
    plugin = facts.overrides.get(name)
    return Resolution(name, dtype, where, "override" if plugin else "kernel", (name,), plugin or facts.backend)


def _resolve(name: str, dtype: DType, facts: DeviceFacts, memo: dict[tuple[str, DType], Resolution]) -> Resolution:
    op = REGISTRY.get(name)
    if op is None:
        return _raw(name, dtype, facts)
    where = facts.device
    cr = op.table.get(dtype)
    if cr is None:
        return Resolution(name, dtype, where, "unsupported",
                          reason=f"not defined for {dtype.name}; it takes {op.dtype_words}")
    table = kernel_table(op, facts.kernels, facts.dtypes, facts.refused.get(name, frozenset()))
    notes: list[str] = []
    refused: tuple[str, ...] = ()
    if table is not None:
        if dtype in table:
            refusals = _kernel_refusals(facts, op.kernels, cr[0])
            if not refusals:
                plugin = next((facts.overrides[k] for k in op.kernels if k in facts.overrides), "")
                return Resolution(name, dtype, where, "override" if plugin else "kernel", op.kernels,
                                  plugin or facts.backend)
            refused = tuple(refusals)
            if not op.optional_kernels:
                return Resolution(name, dtype, where, "unsupported", op.kernels, reason="; ".join(refusals.values()),
                                  refused=refused)
            notes += refusals.values()
        elif op.optional_kernels:
            notes.append(f"kernels {', '.join(op.kernels)} do not take {dtype.name} here")
        elif cr[0] not in facts.dtypes or cr[1] not in facts.dtypes:
            return Resolution(name, dtype, where, "unsupported", reason=f"the device does not support "
                              f"{cr[0] if cr[0] not in facts.dtypes else cr[1]}")
        elif not facts.fallback:
            return Resolution(name, dtype, where, "unsupported", op.kernels,
                              reason="the backend's kernel refuses this dtype")
    if op.decomposition is not None:
        if dtype not in facts.dtypes:
            return Resolution(name, dtype, where, "unsupported", reason=f"the device does not support {dtype}",
                              notes=tuple(notes))
        compute = cr[0]
        parts = []
        for use in op.uses:
            part, _, at = use.partition(":")
            d = _use_dtype(at, compute)
            parts.append(resolve(part, d, facts, memo) if part != name else _raw(part, d, facts))
        bad = [p for p in parts if not p.supported]
        if not bad:
            return Resolution(name, dtype, where, "decomposition", parts=tuple(parts), notes=tuple(notes),
                              refused=refused)
        if not facts.fallback:
            why = "; ".join(f"its decomposition uses {p.op}: {p.reason}" for p in bad)
            return Resolution(name, dtype, where, "unsupported", parts=tuple(parts), reason=why, notes=tuple(notes),
                              refused=refused)
    if facts.fallback:
        return Resolution(name, dtype, where, "fallback", reason="the backend cannot run it", notes=tuple(notes),
                          refused=refused)
    return Resolution(name, dtype, where, "unsupported", reason="the backend has no kernel for it and the op has no "
                      f"decomposition{missing_group(op.kernels)}", notes=tuple(notes), refused=refused)


def facts_of(dev: Any, overrides: Mapping[str, str] | None = None, fallback: bool = False) -> DeviceFacts:
    """The facts of a bound device: its table, dtypes, its backend's refusals (``unsupported``, ``refuses``);
    ``overrides`` names the plugin of each overridden kernel (for explanations only)."""
    backend, index = dev._backend, dev.index

    def refusal(kernel: str, dtype: DType) -> str | None:
        return backend.refuses(kernel, dtype, index)
    return DeviceFacts(str(dev), backend.name, dev._kernels, dev._dtypes, backend.unsupported(index),
                       overrides or {}, refusal, fallback and dev.type != "cpu")
