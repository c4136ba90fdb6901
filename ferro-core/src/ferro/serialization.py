"""Saving and loading tensors and state dicts in the safetensors format, never with pickle.

``ferro.save(obj, f)`` takes a tensor or any nesting of dicts, lists and tuples
of tensors, Python numbers, strings, bools, None and bytes (RNG states are
bytes). Tensors go into the safetensors tensor section under flattened keys
(``"model.weight"``), so any safetensors reader sees them; the structure and the
non-tensor leaves go into the header's ``__metadata__`` as JSON under the key
``"ferro"``. ``ferro.load(f, map_location=None)`` rebuilds the object, every
tensor on the device it was saved from (or where ``map_location`` says).

A file is only ever parsed, never executed: the header is checked (length,
JSON, dtypes, shapes against byte counts, offsets in bounds and disjoint) before
any tensor is made, and anything wrong raises :class:`ferro.errors.SerializationError`.

>>> import io, ferro
>>> buf = io.BytesIO()
>>> ferro.save({"w": ferro.ones(2), "step": 3}, buf)
>>> _ = buf.seek(0)
>>> ferro.load(buf)
{'w': tensor([1., 1.]), 'step': 3}

safetensors has no complex128: such tensors are stored as float64 with a
trailing dimension of 2 (real, imaginary), and ferro's metadata marks them.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import itertools
import os
import re
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ._core.dtypes import by_name
from ._core.layouts import LayoutTensor
from .errors import SerializationError

if TYPE_CHECKING:
    from ._core.tensor import Tensor

__all__ = ["save", "load"]

#: safetensors dtype code -> (itemsize, ferro dtype name or None where ferro has none).
_ST_DTYPES: dict[str, tuple[int, str | None]] = {
    "BOOL": (1, "bool"), "U8": (1, "uint8"), "I8": (1, "int8"), "I16": (2, "int16"), "I32": (4, "int32"),
    "I64": (8, "int64"), "F16": (2, "float16"), "BF16": (2, "bfloat16"), "F32": (4, "float32"),
    "F64": (8, "float64"), "C64": (8, "complex64"),
    "U16": (2, None), "U32": (4, None), "U64": (8, None), "F8_E4M3": (1, None), "F8_E5M2": (1, None),
    "F8_E8M0": (1, None), "F4": (1, None), "F6_E2M3": (1, None), "F6_E3M2": (1, None),
}
_MAX_HEADER = 100_000_000  # as the safetensors library: a larger header is refused before reading it
_FORMAT_KEY, _TREE_KEY = "format", "ferro"
_MAX_NDIM = 64  # NumPy's limit


# -- save ------------------------------------------------------------------------------------------


class _Encoder:
    """Turns an object into a JSON tree, collecting its tensors as contiguous little-endian arrays."""

    def __init__(self) -> None:
        self.arrays: dict[str, Any] = {}
        self.names: dict[int, str] = {}  # id(tensor) -> name: the same tensor twice is stored once
        self.keep: list[Any] = []  # keeps those ids valid while encoding

    def encode(self, obj: Any, path: tuple[str, ...]) -> Any:
        from ._core.device import device
        from ._core.dtypes import DType
        from ._core.tensor import Tensor
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return {"f": float.__repr__(float(obj))}
        if isinstance(obj, complex):
            return {"c": [float.__repr__(obj.real), float.__repr__(obj.imag)]}
        if isinstance(obj, (bytes, bytearray)):
            return {"b": base64.b64encode(bytes(obj)).decode("ascii")}
        if isinstance(obj, Tensor):
            parts = getattr(obj, "__ferro_parts__", None)  # a layout tensor (quantized): its parts, by kind
            if parts is not None and getattr(obj, "kind", None) in _LAYOUT_LOADERS:
                return {"Y": [obj.kind, self.encode(parts(), path)]}  # type: ignore[attr-defined]
            if isinstance(obj, LayoutTensor):
                where = "the object" if not path else "obj" + "".join(f"[{p!r}]" for p in path)
                raise SerializationError(f"save(): {where} is a {obj.describes} tensor, which ferro.save does not "
                                         f"store; call {obj.way_out} first")
            return self._tensor(obj, path)
        if isinstance(obj, dict):
            return {"D": [[self.encode(k, (*path, "<key>")), self.encode(v, (*path, str(k)))]
                          for k, v in obj.items()]}
        if isinstance(obj, (list, tuple)):
            items = [self.encode(v, (*path, str(i))) for i, v in enumerate(obj)]
            return {"U" if isinstance(obj, tuple) else "L": items}
        if isinstance(obj, DType):
            return {"dtype": obj.name}
        if isinstance(obj, device):
            return {"device": str(obj)}
        where = "the object" if not path else "obj" + "".join(f"[{p!r}]" for p in path)
        raise SerializationError(
            f"ferro.save cannot store {where}, a {type(obj).__module__}.{type(obj).__qualname__}: it stores tensors, "
            "Python numbers, strings, bools, None, bytes, dtypes, devices and dicts/lists/tuples of them "
            "(never pickled objects)")

    def _tensor(self, t: Tensor, path: tuple[str, ...]) -> dict[str, Any]:
        np = sys.modules.get("numpy") or __import__("numpy")
        name = self.names.get(id(t))
        node: dict[str, Any] = {}
        if name is None:
            name = base = ".".join(path) or "tensor"
            n = 1
            while name in self.arrays:
                name, n = f"{base}#{n}", n + 1
            arr = np.asarray(t._device.backend.to_numpy(t._data))
            if not arr.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
                arr = arr.copy(order="C")
            if t._dtype.name == "complex128":
                arr = arr.reshape(-1).view(np.float64).reshape((*arr.shape, 2))
            elif arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and sys.byteorder == "big"):
                arr = arr.byteswap().view(arr.dtype.newbyteorder("<"))
            self.arrays[name] = arr
            self.names[id(t)] = name
            self.keep.append(t)
        node["T"] = name
        if str(t._device) != "cpu":
            node["device"] = str(t._device)
        if t._dtype.name == "complex128":
            node["dtype"] = "complex128"
        if t._rg:
            node["rg"] = True
        return node


def save(obj: Any, f: Any) -> None:
    """Save ``obj`` to ``f`` (a path or a binary file object) in the safetensors format.

    ``obj`` is a tensor or any nesting of dicts, lists and tuples of tensors, Python numbers, strings,
    bools, None and bytes. Tensors on any device are copied to the host for writing (views and tensors
    sharing storage are stored as copies; the same tensor object twice is stored once). A path is
    written atomically and durably: the bytes go to a temporary file beside it, which is flushed to disk
    and then renamed over the path, so a crash or power loss mid-write leaves the previous file in
    place; threads and processes may save to one path at once (the last rename wins). Temporary files
    that killed writers left behind are removed by the next save to that path.
    """
    import json  # not at import: ferro's import stays light

    from safetensors.numpy import save as st_save
    enc = _Encoder()
    tree = enc.encode(obj, ())
    data = st_save(enc.arrays, metadata={_FORMAT_KEY: "ferro", _TREE_KEY: json.dumps(tree, allow_nan=False)})
    if isinstance(f, (str, os.PathLike)):
        _write_atomically(os.fspath(f), data)
    elif hasattr(f, "write"):
        f.write(data)
    else:
        raise TypeError(f"ferro.save: f must be a path or a binary file object, got {type(f).__name__}")


# -- save: atomic, durable writes to a path ---------------------------------------------------------

#: The temporary file of a save to ``path`` is ``f"{path}.tmp-{pid}-{host}-{random}"``: unique per call, and
#: telling whether its writer is gone (``pid`` is not running on this ``host``) so a later save can remove it.
_TMP = re.compile(r"\.tmp-(\d+)-([0-9a-f]{8})-[0-9a-f]+\Z")
_OLD_TMP = re.compile(r"\.tmp(\d+)\Z")  # what ferro wrote before: f"{path}.tmp{pid}"
@functools.cache
def _host() -> str:
    """This host's tag in temporary file names (hashed: the name stays short and tells nothing more).
    hashlib and socket are imported here, at the first save, not at ``import ferro``."""
    import hashlib
    import socket
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _write_atomically(path: str, data: bytes | bytearray) -> None:
    _remove_stale_temporaries(path)
    while True:
        tmp = f"{path}.tmp-{os.getpid()}-{_host()}-{os.urandom(6).hex()}"
        try:  # O_EXCL: never another writer's file; mode 0o666 as open() would (the umask applies)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
            break
        except FileExistsError:
            continue
    try:
        with open(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())  # the bytes are on disk before the rename makes them the file
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    _fsync_directory(os.path.dirname(path) or ".")  # and the rename itself survives a power loss


def _fsync_directory(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # Windows cannot open a folder; its rename is durable once it returns
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a folder
    finally:
        os.close(fd)


def _writer_is_gone(pid: int) -> bool:
    if pid == os.getpid() or sys.platform == "win32":  # (os.kill on Windows would terminate the process)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OSError, OverflowError):
        return False  # alive (another user's), or not knowable here: keep the file
    return False


def _remove_stale_temporaries(path: str) -> None:
    """Remove the temporary files that writers of ``path`` on this host left when they were killed."""
    folder, base = os.path.split(path)
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return
    for name in names:
        if not name.startswith(base + ".tmp"):
            continue
        m = _TMP.match(name, len(base))
        old = _OLD_TMP.match(name, len(base))
        if m is not None and m.group(2) == _host():
            pid = int(m.group(1))
        elif old is not None:
            pid = int(old.group(1))
        else:
            continue
        if _writer_is_gone(pid):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(folder, name))


# -- load: parse and check the file ----------------------------------------------------------------


def _fail(msg: str) -> SerializationError:
    return SerializationError(f"not a valid safetensors file: {msg}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _fail(f"the header names {k!r} twice")
        out[k] = v
    return out


def _read(f: Any) -> tuple[dict[str, Any], bytearray]:
    """The header (checked JSON) and the data section of a safetensors file."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _read(fh)
    if not hasattr(f, "read"):
        raise TypeError(f"ferro.load: f must be a path or a binary file object, got {type(f).__name__}")
    head = _read_exact(f, 8)
    if not isinstance(head, bytes):
        raise TypeError("ferro.load: the file object must be opened in binary mode")
    if len(head) < 8:
        raise _fail(f"the file has {len(head)} bytes, fewer than the 8 of the header length")
    n = int.from_bytes(head, "little")
    if n > _MAX_HEADER and (head[:1] == b"\x80" or head[:4] == b"PK\x03\x04"):
        raise SerializationError(
            "this looks like a pickle or zip (torch.save) checkpoint, not safetensors; ferro never unpickles "
            "files, since unpickling runs code from the file. Convert it where you trust it, e.g. with "
            "safetensors.torch.save_file(torch.load(path, weights_only=True), out)")
    if n > _MAX_HEADER:
        raise _fail(f"the header length {n} is larger than the {_MAX_HEADER} bytes allowed")
    raw = _read_exact(f, n)
    if len(raw) < n:
        raise _fail(f"the header length says {n} bytes but the file ends after {len(raw)} of them "
                    "(header past the end of the file)")
    header = _json(raw, "the header")
    if not isinstance(header, dict):
        raise _fail(f"the header must be a JSON object, got {type(header).__name__}")
    data = _rest(f)
    with _the_files_fault():
        _check(header, len(data))
    return header, data


