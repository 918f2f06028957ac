"""The avx2 kernel set on the host board, against the numpy integer reference and the
portable kernels (board `host-portable`), bit for bit.

board_tests/test_kernels_host.py runs the shared kernel grid on `host` (avx2 first);
this file adds the SIMD edge cases of simd_cases.py (block and tile remainders, panel
bands, odd tap counts, long windows, scalar tails), built for both `host` and
`host-portable`, and checks:
  - int8: run_int8 and the float API equal the reference on both boards (so avx2 ==
    portable), on random int8 codes over the whole range plus all -128 / all 127;
  - every case's layer really got its avx2 kernel (no silent fallback);
  - fp32 (conv, depthwise, fc) agrees with run_float to a relative 1e-5;
  - the layout/requantization helpers of sdk/kernels/simd_layout.py on their own;
  - every avx2 header carries the same shared block.
A missing gcc or scons makes these tests fail, never skip.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernel_cases as kc
import simd_cases as sc
from cuvil_sdk import runtime
from cuvil_sdk.codegen.kernel_files import kernel_source, kernels_with_sources
from cuvil_sdk.kernels import simd_layout
from cuvil_sdk.kernels.requant import quantize_multipliers, requant
from cuvil_sdk.reference import run_float, run_int, run_quantized_model

PROFILE = "standard"
INT8_SAMPLES = 4
FLOAT_SAMPLES = 3
FP32_RTOL = 1e-5
TEMPLATES = Path(__file__).resolve().parents[1] / "sdk" / "templates"
BOARDS = ["host", "host-portable"]

# The large layers of MobileNetV2 / ResNet-50 ("wide") run on host only: the portable kernels'
# results equal the reference on the shared grid already, and these layers take them long.
GROUP_BOARDS = {group: ["host"] if group == "wide" else BOARDS for group in sc.GROUPS}
PARAMS = [pytest.param(board, group, cid, id=f"{board}-{cid}") for group, ids in sc.GROUPS.items()
          for board in GROUP_BOARDS[group] for cid in ids]


def build_group(folder: Path, board: str, group: str, ids: list[str], precision: str = "int8"):
    """The group's net built for the board (the simd_w4_ twins as int8 layers here: their int4
    kernels run in test_x86_variants.py's grid, every x86 variant, and on rpi5)."""
    net = kc.save_net(sc.make_net(f"s_{group}", ids), folder)
    g = kc.reference_graph(net, board, PROFILE, precision)
    info = kc.build(net, folder / "out", board, PROFILE, precision)
    kc.check_io_contract(info, g, int8=precision == "int8")
    return net, g, info


@pytest.fixture(scope="module")
def int8_group(tmp_path_factory):
    def make(key):
        board, group = key
        net, g, info = build_group(tmp_path_factory.mktemp(f"simd_{board}_{group}"), board, group, sc.GROUPS[group])
        q_samples = kc.int8_samples(g, INT8_SAMPLES, seed=21)
        f_samples = kc.float_samples(net, FLOAT_SAMPLES, seed=22)
        with runtime.load(info["artifacts"]["so"]) as model:
            got_q = [model.run_int8(s) for s in q_samples]
            got_f = [model.run(s) for s in f_samples]
        want_q = [run_int(g, s) for s in q_samples]
        want_f = [run_quantized_model(g, s)[1] for s in f_samples]
        return net, info, got_q, want_q, got_f, want_f
    lazy = kc.Lazy(lambda key: make(key))
    return lambda board, group: lazy((board, group))


@pytest.mark.parametrize("board, group, cid", PARAMS)
def test_int8_simd_case_bit_exact(int8_group, board, group, cid):
    net, info, got_q, want_q, got_f, want_f = int8_group(board, group)
    for y in net.outputs[cid]:
        assert len(np.unique(np.stack([w[y] for w in want_q]))) > 1, f"{cid}: constant reference output"
        for i, (got, want) in enumerate(zip(got_q, want_q)):
            assert np.array_equal(got[y], want[y]), f"{board} {cid}, int8 sample {i}: {kc.mismatch(got[y], want[y])}"
        for i, (got, want) in enumerate(zip(got_f, want_f)):
            assert np.array_equal(got[y], want[y]), f"{board} {cid}, float sample {i}: {kc.mismatch(got[y], want[y])}"


