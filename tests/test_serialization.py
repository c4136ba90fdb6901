"""ferro.save / ferro.load: safetensors round trips on every backend, interop with the safetensors library
and PyTorch, and files that must be refused without running anything."""

from __future__ import annotations

import io
import json
import os
import pathlib
import pickle
import struct
import subprocess
import sys
import textwrap
import threading
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy as stnp
import safetensors.torch as sttorch
import torch

import ferro
from ferro.errors import SerializationError

from conftest import clean_env


def _sample(dtype: ferro.DType, shape: tuple[int, ...] = (3, 4)) -> np.ndarray:
    """Values of every sort the dtype holds (negative, fractional, large, special floats)."""
    rng = np.random.default_rng(0)
    n = int(np.prod(shape))
    if dtype is ferro.bool_:
        return (rng.random(n) > 0.5).reshape(shape)
    if dtype.kind in "ui":
        info = np.iinfo(dtype.name)
        vals = rng.integers(info.min, info.max, n, endpoint=True, dtype=dtype.name)
        vals[0], vals[-1] = info.min, info.max
        return vals.reshape(shape)
    npd = np.dtype(ml_dtypes.bfloat16) if dtype is ferro.bfloat16 else np.dtype(dtype.name)
    vals = rng.standard_normal(n) * 100
    if dtype.is_complex:
        vals = vals + 1j * rng.standard_normal(n)
    out = vals.astype(npd)
    if n >= 3:
        out[:3] = [np.inf, -np.inf, np.nan]
    return out.reshape(shape)


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and np.ascontiguousarray(a).tobytes() == \
        np.ascontiguousarray(b).tobytes()


def _roundtrip(obj: Any, **kw: Any) -> Any:
    buf = io.BytesIO()
    ferro.save(obj, buf)
    buf.seek(0)
    return ferro.load(buf, **kw)


def _same(a: Any, b: Any) -> bool:
    """Structural equality that also compares tensors bit for bit, with their dtype and device."""
    if type(a) is not type(b):
        return False
    if isinstance(a, ferro.Tensor):
        return (a.dtype is b.dtype and a.device is b.device and a.requires_grad == b.requires_grad
                and _bits_equal(a.detach().numpy(), b.detach().numpy()))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and np.isnan(a):
        return np.isnan(b)
    return a == b


@pytest.mark.parametrize("dtype", ferro._core.dtypes.all_dtypes, ids=lambda d: d.name)
def test_every_dtype_round_trips_on_its_device(device: ferro.device, dtype: ferro.DType) -> None:
    if dtype not in device.backend.dtypes(device.index):
        pytest.skip(f"{device} has no {dtype}")
    for shape in [(3, 4), (), (0, 5)]:
        arr = _sample(dtype, shape) if shape != (0, 5) else np.zeros(shape, ferro._core.host.numpy_dtype(dtype))
        t = ferro.tensor(arr, dtype=dtype, device=device)
        out = _roundtrip(t)
        assert out.device is device and out.dtype is dtype and tuple(out.shape) == shape
        assert _bits_equal(out.numpy(), arr)