@contextlib.contextmanager
def _the_files_fault() -> Iterator[None]:
    """A safety net: whatever the checks above let through and then fails is the file's error, not ferro's."""
    try:
        yield
    except SerializationError:
        raise
    except RecursionError:
        raise _fail("it is nested too deeply") from None
    except (ValueError, TypeError, RuntimeError, OverflowError, IndexError, KeyError) as e:
        raise _fail(f"{type(e).__name__}: {e}") from e


def _json(raw: bytes | str, what: str) -> Any:
    """``raw`` parsed as JSON; anything wrong (encoding, syntax, nesting, huge numbers) is the file's error."""
    import json
    try:
        return json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw, object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise _fail(f"{what} is nested too deeply to be parsed") from None
    except ValueError as e:  # UnicodeDecodeError, JSONDecodeError, an integer of more than 4300 digits
        raise _fail(f"{what} is not valid JSON ({e})") from None


def _read_exact(f: Any, n: int) -> Any:
    """``n`` bytes of ``f``, fewer only at its end (a raw stream may return less per read)."""
    out = f.read(n)
    if not isinstance(out, bytes) or len(out) == n:
        return out
    parts = [out]
    got = len(out)
    while got < n:
        more = f.read(n - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _rest(f: Any) -> bytearray:
    """The rest of ``f`` in a writable buffer (loaded tensors view it), read in place where ``f`` can seek."""
    try:
        pos = f.tell()
        end = f.seek(0, 2)
        f.seek(pos)
        readinto = f.readinto
    except (AttributeError, OSError, ValueError):
        return bytearray(f.read())
    buf = bytearray(max(end - pos, 0))
    view, got = memoryview(buf), 0
    while got < len(buf):
        k = readinto(view[got:])
        if not k:
            break
        got += k
    view.release()
    if got < len(buf):
        del buf[got:]
    return buf


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check(header: dict[str, Any], size: int) -> None:
    """Every entry well-formed, its bytes inside the data section, no two entries overlapping."""
    spans = []
    for name, e in header.items():
        if name == "__metadata__":
            if not isinstance(e, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in e.items()):
                raise _fail("__metadata__ must map strings to strings")
            continue
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise _fail(f"tensor {name!r} must have exactly dtype, shape and data_offsets, got {e!r:.200}")
        dtype, shape, offsets = e["dtype"], e["shape"], e["data_offsets"]
        if dtype not in _ST_DTYPES:
            raise _fail(f"tensor {name!r} has unknown dtype {dtype!r}; known: {', '.join(_ST_DTYPES)}")
        if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
            raise _fail(f"tensor {name!r} has shape {shape!r:.200}; expected a list of non-negative integers")
        if len(shape) > _MAX_NDIM:
            raise _fail(f"tensor {name!r} has {len(shape)} dimensions; at most {_MAX_NDIM} are supported")
        extent = _ST_DTYPES[dtype][0]
        for s in shape:
            extent *= max(s, 1)
        if extent >= 2**63:  # even when another dimension is 0, no array can have these sizes
            raise _fail(f"tensor {name!r} has shape {shape!r:.200}, too large for any array")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_int(o) for o in offsets)
                and 0 <= offsets[0] <= offsets[1]):
            raise _fail(f"tensor {name!r} has data_offsets {offsets!r:.200}; expected [begin, end] with "
                        "0 <= begin <= end")
        begin, end = offsets
        numel = 1
        for s in shape:
            numel *= s
        nbytes = numel * _ST_DTYPES[dtype][0]
        if nbytes != end - begin:
            raise _fail(f"tensor {name!r} of dtype {dtype} and shape {shape} needs {nbytes} bytes but its "
                        f"data_offsets [{begin}, {end}] span {end - begin}")
        if end > size:
            raise _fail(f"tensor {name!r} needs bytes up to offset {end} but the data section has only {size} "
                        "(offsets out of bounds, or the file is truncated)")
        if end > begin:
            spans.append((begin, end, name))
    spans.sort()
    for (_, e1, a), (b2, _, b) in itertools.pairwise(spans):
        if b2 < e1:
            raise _fail(f"tensors {a!r} and {b!r} overlap in the data section")


