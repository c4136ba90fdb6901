"""NumPy-style indexing on a namespace that only has the Array API standard's.

ferro's ``getitem`` / ``setitem`` kernels receive NumPy-style keys (slices,
ints, None, Ellipsis, integer and bool arrays, in any mix). The standard
allows less: a key must cover every dimension (or end in an Ellipsis),
integer arrays may not mix with slices, and there is no assignment through
integer arrays at all. A namespace that takes the key as it is (NumPy, CuPy)
never reaches the code below; for the others, basic keys get a trailing
Ellipsis, advanced reads become one ``take`` on the flattened array with
positions computed on the host, and advanced writes go through the host.
These are the reference paths of the generic backend: a backend with native
advanced indexing overrides the kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["make_indexing_kernels"]


def _is_basic(k: Any) -> bool:
    return k is None or k is Ellipsis or isinstance(k, (int, slice))


def _clip(s: slice, n: int) -> slice:
    start, stop, step = s.indices(n)
    return slice(start, None if (step < 0 and stop < 0) else stop, step)


def _as_tuple(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


def make_indexing_kernels(xp: Any, to_numpy: Callable[[Any], Any], from_numpy: Callable[[Any], Any]
                          ) -> dict[str, Callable[..., Any]]:
    """``getitem`` and ``setitem`` kernels for namespace ``xp`` (``from_numpy`` puts a host array on the device)."""

    def host_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
        import numpy as np
        return tuple(np.asarray(to_numpy(k)) if hasattr(k, "shape") else k for k in key)

    def basic(key: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...] | None:
        """The key covering every dimension, slices clipped to their dimension (the standard leaves
        out-of-range bounds unspecified), if it is basic; None if it has arrays."""
        if not all(_is_basic(k) for k in key):
            return None
        if not any(k is Ellipsis for k in key):
            key = (*key, Ellipsis)
        used = sum(1 for k in key if k is not None and k is not Ellipsis)
        out, dim = [], 0
        for k in key:
            if k is Ellipsis:
                n = len(shape) - used
                out.extend(slice(None) for _ in range(n))
                dim += n
            elif k is None:
                out.append(None)
            else:
                out.append(_clip(k, shape[dim]) if isinstance(k, slice) else k)
                dim += 1
        return tuple(out)

    def positions(shape: tuple[int, ...], key: tuple[Any, ...]) -> Any:
        import numpy as np
        return np.arange(math.prod(shape), dtype=np.int64).reshape(shape)[host_key(key)]

    def getitem(x: Any, key: Any) -> Any:
        try:
            return x[key]
        except (IndexError, TypeError, ValueError):
            pass
        key = _as_tuple(key)
        b = basic(key, tuple(x.shape))
        if b is not None:
            return x[b]
        pos = positions(tuple(x.shape), key)
        flat = xp.take(xp.reshape(x, (-1,)), from_numpy(pos.reshape(-1)), axis=0)
        return xp.reshape(flat, pos.shape)

    def setitem(x: Any, key: Any, value: Any) -> None:
        try:
            x[key] = value
            return
        except (IndexError, TypeError, ValueError):
            pass
        key = _as_tuple(key)
        b = basic(key, tuple(x.shape))
        if b is not None:
            x[b] = value
            return
        import numpy as np
        host = np.array(to_numpy(x))
        host[host_key(key)] = np.asarray(to_numpy(value)) if hasattr(value, "shape") else value
        x[...] = from_numpy(host)

    return {"getitem": getitem, "setitem": setitem}
