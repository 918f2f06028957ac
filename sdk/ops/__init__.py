"""One module per op family. Importing this package registers every op once."""
from . import (  # noqa: F401  (imported for registration)
    activation,
    binary_math,
    cast,
    compare,
    conv,
    conv_transpose,
    dynamic_quant,
    elementwise,
    gather,
    index,
    qdq,
    gemm,
    half,
    movement,
    recurrent,
    normalization,
    pool,
    reduce,
    resize,
    select,
    shape,
    softmax,
    static,
)
from .registry import REGISTRY, OpDef, get_op, supported_ops

__all__ = ["REGISTRY", "OpDef", "get_op", "supported_ops"]
