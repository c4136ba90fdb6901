"""The dispatcher's layers (``ferro._core.modes``): order, nesting, threads, and no cost while inactive."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import ferro
from ferro._core import layouts, modes
from ferro._core.records import REGISTRY


class Recorder(modes.Mode):
    """A layer that notes the ops it sees (and, in ``tag``, which layer saw them first)."""

    def __init__(self, layer: str, tag: str, log: list[tuple[str, str]], inner: bool = False) -> None:
        self.layer, self.tag, self.log, self.inner = layer, tag, log, inner

    def handle(self, op, args, kwargs, proceed):
        self.log.append((self.tag, op.name))
        return proceed(args, kwargs)


def _active(*layers: modes.Mode):
    class _Ctx:
        def __enter__(self):
            for m in layers:
                modes.push(m)

        def __exit__(self, *exc):
            for m in reversed(layers):
                modes.pop(m)
    return _Ctx()


def test_inactive_layers_leave_the_hot_path_as_it_was(dev):
    gc.collect()  # layout tensors of earlier tests, in reference cycles, would keep the layout layer active
    assert layouts.live() == 0
    x = ferro.ones(3, device=dev)
    d = x._device
    assert d._fast is d._ops  # the elementwise hot path reads the kernel table itself
    log: list[tuple[str, str]] = []
    with _active(Recorder("trace", "t", log)):
        assert isinstance(d._fast, modes._Armed) and d._fast is not d._ops  # armed: ops the layer wants miss
        with pytest.raises(KeyError):
            d._fast["add"]
    assert d._fast is d._ops and modes.ARMED[0] == 0


def test_every_kind_of_op_reaches_the_layers(dev):
    log: list[tuple[str, str]] = []
    a = ferro.ones(3, 3, device=dev, requires_grad=True)
    with _active(Recorder("trace", "t", log)):
        y = ((a * 2 + 1).exp() @ a).sum()  # elementwise, matmul, a reduction
        ferro.nn.functional.softmax(a, 1)  # a composite with a fused kernel
        a.reshape(9)  # a shape op
        ferro.cat([a, a])
    seen = [name for _, name in log]
    assert seen == ["mul", "add", "exp", "matmul", "sum", "softmax", "reshape", "cat"]
    y.backward()  # outside the region: the backward's ops see no layer
    assert len(log) == 8
    ref = np.exp(np.ones((3, 3)) * 3) @ np.ones((3, 3))
    assert np.isclose(y.item(), ref.sum(), rtol=1e-5)


def test_layers_run_in_the_fixed_order_whatever_the_push_order(dev):
    log: list[tuple[str, str]] = []
    x = ferro.ones(2, device=dev)
    with _active(Recorder("trace", "trace", log), Recorder("autocast", "autocast", log),
                 Recorder("batch", "batch", log)):
        x.exp()
    assert [t for t, _ in log] == ["batch", "autocast", "trace"]
    assert [m.layer for m in modes.active()] == []


def test_an_ops_insides_run_below_the_layers_unless_a_layer_asks(dev):
    log: list[tuple[str, str]] = []
    x = ferro.randn(4, 5, device=dev)
    with _active(Recorder("autocast", "outer", log)):
        ferro.nn.functional.log_softmax(x, 1)
        ferro.var(x)  # a composite of mean, sub, mul, sum...
    assert [n for _, n in log] == ["log_softmax", "var"]
    log.clear()
    with _active(Recorder("layout", "layout", log, inner=True)):
        ferro.var(x)
    names = [n for _, n in log]
    assert names[0] == "var" and len(names) > 1 and "sum" in names  # a layout sees the composite's ops


def test_a_layer_may_change_arguments_and_answer(dev):
    class Doubler(modes.Mode):
        layer = "batch"

        def handle(self, op, args, kwargs, proceed):
            if op.name == "exp":
                return proceed((args[0] * 2,), kwargs)
            return proceed(args, kwargs)

    x = ferro.tensor([0.0, 1.0], device=dev)
    with _active(Doubler()):
        y = x.exp()
    np.testing.assert_allclose(y.cpu().numpy(), np.exp([0.0, 2.0]), rtol=1e-6)


def test_layers_are_per_thread(dev):
    log: list[tuple[str, str]] = []
    other: list[str] = []
    started, done = threading.Event(), threading.Event()

    def work():
        started.wait()
        y = ferro.ones(3, device=dev).exp().sum()  # the device is armed (another thread has a layer)...
        other.append(f"{y.item():.4f}")
        done.set()

    t = threading.Thread(target=work)
    t.start()
    with _active(Recorder("trace", "t", log)):
        started.set()
        done.wait(30)
    t.join()
    assert other == [f"{3 * np.e:.4f}"]  # ...but its ops ran as usual, unseen by this thread's layer
    assert log == []


def test_unknown_layer_and_pop_of_inactive_are_refused():
    m = modes.Mode()
    m.layer = "colour"
    with pytest.raises(ValueError, match="unknown dispatch layer 'colour'"):
        modes.push(m)
    m.layer = "trace"
    with pytest.raises(RuntimeError, match="not active"):
        modes.pop(m)


def test_every_op_has_one_entry():
    """Each registered op's public function reaches the layers: its dispatch entry, or an elementwise hot
    path whose slow path steps into them."""
    ferro.ops.squareplus
    for op in REGISTRY.values():
        fn = op.fn
        if fn is None:
            continue
        assert getattr(fn, "__wrapped_op__", None) is op or getattr(fn, "__dispatches__", False), op.name


class _Boxed(layouts.LayoutTensor):
    """A toy layout for the tests: a dense tensor in a box, with rules for ``add`` and ``sum`` only."""

    __slots__ = ("inner",)
    kind = "boxed"
    describes = "boxed"
    way_out = ".unbox()"

    @classmethod
    def of(cls, t):
        b = t._as_subclass(cls)
        b.inner = t
        return layouts.track(b)


@layouts.rule("boxed", "add")
def _boxed_add(a, b, *rest, **kw):
    unbox = [x.inner if isinstance(x, _Boxed) else x for x in (a, b)]
    return _Boxed.of(ferro.add(*unbox, *rest, **kw))


@layouts.rule("boxed", "sum")
def _boxed_sum(a, *rest, **kw):
    return ferro.sum(a.inner, *rest, **kw)


def test_a_layout_tensor_goes_to_its_rules_and_is_refused_elsewhere(dev):
    gc.collect()
    assert layouts.live() == 0 and modes.ARMED[0] == 0
    x = ferro.arange(4.0, device=dev)
    b = _Boxed.of(x)
    assert layouts.live() == 1 and modes.ARMED[0] == 1
    for got in (b + 1, ferro.add(1, b), b + b):  # the hot path, the entry, both operands boxed
        assert isinstance(got, _Boxed)
    np.testing.assert_array_equal((b + x).inner.numpy(), 2 * np.arange(4.0))
    assert b.sum().item() == 6.0
    data = x.numpy().copy()
    with pytest.raises(ferro.errors.UnsupportedLayoutError, match=r"mul\(\): argument 'other' is a boxed tensor.*"
                                                                r"\.unbox\(\)"):
        x * b
    with pytest.raises(ferro.errors.UnsupportedLayoutError, match=r"exp\(\): argument 'input' is a boxed"):
        ferro.exp(b)
    with pytest.raises(ferro.errors.UnsupportedLayoutError, match=r"cat\(\): argument 'tensors' is a boxed"):
        ferro.cat([x, b])
    np.testing.assert_array_equal(x.numpy(), data)  # nothing changed by the refused calls
    assert (x * x).sum().item() == 14.0  # dense ops run as before while the layer is active
    assert not modes.active()[0].cares((x, 1.0), {"out": [x]}) and modes.active()[0].cares((x,), {"other": [b]})

    seen = []
    t = threading.Thread(target=lambda b=b: seen.append(type(b + 1).__name__))  # every thread, not only this
    t.start()
    t.join()
    assert seen == ["_Boxed"]
    del b, got, t
    gc.collect()
    assert layouts.live() == 0 and modes.ARMED[0] == 0 and x._device._fast is x._device._ops


def test_in_place_methods_and_save_refuse_a_layout_tensor_by_name(dev, tmp_path):
    """In-place methods and ferro.save are not ops: they refuse a layout tensor themselves, naming the method
    (or the object's place), the layout and the way out, and change nothing."""
    x = ferro.arange(4.0, device=dev)
    b = _Boxed.of(x)
    for call, name in ((lambda: b.mul_(2), "mul_"), (lambda: b.exp_(), "exp_"), (lambda: b.copy_(x), "copy_"),
                       (lambda: b.fill_(1.0), "fill_")):
        with pytest.raises(ferro.errors.UnsupportedLayoutError,
                           match=rf"{name}\(\): argument 'self' is a boxed tensor.*\.unbox\(\)"):
            call()
    np.testing.assert_array_equal(b.inner.numpy(), np.arange(4.0))
    with pytest.raises(ferro.errors.SerializationError, match=r"save\(\): obj\['w'\] is a boxed tensor.*\.unbox"):
        ferro.save({"w": b}, tmp_path / "w.safetensors")
    assert not (tmp_path / "w.safetensors").exists()
