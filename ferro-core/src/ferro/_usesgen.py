"""Derive what each decomposition calls: ``python -m ferro._usesgen [--check]``.

The capability resolver (``ferro.backends._resolve``) answers whether an op's
decomposition runs on a device by resolving the ops and raw kernels the
decomposition calls. That list is derived here, not written by hand: every op
with a decomposition is run on its conformance samples
(``ferro.testing._opinfo``) at every dtype its rule takes, on the CPU backend
(the one with the most kernels), with the op's own kernel hidden so that the
decomposition runs. While it runs, the device's tables are recording views:

- ``device._ops`` (op -> (kernel, dtype table)), and ``device._fast`` where
  the device has it: each op whose table is read at an input dtype, which is
  how every op's fast path starts;
- ``device._kernels``: each raw kernel taken by ``[]`` (``cast``, ``full``,
  ``copy_``...); a ``.get()`` is a probe with a way around a missing kernel
  and is not a use;
- a profile hook notes where another op's decomposition is entered (a
  composite calls its decomposition directly, without reading a table).

Only direct calls count: what runs inside an op the decomposition calls (its
kernel's casts, a nested decomposition's own parts) belongs to that op, which
the resolver resolves in turn. Each use is written with the dtype it runs at
relative to the op's compute dtype: ``"exp"`` (the same), ``"abs:real"`` (the
real dtype of a complex compute dtype), ``"where:input"`` (the op's input
dtype), ``"mul:float"`` (the default float dtype), ``"eq:bool"`` (a fixed
dtype). Input dtypes with the same list share a row. The table is written to
``ferro/backends/uses.json``; ``--check`` (run by ``tests/test_uses_table.py``)
compares instead of writing, naming the ops whose rows changed.

Branches the samples never reach are not seen: an op keeps those uses by hand
(``OpDef(uses=...)``), with a comment saying why; the resolver adds them to
the derived ones. An op whose decomposition branches on the device
(:data:`BY_DEVICE`) is left out, its record's ``uses`` being all of it; so is
a plugin's op (its plugin may not be installed where the table is made).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import numpy as np

import ferro
from ferro._core.dtypes import DType, by_name, complex64, complex128, float32, float64, get_default_dtype
from ferro._core.records import REGISTRY, OpDef
from ferro._core.tensor import Tensor
from ferro.backends import _registry
from ferro.testing._opinfo import OP_DB, OpInfo, samples

__all__ = ["derive", "derive_op", "relation", "render", "TABLE_PATH", "main"]

#: Where the derived table lives (read by ``ferro.backends._resolve`` on the first capability query).
TABLE_PATH = Path(ferro.__file__).resolve().parent / "backends" / "uses.json"

_REAL_OF = {complex64: float32, complex128: float64}

#: Ops whose decomposition branches on the device, not on the dtype, so that what cpu runs says nothing of
#: another device: left out of the table, their records list their uses by hand.
BY_DEVICE = frozenset({"randperm"})  # float64 keys where the device has float64, else float32


def relation(used: DType, input: DType, compute: DType) -> str:
    """How dtype ``used`` relates to an op's ``input`` and ``compute`` dtypes, as written after ``:``."""
    if used is compute:
        return ""
    if _REAL_OF.get(compute) is used:
        return "real"
    if used is input:
        return "input"
    if used is get_default_dtype():
        return "float"
    return used.name


