"""ferro's dtypes and PyTorch's type-promotion rules.

Pure Python: no array library is imported here, so ``import ferro`` stays
light. Backends map each :class:`DType` to their native dtype.
"""

from __future__ import annotations

__all__ = [
    "DType", "bool_", "uint8", "int8", "int16", "int32", "int64", "float16",
    "bfloat16", "float32", "float64", "complex64", "complex128", "all_dtypes",
    "promote_types", "get_default_dtype", "set_default_dtype", "can_cast",
    "result_type_scalar", "result_type", "as_dtype",
]

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


class DType:
    """A tensor element type, e.g. ``ferro.float32``.

    Instances are singletons: compare them with ``is`` or ``==``.
    """

    __slots__ = ("__weakref__", "category", "itemsize", "kind", "name")

    def __init__(self, name: str, itemsize: int, kind: str) -> None:
        self.name = name
        self.itemsize = itemsize
        self.kind = kind  # 'b' bool, 'u' unsigned, 'i' signed, 'f' float, 'c' complex
        self.category = _CATEGORY[kind]

    @property
    def is_floating_point(self) -> bool:
        """True for float16, bfloat16, float32 and float64."""
        return self.kind == "f"

    @property
    def is_complex(self) -> bool:
        """True for complex64 and complex128."""
        return self.kind == "c"

    @property
    def is_signed(self) -> bool:
        """True unless the dtype is bool or unsigned."""
        return self.kind not in "bu"

    @property
    def itemsize_bits(self) -> int:
        """Size of one element in bits."""
        return self.itemsize * 8

    def __repr__(self) -> str:
        return f"ferro.{self.name}"

    def __reduce__(self) -> str:
        return self.name if self.name != "bool" else "bool_"


bool_ = DType("bool", 1, "b")
uint8 = DType("uint8", 1, "u")
int8 = DType("int8", 1, "i")
int16 = DType("int16", 2, "i")
int32 = DType("int32", 4, "i")
int64 = DType("int64", 8, "i")
float16 = DType("float16", 2, "f")
bfloat16 = DType("bfloat16", 2, "f")
float32 = DType("float32", 4, "f")
float64 = DType("float64", 8, "f")
complex64 = DType("complex64", 8, "c")
complex128 = DType("complex128", 16, "c")

all_dtypes: tuple[DType, ...] = (bool_, uint8, int8, int16, int32, int64, float16,
                                 bfloat16, float32, float64, complex64, complex128)
by_name: dict[str, DType] = {d.name: d for d in all_dtypes}
by_name.update({"half": float16, "float": float32, "double": float64, "long": int64,
                "int": int32, "short": int16, "cfloat": complex64, "cdouble": complex128})

_default_float = [float32]


def as_dtype(value: object, op: str, arg: str = "dtype") -> DType | None:
    """``value`` as a DType: a DType, its name (``"float32"``, ``"ferro.float32"``, ``"double"``) or None.

    Anything else is a TypeError naming ``op`` and the argument, so that every function taking a dtype
    accepts the same spellings and refuses the rest with the same words.
    """
    if value is None or isinstance(value, DType):
        return value
    if isinstance(value, str):
        d = by_name.get(value.removeprefix("ferro."))
        if d is not None:
            return d
    raise TypeError(f"{op}(): argument '{arg}' must be a ferro dtype such as ferro.float32 or its name "
                    f"('float32'), not {value!r}")


def get_default_dtype() -> DType:
    """The dtype of floating tensors made from Python floats (float32 unless changed)."""
    return _default_float[0]


def get_default_complex_dtype() -> DType:
    """The dtype of complex tensors made from Python complex numbers (follows the default float dtype)."""
    return _SCALAR_DEFAULT[complex]


def set_default_dtype(dtype: DType) -> None:
    """Set the default floating dtype (float16, bfloat16, float32 or float64; a DType or its name)."""
    if isinstance(dtype, str) and dtype.removeprefix("ferro.") in by_name:
        dtype = by_name[dtype.removeprefix("ferro.")]
    if not isinstance(dtype, DType) or not dtype.is_floating_point:
        raise TypeError(f"set_default_dtype needs a floating dtype, got {dtype!r}")
    _default_float[0] = dtype
    _SCALAR_DEFAULT[float] = dtype
    _SCALAR_DEFAULT[complex] = complex128 if dtype is float64 else complex64


