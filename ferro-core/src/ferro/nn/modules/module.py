"""``Module``: the base class of layers and models, as ``torch.nn.Module``.

A module holds parameters (:class:`~ferro.nn.Parameter`), buffers (tensors that
are state but not trained, such as running statistics) and child modules, each
in its own dict, filled by ``__setattr__``; everything that walks the tree
(``parameters``, ``state_dict``, ``to``, ``train``...) reads those dicts.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from ..._core.dtypes import DType
from ..._core.tensor import Tensor
from ...autograd import is_grad_enabled, no_grad
from .._handles import RemovableHandle, new_args
from ..parameter import Buffer, Parameter
from ._backward_hooks import wrap_inputs, wrap_outputs

__all__ = ["Module", "RemovableHandle"]


class _IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"

    __str__ = __repr__


def _addindent(s: str, n: int) -> str:
    """Indent every line but the first by ``n`` spaces (PyTorch's repr layout)."""
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join((" " * n + ln) if ln.strip() else "" for ln in lines[1:])


def _check_name(kind: str, name: Any) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}')


class Module:
    """Base class of all layers and models; subclasses call ``super().__init__()`` and define ``forward``.

    >>> import ferro
    >>> class Net(ferro.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = ferro.nn.Linear(3, 2)
    ...     def forward(self, x):
    ...         return self.fc(x).relu()
    >>> [name for name, _ in Net().named_parameters()]
    ['fc.weight', 'fc.bias']
    """

    training: bool
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _modules: dict[str, Module | None]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments {args} {kwargs}; "
                            "Module.__init__ takes none")
        sa = object.__setattr__
        sa(self, "training", True)
        sa(self, "_parameters", {})
        sa(self, "_buffers", {})
        sa(self, "_non_persistent_buffers_set", set())
        sa(self, "_modules", {})
        sa(self, "_forward_pre_hooks", OrderedDict())
        sa(self, "_forward_pre_hooks_with_kwargs", set())
        sa(self, "_forward_hooks", OrderedDict())
        sa(self, "_forward_hooks_with_kwargs", set())
        sa(self, "_forward_hooks_always_called", set())
        sa(self, "_backward_pre_hooks", OrderedDict())
        sa(self, "_backward_hooks", OrderedDict())

    forward: Callable[..., Any]

    def _no_forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    forward = _no_forward

    # -- calling -------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        for hid, hook in list(self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                args, kwargs = new_args(hook(self, args, kwargs), args, kwargs, "forward pre-hook")
            else:
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        state = None
        if (self._backward_hooks or self._backward_pre_hooks) and is_grad_enabled():
            args, state = wrap_inputs(self, args)
        called: set[int] = set()
        try:
            out = self.forward(*args, **kwargs)
            for hid, hook in list(self._forward_hooks.items()):
                called.add(hid)
                if hid in self._forward_hooks_with_kwargs:
                    res = hook(self, args, kwargs, out)
                else:
                    res = hook(self, args, out)
                if res is not None:
                    out = res
        except Exception:
            for hid, hook in list(self._forward_hooks.items()):
                if hid in self._forward_hooks_always_called and hid not in called:
                    try:
                        if hid in self._forward_hooks_with_kwargs:
                            hook(self, args, kwargs, None)
                        else:
                            hook(self, args, None)
                    except Exception:  # the forward's own error is the one to report
                        pass
            raise
        return out if state is None else wrap_outputs(state, out)

    def register_forward_pre_hook(self, hook: Callable[..., Any], *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args)`` before each forward; a returned value replaces the args.

        With ``with_kwargs=True`` it is ``hook(module, args, kwargs)`` returning None or ``(args, kwargs)``.
        """
        handle = RemovableHandle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(handle.id)
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after each forward; a returned value replaces the output.

        With ``with_kwargs=True`` it is ``hook(module, args, kwargs, output)``; ``always_call=True``
        calls it (with output None) even when forward raises.
        """
        handle = RemovableHandle(self._forward_hooks, self._forward_hooks_with_kwargs,
                                 self._forward_hooks_always_called)
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(handle.id)
        if always_call:
            self._forward_hooks_always_called.add(handle.id)
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradients of the outputs are ready; a returned
        tuple replaces them."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` when the gradients of the positional inputs are
        ready (None for inputs that are not tensors requiring grad); a returned tuple replaces ``grad_input``."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    # -- attributes ----------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            members = d.get(store)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(ferro.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            self._modules[name] = value
        elif d.get("_modules") is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(ferro.nn.Module or None expected)")
            self._modules[name] = value
        elif isinstance(value, Buffer):
            if d.get("_buffers") is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._forget(name)
            self.register_buffer(name, value, value.persistent)
        elif d.get("_buffers") is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(ferro.Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        """Drop ``name`` from the plain attributes and every member dict (before it is re-registered)."""
        self.__dict__.pop(name, None)
        for store in (self._parameters, self._buffers, self._modules):
            store.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = list(super().__dir__()) + list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def _check_new_member(self, kind: str, name: str, store: dict[str, Any]) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        _check_name(kind, name)
        if hasattr(self, name) and name not in store:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: module state that is not a parameter (e.g. BatchNorm's running mean).

        Buffers move with ``to()`` and are in ``state_dict`` unless ``persistent=False``.
        """
        self._check_new_member("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(ferro Tensor or None required)")
        if isinstance(tensor, Buffer):
            tensor = tensor.detach()
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder, as a layer without bias does)."""
        self._check_new_member("parameter", name, self._parameters)
        if param is not None:
            if not isinstance(param, Parameter):
                raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                                "(ferro.nn.Parameter or None required)")
            if param.grad_fn is not None:
                raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                                 f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                                 "the value in the forward() method.")
        self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module, reachable as the attribute ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_new_member("module", name, self._modules)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The module at the dotted path ``target`` (``""`` is this module)."""
        mod: Module = self
        if target == "":
            return mod
        for item in target.split("."):
            if not isinstance(mod, Module) or item not in mod._modules:
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = mod._modules[item]  # type: ignore[assignment]
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path ``target``."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"{mod._get_name()} has no parameter `{name}`")
        return mod._parameters[name]  # type: ignore[return-value]

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target``."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers:
            raise AttributeError(f"{mod._get_name()} has no buffer `{name}`")
        return mod._buffers[name]  # type: ignore[return-value]

    # -- walking the tree ---------------------------------------------------------------

    def named_modules(self, memo: set[Module] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This module and all below it, with dotted names; each module once unless ``remove_duplicate=False``."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """This module and all below it."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct children with their names (each module once)."""
        seen: set[Module] = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self) -> Iterator[Module]:
        """The direct children."""
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Any]]:
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        seen: set[int] = set()
        for mod_prefix, mod in mods:
            for name, value in getattr(mod, store).items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs; a parameter shared by two modules comes once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module (and, with ``recurse``, of all below it)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, buffer)`` pairs."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers of this module (and, with ``recurse``, of all below it)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # -- modes and gradients ------------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """Set training mode (``mode=False`` is eval mode) here and below; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode (``train(False)``): Dropout passes through, BatchNorm uses running stats."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None (default), or to zeros in place."""
        for p in self.parameters():
            g = p.grad
            if g is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                with no_grad():
                    g.zero_()

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every child (recursively, first) and then on this module; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- moving and casting ---------------------------------------------------------------

    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        """Apply ``fn`` to every parameter, gradient and buffer. Parameters keep their identity
        (their data is replaced, as PyTorch does), so optimizers holding them stay valid."""
        for module in self.children():
            module._apply(fn)
        with no_grad():
            for p in self._parameters.values():
                if p is None:
                    continue
                p.data = fn(p)
                if p.grad is not None:
                    p.grad.data = fn(p.grad)
            for name, b in self._buffers.items():
                if b is not None:
                    self._buffers[name] = fn(b)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move and/or cast parameters and buffers in place: ``to(device)``, ``to(dtype)``,
        ``to(device, dtype)``, ``to(tensor)``. Only floating and complex tensors change dtype."""
        from ..._ops.conversion import _parse
        dev, dtype = _parse(args, dict(kwargs))
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            if t.is_floating_point() or t.is_complex():
                if dtype is not None and t.is_complex() and not dtype.is_complex:
                    return t.to(dev) if dev is not None else t  # complex stays complex, as in PyTorch
                return t.to(device=dev, dtype=dtype)
            return t.to(dev) if dev is not None else t

        return self._apply(convert)

    def cpu(self) -> Module:
        """Move everything to the CPU."""
        return self.to("cpu")

    def cuda(self, device: int | None = None) -> Module:
        """Move everything to a CUDA device (``cuda:0`` unless ``device`` says otherwise)."""
        return self.to(f"cuda:{device or 0}")

    def type(self, dst_type: DType) -> Module:
        """Cast every parameter and buffer (of any dtype) to ``dst_type``."""
        return self._apply(lambda t: t.to(dst_type))

    def float(self) -> Module:
        """Cast floating parameters and buffers to float32."""
        return self._cast_floats("float32")

    def double(self) -> Module:
        """Cast floating parameters and buffers to float64."""
        return self._cast_floats("float64")

    def half(self) -> Module:
        """Cast floating parameters and buffers to float16."""
        return self._cast_floats("float16")

    def bfloat16(self) -> Module:
        """Cast floating parameters and buffers to bfloat16."""
        return self._cast_floats("bfloat16")

    def _cast_floats(self, name: str) -> Module:
        from ..._core.dtypes import by_name
        dtype = by_name[name]
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    # -- state ---------------------------------------------------------------------------

    def state_dict(self, *, destination: dict[str, Any] | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Tensor]:
        """An ordered dict of every parameter and persistent buffer by dotted name.

        The values share storage with the module's tensors (detached unless ``keep_vars``).
        """
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if _has_extra_state(self):
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy values from ``state_dict`` into the parameters and buffers (in place, keeping identity).

        Returns ``(missing_keys, unexpected_keys)``. Shape mismatches always raise; with ``strict``
        (the default) missing or unexpected keys raise too, naming every one. ``assign=True``
        puts the given tensors in place of the module's instead of copying.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}.")
        missing: list[str] = []
        errors: list[str] = []
        expected: set[str] = set()
        for mod_prefix, module in list(self.named_modules()):  # lazy layers take their sizes from the tensors
            if hasattr(module, "_materialize_from_state"):
                module._materialize_from_state(state_dict, mod_prefix + "." if mod_prefix else "")
        for mod_prefix, module in self.named_modules():
            p = mod_prefix + "." if mod_prefix else ""
            members = [(n, t, True) for n, t in module._parameters.items() if t is not None]
            members += [(n, t, False) for n, t in module._buffers.items()
                        if t is not None and n not in module._non_persistent_buffers_set]
            for name, current, is_param in members:
                key = p + name
                expected.add(key)
                if key not in state_dict:
                    missing.append(key)
                    continue
                module._load_one(name, key, current, state_dict[key], is_param, assign, errors)
            if _has_extra_state(module):
                key = p + _EXTRA_STATE
                expected.add(key)
                if key in state_dict:
                    module.set_extra_state(state_dict[key])
                else:
                    missing.append(key)
        unexpected = [k for k in state_dict if k not in expected]
        if strict:
            if unexpected:
                errors.insert(0, f"Unexpected key(s) in state_dict: {_quoted(unexpected)}. ")
            if missing:
                errors.insert(0, f"Missing key(s) in state_dict: {_quoted(missing)}. ")
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(self._get_name(),
                                                                                    "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def _load_one(self, name: str, key: str, current: Tensor, value: Any, is_param: bool, assign: bool,
                  errors: list[str]) -> None:
        if not isinstance(value, Tensor):
            errors.append(f'While copying the parameter named "{key}", expected a ferro Tensor from checkpoint '
                          f"but received {type(value)}")
            return
        if value.shape != current.shape:
            errors.append(f"size mismatch for {key}: copying a param with shape {value.shape} from checkpoint, "
                          f"the shape in current model is {current.shape}.")
            return
        try:
            if assign:
                if is_param:
                    new = value if isinstance(value, Parameter) else Parameter(value, current.requires_grad)
                    self._parameters[name] = new
                else:
                    self._buffers[name] = value
            else:
                with no_grad():
                    current.copy_(value)
        except Exception as exc:  # e.g. a dtype the device lacks: reported with the key, as PyTorch does
            errors.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                          f"{current.shape} and whose dimensions in the checkpoint are {value.shape}, an exception "
                          f"occurred : {exc}.")

    def get_extra_state(self) -> Any:
        """State beyond parameters and buffers to store in ``state_dict`` (key ``_extra_state``).

        Override it together with :meth:`set_extra_state`; the base class stores none.
        """
        raise RuntimeError("get_extra_state() is only called on modules that override it")

    def set_extra_state(self, state: Any) -> None:
        """Restore what :meth:`get_extra_state` returned, from ``load_state_dict``."""
        raise RuntimeError("set_extra_state() is only called on modules that override it")

    # -- repr ----------------------------------------------------------------------------

    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The module-specific part of ``repr`` (its settings); subclasses override it."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): {_addindent(repr(module), 2)}" for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


_EXTRA_STATE = "_extra_state"


def _has_extra_state(module: Module) -> bool:
    return type(module).get_extra_state is not Module.get_extra_state


def _quoted(keys: list[str]) -> str:
    return ", ".join(f'"{k}"' for k in keys)


def _typename(value: Any) -> str:
    if isinstance(value, Tensor):
        return "ferro." + type(value).__name__
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
