"""ferro's CUDA backend on CuPy (registered through the ``cuda`` entry point; CuPy loads on first use)."""

__version__ = "0.1.0"
