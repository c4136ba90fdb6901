"""The plugin module named by the ``cpu`` entry point: hooks only; NumPy loads on first use."""

from ferro.backends import backend_plugin

ferro_plugin_api_version, ferro_register_backends = backend_plugin("ferro_cpu._backend:NumpyBackend")
