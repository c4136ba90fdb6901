"""Testing ferro and its backends: assertions, the pytest plugin, the conformance suite.

- :func:`assert_close` compares a ferro tensor (or array, or number) with a
  NumPy reference: shape, dtype, then values within per-dtype tolerances
  (:func:`default_tolerance`), with a message that names what differs.
- The pytest plugin (registered through ferro-core's ``pytest11`` entry point,
  module ``ferro.testing._pytest_plugin``) adds ``--ferro-backend=all|NAME,...``
  (or the environment variable ``FERRO_TEST_BACKENDS``), the ``device`` and
  ``backend`` fixtures, one test per selected backend, and the marker
  ``@pytest.mark.ferro_backends("cpu", ...)``. An unavailable backend shows as
  skipped with its reason.
- ``ferro.testing.conformance`` is the suite every backend should pass; run it
  on a plugin with::

      pytest --pyargs ferro.testing.conformance --ferro-backend=NAME

Importing this package is cheap: it imports neither NumPy nor pytest.
"""

from __future__ import annotations

from ._compare import assert_close, default_tolerance

__all__ = ["assert_close", "default_tolerance"]
