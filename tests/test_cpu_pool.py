"""The CPU backend's caching allocator: large buffers are reused only after their last view dies."""

from __future__ import annotations

import ferro


def test_cpu_pool_reuses_large_buffers_only_after_their_last_view_dies() -> None:
    cpu = ferro.backends.get("cpu")
    n = 1 << 19  # 2 MiB of float32: pooled
    a = ferro.ones(n)
    b = a + 1
    view = b[::2]
    del b
    before = cpu.memory_stats(0)["allocated"]
    c = a * 3  # must not reuse b's buffer: its view is alive
    view += 1
    assert c[:4].tolist() == [3.0] * 4 and view[:2].tolist() == [3.0, 3.0]
    assert cpu.memory_stats(0)["allocated"] > before
    del view
    stats = cpu.memory_stats(0)
    assert stats["cached"] >= 4 * n
    d = a * 5  # now reuses a cached buffer
    assert cpu.memory_stats(0)["cached"] == stats["cached"] - 4 * n
    assert d[:3].tolist() == [5.0] * 3 and c[:3].tolist() == [3.0] * 3