@pytest.mark.parametrize("group", list(sc.GROUPS))
def test_avx2_kernels_are_selected(int8_group, group):
    """On `host` each case's layer runs its avx2 kernel; on `host-portable` the portable one."""
    for board in GROUP_BOARDS[group]:
        net, info, *_ = int8_group(board, group)
        chosen = sc.main_layer_kernels(info, net)
        for cid in sc.GROUPS[group]:
            want = sc.expected_kernel(cid, "avx2" if board == "host" else "portable", int4=False)
            assert chosen[cid] == want, f"{board} {cid}: layer kernel {chosen[cid]}, expected {want}"


def test_rgb_input_transpose_uses_the_avx2_kernel(int8_group):
    net, info, *_ = int8_group("host", "conv")
    source = (Path(info["out_dir"]) / "src" / f"{net.name}.c").read_text()
    calls = [l for l in source.splitlines() if "transpose_s8_avx2(" in l and ", 1, 20, 37, 3," in l]
    assert len(calls) == 1, "the 3-channel input transpose does not use transpose_s8_avx2"


def test_band_cases_really_use_several_bands(int8_group):
    """The panel budget cuts these layers into bands of output rows (the band argument < oh)."""
    net, info, *_ = int8_group("host", "conv")
    source = (Path(info["out_dir"]) / "src" / f"{net.name}.c").read_text()
    call = next(l for l in source.splitlines() if "conv2d_s8_avx2(" in l and ", 1, 40, 30, 32, 40, 30, 16," in l)
    args = [a.strip() for a in call.split("(", 1)[1].rsplit(")", 1)[0].split(",")]
    oh, band = int(args[10]), int(args[-6])
    assert 1 <= band < oh, (band, oh)


@pytest.fixture(scope="module")
def fp32_build(tmp_path_factory):
    def make(_key):
        net, g, info = build_group(tmp_path_factory.mktemp("simd_fp32"), "host", "fp32", sc.FP32_IDS, "fp32")
        samples = kc.float_samples(net, FLOAT_SAMPLES, seed=23)
        with runtime.load(info["artifacts"]["so"]) as model:
            got = [model.run(s) for s in samples]
        return net, info, got, [run_float(g, s) for s in samples]
    return kc.Lazy(make)


@pytest.mark.parametrize("cid", sc.FP32_IDS)
def test_fp32_simd_case_matches_run_float(fp32_build, cid):
    net, info, got, want = fp32_build("fp32")
    family = sc.EXPECT[cid]
    assert sc.main_layer_kernels(info, net)[cid] == f"{family}_f32_avx2"
    for y in net.outputs[cid]:
        for i, (a, b) in enumerate(zip(got, want)):
            atol = FP32_RTOL * float(np.abs(b[y]).max())
            np.testing.assert_allclose(a[y], b[y], rtol=FP32_RTOL, atol=atol, err_msg=f"{cid} output {y}, sample {i}")


