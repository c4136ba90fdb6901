"""The ``strict`` backend: every kernel from ferro's generic Array API backend."""

from ferro.backends import ArrayAPIBackend


class StrictBackend(ArrayAPIBackend):
    """ferro tensors stored as ``array_api_strict`` arrays."""

    name = "strict"
    description = "array-api-strict (the Array API reference namespace), on the host"
    module_name = "array_api_strict"
    #: array-api-strict has the standard's linalg and fft extensions and complex dtypes, no special functions.
    optional_groups = frozenset({"complex", "linalg", "fft"})