class _Recorder:
    """The uses seen during runs of one op's decomposition (see the module docstring)."""

    def __init__(self, op: OpDef, decompositions: dict[CodeType, str], fast: dict[CodeType, str | None]) -> None:
        self.op = op
        self.root = _innermost(op.decomposition).__code__
        self.decompositions = decompositions  # the code of every decomposition -> its op
        self.fast = fast  # the code of every op's public function -> the op (None: shared by several)
        #: (op or kernel, dtype or None: the compute dtype) in the order seen, each with the public function's
        #: frame it was entered by where only that entry saw it (kept unless a table read inside follows)
        self.events: list[tuple[tuple[str, DType | None], FrameType | None]] = []
        self.read: set[FrameType] = set()  # entered public functions that went on to read their table

    def uses(self) -> list[tuple[str, DType | None]]:
        """What was seen, in order: an op entered that refused before reading its table counts too."""
        return list(dict.fromkeys(key for key, entry in self.events if entry is None or entry not in self.read))

    def _between(self, frame: FrameType | None) -> list[FrameType] | None:
        """The frames from ``frame`` up to the op's decomposition (None: not inside it)."""
        out = []
        while frame is not None:
            if frame.f_code is self.root:
                return out
            out.append(frame)
            frame = frame.f_back
        return None

    def _direct(self, between: list[FrameType] | None, name: str) -> bool:
        """Whether a call found under ``between`` is the decomposition's own call of ``name``: inside no other
        decomposition, and inside no op's public function but ``name``'s."""
        if between is None or any(f.f_code in self.decompositions for f in between):
            return False
        fast = [f for f in between if f.f_code in self.fast]
        if {self._owner(f) for f in fast} <= {name, None}:
            self.read.update(fast)
            return True
        return False

    def op_read(self, name: str, dtype: DType) -> None:
        if name != self.op.name and self._direct(self._between(sys._getframe(2)), name):
            self.events.append(((name, dtype), None))

    def kernel_read(self, name: str) -> int | None:
        """Note raw kernel ``name`` taken by the decomposition; returns the event's slot where the dtype it runs
        at is to be noted when it is called (:meth:`kernel_called`)."""
        between = self._between(sys._getframe(2))
        if between is None or any(f.f_code in self.decompositions for f in between):
            return None
        owners = {self._owner(f) for f in between if f.f_code in self.fast}
        if not owners:
            self.events.append(((name, None), None))
            return len(self.events) - 1
        elif len(owners) == 1 and (owner := owners.pop()) is not None and owner != self.op.name and \
                name in REGISTRY[owner].kernels and self._direct(between, owner):  # an op's own kernel (cast)
            self.events.append(((owner, None), None))
        return None

    def kernel_called(self, slot: int, dtype: DType | None) -> None:
        """The raw kernel of event ``slot`` ran on arrays of ``dtype`` (a decomposition computing a half in
        float32 calls ``linalg_eig`` at float32, not at its compute dtype)."""
        (name, seen), entry = self.events[slot]
        if seen is None and dtype is not None:
            self.events[slot] = ((name, dtype), entry)
    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        name = self.decompositions.get(frame.f_code)
        if name is not None:  # a composite calls its decomposition without reading a table
            if name != self.op.name and self._direct(self._between(frame.f_back), name):
                self.events.append(((name, _first_dtype(frame)), None))
        elif frame.f_code in self.fast:  # an op entered: a use even where it refuses before reading its table
            owner = self._owner(frame)
            between = self._between(frame.f_back)
            if owner is not None and owner != self.op.name and between is not None and \
                    not any(f.f_code in self.decompositions or f.f_code in self.fast for f in between):
                self.events.append(((owner, _first_dtype(frame)), frame))

    def _owner(self, frame: FrameType) -> str | None:
        """The op whose public function ``frame`` runs (None: cannot be told)."""
        name = self.fast[frame.f_code] or _named_in(frame)
        return name if name in REGISTRY else None


def _named_in(frame: FrameType) -> str | None:
    """The op a public function's frame runs, where its closure names it (functions built per op)."""
    loc = frame.f_locals
    op = loc.get("op")
    if isinstance(op, OpDef):
        return op.name
    name = loc.get("name")
    return name if isinstance(name, str) else None


def _first_dtype(frame: FrameType) -> DType | None:
    """The dtype of the first tensor among a frame's arguments (looking into lists of tensors)."""
    code = frame.f_code
    for var in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
        v = frame.f_locals.get(var)
        for t in (v if isinstance(v, (list, tuple)) else (v,)):
            if isinstance(t, Tensor):
                return t._dtype
    return None


class _Table(dict):  # type: ignore[type-arg]
    """A dtype table that tells the recorder which dtype it is read at."""

    def __init__(self, name: str, table: dict[DType, Any], rec: _Recorder) -> None:
        super().__init__(table)
        self.name, self.rec = name, rec

    def __getitem__(self, key: DType) -> Any:
        self.rec.op_read(self.name, key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, DType):
            self.rec.op_read(self.name, key)
        return super().__contains__(key)

    def get(self, key: DType, default: Any = None) -> Any:
        self.rec.op_read(self.name, key)
        return super().get(key, default)


class _Ops(dict):  # type: ignore[type-arg]
    """The device's op table without the op being derived, its dtype tables recording."""

    def __init__(self, ops: dict[str, Any], rec: _Recorder) -> None:
        super().__init__({n: (k, _Table(n, t, rec)) for n, (k, t) in ops.items() if n != rec.op.name})


class _Kernels(dict):  # type: ignore[type-arg]
    """The device's raw kernels, recording each taken by ``[]``."""

    def __init__(self, kernels: dict[str, Any], rec: _Recorder) -> None:
        super().__init__(kernels)
        self.rec = rec

    def __getitem__(self, key: str) -> Any:
        slot = self.rec.kernel_read(key)
        kernel = super().__getitem__(key)
        if slot is None:
            return kernel
        rec = self.rec

        def noting(*args: Any, **kwargs: Any) -> Any:
            rec.kernel_called(slot, _array_dtype(args))
            return kernel(*args, **kwargs)
        return noting


def _array_dtype(args: tuple[Any, ...]) -> DType | None:
    """The dtype a raw kernel runs at: its first array argument's that is not bool (a mask, a condition), else
    its first array's (looking into lists of arrays)."""
    found = [a.dtype for v in args for a in (v if isinstance(v, (list, tuple)) else (v,))
             if isinstance(a, (np.ndarray, np.generic))]
    dt = next((d for d in found if d != np.bool_), found[0] if found else None)
    return None if dt is None else by_name.get(dt.name)


def _infos() -> dict[str, list[OpInfo]]:
    out: dict[str, list[OpInfo]] = {}
    for info in OP_DB:
        out.setdefault(info.name, []).append(info)
    return out


