"""Optimizers (``torch.optim``-style) and learning-rate schedulers."""

__all__: list[str] = []
