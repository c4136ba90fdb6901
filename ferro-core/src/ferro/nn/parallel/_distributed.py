"""``DistributedDataParallel``: one model replica per process, gradients averaged across processes.

At construction the parameters and buffers of rank 0 are broadcast to every
rank, and the parameters that require grad are split into buckets (in reverse
order, as gradients become ready in backward; the first bucket 1 MB, the others
``bucket_cap_mb``). Each parameter has a post-accumulate-grad hook: when the
last gradient of a bucket lands in ``.grad``, the bucket is flattened and its
all-reduce started asynchronously, so communication overlaps the rest of
backward. A callback at the end of backward waits for the buckets (averaged by
``ReduceOp.AVG``) and copies each parameter's slice back into its ``.grad``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ... import distributed as dist
from ..._core.grad_mode import is_grad_enabled, no_grad
from ..._core.node import Node
from ..._core.tensor import Tensor, _wrap
from ..._creation import zeros
from ..._ops.shape import cat
from ...autograd import _engine
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024  # PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES


class _Bucket:
    __slots__ = ("flat", "params", "ready", "work")

    def __init__(self, params: list[Tensor]) -> None:
        self.params, self.ready, self.work, self.flat = params, 0, None, None


def _tensors_in(obj: Any) -> Iterator[Tensor]:
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors_in(o)


def _reached_leaves(outputs: Any) -> set[int]:
    """Ids of the leaves the outputs' graph reaches (the parameters this forward used)."""
    seen: set[Node] = set()
    leaves: set[int] = set()
    stack: list[Node] = []
    for t in _tensors_in(outputs):
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t._rg:
            leaves.add(id(t))
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for n in node.next:
            if isinstance(n, Node):
                stack.append(n)
            elif n is not None:
                leaves.add(id(n))
    return leaves


class DistributedDataParallel(Module):
    """Data-parallel training of ``module`` across the processes of ``process_group``
    (``torch.nn.parallel.DistributedDataParallel``).

    Each process feeds its own shard of the data (see :class:`ferro.data.DistributedSampler`);
    after ``loss.backward()`` every parameter's ``.grad`` holds the average over the
    processes, so every optimizer (fused ones too) takes the same step everywhere.
    ``no_sync()`` skips the averaging (gradients accumulate locally until the next
    synchronized backward). ``find_unused_parameters=True`` lets a forward leave
    parameters out: they contribute zeros. Checkpoint ``ddp.module.state_dict()``.
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group: Any = None, bucket_cap_mb: float | None = 25.0,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False) -> None:
        super().__init__()
        group = dist._world.default_group("DistributedDataParallel") if process_group is None else process_group
        self.module = module
        object.__setattr__(self, "process_group", group)
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int((25.0 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        seen: set[int] = set()
        params = [p for p in module.parameters() if p.requires_grad and not (id(p) in seen or seen.add(id(p)))]
        object.__setattr__(self, "_params", params)
        self._check_same_shapes(group, module)
        self._src = dist._world.global_rank(group, 0)
        with no_grad():
            for t in [*module.parameters(), *module.buffers()]:
                dist.broadcast(t, self._src, group)
        object.__setattr__(self, "_buckets", self._make_buckets(params))
        object.__setattr__(self, "_bucket_of", {id(p): b for b in self._buckets for p in b.params})
        object.__setattr__(self, "_handles", [p.register_post_accumulate_grad_hook(self._grad_ready)
                                              for p in params])
        self._next = 0  # the next bucket to launch: every rank launches them in the same order
        self._queued = False

    @staticmethod
    def _check_same_shapes(group: Any, module: Module) -> None:
        mine = [(n, list(p.shape), str(p.dtype)) for n, p in module.named_parameters()]
        every: list[Any] = [None] * group.size
        dist.all_gather_object(every, mine, group=group)
        for r, theirs in enumerate(every):
            if theirs != mine:
                diff = next(((a, b) for a, b in zip(mine, theirs) if a != b), (len(mine), len(theirs)))
                raise ValueError(f"DistributedDataParallel: the model on rank {r} differs from this rank's "
                                 f"({group.rank}): {diff[1]} there, {diff[0]} here; every rank must build the "
                                 "same model")

    def _make_buckets(self, params: list[Tensor]) -> list[_Bucket]:
        buckets: list[_Bucket] = []
        current: list[Tensor] = []
        size, cap = 0, min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap)
        for p in reversed(params):
            nbytes = p.numel() * p.dtype.itemsize
            if current and (size + nbytes > cap or p.dtype is not current[0].dtype
                            or p.device != current[0].device):
                buckets.append(_Bucket(current))
                current, size, cap = [], 0, self.bucket_bytes_cap
            current.append(p)
            size += nbytes
        if current:
            buckets.append(_Bucket(current))
        return buckets

    # -- forward --------------------------------------------------------------------------

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Run the wrapped module (after broadcasting rank 0's buffers, with ``broadcast_buffers``)."""
        if self.broadcast_buffers:
            with no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b, self._src, self.process_group)
        out = self.module(*inputs, **kwargs)
        if self.find_unused_parameters and self.require_backward_grad_sync and is_grad_enabled():
            used = _reached_leaves(out)
            for p in self._params:
                if id(p) not in used:
                    self._bucket_of[id(p)].ready += 1
            self._launch_ready()
        return out

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, backward accumulates gradients locally without communicating; the first backward
        after it averages the accumulated gradients."""
        prev = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = prev

    # -- backward ----------------------------------------------------------------------------

    def _grad_ready(self, p: Tensor) -> None:
        if not self.require_backward_grad_sync:
            return
        if not self._queued:
            self._queued = True
            _engine.queue_callback(self._finish)
        self._bucket_of[id(p)].ready += 1
        self._launch_ready()
        for b in self._buckets[:self._next]:  # let MPI progress the ones in flight
            if b.work is not None:
                b.work.is_completed()

    def _launch_ready(self) -> None:
        buckets = self._buckets
        while self._next < len(buckets) and buckets[self._next].ready == len(buckets[self._next].params):
            self._launch(buckets[self._next])
            self._next += 1

    def _launch(self, b: _Bucket) -> None:
        with no_grad():
            flat = cat([(p.grad if p.grad is not None else zeros(p.shape, dtype=p.dtype, device=p.device)).reshape(-1)
                        for p in b.params])
            b.flat = flat
            b.work = dist.all_reduce(flat, dist.ReduceOp.AVG, group=self.process_group, async_op=True)

    def _finish(self) -> None:
        """End of backward: wait for every bucket, write the averages into the gradients."""
        self._queued = False
        try:
            if self._next < len(self._buckets):
                missing = [p for b in self._buckets[self._next:] for p in b.params
                           if p.grad is None]
                names = {id(p): n for n, p in self.module.named_parameters()}
                raise RuntimeError(
                    "DistributedDataParallel: this backward did not produce gradients for parameter(s) "
                    f"{[names.get(id(p), '?') for p in missing][:10]}; pass find_unused_parameters=True "
                    "if the forward does not use every parameter")
            for b in self._buckets:
                b.work.wait()
                flat, off = b.flat._data, 0  # the averaged bucket: its slices go back into each .grad
                for p in b.params:
                    k = p.numel()
                    part = flat[off:off + k].reshape(tuple(p.shape))
                    kernels = p._device._kernels
                    if p.grad is None:
                        p.grad = _wrap(kernels["clone"](part), p._dtype, p._device)
                    else:
                        kernels["copy_"](p.grad._data, part)
                        p.grad._vc[0] += 1
                    off += k
        finally:
            self._next = 0
            for b in self._buckets:
                b.ready, b.work, b.flat = 0, None, None