def _np_name(dtype: DType) -> str:
    """The NumPy dtype the samples are drawn in (bfloat16's in float32)."""
    return "float32" if dtype.name == "bfloat16" else dtype.name


def _calls(infos: list[OpInfo], dtype: DType, dev: Any) -> Iterator[tuple[OpInfo, tuple[Any, ...], dict[str, Any]]]:
    rng = np.random.default_rng(0)
    for info in infos:
        for s in samples(info, _np_name(dtype), rng):
            args = tuple(ferro.tensor(a, device=dev).to(dtype) if isinstance(a, np.ndarray) else a for a in s.args)
            yield info, args, s.kwargs


def derive_op(op: OpDef, infos: list[OpInfo], dev: Any, decompositions: dict[CodeType, str],
              fast: dict[CodeType, str | None]) -> dict[DType, tuple[str, ...]]:
    """Per input dtype of ``op``, the uses its decomposition made on ``dev`` over its samples."""
    out: dict[DType, tuple[str, ...]] = {}
    # the tables the device's hot paths read (``_fast``, where the device has it, is ``_ops`` while no
    # dispatch layer is on)
    names = [n for n in ("_ops", "_fast", "_kernels") if hasattr(type(dev), n)]
    saved = {n: getattr(dev, n) for n in names}
    for dtype, (compute, _) in op.table.items():
        if dtype not in dev._dtypes:
            continue
        rec = _Recorder(op, decompositions, fast)
        for info, args, kwargs in _calls(infos, dtype, dev):
            views = _Ops(saved["_ops"], rec)
            for n in names:
                setattr(dev, n, _Kernels(saved[n], rec) if n == "_kernels" else views)
            sys.setprofile(rec.profile)
            try:
                info(ferro, *args, **kwargs)
            except Exception:  # a refusal (a DTypeError inside...): the uses up to it count, as they ran
                pass
            finally:
                sys.setprofile(None)
                for n in names:
                    setattr(dev, n, saved[n])
        uses = (n + (f":{rel}" if (rel := relation(d, dtype, compute) if d is not None else "") else "")
                for n, d in rec.uses())
        out[dtype] = tuple(dict.fromkeys(uses))
    return out


def derive() -> dict[str, list[list[Any]]]:
    """The table: op -> rows of [input dtype names, uses], for every ferro op with a decomposition."""
    dev = ferro.device("cpu")
    dev.backend  # binds its tables  # noqa: B018
    overridden = sorted(set(_registry._state.overrides.get("cpu", {})) & set(dev.backend.kernels(dev.index)))
    if overridden:  # a plugin's kernel in place of cpu's own would change what runs, and so the table
        raise RuntimeError(f"plugins override cpu kernels here ({', '.join(overridden)}): derive without them")
    decompositions: dict[CodeType, str] = {}
    for op in REGISTRY.values():
        if op.decomposition is not None:
            decompositions.setdefault(_innermost(op.decomposition).__code__, op.name)
    fast: dict[CodeType, str | None] = {}
    for op in REGISTRY.values():
        for code in _wrapped_codes(op.fn):
            if code not in decompositions:  # a composite's public function wraps its decomposition
                fast[code] = op.name if fast.get(code, op.name) == op.name else None
    infos = _infos()
    table: dict[str, list[list[Any]]] = {}
    for name in sorted(REGISTRY):
        op = REGISTRY[name]
        if op.decomposition is None or op.plugin or name in BY_DEVICE:
            continue
        per = derive_op(op, infos.get(name, []), dev, decompositions, fast)
        rows: dict[tuple[str, ...], list[str]] = {}
        for d, uses in per.items():
            rows.setdefault(uses, []).append(d.name)
        table[name] = [[" ".join(ds), list(uses)] for uses, ds in rows.items()]
    return table


def _innermost(fn: Any) -> Any:
    """The function under ``fn``'s wrappers (``functools.wraps``): shared wrappers have one code for many ops."""
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


def _wrapped_codes(fn: Any) -> Iterator[CodeType]:
    while fn is not None:
        code = getattr(fn, "__code__", None)
        if code is not None:
            yield code
        fn = getattr(fn, "__wrapped__", None)


def render(table: dict[str, list[list[Any]]]) -> str:
    """The JSON text of the table: one op per line, sorted, so that diffs read well."""
    lines = [f"  {json.dumps(name)}: {json.dumps(rows)}" for name, rows in sorted(table.items())]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    """Write the table, or with ``--check`` report whether the checked-in one is up to date."""
    p = argparse.ArgumentParser(prog="python -m ferro._usesgen", description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="compare with the checked-in table instead of writing")
    args = p.parse_args(argv)
    table = derive()
    text = render(table)
    if args.check:
        old = TABLE_PATH.read_text() if TABLE_PATH.exists() else ""
        if old != text:
            was = json.loads(old) if old else {}
            ops = sorted(n for n in set(was) | set(table) if was.get(n) != table.get(n))
            print(f"{TABLE_PATH} is out of date for {', '.join(ops) or 'its layout'}: run python -m ferro._usesgen",
                  file=sys.stderr)
            return 1
        return 0
    TABLE_PATH.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
