"""Discrete Fourier transforms, as ``torch.fft``."""

__all__: list[str] = []
