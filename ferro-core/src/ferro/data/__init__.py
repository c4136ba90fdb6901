"""Datasets and data loading (``torch.utils.data``-style)."""

__all__: list[str] = []