# -- load: build the object -----------------------------------------------------------------------


class _Decoder:
    """Rebuilds the object from ferro's JSON tree, making each named tensor once."""

    def __init__(self, header: dict[str, Any], data: bytearray, map_location: Any) -> None:
        self.header, self.data, self.map_location = header, data, map_location
        self.made: dict[tuple[str, str], Tensor] = {}

    def device_for(self, saved: str) -> Any:
        from ._core.device import device
        loc = self.map_location
        if isinstance(loc, dict):
            loc = loc.get(saved, saved)
        target = device(saved if loc is None else loc)
        try:
            target.backend  # noqa: B018
        except Exception as e:
            raise SerializationError(f"a tensor was saved on {saved}, and device {target} cannot be used here; "
                                     f"pass map_location='cpu' to load it elsewhere ({e})") from e
        return target

    def tensor(self, name: str, saved_device: str = "cpu", marker: str | None = None,
               requires_grad: bool = False) -> Tensor:
        key = (name, saved_device)
        t = self.made.get(key)
        if t is not None:
            return t
        import numpy as np

        from ._core.host import numpy_dtype
        from ._creation import from_numpy
        e = self.header.get(name)
        if name == "__metadata__" or not isinstance(e, dict):
            raise _fail(f"ferro's metadata refers to tensor {name!r}, which is not in the file")
        code, shape, (begin, end) = e["dtype"], e["shape"], e["data_offsets"]
        fname = _ST_DTYPES[code][1]
        if fname is None:
            raise SerializationError(f"tensor {name!r} has safetensors dtype {code}, which ferro has no dtype for")
        npd = numpy_dtype(by_name[fname]).newbyteorder("<")
        arr = np.frombuffer(self.data, dtype=npd, count=(end - begin) // npd.itemsize, offset=begin).reshape(shape)
        if not arr.flags.aligned:
            arr = arr.copy()  # a foreign writer's unaligned offset
        if sys.byteorder == "big":
            arr = arr.byteswap().view(arr.dtype.newbyteorder("="))
        if marker == "complex128":
            if code != "F64" or not shape or shape[-1] != 2:
                raise _fail(f"tensor {name!r} is marked complex128 but is stored as {code} {shape}, not as "
                            "float64 with a trailing dimension of 2")
            arr = arr.view(np.complex128).reshape(shape[:-1])
        elif marker is not None:
            raise _fail(f"tensor {name!r} has an unknown dtype marker {marker!r} in ferro's metadata")
        t = from_numpy(arr)
        dev = self.device_for(saved_device)
        if dev.type != "cpu" or dev.index != 0:
            t = t.to(dev)
        if requires_grad:
            t.requires_grad_(True)
        self.made[key] = t
        return t

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, str, int)):
            return node
        if isinstance(node, dict) and len(node) >= 1:
            if "T" in node:
                extra = set(node) - {"T", "device", "dtype", "rg"}
                name, dev = node["T"], node.get("device", "cpu")
                if extra or not isinstance(name, str) or not isinstance(dev, str):
                    raise _fail(f"malformed tensor entry {node!r:.200} in ferro's metadata")
                return self.tensor(name, dev, node.get("dtype"), node.get("rg") is True)
            if len(node) == 1:
                (tag, v), = node.items()
                fn = _LEAVES.get(tag)
                if fn is not None:
                    try:
                        return fn(v)
                    except (TypeError, ValueError, IndexError) as e:
                        raise _fail(f"bad {tag!r} value {v!r:.100} in ferro's metadata ({e})") from None
                if tag == "Y" and isinstance(v, list) and len(v) == 2 and v[0] in _LAYOUT_LOADERS:
                    return _layout_tensor(v[0], self.decode(v[1]))
                if tag in ("L", "U") and isinstance(v, list):
                    items = [self.decode(x) for x in v]
                    return items if tag == "L" else tuple(items)
                if tag == "D" and isinstance(v, list) and all(isinstance(p, list) and len(p) == 2 for p in v):
                    out = {}
                    for k, x in v:
                        key = self.decode(k)
                        try:
                            hash(key)
                        except TypeError:
                            raise _fail(f"a dict key in ferro's metadata is a {type(key).__name__}") from None
                        out[key] = self.decode(x)
                    return out
        raise _fail(f"unknown entry {node!r:.200} in ferro's metadata")


