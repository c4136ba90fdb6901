"""``ferro.compile``: capture a step once as a graph of kernel calls, replay it without Python dispatch.

Loaded on the first call of ``ferro.compile`` (``import ferro`` does not import it). The pieces, each a
module: :mod:`.trace` (the dispatcher's ``trace`` layer and the recording kernel tables), :mod:`.graph`,
:mod:`.guards`, :mod:`.passes`, :mod:`.replay`, :mod:`.api` (the cache of graphs), :mod:`.explain`.
"""

from __future__ import annotations

from .api import CompiledFunction, compile_callable
from .explain import ExplainOutput, explain
from .trace import GraphBreak

__all__ = ["CompiledFunction", "ExplainOutput", "GraphBreak", "compile_callable", "explain"]
