"""The optimizer base class: parameter groups, per-parameter state, state dicts, fused kernels.

Laid out as ``torch.optim.Optimizer``: ``param_groups`` is a list of dicts
(``params`` plus every hyperparameter), ``state`` maps a parameter to a dict
of its buffers, and :meth:`Optimizer.state_dict` gives PyTorch's layout
(``state`` keyed by integer parameter index, ``params`` as index lists). The
state holds only tensors and Python numbers, so ``ferro.save`` can write it.

Each optimizer's per-parameter update is a registry op (``sgd_step``,
``adam_step``...: :func:`register_step`) whose decomposition is the unfused
update and whose kernel (``fused_sgd``, ``fused_adam``...; see
``ferro.backends.contract``) a backend may supply: bound like every kernel,
reported by ``Backend.supports`` and ``ferro.backends.explain``, one call per
parameter on native arrays, updating them in place. A group's ``fused``
entry says whether to use it: ``None`` (or no entry, for the optimizers
whose PyTorch signature has no ``fused``) uses it where the parameter's
device has it, ``True`` requires it, ``False`` never uses it. Without it the
update runs as ferro in-place ops under ``no_grad``; both give the same values.

Hooks are PyTorch's: per optimizer around :meth:`Optimizer.step`,
:meth:`~Optimizer.state_dict` and :meth:`~Optimizer.load_state_dict`, and for
all optimizers around ``step`` (:func:`register_optimizer_step_pre_hook`).
Each ``register_*`` returns a handle whose ``remove()`` takes the hook back.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from .._core.grad_mode import no_grad
from .._core.layouts import LayoutTensor
from .._core.modes import entry
from .._core.records import REGISTRY, OpDef, register
from .._core.tensor import Tensor
from ..errors import DTypeError
from ..nn._handles import RemovableHandle, new_args

__all__ = ["Optimizer", "required", "check", "fused_kernel", "register_step", "decayed_grad",
           "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

_global_optimizer_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_optimizer_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()


def _add_hook(hooks: OrderedDict[int, Callable[..., Any]], hook: Callable[..., Any],
              prepend: bool = False) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` before every optimizer's ``step`` (before the optimizer's own pre
    hooks); ``args`` starts with the optimizer, and a returned ``(args, kwargs)`` replaces them."""
    return _add_hook(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` after every optimizer's ``step`` (after the optimizer's own post
    hooks)."""
    return _add_hook(_global_optimizer_post_hooks, hook)


def _hooked_step(step: Callable[..., Any]) -> Callable[..., Any]:
    """``step`` with the step hooks around it, run once per call: a ``step`` that calls another one (a
    subclass's ``super().step()``) runs the inner one without them."""
    @functools.wraps(step)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        self = args[0]
        if self._in_step or not (_global_optimizer_pre_hooks or self._optimizer_step_pre_hooks
                                 or self._optimizer_step_post_hooks or _global_optimizer_post_hooks):
            return step(*args, **kwargs)
        for hook in [*_global_optimizer_pre_hooks.values(), *self._optimizer_step_pre_hooks.values()]:
            args, kwargs = new_args(hook(self, args, kwargs), args, kwargs, str(step))
        self._in_step = True
        try:
            out = step(*args, **kwargs)
        finally:
            self._in_step = False
        for hook in [*self._optimizer_step_post_hooks.values(), *_global_optimizer_post_hooks.values()]:
            hook(self, args, kwargs)
        return out

    wrapper.hooked = True  # type: ignore[attr-defined]
    return wrapper


class _Required:
    """The default of a hyperparameter that every group must give (PyTorch's ``required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


#: Marks a hyperparameter without a default.
required = _Required()

_SET_ERROR = ("optimizer parameters need to be organized in ordered collections, but the ordering of tensors in "
              "sets will change between runs. Please use a list instead.")


def register_step(name: str, kernel: str, unfused: Callable[..., None], uses: tuple[str, ...] = ("neg",)) -> OpDef:
    """Register an optimizer's per-parameter update as op ``name``: ``unfused`` (ferro in-place ops) is its
    decomposition, ``kernel`` its optional fused kernel, bound like every kernel. What ``unfused`` calls is
    derived from its test data; ``uses`` adds what that data does not reach (``neg``: ``maximize=True``)."""
    op = register(OpDef(name, "optimizer", (unfused.__doc__ or "").split("\n")[0], dtype_rule="real_floating",
                        decomposition=unfused, uses=uses, kernels=(kernel,), optional_kernels=True))

    def step(param: Tensor, *args: Any, **kwargs: Any) -> None:
        if not isinstance(param, Tensor):
            raise TypeError(f"{name}(): argument 'param' must be a Tensor, not {type(param).__name__}")
        if param._dtype not in op.table:
            raise DTypeError(f"{name}: not defined for dtype {param._dtype}; it takes {op.dtype_words}")
        unfused(param, *args, **kwargs)

    step.__name__ = step.__qualname__ = name
    step.__doc__ = unfused.__doc__
    op.fn = entry(op, step)  # ferro.ops.<name>: the unfused update, refusing what the op's dtype rule refuses
    return op


def fused_kernel(p: Tensor, op: str) -> Callable[..., Any] | None:
    """The kernel bound for step op ``op`` on ``p``'s device at ``p``'s dtype, or None (then the unfused update
    runs): the same one-lookup route as every op."""
    dev = p._device
    ops = dev._ops
    if ops is None:  # the device was never bound
        dev.backend  # noqa: B018
        ops = dev._ops
    entry = ops.get(op)
    return entry[0] if entry is not None and p._dtype in entry[1] else None


def check(ok: bool, message: str) -> None:
    """Refuse a hyperparameter out of range with PyTorch's message."""
    if not ok:
        raise ValueError(message)


def decayed_grad(p: Tensor, g: Tensor, weight_decay: float, maximize: bool) -> Tensor:
    """The gradient an update uses: negated to maximize, plus ``weight_decay * p`` (L2 penalty)."""
    if maximize:
        g = -g
    if weight_decay:
        g = g + p * weight_decay
    return g


class Optimizer:
    """Base class of all optimizers.

    Args:
        params: an iterable of tensors, or of dicts each holding ``params`` and
            hyperparameters that override ``defaults`` for that group.
        defaults: the hyperparameters of groups that do not give their own.

    Subclasses implement :meth:`_update_group` (each parameter through
    :meth:`_apply`, fused kernel or unfused function), name their step op
    (:func:`register_step`) in :attr:`_step_op`, validate hyperparameters in :meth:`_check_group`,
    and list in :attr:`_tuple_keys` the hyperparameters that are tuples. A subclass
    that defines its own ``step`` gets the step hooks around it too.
    """

    #: Name of the per-parameter step op whose fused kernel a backend may supply, or None.
    _step_op: str | None = None
    #: Hyperparameters that are tuples (a state dict read from a file may give lists).
    _tuple_keys: tuple[str, ...] = ()
    #: True while a hooked ``step`` runs (its hooks are not run again by a ``step`` it calls).
    _in_step = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if callable(step) and not getattr(step, "hooked", False):
            cls.step = _hooked_step(step)  # type: ignore[method-assign]

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self._optimizer_step_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self.defaults = defaults
        self.state: dict[Tensor, dict[str, Any]] = {}
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}")
        if isinstance(params, dict):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got a dict; pass [dict] for a single parameter group")
        if isinstance(params, (set, frozenset)):
            raise TypeError(_SET_ERROR)
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params")
        return "\n".join(lines) + "\n)"

    # -- groups --------------------------------------------------------------

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyperparameters (the others from ``defaults``).

        Useful to fine-tune layers that were frozen: they join the optimizer as
        training goes on. A parameter may belong to one group only.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group.get("params")
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError(_SET_ERROR)
        elif params is None:
            raise ValueError("a parameter group must have a 'params' entry")
        else:
            params = list(params)
        seen: set[int] = set()
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if p.grad_fn is not None and not p.retains_grad:
                raise ValueError("can't optimize a non-leaf Tensor (it was made by an op that autograd recorded; "
                                 "optimize the leaf it came from, or x.detach().requires_grad_())")
            if not (p._dtype.is_floating_point or p._dtype.is_complex):
                raise ValueError(f"can't optimize a tensor of dtype {p._dtype}: parameters must be floating point")
            if p._dtype.is_complex:
                raise NotImplementedError(f"{type(self).__name__}: complex parameters are not supported yet "
                                          f"(got {p._dtype}); optimize the real and imaginary parts as real tensors")
            if id(p) in seen:
                raise ValueError("optimizer contains a parameter group with duplicate parameters")
            seen.add(id(p))
        group = dict(param_group)
        group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        taken = {id(p) for g in self.param_groups for p in g["params"]}
        if taken & seen:
            raise ValueError("some parameters appear in more than one parameter group")
        self._check_group(group)
        self._check_fused(group)
        self.param_groups.append(group)

    def _check_group(self, group: dict[str, Any]) -> None:
        """Refuse hyperparameters out of range (each optimizer adds its own checks)."""
        lr = group["lr"]
        check(not isinstance(lr, Tensor), "lr as a Tensor is not supported; give a Python float")
        check(0.0 <= lr, f"Invalid learning rate: {lr}")

    def _check_fused(self, group: dict[str, Any]) -> None:
        fused, foreach = group.get("fused"), group.get("foreach")
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        if fused:
            name = self._step_op
            if name is None:
                raise RuntimeError(f"{type(self).__name__} has no fused implementation; leave fused=None")
            kernel = REGISTRY[name].kernels[0]
            for p in group["params"]:
                if fused_kernel(p, name) is None:
                    raise RuntimeError(f"`fused=True` requires a '{kernel}' kernel on the device of every parameter, "
                                       f"but backend '{p._device.type}' ({p._device}) has none; use fused=None to "
                                       "use it only where it exists")

    def _kernel_for(self, group: dict[str, Any], p: Tensor) -> Callable[..., Any] | None:
        """The fused kernel to use for ``p`` in ``group``, or None for the unfused path."""
        if group.get("fused") is False or self._step_op is None:
            return None
        return fused_kernel(p, self._step_op)

    def _apply(self, group: dict[str, Any], unfused: Callable[..., None], p: Tensor, g: Tensor,
               tensors: tuple[Tensor | None, ...], scalars: tuple[Any, ...]) -> None:
        """Update ``p`` and its state ``tensors`` (None for unused ones) with the fused kernel where
        there is one, else with ``unfused``; both take ``(p, g, *tensors, *scalars)``, the kernel on
        native arrays."""
        kernel = None if isinstance(g, LayoutTensor) else self._kernel_for(group, p)  # sparse: in ferro ops
        if kernel is None:
            unfused(p, g, *tensors, *scalars)
            return
        kernel(p._data, g._data, *[None if t is None else t._data for t in tensors], *scalars)
        p._vc[0] += 1  # in-place writes: a graph that saved one of these sees it changed
        for t in tensors:
            if t is not None:
                t._vc[0] += 1

    # -- stepping --------------------------------------------------------------

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p._grad = None
                    continue
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                with no_grad():
                    g.zero_()

    @_hooked_step
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; returns ``closure()``'s loss when given one.

        The closure re-evaluates the model and returns the loss (it runs with
        grad mode on); most optimizers call it once, before the update.
        """
        loss = None
        if closure is not None:
            from .._core.grad_mode import enable_grad
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss

    # -- hooks -------------------------------------------------------------------

    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` before each :meth:`step` (after the global pre hooks); ``args``
        starts with the optimizer, and a returned ``(args, kwargs)`` replaces what ``step`` gets."""
        return _add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` after each :meth:`step` (before the global post hooks)."""
        return _add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer)`` at the start of :meth:`state_dict` (first of all with ``prepend``)."""
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` at the end of :meth:`state_dict`; it may change the dict in
        place or return one that replaces it."""
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` at the start of :meth:`load_state_dict`, with a shallow copy of
        the given dict; it may change that copy in place or return a dict to load instead."""
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer)`` at the end of :meth:`load_state_dict`."""
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def _with_grads(self, group: dict[str, Any], fresh: Callable[[Tensor], dict[str, Any]]
                    ) -> Iterator[tuple[Tensor, Tensor, dict[str, Any]]]:
        """``(param, grad, state)`` for each parameter of ``group`` that has a gradient; a parameter's state is
        made by ``fresh(param)`` the first time it is met."""
        state = self.state
        for p in group["params"]:
            g = p._grad
            if g is None:
                continue
            st = state.get(p)
            if st is None:
                st = state[p] = fresh(p)
            yield p, g, st

    def _update_group(self, group: dict[str, Any]) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement _update_group")

    # -- state dicts -------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in PyTorch's layout.

        ``state`` maps a parameter's index (counted across groups in order) to
        its buffers; ``param_groups`` are the groups' hyperparameters with
        ``params`` as lists of indices. The tensors are the live buffers (not copies).
        """
        for pre_hook in list(self._optimizer_state_dict_pre_hooks.values()):
            pre_hook(self)
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in list(self._optimizer_state_dict_post_hooks.values()):
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state made by :meth:`state_dict` (of this optimizer, another one, or from a file).

        Buffers are copied (cast to their parameter's dtype and moved to its
        device), so the loaded dict and this optimizer share nothing.
        """
        if isinstance(state_dict, dict):
            state_dict = state_dict.copy()  # what the pre hooks may change in place
        for pre_hook in list(self._optimizer_load_state_dict_pre_hooks.values()):
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        try:
            saved_groups = state_dict["param_groups"]
            saved_state = state_dict["state"]
        except (KeyError, TypeError):
            raise ValueError("an optimizer state_dict must be a dict with 'state' and 'param_groups'") from None
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"loaded state dict has a different number of parameter groups ({len(saved_groups)}) "
                             f"than the optimizer ({len(self.param_groups)})")
        for i, (mine, theirs) in enumerate(zip(self.param_groups, saved_groups, strict=True)):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError(f"loaded state dict contains a parameter group that doesn't match the size of "
                                 f"optimizer's group: group {i} has {len(theirs['params'])} parameters there, "
                                 f"{len(mine['params'])} here")
        by_index = {int(i): p for mine, theirs in zip(self.param_groups, saved_groups, strict=True)
                    for i, p in zip(theirs["params"], mine["params"], strict=True)}
        state: dict[Tensor, dict[str, Any]] = {}
        for key, buffers in saved_state.items():
            p = by_index.get(int(key))
            if p is None:
                continue
            state[p] = {k: _restore(v, p, k) for k, v in buffers.items()}
        groups = []
        for mine, theirs in zip(self.param_groups, saved_groups, strict=True):
            group = {k: (tuple(v) if k in self._tuple_keys and isinstance(v, list) else v)
                     for k, v in theirs.items() if k != "params"}
            for k, v in self.defaults.items():
                group.setdefault(k, v)
            group["params"] = mine["params"]
            groups.append(group)
        for group in groups:
            self._check_group(group)
            self._check_fused(group)
        self.state = state
        self.param_groups = groups
        for post_hook in list(self._optimizer_load_state_dict_post_hooks.values()):
            post_hook(self)


def _restore(value: Any, p: Tensor, key: str) -> Any:
    """A loaded state value: tensors copied onto ``p``'s device (floating ones in its dtype), numbers as they are."""
    if not isinstance(value, Tensor):
        return value
    if value.ndim == 0 and key in ("step", "mu_product"):  # PyTorch keeps these as 0-d tensors; here, numbers
        return float(value.item())
    with no_grad():
        out = value.to(p._device)
        if out._dtype.is_floating_point:
            out = out.to(p._dtype)
        return out.clone() if out is value or out._data is value._data else out
