"""``ferro.nn.utils``: gradient clipping, parameter/vector conversion and packed sequences (``rnn``),
as ``torch.nn.utils``."""

from ..._core.lazy import attributes
from . import rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "rnn"]

__getattr__ = attributes(__name__, {"parameters_to_vector": ".convert_parameters",
                                    "vector_to_parameters": ".convert_parameters"})