# --- the Python side of the layouts -------------------------------------------------------------
def emulate_avx2_requant(acc: np.ndarray, table: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """cuvil_avx2_requant8g in numpy (uint64 wrap-around, the sign flip before the logical
    shift, the +-2^20 clamp), 8 lanes per group; with `bias`, the wide mode (acc holds T mod
    2^32: T = bias + (acc - bias) in 64 bits)."""
    acc = acc.reshape(-1, 8).astype(np.int64)
    t = table.reshape(-1, 8, 4).astype(np.int64)  # [group][8 vectors][4 int64]
    out = np.empty(acc.shape, dtype=np.int64)
    for grp in range(acc.shape[0]):
        for parity in (0, 1):
            lanes = acc[grp, parity::2]
            if bias is not None:
                b = bias.reshape(-1, 8)[grp, parity::2].astype(np.int64)
                lanes = b + ((lanes - b + 2**31) % 2**32 - 2**31)
            m, r, s, k = (t[grp, 2 * v + parity].astype(np.uint64) for v in range(4))
            v = (lanes.astype(np.uint64) * m + r) ^ np.uint64(1 << 63)
            out[grp, parity::2] = np.clip(((v >> s) - k).view(np.int64), -2**20, 2**20)
    return out.reshape(-1)


def test_requant_table_reproduces_the_rounding_rule():
    """The general rule, any shift 1..62 and any int32 accumulator, exactly (clamped to +-2^20
    where the int8 clamp gives the same byte)."""
    rng = np.random.default_rng(5)
    reals = np.concatenate([rng.uniform(1e-6, 0.9, 21), [2.0 ** -20, 0.5, 1.5, 2.0 ** -40, 2.0 ** 14, 3e5, 2e-19]])
    mult, shift = quantize_multipliers(reals)
    assert shift.min() < 16 and shift.max() > 60
    zy = -7
    table = simd_layout.requant_table_avx2(mult, shift, zy)
    lanes = -(-len(mult) // 8) * 8
    mp = np.pad(mult, (0, lanes - len(mult)))
    sp = np.pad(shift, (0, lanes - len(shift)), constant_values=1)
    for acc in (rng.integers(-2**20, 2**20, lanes), np.full(lanes, -2**31), np.full(lanes, 2**31 - 1),
                (np.arange(lanes) - 4) * 2**14 + 2**13, rng.integers(-2**31, 2**31, lanes)):
        want = np.clip(requant(acc, mp, sp) + zy, -2**20, 2**20)
        assert np.array_equal(emulate_avx2_requant(acc, table), want)


def test_wide_requant_rebuilds_accumulators_beyond_int32():
    """Mode 2: T = bias + sum passes int32; the lanes hold T mod 2^32 and the result is the
    reference's for T itself."""
    rng = np.random.default_rng(7)
    mult, shift = quantize_multipliers(rng.uniform(1e-9, 0.3, 16))
    bias = np.where(np.arange(16) % 2 == 0, 2**31 - 1, -2**31).astype(np.int64)
    sums = rng.integers(0, 2**30, 16) * np.where(np.arange(16) % 2 == 0, 1, -1)
    true = bias + sums
    assert np.all(np.abs(true) > 2**31)
    wrapped = (true + 2**31) % 2**32 - 2**31
    table = simd_layout.requant_table_avx2(mult, shift, 3)
    want = np.clip(requant(true, mult, shift) + 3, -2**20, 2**20)
    assert np.array_equal(emulate_avx2_requant(wrapped, table, bias), want)


def test_requant_fast_table_reproduces_the_rounding_rule():
    """cuvil_avx2_requant8f: zy in the rounding term, the high halves, an arithmetic shift."""
    rng = np.random.default_rng(6)
    mult, shift = quantize_multipliers(rng.uniform(2.0 ** -22, 0.49, 16))
    assert simd_layout.requant_fast(shift)
    for zy in (-128, 0, 127):
        table = simd_layout.requant_table_avx2(mult, shift, zy, None, fast=True).reshape(-1, 8, 4)
        for acc in (rng.integers(-2**31, 2**31, 16), np.full(16, -2**31), np.full(16, 2**31 - 1)):
            want = requant(acc, mult, shift) + zy
            got = np.empty(16, dtype=np.int64)
            for grp in range(2):
                s32 = table[grp, 4].view(np.int32).astype(np.int64)
                for parity in (0, 1):
                    lanes = acc[grp * 8 + parity:grp * 8 + 8:2].astype(np.int64)
                    total = lanes * table[grp, parity] + table[grp, 2 + parity]  # exact: |.| < 2^63
                    got[grp * 8 + parity:grp * 8 + 8:2] = (total >> 32) >> s32[parity::2]
            assert np.array_equal(got, want), zy


def test_both_requantization_rules_are_exercised(int8_group):
    """The grids hold layers on the fast rule (shifts 32..54) and on the general one."""
    rules = {"fast": 0, "general": 0}
    for group in sc.GROUPS:
        net = int8_group("host", group)[0]
        g = kc.reference_graph(net, "host", PROFILE, "int8")
        for node in g.nodes:
            if node.op in ("Conv", "Gemm", "MatMul"):
                rules["fast" if simd_layout.requant_fast(node.q["shift"]) else "general"] += 1
    assert rules["fast"] >= 10 and rules["general"] >= 3, rules


def test_channel_blocks():
    assert simd_layout.channel_blocks(40, 16, 8) == [(0, 16), (16, 16), (32, 8)]
    assert simd_layout.channel_blocks(17, 16, 8) == [(0, 16), (16, 8)]
    assert simd_layout.channel_blocks(9, 16, 8) == [(0, 16)]
    assert simd_layout.channel_blocks(8, 16, 8) == [(0, 8)]


@pytest.mark.parametrize("kernel_set", ["avx2", "neon"])
def test_shared_helpers_are_one_header_per_set(kernel_set):
    """Kernel headers include the set's shared helpers (copied into a project with them)."""
    helper = f"cuvil_{kernel_set}_common.h"
    assert (TEMPLATES / kernel_set / helper).is_file()
    for name in kernels_with_sources(kernel_set):  # .h files and rendered .h.j2 alike
        text = kernel_source(kernel_set, name)
        assert f'#include "{helper}"' in text and f"#define CUVIL_{kernel_set.upper()}_COMMON_H" not in text
