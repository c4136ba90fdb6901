"""Discrete Fourier transforms, as ``torch.fft``: ``ferro.fft.fft``, ``rfft``, ``fftn``, ``fftshift``, ``fftfreq``...

The registry names these ops ``fft.<name>`` (``ferro ops`` lists them); they
run on three primitives, ``fft_c2c``, ``fft_r2c`` and ``fft_c2r``, whose
kernels a backend provides. Real inputs are promoted: float32 to complex64,
float64 to complex128, integers and bool to the default complex dtype.
Gradients (complex ones in PyTorch's convention) are the adjoint transforms.

>>> import ferro
>>> x = ferro.tensor([1.0, 2.0, 3.0, 4.0])
>>> ferro.fft.fft(x)
tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
>>> ferro.fft.irfft(ferro.fft.rfft(x))
tensor([1., 2., 3., 4.])
"""

from ._ops.fft import FUNCTIONS as _FUNCTIONS

globals().update(_FUNCTIONS)

__all__ = sorted(_FUNCTIONS)
