"""The array API standard's signature stubs; only the 2024.12 version is vendored here."""

from . import _2024_12  # noqa: F401
