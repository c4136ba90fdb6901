"""The plugin module named by the ``cuda`` entry point: hooks only; CuPy loads on first use."""

from ferro.backends import backend_plugin

ferro_plugin_api_version, ferro_register_backends = backend_plugin("ferro_cuda._backend:CudaBackend")