#: Layout tensor kinds ferro.save stores (as their parts: tensors and plain values) -> the module and function
#: that rebuild one from its parts. A fixed table: a file can name only these.
_LAYOUT_LOADERS: dict[str, tuple[str, str]] = {"quantized": ("ferro.quantization._tensor", "from_parts")}


def _layout_tensor(kind: str, parts: Any) -> Any:
    import importlib
    module, fn = _LAYOUT_LOADERS[kind]
    try:
        return getattr(importlib.import_module(module), fn)(parts)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise _fail(f"a {kind} tensor's entry in ferro's metadata is malformed ({e})") from None


def _dtype(name: str) -> Any:
    if not isinstance(name, str) or name not in by_name:
        raise ValueError(f"unknown dtype {name!r}")
    return by_name[name]


def _dev(name: str) -> Any:
    from ._core.device import device
    if not isinstance(name, str):
        raise TypeError("a device name must be a string")
    return device(name)


def _float(s: str) -> float:
    if not isinstance(s, str):
        raise TypeError("a float must be stored as a string")
    return float(s)


def _complex(v: list[str]) -> complex:
    if not (isinstance(v, list) and len(v) == 2):
        raise ValueError("a complex number must be stored as [real, imag]")
    return complex(_float(v[0]), _float(v[1]))