def _promote_pair(a: DType, b: DType) -> DType:
    if a is b:
        return a
    if a.category != b.category:
        if a.category == 3 or b.category == 3:  # complex with float64 widens
            c, o = (a, b) if a.category == 3 else (b, a)
            return complex128 if (c is complex128 or o is float64) else complex64
        return a if a.category > b.category else b
    if a.kind == "f":
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize > b.itemsize else b
    if a.kind == "c":
        return a if a.itemsize > b.itemsize else b
    # integers: uint8 is the only unsigned type
    if a.kind == b.kind:
        return a if a.itemsize > b.itemsize else b
    signed = a if a.kind == "i" else b
    return int16 if signed.itemsize == 1 else signed


_PROMOTE: dict[tuple[DType, DType], DType] = {
    (a, b): _promote_pair(a, b) for a in all_dtypes for b in all_dtypes
}


def promote_types(a: DType, b: DType) -> DType:
    """The smallest dtype both ``a`` and ``b`` convert to, by PyTorch's rules.

    >>> promote_types(uint8, int8)
    ferro.int16
    >>> promote_types(float16, bfloat16)
    ferro.float32
    """
    return _PROMOTE[a, b]


_SCALAR_DEFAULT: dict[type, DType] = {bool: bool_, int: int64, float: float32, complex: complex64}
_SCALAR_CATEGORY = {bool: 0, int: 1, float: 2, complex: 3}


def result_type_scalar(dtype: DType, scalar: object) -> DType:
    """Dtype of ``tensor op scalar``: a Python scalar only lifts the category.

    ``int32 tensor + 2`` stays int32; ``int32 tensor + 2.5`` is the default
    float dtype; ``float16 tensor + 2.5`` stays float16 (PyTorch's wrapped numbers).
    """
    t = type(scalar)
    cat = _SCALAR_CATEGORY.get(t)
    if cat is None:
        for base, c in _SCALAR_CATEGORY.items():  # numpy scalars, IntEnum, ...
            if isinstance(scalar, base):
                t, cat = base, c
        if cat is None:
            raise TypeError(f"expected a Tensor or a Python number, got {type(scalar).__name__}")
    if cat <= dtype.category:
        return dtype
    if cat == 3 and dtype is float64:
        return complex128
    return _SCALAR_DEFAULT[t]


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    # PyTorch's combine_categories: a lower tier only lifts the category.
    if higher is None:
        return lower
    if lower is None or higher.is_complex:
        return higher
    if lower.is_complex:
        if higher.is_floating_point:
            return complex128 if higher is float64 else complex64
        return lower
    if higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return _PROMOTE[higher, lower]
    return higher


def result_type(dims: list[DType], zero_dims: list[DType], scalars: list[object]) -> DType:
    """PyTorch's result type of an op over tensors with dimensions, 0-d tensors and Python scalars.

    Tensors with dimensions decide the dtype; 0-d tensors and then Python
    scalars only lift its category (``int32 tensor + float64 0-d`` is float64,
    ``float32 tensor + float64 0-d`` stays float32).
    """
    def fold(ds: list[DType]) -> DType | None:
        out: DType | None = None
        for d in ds:
            out = d if out is None else _PROMOTE[out, d]
        return out
    wrapped: DType | None = None
    for s in scalars:
        d = result_type_scalar(bool_, s)  # a scalar's own default dtype
        wrapped = d if wrapped is None else _PROMOTE[wrapped, d]
    out = _combine(fold(dims), _combine(fold(zero_dims), wrapped))
    if out is None:
        raise TypeError("result_type needs at least one tensor or scalar")
    return out


def can_cast(src: DType, dst: DType) -> bool:
    """Whether an in-place op may write a ``src`` result into a ``dst`` tensor.

    PyTorch's rule: only a lower-or-equal category may be cast down into
    (float into int, or complex into float, is refused).
    """
    return src.category <= dst.category
