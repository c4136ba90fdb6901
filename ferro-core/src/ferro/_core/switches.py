"""PyTorch's global switches that scripts set at startup, as settings ferro remembers and reports:
``use_deterministic_algorithms``, ``set_float32_matmul_precision``, ``set_warn_always``,
``set_deterministic_debug_mode``, ``set_flush_denormal``.

ferro's kernels give the same result run after run on a device, so determinism needs nothing turned on;
float32 matmuls use the backend's full precision unless its own switch says otherwise (``ferro.cuda.matmul``).
"""

from __future__ import annotations

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision", "get_float32_matmul_precision",
           "set_warn_always", "is_warn_always_enabled", "set_flush_denormal"]

_state: dict[str, object] = {"deterministic": False, "warn_only": False, "precision": "highest", "warn_always": False}
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}
_PRECISIONS = ("highest", "high", "medium")


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Remember that deterministic algorithms are asked for (ferro's are: nothing changes)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): mode must be a bool, got {type(mode).__name__}")
    _state["deterministic"], _state["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """What :func:`use_deterministic_algorithms` was given last (False by default)."""
    return bool(_state["deterministic"])


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """The ``warn_only`` that :func:`use_deterministic_algorithms` was given last."""
    return bool(_state["warn_only"])


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """``'default'`` / 0, ``'warn'`` / 1, ``'error'`` / 2, as :func:`use_deterministic_algorithms` sets them."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0 (off), 1 (warn) or 2 (error), from the deterministic switches."""
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


def set_float32_matmul_precision(precision: str) -> None:
    """Remember ``'highest'``, ``'high'`` or ``'medium'`` (ferro's backends compute float32 matmuls in full
    precision; ferro-cuda's TF32 switch is ``ferro.cuda.matmul.allow_tf32``)."""
    if precision not in _PRECISIONS:
        raise RuntimeError(f"Invalid precision: {precision!r}; expected one of {', '.join(_PRECISIONS)}")
    _state["precision"] = precision


def get_float32_matmul_precision() -> str:
    """What :func:`set_float32_matmul_precision` was given last (``'highest'`` by default)."""
    return str(_state["precision"])


def set_warn_always(b: bool) -> None:
    """Remember whether warnings that PyTorch gives once should be given every time."""
    _state["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    """What :func:`set_warn_always` was given last."""
    return bool(_state["warn_always"])


def set_flush_denormal(mode: bool) -> bool:
    """PyTorch switches the CPU's denormal flushing here; ferro leaves NumPy's arithmetic as it is: False,
    as PyTorch answers where the CPU cannot."""
    return False
