"""The plugin module named by the ``opencl`` entry point: hooks only; pyopencl loads on first use."""

from ferro.backends import backend_plugin

ferro_plugin_api_version, ferro_register_backends = backend_plugin("ferro_opencl._backend:OpenCLBackend",
                                                                   names=("opencl",))
