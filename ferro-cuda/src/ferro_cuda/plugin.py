"""The plugin module named by the ``cuda`` entry point: hooks only; CuPy loads on first use."""

from __future__ import annotations

from typing import Any

from ferro.backends import backend_plugin, hookimpl

ferro_plugin_api_version, ferro_register_backends = backend_plugin("ferro_cuda._backend:CudaBackend",
                                                                   names=("cuda",))


@hookimpl
def ferro_register_process_groups() -> list[Any]:
    """The ``nccl`` process group of ferro.distributed (its module, not CuPy, is imported here)."""
    from ._nccl import NCCLBackend
    return [NCCLBackend()]
