"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..._core.tensor import Tensor
from ..parameter import Parameter
from .module import Module, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _abs_index(idx: Any, n: int, kind: str) -> int:
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for {kind} of length {n}")
    return idx + n if idx < 0 else idx


class _IndexedModules(Module):
    """What Sequential and ModuleList share: children named "0", "1", ... kept contiguous."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return list(self._modules.values())[_abs_index(idx, len(self), self._get_name())]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(str(_abs_index(idx, len(self), self._get_name())), module)

    def __delitem__(self, idx: int | slice) -> None:
        items = list(self._modules.values())
        if isinstance(idx, slice):
            del items[idx]
        else:
            del items[_abs_index(idx, len(self), self._get_name())]
        self._renumber(items)

    def _renumber(self, items: list[Module]) -> None:
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m

    def append(self, module: Module) -> Any:
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Any:
        """Add each of ``modules`` at the end; returns self."""
        if not isinstance(modules, Iterable):
            raise TypeError(f"{self._get_name()}.extend should be called with an iterable, but got "
                            f"{type(modules).__name__}")
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> Any:
        """Put ``module`` before position ``index``."""
        if not isinstance(module, Module):
            raise TypeError(f"{self._get_name()}.insert: expected a Module, got {type(module).__name__}")
        items = list(self._modules.values())
        items.insert(index, module)
        self._renumber(items)
        return self

    def pop(self, key: int) -> Module:
        """Remove and return the module at ``key``."""
        m = self[key]
        del self[key]
        return m

    def __iadd__(self, modules: Iterable[Module]) -> Any:
        return self.extend(modules)

    def __dir__(self) -> list[str]:
        return [k for k in super().__dir__() if not k.isdigit()]


class Sequential(_IndexedModules):
    """Modules applied one after the other; ``Sequential(a, b, c)(x)`` is ``c(b(a(x)))``.

    Also ``Sequential(OrderedDict(name=module, ...))`` for named children.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], (OrderedDict, dict)) and not isinstance(args[0], Module):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def forward(self, input: Any) -> Any:
        """Feed ``input`` through each module in turn."""
        for module in self._modules.values():
            input = module(input)  # type: ignore[misc]
        return input

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return Sequential(OrderedDict(list(self._modules.items())[idx]))
        return super().__getitem__(idx)

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_abs_index(idx, len(self), "Sequential")]
        self.add_module(key, module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        for k in (keys[idx] if isinstance(idx, slice) else [keys[_abs_index(idx, len(self), "Sequential")]]):
            del self._modules[k]
        self._renumber(list(self._modules.values()))

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return Sequential(*self, *other)

    def __mul__(self, n: int) -> Sequential:
        if not isinstance(n, int) or n <= 0:
            raise ValueError(f"Non-positive multiplication factor {n} for Sequential")
        return Sequential(*(list(self) * n))

    __rmul__ = __mul__


class ModuleList(_IndexedModules):
    """A list of modules, registered as children (indexable, iterable; it has no forward)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self, *other])

    def __repr__(self) -> str:
        # Runs of identical children print once: "(0-2): 3 x Linear(...)", as PyTorch does.
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        blocks: list[list[Any]] = []
        for i, r in enumerate(reprs):
            if blocks and blocks[-1][2] == r:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, r])
        lines = [_addindent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2) for a, b, r in blocks]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules by name, registered as children (insertion ordered)."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]  # type: ignore[return-value]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove and return the module at ``key``."""
        m = self[key]
        del self[key]
        return m

    def keys(self) -> Any:
        """The names."""
        return self._modules.keys()

    def items(self) -> Any:
        """``(name, module)`` pairs."""
        return self._modules.items()

    def values(self) -> Any:
        """The modules."""
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace modules from a mapping or from ``(name, module)`` pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for j, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} should be a (name, module) pair, "
                                 f"got {pair!r}")
            self[pair[0]] = pair[1]


def _param_line(k: Any, p: Any) -> str:
    if isinstance(p, Tensor):
        size = "x".join(str(s) for s in p.shape)
        dev = f" ({p.device})" if p.device.type != "cpu" else ""
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        return f"  ({k}): {kind} containing: [ferro.{p.dtype.name} of size {size}{dev}]"
    return f"  ({k}): Object of type: {type(p).__name__}"


def _as_param(value: Any) -> Any:
    """Plain tensors become Parameters, as PyTorch's ParameterList / ParameterDict do."""
    return Parameter(value) if isinstance(value, Tensor) and not isinstance(value, Parameter) else value


class ParameterList(Module):
    """A list of parameters, registered with the module (tensors are wrapped as Parameters)."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(self._size)[idx]])
        return getattr(self, str(_abs_index(idx, self._size, "ParameterList")))

    def __setitem__(self, idx: int, value: Any) -> None:
        setattr(self, str(_abs_index(idx, self._size, "ParameterList")), _as_param(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(self._size))

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Any) -> ParameterList:
        """Add ``value`` at the end; returns self."""
        self._size += 1
        setattr(self, str(self._size - 1), _as_param(value))
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Add each of ``values`` at the end; returns self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got "
                            f"{type(values).__name__}")
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_param_line(k, p) for k, p in enumerate(self))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """A dict of parameters by name, registered with the module (tensors are wrapped as Parameters)."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        setattr(self, key, _as_param(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Any:
        """The names."""
        return self._keys.keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        """``(name, value)`` pairs."""
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterator[Any]:
        """The values."""
        return (self[k] for k in self._keys)

    def get(self, key: str, default: Any = None) -> Any:
        """The value at ``key``, or ``default``."""
        return self[key] if key in self else default

    def pop(self, key: str) -> Any:
        """Remove and return the value at ``key``."""
        v = self[key]
        del self[key]
        return v

    def clear(self) -> None:
        """Remove every entry."""
        for k in list(self._keys):
            del self[k]

    def update(self, parameters: Any) -> None:
        """Add or replace entries from a mapping or from ``(name, value)`` pairs."""
        pairs = parameters.items() if isinstance(parameters, (Mapping, ParameterDict)) else parameters
        for k, v in pairs:
            self[k] = v

    def extra_repr(self) -> str:
        return "\n".join(_param_line(k, p) for k, p in self.items())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("ParameterDict should not be called.")
