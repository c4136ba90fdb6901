"""``ferro.onnx``: the names of ``torch.onnx`` that scripts touch, so that importing it does not stop them.

Example scripts import ``torch.onnx`` at the top and export only when asked (``--onnx-export``);
ferro cannot export ONNX, and says so when asked, naming what to do instead.
"""

from __future__ import annotations

from typing import Any

__all__ = ["export", "is_in_onnx_export"]


def export(model: Any, args: Any = (), f: Any = None, **kwargs: Any) -> None:
    """Refused: ferro has no ONNX exporter (``NotImplementedError``, as for any feature ferro lacks)."""
    raise NotImplementedError("ferro.onnx.export(): ferro cannot export ONNX; save the weights with "
                              "ferro.save(model.state_dict(), path) (safetensors) and export from PyTorch")


def is_in_onnx_export() -> bool:
    """False: ferro never runs a model for an ONNX export."""
    return False