def test_nested_structures_and_plain_values_round_trip(device: ferro.device) -> None:
    w = ferro.tensor(_sample(ferro.float32), device=device)
    obj = {
        "model": {"layer.0": {"weight": w, "bias": ferro.zeros(4, device=device)}},
        "optimizer": {"state": {0: {"step": 7, "momentum_buffer": ferro.ones(2, 3, device=device)}},
                      "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1], "nesterov": False}]},
        "floats": [float("inf"), -0.0, float("nan"), 1e-310, 1 / 3],
        "misc": (None, True, "text ✓", b"\x00\xffrng", 3 + 4j, 2**70, -5, (), [], {}),
        (1, "a"): "tuple key", 2.5: "float key", None: "none key",
        "dtype": ferro.bfloat16, "device": ferro.device("cpu"),
    }
    assert _same(_roundtrip(obj), obj)
    assert _same(_roundtrip([w, (w,)])[0], w)


def test_a_tensor_saved_twice_loads_as_one_object_and_views_as_copies(device: ferro.device) -> None:
    base = ferro.arange(12.0, device=device).reshape(3, 4)
    try:
        views = {"t": base.t(), "row": base[1], "cols": base[:, ::2]}
    except ferro.errors.UnsupportedOperationError as e:
        pytest.skip(f"views on {device}: {e}")
    out = _roundtrip({"a": base, "b": base, **views})
    assert out["a"] is out["b"]
    for k, v in views.items():
        assert np.array_equal(out[k].numpy(), v.numpy()) and out[k].device is device
    out["a"].fill_(-1.0)  # stored as copies: the loaded views do not share memory with the base
    assert np.array_equal(out["row"].numpy(), [4.0, 5.0, 6.0, 7.0])


def test_requires_grad_and_leafness_survive() -> None:
    w = ferro.randn(3, requires_grad=True)
    y = w * 2
    out = _roundtrip({"w": w, "y": y})
    assert out["w"].requires_grad and out["w"].is_leaf and out["w"].grad_fn is None
    assert out["y"].requires_grad and out["y"].grad_fn is None  # as torch.save: a non-leaf loads as a leaf
    assert np.array_equal(out["y"].detach().numpy(), y.detach().numpy())


def test_map_location(device: ferro.device) -> None:
    t = ferro.tensor([1, 2, 3], device=device)
    assert _roundtrip(t, map_location="cpu").device is ferro.device("cpu")
    assert _roundtrip(t, map_location={str(device): "cpu"}).device is ferro.device("cpu")
    back = _roundtrip(ferro.tensor([1, 2, 3]), map_location=device)
    assert back.device is device and back.tolist() == [1, 2, 3]
    with pytest.raises(TypeError, match="map_location"):
        _roundtrip(t, map_location=lambda s, loc: s)


def test_a_device_that_is_not_here_is_named_with_the_way_out() -> None:
    buf = io.BytesIO()
    ferro.save(ferro.ones(2), buf)
    meta = json.dumps({"T": "tensor", "device": "nosuchbackend:0"})
    data = stnp.save({"tensor": np.ones(2, np.float32)}, metadata={"format": "ferro", "ferro": meta})
    with pytest.raises(SerializationError, match=r"nosuchbackend:0.*map_location='cpu'"):
        ferro.load(io.BytesIO(data))
    assert ferro.load(io.BytesIO(data), map_location="cpu").tolist() == [1.0, 1.0]


def test_paths_are_written_atomically(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "ckpt.safetensors"
    ferro.save({"x": ferro.arange(3)}, path)
    ferro.save({"x": ferro.arange(4)}, str(path))
    assert ferro.load(path)["x"].tolist() == [0, 1, 2, 3]
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.safetensors"]
    with pytest.raises(SerializationError, match=r"obj\['x'\]\['s'\].*set"):
        ferro.save({"x": {"s": {1, 2}}}, path)
    assert ferro.load(path)["x"].tolist() == [0, 1, 2, 3]  # a failed save leaves the old file whole
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.safetensors"]


def test_threads_saving_to_one_path_at_once(tmp_path: pathlib.Path) -> None:
    """Each save writes its own temporary file; the last rename wins, and the file is always one whole save."""
    path = tmp_path / "ckpt.safetensors"
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(10):
                ferro.save({"k": k, "i": i, "x": ferro.full((256,), float(k * 100 + i))}, path)
                got = ferro.load(path)  # whatever save renamed last: always a whole file
                assert got["x"].tolist() == [float(got["k"] * 100 + got["i"])] * 256
        except BaseException as e:
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.safetensors"], "no temporary file is left"


KILLED_WRITER = """
    import os, signal, sys, ferro
    path, how = sys.argv[1], sys.argv[2]
    if how == "before rename":  # the temporary file is whole; the process dies before it becomes the file
        os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
    else:  # the process is killed while writing, the temporary file cut short
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))  # SIGXFSZ at 1 MiB kills it
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # (Python ignores it by default)
    ferro.save({"x": ferro.zeros(1 << 20)}, path)
    print("never reached")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX signals")
@pytest.mark.parametrize("how", ["before rename", "mid-write"])
def test_a_killed_writer_leaves_the_old_file_and_the_next_save_cleans_up(tmp_path: pathlib.Path, how: str) -> None:
    path = tmp_path / "ckpt.safetensors"
    ferro.save({"x": ferro.arange(3)}, path)
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(KILLED_WRITER), str(path), how],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
    out, err = proc.communicate(timeout=120)
    assert proc.returncode < 0 and "never reached" not in out, (proc.returncode, err[-2000:])
    left = sorted(p.name for p in tmp_path.iterdir())
    assert len(left) == 2 and left[0] == "ckpt.safetensors" and left[1].startswith(f"ckpt.safetensors.tmp-{proc.pid}-")
    assert ferro.load(path)["x"].tolist() == [0, 1, 2], "the previous file is whole"
    if how == "mid-write":
        with pytest.raises(SerializationError, match="truncated"):  # what the killed writer left is cut short
            ferro.load(tmp_path / left[1])
    else:
        assert ferro.load(tmp_path / left[1])["x"].shape == (1 << 20,), "the bytes were all flushed"
    ferro.save({"x": ferro.arange(4)}, path)
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.safetensors"], "the dead writer's file is removed"
    assert ferro.load(path)["x"].tolist() == [0, 1, 2, 3]


def test_the_temporary_files_of_live_writers_are_kept(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "ckpt.safetensors"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        host = ferro.serialization._host()
        mine = tmp_path / f"ckpt.safetensors.tmp-{live.pid}-{host}-0123abcd"
        other_host = tmp_path / "ckpt.safetensors.tmp-1-ffffffff-0123abcd"
        other_file = tmp_path / "other.safetensors.tmp-999999999-0123abcd-00"
        for p in (mine, other_host, other_file):
            p.write_bytes(b"partial")
        ferro.save({"x": ferro.arange(2)}, path)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            ["ckpt.safetensors", mine.name, other_host.name, other_file.name]), \
            "a running writer's file, another host's and another path's are not touched"
    finally:
        live.kill()
        live.wait()
    ferro.save({"x": ferro.arange(2)}, path)
    assert not mine.exists(), "once its writer is gone, the next save removes it"


def test_objects_that_would_need_pickle_are_refused() -> None:
    for bad in [object(), np.ones(2), {1, 2}, slice(1), {"k": [1, lambda: 0]}]:
        with pytest.raises(SerializationError, match="cannot store"):
            _roundtrip(bad)


def test_files_written_by_ferro_load_in_safetensors_and_torch(tmp_path: pathlib.Path) -> None:
    arrays = {d.name: _sample(d) for d in ferro._core.dtypes.all_dtypes if d not in (ferro.bfloat16, ferro.complex128)}
    ferro.save({"params": {k: ferro.tensor(v) for k, v in arrays.items()}}, tmp_path / "a.safetensors")
    loaded = stnp.load_file(tmp_path / "a.safetensors")
    assert set(loaded) == {f"params.{k}" for k in arrays}
    for k, v in arrays.items():
        assert _bits_equal(loaded[f"params.{k}"], v)
    bf = _sample(ferro.bfloat16)
    z = _sample(ferro.complex128)
    ferro.save({"bf": ferro.tensor(bf), "z": ferro.tensor(z)}, tmp_path / "b.safetensors")
    tt = sttorch.load_file(tmp_path / "b.safetensors")
    assert tt["bf"].dtype is torch.bfloat16
    assert np.array_equal(tt["bf"].float().numpy(), bf.astype(np.float32), equal_nan=True)
    assert tt["z"].dtype is torch.float64 and tuple(tt["z"].shape) == (3, 4, 2)  # complex128: real, imag pairs
    assert _bits_equal(torch.view_as_complex(tt["z"]).numpy(), z)


def test_files_written_by_safetensors_and_torch_load_in_ferro(tmp_path: pathlib.Path) -> None:
    arrays = {"a": _sample(ferro.float16), "b.c": _sample(ferro.int32, (5,)), "m": _sample(ferro.bool_, (2, 2)),
              "z": _sample(ferro.complex64, (2,))}
    stnp.save_file(arrays, tmp_path / "np.safetensors", metadata={"format": "np"})
    out = ferro.load(tmp_path / "np.safetensors")
    assert set(out) == set(arrays)
    for k, v in arrays.items():
        assert _bits_equal(out[k].numpy(), v)
    tt = {"w": torch.randn(3, 4, dtype=torch.bfloat16), "i": torch.arange(5)}
    sttorch.save_file(tt, tmp_path / "pt.safetensors")
    out = ferro.load(tmp_path / "pt.safetensors")
    assert out["w"].dtype is ferro.bfloat16 and out["i"].dtype is ferro.int64
    assert np.array_equal(out["w"].float().numpy(), tt["w"].float().numpy())
    assert out["i"].tolist() == [0, 1, 2, 3, 4]


def test_a_dtype_ferro_lacks_is_named() -> None:
    data = stnp.save({"u": np.arange(3, dtype=np.uint16)})
    with pytest.raises(SerializationError, match=r"'u'.*U16.*no dtype"):
        ferro.load(io.BytesIO(data))


# -- hostile and broken files ----------------------------------------------------------------------


def _craft(header: Any, data: bytes = b"", length: int | None = None) -> io.BytesIO:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return io.BytesIO(struct.pack("<Q", len(raw) if length is None else length) + raw + data)


_F32x2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}

HOSTILE = {
    "empty file": (io.BytesIO(b""), "fewer than the 8"),
    "short length": (io.BytesIO(b"\x05\x00\x00"), "fewer than the 8"),
    "huge header length": (_craft(b"{}", length=2**62), "larger than"),
    "header past end": (_craft(b'{"a": 1}', length=4000), "past the end"),
    "invalid json": (_craft(b'{"a": '), "not valid JSON"),
    "not utf-8": (_craft(b'{"\xff": 1}'), "not valid JSON"),
    "not an object": (_craft([1, 2]), "must be a JSON object"),
    "duplicate key": (_craft(b'{"a": {}, "a": {}}'), "names 'a' twice"),
    "unknown dtype": (_craft({"a": {**_F32x2, "dtype": "F33"}}, bytes(8)), "unknown dtype 'F33'"),
    "missing field": (_craft({"a": {"dtype": "F32", "shape": [2]}}, bytes(8)), "exactly dtype, shape"),
    "extra field": (_craft({"a": {**_F32x2, "code": "x"}}, bytes(8)), "exactly dtype, shape"),
    "negative dim": (_craft({"a": {**_F32x2, "shape": [-2]}}, bytes(8)), "non-negative"),
    "bool dim": (_craft({"a": {**_F32x2, "shape": [True]}}, bytes(8)), "non-negative"),
    "reversed offsets": (_craft({"a": {**_F32x2, "data_offsets": [8, 0]}}, bytes(8)), "begin <= end"),
    "shape mismatch": (_craft({"a": {**_F32x2, "shape": [3]}}, bytes(8)), "needs 12 bytes"),
    "dtype mismatch": (_craft({"a": {**_F32x2, "dtype": "F64"}}, bytes(8)), "needs 16 bytes"),
    "out of bounds": (_craft({"a": {**_F32x2, "data_offsets": [8, 16]}}, bytes(8)), "out of bounds"),
    "truncated data": (_craft({"a": _F32x2}, bytes(5)), "truncated"),
    "overlap": (_craft({"a": _F32x2, "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8)),
                "overlap"),
    "metadata not strings": (_craft({"__metadata__": {"format": 1}}), "strings to strings"),
    "missing tensor": (_craft({"__metadata__": {"ferro": json.dumps({"D": [["w", {"T": "w"}]]})}}),
                       "refers to tensor 'w'"),
    "metadata names the header's metadata": (_craft({"__metadata__": {"ferro": json.dumps({"T": "__metadata__"})}}),
                                             "refers to tensor '__metadata__'"),
    "metadata invalid json": (_craft({"__metadata__": {"ferro": "{"}}), "metadata is not valid JSON"),
    "metadata unknown tag": (_craft({"__metadata__": {"ferro": json.dumps({"P": "os.system"})}}), "unknown entry"),
    "metadata bad float": (_craft({"__metadata__": {"ferro": json.dumps({"f": "1.5x"})}}), "bad 'f'"),
    "metadata bad bytes": (_craft({"__metadata__": {"ferro": json.dumps({"b": "@@@"})}}), "bad 'b'"),
    "metadata unhashable key": (_craft({"__metadata__": {"ferro": json.dumps({"D": [[{"L": []}, 1]]})}}),
                                "dict key"),
    "deeply nested header": (_craft(b"[" * 100_000 + b"]" * 100_000), "header is nested too deeply"),
    "huge integer in header": (_craft(b'{"a": {"dtype": "F32", "shape": [' + b"9" * 5000
                                      + b'], "data_offsets": [0, 8]}}', bytes(8)), "header is not valid JSON"),
    "huge dims of an empty tensor": (_craft({"a": {"dtype": "F32", "shape": [0, 2**70], "data_offsets": [0, 0]}}),
                                     "too large for any array"),
    "huge dims of an empty tensor (overflowing together)": (
        _craft({"a": {"dtype": "F32", "shape": [0, 2**40, 2**40], "data_offsets": [0, 0]}}), "too large for any array"),
    "too many dims": (_craft({"a": {"dtype": "F32", "shape": [0] * 65, "data_offsets": [0, 0]}}),
                      "65 dimensions; at most 64"),
    "metadata nested too deeply": (_craft({"__metadata__": {"ferro": '{"L": [' * 100_000 + "1" + "]}" * 100_000}}),
                                   "metadata is nested too deeply"),
    "metadata huge integer": (_craft({"__metadata__": {"ferro": "7" * 5000}}), "metadata is not valid JSON"),
    "metadata bad dtype name": (_craft({"__metadata__": {"ferro": json.dumps({"dtype": "float128"})}}),
                                "bad 'dtype'"),
    "metadata bad device name": (_craft({"__metadata__": {"ferro": json.dumps({"device": "cpu:x"})}}),
                                 "bad 'device'"),
    "complex marker on wrong data": (
        _craft({"a": _F32x2, "__metadata__": {"ferro": json.dumps({"T": "a", "dtype": "complex128"})}}, bytes(8)),
        "marked complex128"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_broken_files_are_refused_with_what_is_wrong(case: str) -> None:
    f, message = HOSTILE[case]
    f.seek(0)
    with pytest.raises(SerializationError, match=message) as info:
        ferro.load(f)
    assert isinstance(info.value, ValueError)


def test_every_cut_of_a_valid_file_is_refused() -> None:
    buf = io.BytesIO()
    ferro.save({"w": ferro.arange(6.0), "s": 1}, buf)
    data = buf.getvalue()
    for n in range(len(data)):
        with pytest.raises(SerializationError):
            ferro.load(io.BytesIO(data[:n]))


def test_random_corruptions_are_refused_or_load() -> None:
    """Byte flips anywhere in a valid file: the load either succeeds or raises SerializationError, nothing else."""
    buf = io.BytesIO()
    ferro.save({"w": ferro.ones(2, 3), "b": [1.5, (2, b"x")], "d": ferro.float32, "i": ferro.arange(4)}, buf)
    good = buf.getvalue()
    rng = np.random.default_rng(0)
    refused = 0
    for _ in range(2000):
        bad = bytearray(good)
        for j in rng.integers(0, len(bad), size=int(rng.integers(1, 4))):
            bad[j] = int(rng.integers(0, 256))
        try:
            ferro.load(io.BytesIO(bytes(bad)))
        except SerializationError:
            refused += 1
    assert refused > 500, "most flips land in the header and are refused"


class _Payload:
    """Unpickling this creates a file: proof that a loader ran code from the data."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (pathlib.Path.touch, (self.marker,))


def test_pickle_payloads_are_never_run(tmp_path: pathlib.Path) -> None:
    marker = tmp_path / "ran"
    payload = pickle.dumps({"w": _Payload(marker)})
    pickle.loads(payload)  # the payload is live: plain unpickling runs it
    assert marker.exists()
    marker.unlink()
    for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(SerializationError, match="never unpickles"):
            ferro.load(io.BytesIO(pickle.dumps({"w": _Payload(marker)}, protocol=proto)))
    pt = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2), "evil": _Payload(marker)}, pt)
    with pytest.raises(SerializationError, match="never unpickles"):
        ferro.load(pt)
    # pickled bytes inside a valid file stay bytes
    ferro.save({"blob": payload}, tmp_path / "ok.safetensors")
    assert ferro.load(tmp_path / "ok.safetensors") == {"blob": payload}
    assert not marker.exists()


