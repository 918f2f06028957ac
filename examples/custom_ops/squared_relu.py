"""An example cuvil-sdk plugin: squared ReLU, y = alpha * max(x, 0)^2, in domain com.example.

    cuvil-sdk run --plugin examples/custom_ops/squared_relu.py --board host --profile standard \
        --precision fp32 --model model.onnx --input x.npy --output y.npz

Copy this folder, rename the op and the kernel, and change the reference and the C code.
See docs/custom_ops.md.
"""
import numpy as np

from cuvil_sdk.plugins import Attr, F, I, In, Kernel, Out, register_op


@register_op(
    "com.example", "SquaredRelu",
    inputs=["float32"], outputs=["float32"],
    attrs={"alpha": Attr("float", default=1.0)},  # part of the signature: a node with alpha=0.5 passes 0.5
    elementwise=True,  # unary and element-wise: int8 is a 256-entry table computed from the reference
    kernels=[
        # the portable fp32 kernel is required; its source is relative to this file
        Kernel("portable", "fp32", "squared_relu_f32", "kernels/squared_relu_f32.h",
               In("in", "float"), Out("out", "float"), *I("count"), *F("alpha")),
    ],
    summary="alpha * max(x, 0)^2",
)
def squared_relu(x, alpha):
    """The float reference (numpy, float32 in and out): what every build is compared with."""
    x = np.asarray(x)
    return np.asarray(alpha, x.dtype) * (np.maximum(x, 0) * np.maximum(x, 0))
