"""Kernel cases for the CUDA kernels, on top of kernel_cases.py: the dp4a variants (channel
counts and k multiples of 4) and a launch of many blocks. Used by test_jetson.py (on the CPU
emulation of the driver) and by benchmarks/gpu_check.py (on a real GPU)."""
from __future__ import annotations

import kernel_cases as kc

EXTRA_CASES = [
    kc.Case("cuda_conv_dp4a_s2", ((1, 8, 9, 11),),
            lambda b, x: b.conv(x[0], 8, 13, (3, 3), strides=[2, 2], pads=[1, 0, 2, 1])),
    kc.Case("cuda_conv_dp4a_groups2", ((1, 8, 7, 9),),
            lambda b, x: b.conv(x[0], 8, 6, (3, 3), group=2, pads=[1, 1, 1, 1])),
    kc.Case("cuda_conv_dp4a_1x1_relu", ((1, 16, 5, 7),), lambda b, x: b.op("Relu", [b.conv(x[0], 16, 20, (1, 1))])),
    kc.Case("cuda_conv_dp4a_dilation_pad_ge", ((1, 4, 6, 9),),
            lambda b, x: b.conv(x[0], 4, 5, (3, 2), dilations=[2, 1], pads=[3, 2, 2, 3])),
    kc.Case("cuda_gemm_k64_rows3", ((1, 3, 64),), lambda b, x: b.gemm(b.reshape(x[0], [3, 64]), 64, 10)),
    kc.Case("cuda_gemm_k128", ((1, 128),), lambda b, x: b.gemm(x[0], 128, 33)),
    kc.Case("cuda_add_many_blocks", ((1, 16, 33, 17), (1, 16, 33, 17)), lambda b, x: b.op("Add", x)),
]
# math_ cases (opset 21) have their own CUDA build in test_math_kernels.py
GRID_IDS = [c for c in kc.CASES if not c.startswith("math_") and kc.W4_MARK not in c] + [c.id for c in EXTRA_CASES]


def make_grid_net(name: str, ids: list[str]) -> kc.Net:
    """kc.make_net over the shared cases plus EXTRA_CASES (registered only while it runs)."""
    saved = dict(kc.CASES)
    try:
        kc.CASES.update({c.id: c for c in EXTRA_CASES})
        return kc.make_net(name, ids)
    finally:
        kc.CASES.clear()
        kc.CASES.update(saved)
