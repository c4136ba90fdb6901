"""``GradScaler``: dynamic loss scaling, with PyTorch's API and values (``torch.amp.GradScaler``).

A float16 gradient underflows where its float32 one would not; multiplying the
loss by a large factor (the scale) before ``backward()`` keeps small gradients
representable, and dividing the gradients by it before the optimizer steps undoes
it. Too large a scale overflows: then some gradient holds an inf or a nan, the
step is skipped and the scale backs off; after ``growth_interval`` steps without
one it grows again.

The gradients of each device and dtype are checked and unscaled by one call of
the op ``amp_unscale_`` (one fused kernel on backends that have it, see
``_unscale``), which writes a flag on the device; the flag is read once, when
:meth:`GradScaler.step` decides whether to step. The scale and the growth
tracker are Python numbers (the scale rounded to float32 as PyTorch's tensor
holds it), so :meth:`GradScaler.state_dict` saves with ``ferro.save`` as it is.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable
from enum import Enum
from typing import Any

from .._core.dtypes import bfloat16, float16, float32
from .._core.tensor import Tensor
from .._creation import zeros
from ..backends import available
from ._unscale import amp_unscale_
from ._unscale import float32_value as _float32

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    """Where one optimizer is in the current iteration."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _scaled(t: Tensor, scale: float) -> Tensor:
    """``t * scale`` as PyTorch computes it with a float32 scale: a 16-bit ``t`` in float32, rounded once."""
    if t.dtype in (float16, bfloat16):
        return (t.to(float32) * scale).to(t.dtype)
    return t * scale


class GradScaler:
    """Dynamic loss scaling for mixed precision training (``torch.amp.GradScaler``).

    ``scale(loss)`` multiplies the loss by the current scale; ``step(optimizer)``
    unscales the gradients (unless :meth:`unscale_` already did) and steps unless
    one of them holds an inf or a nan; ``update()`` then backs the scale off by
    ``backoff_factor`` after a skipped step, or grows it by ``growth_factor``
    after ``growth_interval`` steps in a row without one.

    Args:
        device: the device type the scaled tensors live on (``"cpu"``, ``"cuda"``, ``"opencl"``); a scaler
            for a backend that is not available here warns and disables itself, as PyTorch's does for CUDA.
        init_scale: the first scale.
        growth_factor: what the scale is multiplied by after ``growth_interval`` unskipped steps (> 1).
        backoff_factor: what the scale is multiplied by after a skipped step (< 1).
        growth_interval: unskipped steps in a row before the scale grows.
        enabled: ``False`` makes every method a pass-through: ``scale`` returns its input, ``step`` just steps.

    >>> import ferro
    >>> w = ferro.nn.Parameter(ferro.tensor([1.0, 2.0]))
    >>> opt = ferro.optim.SGD([w], lr=0.1)
    >>> scaler = ferro.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=1)
    >>> scaler.scale((w * w).sum()).backward()
    >>> scaler.step(opt)
    >>> scaler.update()
    >>> w, scaler.get_scale()
    (Parameter containing:
    tensor([0.8000, 1.6000], requires_grad=True), 2048.0)
    """

    def __init__(self, device: str = "cpu", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        kind = str(device).split(":")[0]
        if enabled and kind != "cpu" and kind not in available():
            warnings.warn(f"ferro.amp.GradScaler is enabled, but backend '{kind}' is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._scale: float | None = None
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        self._growth_tracker: int | None = None
        self._per_optimizer_states: dict[int, dict[str, Any]] = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str) -> None:
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate your script did not "
                                 "use scaler.scale(loss or outputs) earlier in the iteration.")

    def _lazy_init_scale_growth_tracker(self) -> None:
        self._scale = _float32(self._init_scale)
        self._growth_tracker = self._init_growth_tracker

    # -- the iteration ------------------------------------------------------------------

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or lists and tuples of them, nested) multiplied by the scale; returned
        unchanged when the scaler is disabled."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._lazy_init_scale_growth_tracker()
        scale = self._scale

        def apply(val: Any) -> Any:
            if isinstance(val, Tensor):
                return _scaled(val, scale)
            if isinstance(val, Iterable):
                mapped = map(apply, val)
                return type(val)(mapped) if isinstance(val, (list, tuple)) else mapped
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply(outputs)

    def _unscale_grads_(self, optimizer: Any, inv_scale: float, allow_fp16: bool) -> dict[Any, Tensor]:
        """Unscale the gradients of ``optimizer`` per device and dtype; the devices' found-inf flags."""
        groups: dict[Any, dict[Any, list[Tensor]]] = defaultdict(lambda: defaultdict(list))
        for group in optimizer.param_groups:
            for param in group["params"]:
                g = param.grad
                if g is None:
                    continue
                if not allow_fp16 and g.dtype is float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                groups[g.device][g.dtype].append(g)
        found: dict[Any, Tensor] = {}
        for dev, by_dtype in groups.items():
            flag = found[dev] = zeros((), dtype=float32, device=dev)
            for grads in by_dtype.values():
                amp_unscale_(grads, flag, inv_scale)
        return found

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale in place (and note any inf or nan among them).

        Optional: :meth:`step` unscales when this was not called; call it to read or clip the true gradients
        first. Once per optimizer between two :meth:`update`, before :meth:`step`.
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        scale = self._scale
        inv_scale = _float32(1.0 / scale) if scale else float("inf")  # the reciprocal in double, as PyTorch
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale ``optimizer``'s gradients (unless :meth:`unscale_` did) and call ``optimizer.step(*args,
        **kwargs)`` unless one of them holds an inf or a nan; returns what that step returned (None if skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Back the scale off after a skipped step, or grow it after ``growth_interval`` unskipped ones; or set
        it to ``new_scale`` (a float, or a one-element tensor without grad). Call it once per iteration, after
        every optimizer's :meth:`step`."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                reason = ("new_scale should be a float or a 1-element ferro float32 Tensor with "
                          "requires_grad=False.")
                if (new_scale.device.type != str(self._device).split(":")[0] or new_scale.numel() != 1
                        or new_scale.requires_grad):
                    raise AssertionError(reason)
                new_scale = new_scale.item()
            self._scale = _float32(float(new_scale))
        else:
            found = [flag.item() for state in self._per_optimizer_states.values()
                     for flag in state["found_inf_per_device"].values()]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale(sum(found))
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _update_scale(self, found_inf: float) -> None:
        """PyTorch's ``_amp_update_scale_``: scalar work on the host."""
        if found_inf:
            self._scale = _float32(self._scale * self._backoff_factor)  # type: ignore[operator]
            self._growth_tracker = 0
            return
        successful = self._growth_tracker + 1  # type: ignore[operator]
        if successful == self._growth_interval:
            grown = _float32(self._scale * self._growth_factor)  # type: ignore[operator]
            if grown != float("inf"):  # a scale that would overflow float32 stays where it is
                self._scale = grown
            self._growth_tracker = 0
        else:
            self._growth_tracker = successful

    # -- settings and state -------------------------------------------------------------

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled; ``init_scale`` before the first :meth:`scale`)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self) -> float:
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the factor the scale grows by."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale backs off by."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the factor the scale backs off by."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """Unskipped steps in a row before the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the unskipped steps in a row before the scale grows."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def is_enabled(self) -> bool:
        """Whether the scaler scales (False: every method passes through)."""
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and ``_growth_tracker`` as
        Python numbers (PyTorch's keys); empty when disabled. Take it after :meth:`update`."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state made by :meth:`state_dict` (of ferro's or PyTorch's scaler); nothing when disabled."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = _float32(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker = self._init_growth_tracker
