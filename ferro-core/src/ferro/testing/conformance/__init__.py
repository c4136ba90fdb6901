"""The conformance suite every ferro backend should pass.

Run it on one backend (``NAME`` as in ``ferro.backends.installed()``)::

    pytest --pyargs ferro.testing.conformance --ferro-backend=NAME

``test_basic`` checks transfers, creation, a few float32 ops against NumPy and
that ``Backend.supports`` agrees with what really runs; ``test_ops`` runs every
op of the op database (forward, gradients) at every dtype the backend claims.
A test is skipped only with a reason: the backend is unavailable, lacks the
dtype, or does not claim the op.
"""