class _Trickle(io.RawIOBase):
    """A stream that hands out at most 3 bytes per read and cannot seek."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        chunk = self.data[self.pos:self.pos + min(len(buf), 3)]
        buf[:len(chunk)] = chunk
        self.pos += len(chunk)
        return len(chunk)


def test_short_reads_and_loaded_tensors_are_writable() -> None:
    buf = io.BytesIO()
    ferro.save({"a": ferro.arange(10.0), "n": [1, 2]}, buf)
    out = ferro.load(_Trickle(buf.getvalue()))
    assert out["a"].tolist() == list(range(10)) and out["n"] == [1, 2]
    for f in (io.BytesIO(buf.getvalue()), _Trickle(buf.getvalue())):
        t = ferro.load(f)["a"]
        t.add_(1.0)  # a loaded tensor is the user's to change in place
        assert t.tolist() == list(range(1, 11))
    with pytest.raises(TypeError, match="binary mode"):
        ferro.load(io.StringIO("text"))


def test_unaligned_offsets_of_a_foreign_writer_load() -> None:
    header = {"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
              "b": {"dtype": "F64", "shape": [2], "data_offsets": [1, 17]}}
    out = ferro.load(_craft(header, b"\x07" + np.array([1.5, -2.25]).tobytes()))
    assert out["a"].tolist() == [7] and (out["b"] * 2).tolist() == [3.0, -4.5]
