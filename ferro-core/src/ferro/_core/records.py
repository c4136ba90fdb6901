"""The op registry: one definition per op, the single source of truth.

An :class:`OpDef` names an op and gives its dtype rule, which inputs it
saves for backward, one backward formula per input (written in ferro ops, so
double backward works), and optionally a decomposition into other ops used
when a backend has no kernel for it. Each op module (``elementwise``,
``reduction``, ``shape``, ``linalg``, ``indexing``) registers its ops next to
their definitions; backends only provide kernels by the same names.

When a device is first used, :func:`bind_tables` resolves, once, per op:
the kernel and the dtypes it accepts there. The hot path is then
``device._ops[name]`` -> ``(kernel, dtype_table)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import autocast_policy, modes, provided
from .dtypes import DType, all_dtypes, bool_, get_default_dtype
from .expr import Expr
from .modes import entry

__all__ = ["OpDef", "REGISTRY", "register", "get", "DTYPE_RULES", "bind_tables", "kernel_table"]


# -- dtype rules: input dtype (already promoted) -> (compute dtype, result dtype), or None


def _same(d: DType) -> tuple[DType, DType] | None:
    return (d, d)


def _numeric(d: DType) -> tuple[DType, DType] | None:
    return None if d is bool_ else (d, d)


def _real(d: DType) -> tuple[DType, DType] | None:
    return None if d.is_complex else (d, d)


def _real_numeric(d: DType) -> tuple[DType, DType] | None:
    return None if (d.is_complex or d is bool_) else (d, d)


def _float(d: DType) -> tuple[DType, DType] | None:
    f = d if (d.is_floating_point or d.is_complex) else get_default_dtype()
    return (f, f)


def _real_float(d: DType) -> tuple[DType, DType] | None:
    return None if d.is_complex else _float(d)


def _to_bool(d: DType) -> tuple[DType, DType] | None:
    return (d, bool_)


def _logical(d: DType) -> tuple[DType, DType] | None:
    return (bool_, bool_)


def _real_to_bool(d: DType) -> tuple[DType, DType] | None:
    return None if d.is_complex else (d, bool_)


def _integral(d: DType) -> tuple[DType, DType] | None:
    return (d, d) if d.kind in "bui" else None


def _integer(d: DType) -> tuple[DType, DType] | None:
    return (d, d) if d.kind in "ui" else None


def _real_floating(d: DType) -> tuple[DType, DType] | None:
    return (d, d) if d.is_floating_point else None


def _floating(d: DType) -> tuple[DType, DType] | None:
    return (d, d) if (d.is_floating_point or d.is_complex) else None


def _lapack(d: DType) -> tuple[DType, DType] | None:
    return (d, d) if d.itemsize >= 4 and (d.is_floating_point or d.is_complex) else None


def _real_lapack(d: DType) -> tuple[DType, DType] | None:
    return (d, d) if d.itemsize >= 4 and d.is_floating_point else None


def _accumulate(d: DType) -> tuple[DType, DType] | None:
    from .dtypes import int64
    return (int64, int64) if d.kind in "bui" else (d, d)


def _index(d: DType) -> tuple[DType, DType] | None:
    from .dtypes import int64
    return None if d.is_complex else (d, int64)


def _numeric_index(d: DType) -> tuple[DType, DType] | None:
    return None if d is bool_ else _index(d)


def _int8_to_int32(d: DType) -> tuple[DType, DType] | None:
    from .dtypes import int8, int32
    return (int8, int32) if d is int8 else None


def _magnitude(d: DType) -> tuple[DType, DType] | None:
    from .dtypes import complex64, float32, float64
    return (d, {complex64: float32}.get(d, float64)) if d.is_complex else (d, d)


def _numeric_magnitude(d: DType) -> tuple[DType, DType] | None:
    return None if d is bool_ else _magnitude(d)


#: Named dtype rules, with the words used in error messages.
DTYPE_RULES: dict[str, tuple[Callable[[DType], tuple[DType, DType] | None], str]] = {
    "same": (_same, "any dtype"),
    "numeric": (_numeric, "numeric dtypes (not bool)"),
    "real": (_real, "real dtypes (not complex)"),
    "real_numeric": (_real_numeric, "real numeric dtypes (not bool or complex)"),
    "float": (_float, "any dtype (integers compute in the default float dtype)"),
    "real_float": (_real_float, "real dtypes (integers compute in the default float dtype)"),
    "to_bool": (_to_bool, "any dtype"),
    "logical": (_logical, "any dtype (computed as bool: zero is False)"),
    "real_to_bool": (_real_to_bool, "real dtypes (not complex)"),
    "integral": (_integral, "integer and bool dtypes"),
    "integer": (_integer, "integer dtypes (not bool)"),
    "floating": (_floating, "floating and complex dtypes"),
    "real_floating": (_real_floating, "floating dtypes (not integer or complex)"),
    "lapack": (_lapack, "float32, float64, complex64 and complex128 (LAPACK's dtypes: not float16 or bfloat16)"),
    "real_lapack": (_real_lapack, "float32 and float64"),
    "accumulate": (_accumulate, "any dtype (integers and bool accumulate in int64)"),
    "index": (_index, "real dtypes (the result is an int64 index)"),
    "numeric_index": (_numeric_index, "real numeric dtypes (not bool or complex; the result is an int64 index)"),
    "magnitude": (_magnitude, "any dtype (complex gives its real dtype)"),
    "numeric_magnitude": (_numeric_magnitude, "numeric dtypes (not bool; complex gives its real dtype)"),
    "int8_to_int32": (_int8_to_int32, "int8 (products accumulated in int32)"),
}


class OpDef:
    """The definition of one op. See the module docstring.

    ``saves`` lists what backward needs: input positions (0, 1, ...) or
    ``OUT``; ``grads`` holds one formula per input,
    ``f(grad, *saved, **attrs) -> grad_input`` (None: not differentiable);
    ``decomposition`` is ``f(*inputs, **attrs) -> Tensor`` in other ops, used where a backend has no
    kernel; what it calls is derived (``python -m ferro._usesgen``), and ``uses`` adds what the op's test
    data cannot reach (a plugin's op names all of it); ``kernels`` names the kernels the op calls
    (by default just its own name).

    An op whose kernels are an optional fast path of its decomposition (a
    fused kernel: ``softmax``, ``conv2d``, ``adam_step``...) sets
    ``optional_kernels``: where the kernels are missing, refuse the dtype, or
    (through ``rule``, which maps the op's arguments onto its kernels and
    returns None for arguments they do not take) refuse the arguments, the
    decomposition runs. ``kernel_dtypes`` limits the input dtypes the kernels
    are bound for (None: every dtype of the op).

    An elementwise op may give ``expr``, its C expression per kind of dtype
    (:class:`ferro._core.expr.Expr`), from which device backends (OpenCL,
    CUDA) generate its kernels: the op then needs no kernel code of its own.
    """

    __slots__ = (
        "autocast",
        "decomposition",
        "doc",
        "dtype_rule",
        "expr",
        "fn",
        "grads",
        "jvp",
        "kernel_dtypes",
        "kernels",
        "kind",
        "name",
        "optional_kernels",
        "plugin",
        "rule",
        "saves",
        "table",
        "tests",
        "uses",
    )

    def __init__(self, name: str, kind: str, doc: str = "", *, dtype_rule: str = "same",
                 saves: tuple[Any, ...] = (), grads: tuple[Callable[..., Any] | None, ...] | None = None,
                 decomposition: Callable[..., Any] | None = None, uses: tuple[str, ...] = (),
                 kernels: tuple[str, ...] = (), tests: Any = None, optional_kernels: bool = False,
                 kernel_dtypes: frozenset[DType] | None = None, rule: Callable[..., Any] | None = None,
                 jvp: tuple[Callable[..., Any] | None, ...] | None = None, expr: Expr | None = None) -> None:
        self.name = name
        self.kind = kind  # unary, binary, reduction, shape, linalg, indexing, conversion, ...
        self.doc = doc
        self.dtype_rule = dtype_rule
        self.saves = saves
        self.grads = grads
        #: forward-mode rules, one per input: ``f(tangent, *saved, **attrs) -> output tangent`` (None: none
        #: given); for real dtypes, an elementwise op's backward formulas are its forward rules.
        self.jvp = jvp
        self.decomposition = decomposition
        #: ops (or raw kernels) the decomposition calls beyond those derived (``ferro.backends._resolve.uses_of``).
        self.uses = uses
        self.kernels = kernels
        self.optional_kernels = optional_kernels or rule is not None
        self.kernel_dtypes = kernel_dtypes
        #: maps the op's arguments onto its fused kernels (see ``fused``); None for an ordinary op.
        self.rule = rule
        #: the elementwise C expression backends generate kernels from (None: the op has none).
        self.expr = expr
        #: input dtype -> (compute dtype, result dtype), filled from dtype_rule at registration.
        self.table: dict[DType, tuple[DType, DType]] = {}
        #: the public function, filled in by the module that builds it (for a plugin's op, by dispatch).
        self.fn: Callable[..., Any] | None = None
        #: the op's test data for the conformance suite: a ``ferro.testing.OpInfo``, or a function returning one
        #: (so that registering the op does not import the test kit), or None.
        self.tests = tests
        #: the plugin that contributed the op ("" for ferro's own).
        self.plugin = ""
        #: the op's autocast category by policy (``{"cpu": "lower", "gpu": "float32"}``), from
        #: ``autocast_policy`` at registration; None: autocast leaves the op as it is.
        self.autocast: dict[str, str] | None = None

    @property
    def differentiable(self) -> bool:
        """Whether gradients flow through the op."""
        return self.grads is not None

    @property
    def dtype_words(self) -> str:
        """The dtypes the op accepts, in words."""
        return DTYPE_RULES[self.dtype_rule][1]

    def __repr__(self) -> str:
        return f"<OpDef {self.name} ({self.kind})>"


REGISTRY: dict[str, OpDef] = {}
modes._records = REGISTRY  # the armed tables look ops up by name


#: dtype rule -> (the default dtype it was computed under, its table): the ops of one rule share the
#: computation (``import ferro`` registers some 500 ops, a dozen dtypes each), each keeps its own dict.
_TABLES: dict[Callable[[DType], Any], tuple[DType, dict[DType, tuple[DType, DType]]]] = {}


def _table(rule: Callable[[DType], tuple[DType, DType] | None]) -> dict[DType, tuple[DType, DType]]:
    default = get_default_dtype()  # (the rules' only input beyond the dtype)
    got = _TABLES.get(rule)
    if got is None or got[0] is not default:
        got = _TABLES[rule] = (default, {d: r for d in all_dtypes if (r := rule(d)) is not None})
    return dict(got[1])


def register(op: OpDef) -> OpDef:
    """Add ``op`` to the registry, computing its dtype table."""
    if op.name in REGISTRY:
        raise ValueError(f"op '{op.name}' is registered twice")
    op.table = _table(DTYPE_RULES[op.dtype_rule][0])
    if not op.kernels:
        op.kernels = (op.name,)
    op.autocast = autocast_policy.category(op.name)
    REGISTRY[op.name] = op
    return op


def register_composites(kind: str, rows: Sequence[tuple[Any, ...]], *,
                        dtype_rule: str = "same", prefix: str = "") -> dict[str, Callable[..., Any]]:
    """Register ops written in other ops: ``(name, function)`` per row, or ``(name, function, uses)`` where
    the decomposition calls what its test data cannot reach (``OpDef.uses``).

    The function is the decomposition; the public function is its dispatch entry (``modes.entry``: the
    active layers, errors named after the op). Its docstring's first line is the op's doc. Returns
    name -> public function.
    """
    out: dict[str, Callable[..., Any]] = {}
    for name, fn, *uses in rows:
        op = register(OpDef(prefix + name, kind, (fn.__doc__ or "").split("\n")[0], dtype_rule=dtype_rule,
                            decomposition=fn, uses=uses[0] if uses else ()))
        op.fn = out[name] = entry(op, fn)
    return out


def refresh_default_dtype() -> None:
    """Recompute the tables of rules that depend on the default float dtype."""
    for op in REGISTRY.values():
        op.table = _table(DTYPE_RULES[op.dtype_rule][0])


class _Ops:
    """Every registered op's public function, looked up by name when called: ``ops.cat([a, b])``.

    How a layer below the ops (autograd) or one op family calls an op of another without importing the
    module that defines it: the record, not the module, is the op's single home.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        op = REGISTRY.get(name)
        if op is None and not name.startswith("__"):  # perhaps a plugin's op: plugins load on first need
            provided.load_plugins()
            op = REGISTRY.get(name)
        if op is None:
            raise AttributeError(f"no op named '{name}' in the registry (ferro's own ops and those plugins add "
                                 "through the ferro_register_ops hook)")
        if op.fn is None:
            op.fn = provided.public_function(op)
        return op.fn

    def __dir__(self) -> list[str]:
        return sorted(REGISTRY)


#: Ops by name (see :class:`_Ops`).
ops = _Ops()


def get(name: str) -> OpDef:
    """The definition of op ``name``."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"no op named '{name}' in the registry") from None


def kernel_table(op: OpDef, kernels: Mapping[str, Any], dtypes: frozenset[DType],
                 refused: frozenset[DType]) -> dict[DType, tuple[DType, DType]] | None:
    """The input dtypes ``op``'s kernels run on a device (with their compute and result dtypes), or None
    where the device's table lacks one of its kernels.

    Kept: the dtypes whose compute and result dtypes the device supports, that
    the backend does not refuse for the op, and that the kernels take
    (``kernel_dtypes``). :func:`bind_tables` and the resolver both ask this.
    """
    if any(n not in kernels for n in op.kernels):
        return None
    only = op.kernel_dtypes
    return {d: cr for d, cr in op.table.items() if d in dtypes and cr[0] in dtypes and cr[1] in dtypes
            and cr[0] not in refused and (only is None or d in only)}


def bind_tables(kernels: dict[str, Callable[..., Any]], dtypes: frozenset[DType],
                unsupported: dict[str, frozenset[DType]]) -> dict[str, tuple[Any, dict[DType, tuple[DType, DType]]]]:
    """Resolve, for one device, every registered op to ``(kernel, dtype table)``.

    One route for every kernel: an op with a ``rule`` (fused kernels) gets the
    tuple of its kernels, any other op its first kernel. Ops without a kernel
    are left out: the slow path tries the decomposition or fallback.
    """
    out: dict[str, tuple[Any, dict[DType, tuple[DType, DType]]]] = {}
    for name, op in REGISTRY.items():
        table = kernel_table(op, kernels, dtypes, unsupported.get(name, frozenset()))
        if table is None:
            continue
        k = tuple(kernels[n] for n in op.kernels) if op.rule is not None else kernels[op.kernels[0]]
        out[name] = (k, table)
    return out
