"""The conformance suite: ``pytest --pyargs ferro.testing.conformance --ferro-backend=NAME``."""
