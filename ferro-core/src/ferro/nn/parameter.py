"""``Parameter``: a tensor that a :class:`~ferro.nn.Module` registers as one of its parameters."""

from __future__ import annotations

from typing import Any

from .._core.tensor import Tensor

__all__ = ["Parameter", "Buffer"]


class Parameter(Tensor):
    """A leaf tensor that, assigned as a Module attribute, joins the module's ``parameters()``.

    It shares storage with the tensor it is made from and requires grad unless told otherwise.
    Ops on a parameter return plain tensors, as in PyTorch.

    >>> import ferro
    >>> p = ferro.nn.Parameter(ferro.zeros(2))
    >>> p.requires_grad
    True
    """

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            from .._creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a ferro Tensor, got {type(data).__name__}")
        p = data.detach()._as_subclass(cls)
        p._rg = False
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        p = Parameter(self.detach().clone(), self._rg)
        memo[id(self)] = p
        return p


class Buffer(Tensor):
    """Marks a tensor to be registered as a module buffer when assigned as an attribute (``torch.nn.Buffer``).

    ``Buffer(t, persistent=False)`` keeps it out of ``state_dict``. The module stores the plain tensor.
    """

    __slots__ = ("persistent",)

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Buffer:
        if data is None:
            from .._creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer(): data must be a ferro Tensor, got {type(data).__name__}")
        b = data.detach()._as_subclass(cls)
        b._rg = data._rg and data.grad_fn is None
        b.persistent = persistent
        return b
