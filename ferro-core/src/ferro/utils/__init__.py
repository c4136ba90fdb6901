"""Utilities: activation checkpointing (``ferro.utils.checkpoint``)."""

__all__: list[str] = []
