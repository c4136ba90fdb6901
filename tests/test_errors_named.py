"""Errors name the user's op and argument (issue 14, "errors that name the wrong thing").

Each check compares with PyTorch where PyTorch raises: the same exception type (or a subclass), and a
message that names the op the user called and the argument, never an internal step (reshape, amax).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

import ferro
import ferro.nn.functional as F

#: reductions and dim-taking ops: name -> (ferro call, torch call), each f(x, dim)
DIM_OPS: dict[str, tuple[Any, Any]] = {
    "sum": (ferro.sum, torch.sum), "mean": (ferro.mean, torch.mean), "amax": (ferro.amax, torch.amax),
    "amin": (ferro.amin, torch.amin), "any": (ferro.any, torch.any), "all": (ferro.all, torch.all),
    "argmax": (ferro.argmax, torch.argmax), "argmin": (ferro.argmin, torch.argmin),
    "max": (ferro.max, torch.max), "min": (ferro.min, torch.min), "prod": (ferro.prod, torch.prod),
    "var": (ferro.var, torch.var), "std": (ferro.std, torch.std), "logsumexp": (ferro.logsumexp, torch.logsumexp),
    "cumsum": (ferro.cumsum, torch.cumsum), "cumprod": (ferro.cumprod, torch.cumprod),
    "softmax": (ferro.softmax, torch.softmax), "log_softmax": (ferro.log_softmax, torch.log_softmax),
    "count_nonzero": (ferro.count_nonzero, torch.count_nonzero), "median": (ferro.median, torch.median),
    "norm": (lambda x, d: ferro.norm(x, dim=d), lambda x, d: torch.norm(x, dim=d)),
    "squeeze": (ferro.squeeze, torch.squeeze), "unsqueeze": (ferro.unsqueeze, torch.unsqueeze),
    "sort": (ferro.sort, torch.sort), "argsort": (ferro.argsort, torch.argsort),
    "roll": (lambda x, d: ferro.roll(x, 1, d), lambda x, d: torch.roll(x, 1, d)),
}


@pytest.mark.parametrize("name", sorted(DIM_OPS))
@pytest.mark.parametrize("dim", ["a", 1.5, 5, -4])
def test_bad_dim_names_op_and_dim(name: str, dim: Any, dev: str) -> None:
    f, tf = DIM_OPS[name]
    x = ferro.randn(2, 3, device=dev)
    with pytest.raises(Exception) as expected:
        tf(torch.randn(2, 3), dim)
    kind = TypeError if isinstance(dim, (str, float)) else IndexError
    assert isinstance(expected.value, kind)  # PyTorch's type, which ferro must match
    with pytest.raises(kind) as got:
        f(x, dim)
    msg = str(got.value)
    assert name in msg, msg
    assert "dim" in msg.lower(), msg
    if kind is IndexError:
        span = "[-3, 2]" if name == "unsqueeze" else "[-2, 1]"  # unsqueeze may insert after the last dim
        assert f"got {dim}" in msg and span in msg and "2 dimensions" in msg, msg


@pytest.mark.parametrize("dim", [(0, "a"), (0, 7)])
def test_bad_dim_inside_a_tuple(dim: Any) -> None:
    with pytest.raises((TypeError, IndexError), match="sum"):
        ferro.randn(2, 3).sum(dim)


def test_dim_accepts_numpy_and_tensor_integers() -> None:
    import numpy as np
    x = ferro.arange(6.).reshape(2, 3)
    assert x.sum(np.int64(1)).tolist() == [3.0, 12.0]
    assert x.sum(ferro.tensor(0)).tolist() == [3.0, 5.0, 7.0]
    with pytest.raises(TypeError, match=r"sum.*dim.*bool"):
        x.sum(True)


def test_batch_norm_running_stats_of_wrong_size(dev: str) -> None:
    x = ferro.randn(4, 3, device=dev)
    ok = ferro.zeros(3, device=dev)
    for arg, kwargs in (("running_mean", dict(running_mean=ferro.zeros(5, device=dev), running_var=ok)),
                        ("running_var", dict(running_mean=ok, running_var=ferro.ones(2, device=dev))),
                        ("weight", dict(running_mean=ok, running_var=ok + 1, weight=ferro.ones(4, device=dev)))):
        with pytest.raises(ValueError, match=rf"batch_norm: {arg} should contain 3 elements.*not [245]"):
            F.batch_norm(x, **kwargs)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 5"):
        torch.nn.functional.batch_norm(torch.randn(4, 3), torch.zeros(5), torch.ones(3))


def test_a_failure_inside_a_composite_names_the_composite() -> None:
    # the dim is checked by an inner op (amax, mean); the message starts with the op called
    with pytest.raises(IndexError, match=r"^logsumexp"):
        ferro.logsumexp(ferro.randn(2, 3), 4)
    with pytest.raises(IndexError, match=r"^var"):
        ferro.var(ferro.randn(2, 3), 4)
    with pytest.raises(Exception) as err:
        F.conv2d(ferro.randn(1, 3, 5, 5), ferro.randn(2, 4, 3, 3))
    assert str(err.value).startswith("conv2d"), err.value


CREATION = {
    "tensor": lambda dt: ferro.tensor([1.0], dtype=dt),
    "as_tensor": lambda dt: ferro.as_tensor([1.0], dtype=dt),
    "zeros": lambda dt: ferro.zeros(2, dtype=dt), "ones": lambda dt: ferro.ones(2, dtype=dt),
    "empty": lambda dt: ferro.empty(2, dtype=dt), "full": lambda dt: ferro.full((2,), 1, dtype=dt),
    "arange": lambda dt: ferro.arange(3, dtype=dt), "linspace": lambda dt: ferro.linspace(0, 1, 3, dtype=dt),
    "eye": lambda dt: ferro.eye(2, dtype=dt), "rand": lambda dt: ferro.rand(2, dtype=dt),
    "randn": lambda dt: ferro.randn(2, dtype=dt), "zeros_like": lambda dt: ferro.zeros_like(ferro.ones(2), dtype=dt),
    "ones_like": lambda dt: ferro.ones_like(ferro.ones(2), dtype=dt),
    "full_like": lambda dt: ferro.full_like(ferro.ones(2), 3, dtype=dt),
    "randn_like": lambda dt: ferro.randn_like(ferro.ones(2), dtype=dt),
    "to": lambda dt: ferro.ones(2).to(dt), "to(dtype=)": lambda dt: ferro.ones(2).to(dtype=dt),
    "type": lambda dt: ferro.ones(2).type(dt),
    "new_zeros": lambda dt: ferro.ones(2).new_zeros(2, dtype=dt),
    "new_tensor": lambda dt: ferro.ones(2).new_tensor([1], dtype=dt),
    "sum": lambda dt: ferro.ones(2).sum(dtype=dt), "mean": lambda dt: ferro.ones(2).mean(dtype=dt),
    "softmax": lambda dt: ferro.softmax(ferro.ones(2), 0, dtype=dt),
    "Module.to": lambda dt: ferro.nn.Linear(2, 2).to(dtype=dt).weight,
}


@pytest.mark.parametrize("name", sorted(CREATION))
def test_dtype_names_are_accepted_everywhere(name: str) -> None:
    for spelling in ("float64", "ferro.float64", "double", ferro.float64):
        assert CREATION[name](spelling).dtype is ferro.float64


def test_set_default_dtype_takes_a_name() -> None:
    try:
        ferro.set_default_dtype("float64")
        assert ferro.tensor([1.0]).dtype is ferro.float64
    finally:
        ferro.set_default_dtype(ferro.float32)


@pytest.mark.parametrize("name", sorted(set(CREATION) - {"to", "softmax", "Module.to"}))  # .to("x"): a device
def test_dtype_of_wrong_type_is_a_type_error_naming_the_argument(name: str) -> None:
    for bad in ("float33", 5, float):
        with pytest.raises(TypeError, match=rf"^{name.split('(')[0]}\W.*argument 'dtype' must be a ferro dtype.*not"):
            CREATION[name](bad)


#: wrong-shaped or wrong-typed arguments: call -> (exception type, the message's start, words it must hold)
SWEEP: dict[str, tuple[Any, type, str, tuple[str, ...]]] = {
    "conv2d bias": (lambda d: F.conv2d(ferro.randn(2, 3, 5, 5, device=d), ferro.randn(4, 3, 3, 3, device=d),
                                       ferro.randn(5, device=d)), ValueError, "conv2d", ("bias", "4", "[5]")),
    "conv_transpose2d bias": (lambda d: F.conv_transpose2d(ferro.randn(2, 3, 5, 5, device=d),
                                                           ferro.randn(3, 4, 3, 3, device=d), ferro.randn(5, device=d)),
                              ValueError, "conv_transpose2d", ("bias", "4", "[5]")),
    "linear bias": (lambda d: F.linear(ferro.randn(2, 3, device=d), ferro.randn(4, 3, device=d),
                                       ferro.randn(5, device=d)), ValueError, "linear", ("bias", "4", "[5]")),
    "layer_norm weight": (lambda d: F.layer_norm(ferro.randn(2, 3, device=d), (3,), ferro.randn(4, device=d)),
                          ValueError, "layer_norm", ("weight", "3", "[4]")),
    "group_norm bias": (lambda d: F.group_norm(ferro.randn(2, 4, 3, device=d), 2, None, ferro.randn(3, device=d)),
                        ValueError, "group_norm", ("bias", "4", "[3]")),
    "instance_norm weight": (lambda d: F.instance_norm(ferro.randn(2, 3, 4, device=d), weight=ferro.randn(5, device=d)),
                             ValueError, "instance_norm", ("weight", "3", "[5]")),
    "mm": (lambda d: ferro.mm(ferro.randn(2, 3, device=d), ferro.randn(2, 3, device=d)), ValueError, "mm",
           ("[2, 3]", "cannot be multiplied")),
    "dot": (lambda d: ferro.dot(ferro.randn(3, device=d), ferro.randn(4, device=d)), ValueError, "dot", ("[3]", "[4]")),
    "mv": (lambda d: ferro.mv(ferro.randn(2, 3, device=d), ferro.randn(4, device=d)), ValueError, "mv", ("[4]",)),
    "kron str": (lambda d: ferro.kron(ferro.randn(2, device=d), "a"), TypeError, "kron", ("argument 'b'", "str")),
    "conv2d str": (lambda d: F.conv2d("a", ferro.randn(1, 1, 1, 1, device=d)), TypeError, "conv2d", ("'x'", "str")),
    "layer_norm weight str": (lambda d: F.layer_norm(ferro.ones(3, device=d), (3,), weight="w"), TypeError,
                              "layer_norm", ("'weight'", "str")),
    "full float size": (lambda d: ferro.full(3.5, 1.0, device=d), TypeError, "full", ("'size'", "3.5")),
    "zeros negative": (lambda d: ferro.zeros(-1, device=d), ValueError, "zeros", ("negative", "-1")),
    "randn float size": (lambda d: ferro.randn(2.5, device=d), TypeError, "randn", ("'size'", "2.5")),
    "reshape float": (lambda d: ferro.ones(2, 3, device=d).reshape(2.5, 2), TypeError, "reshape",
                      ("'shape'", "2.5")),  # not truncated to 2
    "view str": (lambda d: ferro.ones(2, 3, device=d).view("a"), TypeError, "view", ("'shape'",)),
    "expand str": (lambda d: ferro.ones(2, 3, device=d).expand("a", 3), TypeError, "expand", ("'size'",)),
    "permute str": (lambda d: ferro.ones(2, 3, device=d).permute("a", 0), TypeError, "permute", ("'dims'",)),
    "add str": (lambda d: ferro.ones(2, device=d) + "a", TypeError, "add", ("str",)),
    "empty too large": (lambda d: ferro.empty(10**13, device=d), MemoryError, "empty",
                        ("out of memory", "[10000000000000]", "float32", "40,000,000,000,000 bytes")),
    "zeros too large": (lambda d: ferro.zeros(10**13, device=d), MemoryError, "zeros", ("out of memory",)),
}


@pytest.mark.parametrize("case", sorted(SWEEP))
def test_wrong_arguments_name_the_op_and_the_argument(case: str, dev: str) -> None:
    f, kind, start, words = SWEEP[case]
    with pytest.raises(kind) as got:
        f(dev)
    msg = str(got.value)
    assert msg.startswith(start), msg
    for w in words:
        assert w in msg, (w, msg)