def _bytes(v: str) -> bytes:
    if not isinstance(v, str):
        raise TypeError("bytes must be stored as a base64 string")
    return base64.b64decode(v.encode("ascii"), validate=True)


_LEAVES: dict[str, Any] = {
    "f": _float,
    "c": _complex,
    "b": _bytes,
    "dtype": _dtype,
    "device": _dev,
}


def load(f: Any, map_location: Any = None, *, weights_only: bool | None = None) -> Any:
    """Load what :func:`save` wrote, or any safetensors file (then a dict of name -> tensor).

    ``map_location``: None puts each tensor back on the device it was saved from; a device or
    string (``"cpu"``, ``"cuda:0"``) puts every tensor there; a dict ``{"cuda:0": "cpu"}`` maps saved
    devices to others. ``weights_only`` is accepted for PyTorch compatibility: ferro only ever loads
    data, so it is always true. A malformed, truncated or hostile file raises
    :class:`ferro.errors.SerializationError` and nothing in it runs.
    """
    if not (map_location is None or isinstance(map_location, (str, dict)) or
            type(map_location).__name__ == "device"):
        raise TypeError(f"map_location must be None, a device, a device string or a dict, got "
                        f"{type(map_location).__name__}")
    header, data = _read(f)
    meta = header.get("__metadata__") or {}
    dec = _Decoder(header, data, map_location)
    with _the_files_fault():
        if _TREE_KEY not in meta:
            return {name: dec.tensor(name) for name in header if name != "__metadata__"}
        return dec.decode(_json(meta[_TREE_KEY], "ferro's metadata"))
