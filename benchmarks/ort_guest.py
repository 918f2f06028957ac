"""Run by the arm64 python3 of bench_aarch64.py's root under qemu-aarch64 (never on the host):
ONNX Runtime inferences, each between the two marker instructions that our instruction-counting
TCG plugin records (targets/rpi5/insn_count_plugin.c: `movz xzr, #imm, lsl #48`, a no-op).

The markers run from an executable page through ctypes: two tiny functions, `marker(0xfffe);
ret` and `marker(0xfffd); ret`, the plugin's sample start and end. First EMPTY pairs with nothing
between them (the cost of the ctypes calls themselves, which bench_aarch64.py subtracts), then
the warm-up runs (unmarked), then the marked runs. ONNX Runtime gets one intra-op and one
inter-op thread, sequential execution and all graph optimizations, as bench_common.ort_session.

    python3 ort_guest.py MODEL.onnx INPUT.npy OUTPUT.npy RUNS WARMUP
"""
from __future__ import annotations

import ctypes
import mmap
import struct
import sys

import numpy as np
import onnxruntime as ort

SAMPLE_START, SAMPLE_END = 0xFFFE, 0xFFFD
EMPTY = 3  # marker pairs with nothing between them
RET = 0xD65F03C0


def marker_word(imm: int) -> int:
    """movz xzr, #imm, lsl #48: the plugin's marker (MARK_BITS | imm << 5)."""
    return 0xD2E0001F | (imm << 5)


def marker_functions() -> tuple[ctypes.CFUNCTYPE, ctypes.CFUNCTYPE, mmap.mmap]:
    """start() and end(): the two markers as C functions on an executable page (kept alive by
    the returned mmap)."""
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(struct.pack("<4I", marker_word(SAMPLE_START), RET, marker_word(SAMPLE_END), RET))
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    kind = ctypes.CFUNCTYPE(None)
    return kind(address), kind(address + 8), page


def session(path: str) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def main() -> int:
    model, data, output, runs, warmup = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    start, end, _page = marker_functions()
    sess = session(model)
    feed = {sess.get_inputs()[0].name: np.load(data)}
    for _ in range(EMPTY):
        start()
        end()
    for _ in range(warmup):
        sess.run(None, feed)
    for _ in range(runs):
        start()
        y = sess.run(None, feed)
        end()
    np.save(output, y[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
