"""The rest of ``nn.functional``'s window and sampling layers, written in ops: ``unfold`` / ``fold``
(im2col and its adjoint), ``lp_pool1d/2d/3d``, ``max_unpool1d/2d/3d``, ``adaptive_avg_pool3d`` /
``adaptive_max_pool3d``, ``fractional_max_pool2d/3d``, ``conv_transpose3d``, ``affine_grid`` and
``grid_sample``; and the tuple-returning ``*_with_indices`` forms of the max poolings. Output sizes, window
bounds and coordinates are PyTorch's."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

from .._core.naming import names_errors
from .._core.records import ops, register_composites
from .._core.tensor import Tensor
from .._creation import arange, rand, zeros
from ..errors import ShapeError
from ._rules import check_rule
from .conv import FUNCTIONS as _CONV
from .conv import (
    _conv_transposend,
    _padding,
    _tuple,
    adaptive_max_pool,
    adaptive_windows_mean,
    batched,
    max_pool,
    positions,
    unfold,
    window_max,
)
from .elementwise import where

__all__ = ["FUNCTIONS", "PLAIN"]


# -- im2col and col2im -------------------------------------------------------------------------------------------


def _windows_2d(name: str, kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> tuple[tuple[int, ...], ...]:
    k, d = _tuple(kernel_size, 2, "kernel_size"), _tuple(dilation, 2, "dilation")
    p, s = _tuple(padding, 2, "padding"), _tuple(stride, 2, "stride")
    if min(k) < 1 or min(d) < 1 or min(s) < 1 or min(p) < 0:
        raise ValueError(f"nn.{name}: kernel_size, dilation and stride must be positive and padding not negative, got "
                         f"kernel_size={list(k)}, dilation={list(d)}, padding={list(p)}, stride={list(s)}")
    return k, d, p, s


def unfold_windows(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """The sliding blocks of (N, C, H, W) or (C, H, W) as columns: (N, C * kH * kW, L), block by block in
    row-major order (PyTorch's im2col)."""
    k, d, p, s = _windows_2d("unfold", kernel_size, dilation, padding, stride)
    x, was_batched = batched(input, 2, "nn.unfold")
    win = unfold(ops.pad(x, _padding(p, k, d, s, 2)), k, s, d)  # (N, C, oH, oW, kH, kW)
    n, c, oh, ow = win.shape[:4]
    cols = win.permute(0, 1, 4, 5, 2, 3).reshape(n, c * k[0] * k[1], oh * ow)
    return cols if was_batched else cols.squeeze(0)


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    """Sum the columns of (N, C * kH * kW, L) or (C * kH * kW, L) back into (N, C, H, W) blocks, overlaps
    adding up (PyTorch's col2im, the adjoint of :func:`unfold`)."""
    k, d, p, s = _windows_2d("fold", kernel_size, dilation, padding, stride)
    out = _tuple(output_size, 2, "output_size")
    x, was_batched = batched(input, 1, "nn.fold")
    n, rows, length = x.shape
    if rows % (k[0] * k[1]):
        raise ShapeError(f"nn.fold: expected size of input's dimension 1 to be divisible by the product of "
                         f"kernel_size, but got input.size(1)={rows} and kernel_size={list(k)}")
    padded = (out[0] + 2 * p[0], out[1] + 2 * p[1])
    blocks = [(padded[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    if blocks[0] < 1 or blocks[1] < 1 or blocks[0] * blocks[1] != length:
        raise ShapeError(f"nn.fold: given output_size={list(out)}, kernel_size={list(k)}, dilation={list(d)}, "
                         f"padding={list(p)}, stride={list(s)}, expected size of input's dimension 2 to match the "
                         f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, "
                         f"but got input.size(2)={length}")
    c = rows // (k[0] * k[1])
    where_to = unfold(positions(padded, x.device), k, s, d)  # (1, 1, oH, oW, kH, kW): flat places in the plane
    where_to = where_to.permute(0, 1, 4, 5, 2, 3).reshape(1, 1, k[0] * k[1] * length)
    src = x.reshape(n, c, k[0] * k[1] * length)
    plane = zeros(n, c, padded[0] * padded[1], dtype=x.dtype, device=x.device)
    y = plane.scatter_add(2, where_to.expand(n, c, k[0] * k[1] * length), src).reshape(n, c, *padded)
    y = y[:, :, p[0]:p[0] + out[0], p[1]:p[1] + out[1]]
    return y if was_batched else y.squeeze(0)


# -- poolings ---------------------------------------------------------------------------------------------------


def _lp_pool(n: int, input: Tensor, norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool) -> Tensor:
    """PyTorch's power-average pooling: ``(sum over the window of x^p)^(1/p)``, from the average pooling."""
    check_rule(f"lp_pool{n}d", input)
    avg = _CONV[f"avg_pool{n}d"]
    k = _tuple(kernel_size, n, "kernel_size")
    out = avg(input.pow(norm_type), kernel_size, stride if stride is not None else kernel_size, 0, ceil_mode)
    return (out.sign() * out.abs().relu() * math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling of (N, C, L) or (C, L): ``(sum over the window of x^p)^(1/p)``."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling of (N, C, H, W) or (C, H, W): ``(sum over the window of x^p)^(1/p)``."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling of (N, C, D, H, W) or (C, D, H, W): ``(sum over the window of x^p)^(1/p)``."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


def _max_unpool(n: int, input: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any,
                output_size: Any) -> Tensor:
    """Put each value of ``input`` at its flat place ``indices`` in a zero plane (the inverse of max pooling)."""
    name = f"max_unpool{n}d"
    x, was_batched = batched(input, n, name)
    idx = indices if was_batched else indices.unsqueeze(0)
    if indices.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected indices to have an integer dtype, got {indices.dtype}")
    if tuple(idx.shape) != tuple(x.shape):
        raise ShapeError(f"{name}: expected indices of the input's shape {list(input.shape)}, got "
                         f"{list(indices.shape)}")
    k = _tuple(kernel_size, n, "kernel_size")
    s = k if stride is None else _tuple(stride, n, "stride")
    p = _tuple(padding, n, "padding")
    default = tuple((x.shape[2 + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(n))
    if output_size is None:
        out = default
    else:
        out = tuple(output_size)[-n:]
        if len(out) != n:
            raise ValueError(f"{name}: output_size must have {n} or {n + 2} elements, got {list(output_size)}")
        for i in range(n):
            if not default[i] - s[i] < out[i] < default[i] + s[i]:
                raise ValueError(f"{name}: invalid output_size {list(out)} (dim {i} must be between "
                                 f"{default[i] - s[i] + 1} and {default[i] + s[i] - 1})")
    nb, c = x.shape[0], x.shape[1]
    plane = zeros(nb, c, math.prod(out), dtype=x.dtype, device=x.device)
    if x.numel():
        top = int(idx.amax().item())
        if int(idx.amin().item()) < 0 or top >= math.prod(out):
            raise ValueError(f"{name}: found an invalid max index {top} (output volume is {math.prod(out)})")
    y = plane.scatter(2, idx.reshape(nb, c, -1), x.reshape(nb, c, -1)).reshape(nb, c, *out)
    return y if was_batched else y.squeeze(0)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """The inverse of ``max_pool1d``: each value at its index of the output, zeros elsewhere."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """The inverse of ``max_pool2d``: each value at its flat index of the output plane, zeros elsewhere."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """The inverse of ``max_pool3d``: each value at its flat index of the output volume, zeros elsewhere."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, D, H, W) or (C, D, H, W) to ``output_size`` (int or triple, None keeps that
    size), with PyTorch's window bounds: one averaging matrix per dim (the windows are separable)."""
    check_rule("adaptive_avg_pool3d", input)
    x, was_batched = batched(input, 3, "adaptive_avg_pool3d")
    sizes = tuple(s if o is None else o for o, s in zip(_tuple(output_size, 3, "output_size"), x.shape[2:]))
    if any(o < 0 for o in sizes):
        raise ValueError(f"adaptive_avg_pool3d: output_size must not be negative, got {list(sizes)}")
    x = adaptive_windows_mean(x, sizes)
    return x if was_batched else x.squeeze(0)


def adaptive_max_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) to ``output_size``, with PyTorch's window bounds."""
    check_rule("adaptive_max_pool3d", input)
    return adaptive_max_pool(3, input, output_size)


def conv_transpose3d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """Transposed 3-D convolution; ``weight`` is (C_in, C_out/groups, kD, kH, kW)."""
    return _conv_transposend(3, x, weight, bias, stride, padding, output_padding, groups, dilation)


def _fractional(n: int, input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any,
                return_indices: bool, _random_samples: Tensor | None) -> Any:
    """PyTorch's fractional max pooling: in each dim of each plane, windows of the kernel's size start at
    ``floor((i + u) * alpha) - floor(u * alpha)`` (``alpha = (in - k) / (out - 1)``, the last at ``in - k``)
    for a sample ``u`` in [0, 1) per plane and dim (``_random_samples`` (N, C, n), else drawn)."""
    name = f"fractional_max_pool{n}d"
    check_rule(name, input)
    x, was_batched = batched(input, n, name)
    k = _tuple(kernel_size, n, "kernel_size")
    spatial = tuple(x.shape[2:])
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
        ratio = (output_ratio,) * n if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
        if not all(0 < r < 1 for r in ratio):
            raise ValueError(f"{name}: output_ratio must be between 0 and 1 (exclusive), got {output_ratio}")
        out = tuple(int(s * r) for s, r in zip(spatial, ratio))
    else:
        out = _tuple(output_size, n, "output_size")
    for i in range(n):
        if out[i] + k[i] - 1 > spatial[i]:
            raise ValueError(f"{name}: out + pool_size - 1 ({out[i]} + {k[i]} - 1) must not exceed the input size "
                             f"({spatial[i]}) in dim {i}")
    nb, c = x.shape[0], x.shape[1]
    if _random_samples is None:
        samples = rand(nb, c, n, dtype=x.dtype, device=x.device)
    else:
        samples = _random_samples.to(x.dtype)
        if tuple(samples.shape) != (nb, c, n):
            raise ShapeError(f"{name}: expected _random_samples of shape {[nb, c, n]}, got {list(samples.shape)}")
    order = (1, 0) if n == 2 else tuple(range(n))  # PyTorch's 2-d samples are (width, height)
    key: list[Any] = [arange(nb, device=x.device).reshape(nb, *([1] * (1 + 2 * n))),
                      arange(c, device=x.device).reshape(1, c, *([1] * (2 * n)))]
    where_from = None
    for d in range(n):
        u = samples[:, :, order[d]].reshape(nb, c, 1)
        steps = arange(out[d], device=x.device).to(x.dtype).reshape(1, 1, -1)
        if out[d] > 1:
            alpha = (spatial[d] - k[d]) / (out[d] - 1)
            starts = ((steps + u) * alpha).floor() - (u * alpha).floor()
            starts = where(steps == out[d] - 1, float(spatial[d] - k[d]), starts)
        else:
            starts = steps * 0 + float(spatial[d] - k[d])
        shape = [nb, c] + [1] * (2 * n)
        shape[2 + d] = out[d]
        offsets = [1] * (2 + 2 * n)
        offsets[2 + n + d] = k[d]
        idx = starts.long().reshape(shape) + arange(k[d], device=x.device).reshape(offsets)
        key.append(idx)
        term = idx * math.prod(spatial[d + 1:])
        where_from = term if where_from is None else where_from + term
    got = window_max(x[tuple(key)], where_from if return_indices else None, n)
    if was_batched:
        return got
    return tuple(t.squeeze(0) for t in got) if return_indices else got.squeeze(0)


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    """Max pooling of (N, C, H, W) or (C, H, W) over pseudo-random overlapping windows to ``output_size`` (or
    ``output_ratio`` of the input); ``return_indices=True`` also returns flat indices into H * W."""
    return _fractional(2, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    """Max pooling of (N, C, D, H, W) or (C, D, H, W) over pseudo-random overlapping windows (as
    :func:`fractional_max_pool2d`)."""
    return _fractional(3, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


# -- spatial transformers ----------------------------------------------------------------------------------------


def _base_coords(size: int, align_corners: bool, like: Tensor) -> Tensor:
    """The normalized coordinates of ``size`` pixel centers (corners at -1 and 1 with ``align_corners``)."""
    if size <= 1:
        return zeros(size, dtype=like.dtype, device=like.device)
    step = arange(size, device=like.device).to(like.dtype) * (2.0 / (size - 1)) - 1.0
    return step if align_corners else step * ((size - 1) / size)


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The sampling grid of the affine maps ``theta`` (N, 2, 3) or (N, 3, 4) over an output of ``size``
    (N, C, H, W) or (N, C, D, H, W): (N, H, W, 2) or (N, D, H, W, 3) normalized (x, y[, z]) coordinates."""
    check_rule("affine_grid", theta)
    size = tuple(size)
    n = len(size) - 2
    if n not in (2, 3):
        raise ValueError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                         f"respectively. Got size {list(size)}.")
    if tuple(theta.shape) != (size[0], n, n + 1):
        raise ShapeError(f"affine_grid: expected a batch of {n}D affine matrices of shape Nx{n}x{n + 1} for size "
                         f"{list(size)}. Got {list(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"affine_grid: expected non-zero, positive output size. Got {list(size)}")
    spatial = size[2:]  # (D,) H, W: the coordinates are (x, y[, z]), x along the last dim
    axes = [_base_coords(s, bool(align_corners), theta) for s in reversed(spatial)]
    grids = ops.meshgrid(*reversed(axes), indexing="ij")  # each of shape spatial
    homogeneous = ops.stack([*reversed(grids), grids[0] * 0 + 1], -1).reshape(1, math.prod(spatial), n + 1)
    out = homogeneous @ theta.mT  # (N, prod(spatial), n)
    return out.reshape(size[0], *spatial, n)


def _reflect(coord: Tensor, low2: int, high2: int) -> Tensor:
    """PyTorch's reflect_coordinates: fold ``coord`` into [low2 / 2, high2 / 2] by reflection."""
    if low2 == high2:
        return coord * 0
    lo, span = low2 / 2, (high2 - low2) / 2
    d = (coord - lo).abs()
    flips = (d / span).floor()
    extra = d - flips * span
    return where((flips % 2) == 0, extra + lo, span - extra + lo)


def _source_coord(coord: Tensor, size: int, align_corners: bool, padding_mode: str) -> Tensor:
    """A normalized grid coordinate as a pixel coordinate of an input dim of ``size``, padded as asked."""
    pix = (coord + 1) / 2 * (size - 1) if align_corners else ((coord + 1) * size - 1) / 2
    if padding_mode == "border":
        pix = pix.clamp(0, size - 1)
    elif padding_mode == "reflection":
        pix = _reflect(pix, 0, 2 * (size - 1)) if align_corners else _reflect(pix, -1, 2 * size - 1)
        pix = pix.clamp(0, size - 1)
    return pix


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample (N, C, H, W) at the normalized (x, y) points of ``grid`` (N, Ho, Wo, 2), or (N, C, D, H, W) at
    the (x, y, z) of (N, Do, Ho, Wo, 3): ``bilinear`` (trilinear) or ``nearest``, points outside the input read
    ``zeros``, the ``border`` or their ``reflection``. Gradients reach the input and the grid."""
    check_rule("grid_sample", input)
    if mode not in ("bilinear", "nearest"):
        raise ValueError(f"grid_sample: mode must be 'bilinear' or 'nearest' (bicubic is not supported), "
                         f"got '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"grid_sample: padding_mode must be 'zeros', 'border' or 'reflection', got "
                         f"'{padding_mode}'")
    n = input.ndim - 2
    if n not in (2, 3) or grid.ndim != input.ndim or grid.shape[-1] != n or grid.shape[0] != input.shape[0]:
        raise ShapeError(f"grid_sample: expected a 4-D or 5-D input and a grid (N, *out, {max(n, 2)}) of the same "
                         f"rank and batch, got input {list(input.shape)} and grid {list(grid.shape)}")
    if grid.dtype != input.dtype:
        raise TypeError(f"grid_sample: expected grid to have the input's dtype {input.dtype}, got {grid.dtype}")
    nb, c, spatial = input.shape[0], input.shape[1], tuple(input.shape[2:])
    out = tuple(grid.shape[1:-1])
    flat_grid = grid.reshape(nb, math.prod(out), n)
    # coordinate i of the grid indexes spatial dim n - 1 - i (x is the last dim)
    pix = [_source_coord(flat_grid[..., i], spatial[n - 1 - i], bool(align_corners), padding_mode)
           for i in range(n)]
    sizes = [spatial[n - 1 - i] for i in range(n)]
    strides = [math.prod(spatial[n - i:]) for i in range(n)]  # of dim n - 1 - i in the flat plane
    plane = input.reshape(nb, c, math.prod(spatial))

    def read(corner: list[Tensor]) -> Tensor:
        """The input at integer pixel coordinates (N, P) per dim, 0 outside."""
        inside = None
        flat = None
        for i, q in enumerate(corner):
            ok = (q >= 0) & (q <= sizes[i] - 1)
            inside = ok if inside is None else inside & ok
            term = q.clamp(0, sizes[i] - 1).long() * strides[i]
            flat = term if flat is None else flat + term
        assert inside is not None and flat is not None
        vals = plane.gather(2, flat.unsqueeze(1).expand(nb, c, flat.shape[1]))
        return where(inside.unsqueeze(1), vals, 0.0)

    if mode == "nearest":
        y = read([p.round() for p in pix])
    else:
        lows = [p.floor() for p in pix]
        fracs = [p - lo for p, lo in zip(pix, lows)]
        y = None
        for bits in itertools.product((0, 1), repeat=n):
            weight = None
            for i, b in enumerate(bits):
                w = fracs[i] if b else 1 - fracs[i]
                weight = w if weight is None else weight * w
            assert weight is not None
            term = read([lo + b for lo, b in zip(lows, bits)]) * weight.unsqueeze(1)
            y = term if y is None else y + term
        assert y is not None
    return y.reshape(nb, c, *out)


# -- the tuple-returning max poolings ---------------------------------------------------------------------------


def _with_indices(n: int) -> Callable[..., Any]:
    def pool(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
             ceil_mode: bool = False, return_indices: bool = False) -> tuple[Tensor, Tensor]:
        return max_pool(n, input, kernel_size, stride, padding, dilation, ceil_mode, True)
    pool.__name__ = pool.__qualname__ = f"max_pool{n}d_with_indices"
    pool.__doc__ = f"``max_pool{n}d`` with ``return_indices=True``: the maxima and their flat input indices."
    return pool


def _fractional_with_indices(n: int) -> Callable[..., Any]:
    def pool(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
             return_indices: bool = False, _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
        return _fractional(n, input, kernel_size, output_size, output_ratio, True, _random_samples)
    pool.__name__ = pool.__qualname__ = f"fractional_max_pool{n}d_with_indices"
    pool.__doc__ = (f"``fractional_max_pool{n}d`` with ``return_indices=True``: the maxima and their flat input "
                    "indices.")
    return pool


def _adaptive_with_indices(n: int) -> Callable[..., Any]:
    def pool(input: Tensor, output_size: Any, return_indices: bool = False) -> tuple[Tensor, Tensor]:
        return adaptive_max_pool(n, input, output_size, True)
    pool.__name__ = pool.__qualname__ = f"adaptive_max_pool{n}d_with_indices"
    pool.__doc__ = (f"``adaptive_max_pool{n}d`` with ``return_indices=True``: the maxima and their flat input "
                    "indices.")
    return pool


#: (name, function, ops it uses)
_ROWS: list[tuple[str, Callable[..., Any], tuple[str, ...]]] = [
    ("unfold", unfold_windows, ("pad", "getitem", "permute", "reshape")),
    ("fold", fold, ("scatter_add", "reshape", "getitem")),
    ("lp_pool1d", lp_pool1d, ("pow", "avg_pool1d", "sign", "abs", "relu", "mul")),
    ("lp_pool2d", lp_pool2d, ("pow", "avg_pool2d", "sign", "abs", "relu", "mul")),
    ("lp_pool3d", lp_pool3d, ("pow", "sign", "abs", "relu", "mul")),
    ("max_unpool1d", max_unpool1d, ("scatter", "reshape")),
    ("max_unpool2d", max_unpool2d, ("scatter", "reshape")),
    ("max_unpool3d", max_unpool3d, ("scatter", "reshape")),
    ("adaptive_avg_pool3d", adaptive_avg_pool3d, ("matmul", "movedim")),
    ("adaptive_max_pool3d", adaptive_max_pool3d, ("getitem", "argmax", "where", "sum")),
    ("conv_transpose3d", conv_transpose3d, ("index_put", "conv3d")),
    ("affine_grid", affine_grid, ("matmul", "stack")),
    ("grid_sample", grid_sample, ("gather", "floor", "where", "mul", "add", "clamp")),
    ("fractional_max_pool2d", fractional_max_pool2d, ("rand", "floor", "getitem", "argmax", "where", "sum")),
    ("fractional_max_pool3d", fractional_max_pool3d, ("rand", "floor", "getitem", "argmax", "where", "sum")),
]

#: Layout ops take any dtype; the pools and samplers that average or interpolate real floating ones.
#: im2col and col2im are the ops ``nn.unfold`` / ``nn.fold`` (``unfold`` names Tensor.unfold's sliding view).
_PREFIXED = ("unfold", "fold")
_ANY = ("max_unpool1d", "max_unpool2d", "max_unpool3d", "conv_transpose3d")
_ORDERED = ("adaptive_max_pool3d",)  # a maximum: real numbers (argmax refuses bool and complex)
FUNCTIONS: dict[str, Callable[..., Any]] = {
    **register_composites("nn", [r for r in _ROWS if r[0] in _PREFIXED], prefix="nn."),
    **register_composites("nn", [r for r in _ROWS if r[0] not in _ANY + _ORDERED + _PREFIXED],
                          dtype_rule="real_floating"),
    **register_composites("nn", [r for r in _ROWS if r[0] in _ANY]),
    **register_composites("nn", [r for r in _ROWS if r[0] in _ORDERED], dtype_rule="real_numeric"),
}
#: Functions of nn.functional that return a tuple, not registry ops (the database compares one result).
PLAIN: dict[str, Callable[..., Any]] = {
    f.__name__: names_errors(f.__name__, f)
    for f in [*(_with_indices(n) for n in (1, 2, 3)), *(_adaptive_with_indices(n) for n in (1, 2, 3)),
              *(_fractional_with_indices(n) for n in (2, 3))]
}
