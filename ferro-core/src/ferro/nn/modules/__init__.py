"""The layers of ``ferro.nn``: one file per family, all re-exported by ``ferro.nn``."""

from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .module import Module, RemovableHandle

__all__ = ["Module", "RemovableHandle", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]
