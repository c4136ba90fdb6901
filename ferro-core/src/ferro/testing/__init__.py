"""Testing ferro and its backends: assertions, the pytest plugin, the conformance suite.

The pytest plugin (registered through the ``pytest11`` entry point) adds
``--ferro-backend=all|NAME,...`` and a ``device`` fixture parametrized over
the default device of every selected backend; an unavailable backend shows as
skipped with its reason. Run the conformance suite on a plugin with::

    pytest --pyargs ferro.testing.conformance --ferro-backend=NAME
"""

from __future__ import annotations

from ._compare import assert_close, default_tolerance

__all__ = ["assert_close", "default_tolerance"]
