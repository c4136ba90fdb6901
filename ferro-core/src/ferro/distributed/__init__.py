"""Distributed training across processes and hosts, with ``torch.distributed``'s API.

Collectives run on existing engines: MPI through mpi4py (``ferro-core[mpi]``,
launched by ``mpiexec -n N`` or ``ferro run -n N``) for tensors of every
device, NCCL through CuPy (ferro-cuda) for CUDA tensors, or a plugin's backend
(hook ``ferro_register_process_groups``). Importing this module starts nothing:
MPI is initialized by :func:`init_process_group`.

>>> import ferro.distributed as dist
>>> dist.is_initialized()
False
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from .._core.lazy import attributes as _attributes
from ._backend import (
    CompletedWork,
    DistributedError,
    DistributedTimeoutError,
    ProcessGroup,
    ProcessGroupBackend,
    ReduceOp,
    Work,
)

if _TYPE_CHECKING:  # what type checkers see: everything, as if imported here
    from ._collectives import (
        GroupMember,
        all_gather,
        all_gather_into_tensor,
        all_reduce,
        barrier,
        broadcast,
        gather,
        irecv,
        isend,
        monitored_barrier,
        recv,
        reduce,
        reduce_scatter_tensor,
        scatter,
        send,
    )
    from ._objects import all_gather_object, broadcast_object_list, gather_object
    from ._registry import process_group_backends
    from ._world import (
        destroy_process_group,
        get_backend,
        get_rank,
        get_world_size,
        init_process_group,
        is_available,
        is_initialized,
        new_group,
    )

#: Loaded on first use: a process-group plugin imports the contract above when ferro discovers its plugins
#: (every program's first op), and needs neither the collectives nor MPI's group.
_LATER = {
    **dict.fromkeys(("GroupMember", "all_gather", "all_gather_into_tensor", "all_reduce", "barrier", "broadcast",
                     "gather", "irecv", "isend", "monitored_barrier", "recv", "reduce", "reduce_scatter_tensor",
                     "scatter", "send"), "._collectives"),
    **dict.fromkeys(("all_gather_object", "broadcast_object_list", "gather_object"), "._objects"),
    "process_group_backends": "._registry",
    **dict.fromkeys(("destroy_process_group", "get_backend", "get_rank", "get_world_size", "init_process_group",
                     "is_available", "is_initialized", "new_group"), "._world"),
    "_world": "._world",  # the default group, for ferro.nn.parallel
}
__getattr__ = _attributes(__name__, _LATER)


def __dir__() -> list[str]:
    for name in _LATER:  # everything, as before it was loaded lazily
        __getattr__(name)
    return sorted(globals())


__all__ = [
    "init_process_group", "destroy_process_group", "is_available", "is_initialized", "get_rank",
    "get_world_size", "get_backend", "new_group", "GroupMember", "ReduceOp", "Work", "CompletedWork",
    "ProcessGroup", "ProcessGroupBackend", "DistributedError", "DistributedTimeoutError",
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor",
    "gather", "scatter", "send", "recv", "isend", "irecv", "barrier", "monitored_barrier",
    "broadcast_object_list", "all_gather_object", "gather_object", "process_group_backends",
]
