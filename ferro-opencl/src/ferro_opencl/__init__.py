"""ferro's OpenCL backend on pyopencl (registered through the ``opencl`` entry point)."""

__version__ = "0.1.0"
