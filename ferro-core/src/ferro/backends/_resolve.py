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

What a decomposition calls (:func:`uses_of`) is derived, not written by hand:
``python -m ferro._usesgen`` runs every decomposition on its test data and
writes ``uses.json`` beside this module, read on the first query (not at
import). An op's own ``OpDef.uses`` adds what the test data cannot reach, and
is the whole list for a plugin's op.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from .._core.dtypes import DType, by_name, complex64, complex128, float32, float64, get_default_dtype
from .._core.records import REGISTRY, OpDef, kernel_table
from .contract import KERNELS, REQUIRED

__all__ = ["Resolution", "DeviceFacts", "resolve", "facts_of", "RUNS", "missing_group", "uses_of", "used_dtype"]

_REAL_OF = {complex64: float32, complex128: float64}

#: The derived uses (``python -m ferro._usesgen``): op -> input dtype name -> uses; loaded on first need.
_USES_FILE = os.path.join(os.path.dirname(__file__), "uses.json")
_derived: dict[str, dict[str, tuple[str, ...]]] = {}


def _load_derived() -> dict[str, dict[str, tuple[str, ...]]]:
    if not _derived:
        import json  # here, not at the top: ``import ferro`` loads no JSON parser
        with open(_USES_FILE, encoding="utf-8") as f:
            rows = json.load(f)
        for name, groups in rows.items():
            per = {d: tuple(uses) for dtypes, uses in groups for d in dtypes.split()}
            per[""] = tuple(dict.fromkeys(u for _, uses in groups for u in uses))  # any other dtype: every use
            _derived[name] = per
    return _derived


def uses_of(op: OpDef, dtype: DType) -> tuple[str, ...]:
    """What ``op``'s decomposition calls at input ``dtype``: the derived uses, then the record's own
    additions (``OpDef.uses``: branches the test data cannot reach; everything for a plugin's op).
    Each is ``name`` or ``name:at``, ``at`` as :func:`used_dtype` reads it."""
    derived = _derived_uses(op, dtype)
    if not op.uses:
        return derived
    # a use by hand at the compute dtype that the runs saw at another dtype (linalg_eig of a half, computed in
    # float32) is the one they saw: the hand adds what they cannot reach
    seen = {u.partition(":")[0] for u in derived}
    return tuple(dict.fromkeys((*derived, *(u for u in op.uses if ":" in u or u not in seen))))


def _derived_uses(op: OpDef, dtype: DType) -> tuple[str, ...]:
    per = _load_derived().get(op.name)
    return () if per is None else per.get(dtype.name, per[""])


def used_dtype(at: str, dtype: DType, compute: DType) -> DType:
    """The dtype a use runs at, from the op's input and compute dtypes: ``""`` the compute dtype, ``real``
    its real dtype, ``input`` the input dtype, ``float`` the default float dtype, ``wide`` its double-precision
    form (float64, complex128), else the named dtype."""
    if not at:
        return compute
    if at == "real":
        return _REAL_OF.get(compute, compute)
    if at == "input":
        return dtype
    if at == "float":
        return get_default_dtype()
    if at == "wide":  # double precision (float_power)
        return complex128 if compute.is_complex else float64
    return by_name[at]

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
    #: where the kernel refuses some argument values (``Backend.argument_checks``): how the op runs for those
    arguments: Resolution | None = None

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
        if self.arguments is not None:
            out += self.arguments.lines(depth + 1)
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


class DeviceFacts(NamedTuple):
    """What the resolver knows of a device: its kernel names, dtypes, the backend's refusals per op,
    the kernels plugins overrode (name -> plugin), a per-kernel refusal check (``kernel_refusal(name, dtype)``
    -> why not, or None), whether the CPU fallback is on, the view ops it copies and the ops whose
    kernel refuses some arguments."""

    device: str
    backend: str
    kernels: Collection[str]
    dtypes: frozenset[DType]
    refused: Mapping[str, frozenset[DType]] = MappingProxyType({})
    overrides: Mapping[str, str] = MappingProxyType({})
    kernel_refusal: Callable[[str, DType], str | None] | None = None
    fallback: bool = False
    #: the view ops whose kernel returns a copy (``Backend.view_copies``)
    copies: frozenset[str] = frozenset()
    #: op name -> what its kernel refuses of its arguments, in words (``Backend.argument_checks``)
    arg_checks: Mapping[str, str] = MappingProxyType({})


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
    if name in facts.copies or name in facts.arg_checks:
        out = _kernel_limits(name, dtype, facts, out)
    op = REGISTRY.get(name)
    cr = op.table.get(dtype) if op is not None else None
    if cr is not None:
        out = out._replace(compute=cr[0])
    memo[key] = out
    return out


def _kernel_limits(name: str, dtype: DType, facts: DeviceFacts, out: Resolution) -> Resolution:
    """``out`` (a kernel) with what the backend says of its limits: a copy instead of a view, the argument
    values it refuses and how the op runs for those (resolved as if the kernel were absent)."""
    if out.route not in ("kernel", "override"):
        return out
    notes = list(out.notes)
    if name in facts.copies:
        notes.append("copy instead of view: the kernel returns a copy; core writes through it into the base and "
                     "makes it again after writes to the base (writes through overlapping elements or complex parts "
                     "are refused)")
    doc = facts.arg_checks.get(name)
    if doc is None:
        return out._replace(notes=tuple(notes))
    op = REGISTRY[name]
    without = facts._replace(kernels=frozenset(facts.kernels) - set(op.kernels), arg_checks=MappingProxyType({}),
                             copies=frozenset())
    alt = resolve(name, dtype, without)
    if alt.route == "unsupported" and op.decomposition is None:
        alt = alt._replace(reason="its kernel does not take these arguments and the op has no decomposition")
    notes.append(f"refuses arguments: {doc}; for those: {alt.route}")
    return out._replace(notes=tuple(notes), arguments=alt)


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
        derived = _derived_uses(op, dtype)
        for use in uses_of(op, dtype):
            part, _, at = use.partition(":")
            d = used_dtype(at, dtype, compute)
            if use not in derived and part in REGISTRY and d not in REGISTRY[part].table:
                continue  # an addition by hand for a branch this dtype cannot take (the derived ones it takes)
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
                       overrides or {}, refusal, fallback and dev.type != "cpu", dev._copies,
                       {n: c[2].doc for n, c in dev._checked.items()})
