"""Anomaly mode: backward checks each gradient a node returns for NaN and names the node that made it.

``with ferro.autograd.detect_anomaly():`` (or ``set_detect_anomaly(True)``, ``ferro.set_anomaly_enabled``) turns
it on for the thread; off, the engine pays one flag test per node. Unlike PyTorch's, ferro's anomaly mode
does not record the forward traceback of each op.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled", "check"]


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled = False
        self.check_nan = True


STATE = _State()


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on for this thread."""
    return STATE.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly mode checks gradients for NaN."""
    return STATE.check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly mode on or off for this thread (``check_nan``: look for NaN in each node's gradients)."""
    STATE.enabled, STATE.check_nan = bool(enabled), bool(check_nan)


def check(node: Any, grads: Any) -> None:
    """Raise if a gradient ``node`` returned holds NaN (called by the engine while anomaly mode is on)."""
    if not STATE.check_nan:
        return
    for i, g in enumerate(grads):
        if g is not None and (g.dtype.is_floating_point or g.dtype.is_complex) and bool(g.isnan().any()):
            raise RuntimeError(f"Function '{repr(node).strip('<>')}' returned nan values in its {i}th output.")


class detect_anomaly:  # noqa: N801  (spelled as PyTorch spells it)
    """Context manager (and decorator) turning anomaly mode on inside it."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self._saved: list[tuple[bool, bool]] = []

    def __enter__(self) -> detect_anomaly:
        self._saved.append((STATE.enabled, STATE.check_nan))
        set_anomaly_enabled(True, self.check_nan)
        return self

    def __exit__(self, *exc: Any) -> None:
        STATE.enabled, STATE.check_nan = self._saved.pop()

    def __call__(self, fn: Any) -> Any:
        import functools

        @functools.wraps(fn)
        def inside(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)
        return inside


class set_detect_anomaly(detect_anomaly):  # noqa: N801
    """Set anomaly mode to ``mode`` (on or off) inside it, restoring it after."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        super().__init__(check_nan)
        self.mode = mode

    def __enter__(self) -> set_detect_anomaly:
        self._saved.append((STATE.enabled, STATE.check_nan))
        set_anomaly_enabled(self.mode, self.check_nan)
        return self
