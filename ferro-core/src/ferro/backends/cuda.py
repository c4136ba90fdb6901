"""``ferro.backends.cuda``: ``torch.backends.cuda``'s switches, accepted and remembered, changing nothing.

The matmul precision switch that ferro's CUDA backend does read is ``ferro.cuda.matmul.allow_tf32``.

>>> import ferro.backends.cuda
>>> ferro.backends.cuda.matmul.allow_tf32 = False
>>> ferro.backends.cuda.flash_sdp_enabled()
True
"""

from __future__ import annotations

from ._flags import Flags, backend_available

__all__ = ["matmul", "is_built", "enable_flash_sdp", "enable_mem_efficient_sdp", "enable_math_sdp",
           "enable_cudnn_sdp", "flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled",
           "cudnn_sdp_enabled", "preferred_linalg_library", "preferred_blas_library"]

#: ``matmul.allow_tf32``, ``matmul.allow_fp16_reduced_precision_reduction``, ...
matmul = Flags("ferro.backends.cuda.matmul", allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
               allow_bf16_reduced_precision_reduction=True, fp32_precision="none")
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    """Whether ferro can run CUDA here (PyTorch: whether it was built with CUDA)."""
    return backend_available("cuda")


def enable_flash_sdp(enabled: bool) -> None:
    """Remember the flash attention switch (ferro's attention picks its kernels itself)."""
    _sdp["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Remember the memory-efficient attention switch."""
    _sdp["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    """Remember the math attention switch."""
    _sdp["math"] = bool(enabled)


def enable_cudnn_sdp(enabled: bool) -> None:
    """Remember the cuDNN attention switch."""
    _sdp["cudnn"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    """The flash attention switch."""
    return _sdp["flash"]


def mem_efficient_sdp_enabled() -> bool:
    """The memory-efficient attention switch."""
    return _sdp["mem_efficient"]


def math_sdp_enabled() -> bool:
    """The math attention switch."""
    return _sdp["math"]


def cudnn_sdp_enabled() -> bool:
    """The cuDNN attention switch."""
    return _sdp["cudnn"]


def preferred_linalg_library(backend: str | None = None) -> str:
    """PyTorch chooses cuSOLVER or MAGMA here; ferro's CUDA backend always uses CuPy's: ``'default'``."""
    return "default"


def preferred_blas_library(backend: str | None = None) -> str:
    """PyTorch chooses cuBLAS or cuBLASLt here; ferro's CUDA backend always uses CuPy's: ``'default'``."""
    return "default"
