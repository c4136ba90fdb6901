"""Dispatch: from an op call to a kernel (or a decomposition, the fallback, or a clear error), and the
layers around it (grad recording today; autocast, layouts and tracing stand here as they come)."""
