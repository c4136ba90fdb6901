"""``parameters_to_vector`` and ``vector_to_parameters``."""

from __future__ import annotations

from collections.abc import Iterable

from ..._core.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated into one vector (differentiable)."""
    from ..._ops.shape import cat
    params = list(parameters)
    if not params:
        raise ValueError("parameters_to_vector: got no parameters")
    dev = params[0].device
    for p in params:
        if p.device is not dev:
            raise ValueError(f"Found two parameters on different devices: {dev} and {p.device}")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Split ``vec`` into the parameters' shapes and put each slice in as that parameter's data."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected a Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() != total:
        raise ValueError(f"vector_to_parameters: vec has shape {list(vec.shape)}, the parameters hold {total} "
                         "elements")
    offset = 0
    for p in params:
        n = p.numel()
        p.data = vec[offset:offset + n].reshape(p.shape).detach()
        offset += n
