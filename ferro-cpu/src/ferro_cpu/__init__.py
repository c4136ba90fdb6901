"""ferro's default backend: kernels on NumPy.

Installing ``ferro-cpu`` registers the backend through the entry point
``ferro.backends: cpu = ferro_cpu.plugin``; nothing imports this package
directly. NumPy is imported when the backend is first used.
"""

__version__ = "0.1.0"
