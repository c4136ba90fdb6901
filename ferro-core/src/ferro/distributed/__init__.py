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

from ._backend import (
    CompletedWork,
    DistributedError,
    DistributedTimeoutError,
    ProcessGroup,
    ProcessGroupBackend,
    ReduceOp,
    Work,
)
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

__all__ = [
    "init_process_group", "destroy_process_group", "is_available", "is_initialized", "get_rank",
    "get_world_size", "get_backend", "new_group", "GroupMember", "ReduceOp", "Work", "CompletedWork",
    "ProcessGroup", "ProcessGroupBackend", "DistributedError", "DistributedTimeoutError",
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor",
    "gather", "scatter", "send", "recv", "isend", "irecv", "barrier", "monitored_barrier",
    "broadcast_object_list", "all_gather_object", "gather_object", "process_group_backends",
]
