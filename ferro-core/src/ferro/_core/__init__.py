"""The bottom layer of ferro: dtypes, devices, the tensor's data holder, grad mode, graph nodes, op records.

Nothing here imports any other part of ferro (``ferro.errors`` aside); every layer above builds on it.
"""
