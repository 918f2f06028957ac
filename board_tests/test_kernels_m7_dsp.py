"""Cortex-M7 DSP kernels (sdk/templates/cortex_m_dsp, chosen by sdk/kernels/cortex_m_dsp/rules.py):
bit for bit equal to the portable kernels and to the numpy integer reference.

The board `cortex-m7` uses the cortex_m_dsp set (portable as the fallback) and
`cortex-m7-portable` the portable kernels only; both run under qemu-system-arm. The case
grid is kernel_cases.py's: its Cortex-M7 groups plus `dsp_paths`, shapes chosen to reach
every path of every DSP kernel (odd channel counts and tails, strides, pads, depthwise 3x3
stride 1 and 2 and the general depthwise kernel, 1x1, channel chunks, long pooling windows).
Each group is one multi-output model built for both boards; the same samples run on both
and the int8 outputs are compared with each other and with run_quantized_model. The example
models (digits, ResNet-8, the FC autoencoder) are compared the same way.

The dsp_w4_ cases have int4 weights (the grid is built with their layers int4: nibble streams
unpacked in registers, the depthwise and out-of-range ones on int8 bytes, listed); they share the
firmware of the wide softmax rows, where RAM is left.

The dsp_ cases also carry what trained models produce (kernel_cases.py, "what trained
models produce"): shifts from 13 to 62, a multiplier within 2^8 of 2^31, biases whose
worst-case bound passes int32, 1280 channels, rows 112 wide, depthwise multiplier 2, groups,
dilations, K-tiled columns, FC rows past the column buffer, broadcast adds, long pooling rows,
softmax rows past 2^15 (a firmware of its own); both weight layouts (int8 default, int16) and
the channels-last input are compared too.

Host-only checks (fast): cuvil_rq against the reference rule for every shift and every int32
accumulator, the shared blocks of the headers, and the portable board file.
A missing arm-none-eabi-gcc, qemu-system-arm or scons makes these tests fail, never skip.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass

import numpy as np
import pytest

import kernel_cases as kc
from cuvil_sdk.boards import get_board
from cuvil_sdk.codegen.kernel_files import kernel_source, kernels_with_sources
from cuvil_sdk.kernels.cortex_m_dsp import rules as kset
from cuvil_sdk.commands import run_samples
from cuvil_sdk.kernels.requant import quantize_multiplier, requant
from cuvil_sdk.reference import run_quantized_model
from models import EXAMPLES, reference_graph, request
from tools import missing_tools

DSP, PORTABLE, PROFILE = "cortex-m7", "cortex-m7-portable", "lite"
TOOLS = ["arm-none-eabi-gcc", "arm-none-eabi-objcopy", "qemu-system-arm", "scons"]
TEMPLATES = kc.ROOT / "sdk" / "templates" / "cortex_m_dsp"
WIDE = ["dsp_softmax_wide_rows"]  # its float input alone is 132 KB: a firmware of its own
W4 = kc.ids_with("dsp_w4_")  # int4 weights (the grid is built with int4=True): beside it, where RAM is left
GROUPS = {**kc.M7_GROUPS, "dsp_paths": [c for c in kc.ids_with("dsp_") if c not in WIDE + W4], "dsp_wide": WIDE + W4}
DSP_KERNELS = {"conv2d_s8_dsp", "conv2d_s8_dsp_dw", "conv2d_s8_dsp_dw3x3", "fc_s8_dsp", "maxpool_s8_dsp",
               "avgpool_s8_dsp", "add_s8_dsp", "softmax_s8_dsp", "transpose_s8_dsp"}
FLOAT_SAMPLES, INT8_SAMPLES = 3, 3
RNG = np.random.default_rng(11)


# --- host-only ------------------------------------------------------------------------------------
def cuvil_rq_model(acc: np.ndarray, q: np.ndarray, zy: int) -> np.ndarray:
    """cuvil_rq (cuvil_dsp_common.h) in numpy int64, with its int32 register semantics checked:
    SMMLA's high word plus rnd and the shifted value plus zy must stay in int32."""
    m, rnd, s = (int(v) for v in q)
    if s > 0:
        hi = ((acc * m) >> 32) + rnd
        assert np.abs(hi).max() < 2**31, "SMMLA's accumulate overflowed"
        y = (hi >> s) + zy
    else:
        y = ((acc * m + (1 << (rnd - 1))) >> rnd) + zy
    return np.clip(y, -128, 127)


def test_fast_requant_equals_the_reference_rule():
    """cuvil_rq equals zy + requant(acc) for every multiplier and shift quantize_multiplier makes
    (S from 1 to 62, M up to 2^31 - 1, the shrunk multipliers of S = 62) and every int32
    accumulator (extremes and rounding ties included); fastq marks layers whose shifts are all
    >= 33 (the assembly blocks' form)."""
    reals = np.concatenate([np.exp(RNG.uniform(np.log(1e-21), np.log(2.0**29), 300)),
                            [2.0**-30 * (1 - 2**-32), 0.5 * (1 - 2**-33), 1e-20, 2.0**-31]])
    for real in reals:
        m, s = quantize_multiplier(float(real))
        zy = int(RNG.integers(-128, 128))
        q, fastq = kset.fast_requant(np.array([m]), np.array([s]))
        assert fastq == int(s >= 33)
        acc = RNG.integers(-2**31, 2**31, 300, dtype=np.int64)
        small = RNG.integers(-2**20, 2**20, 300, dtype=np.int64)
        ties = [((2 * k + 1) << (s - 1)) // m + d for k in range(-20, 20) for d in (-1, 0, 1)] if m else []
        ties = np.array([v for v in ties if -2**31 <= v < 2**31], dtype=np.int64)  # accumulators near x.5
        acc = np.concatenate([acc, small, ties, [0, 2**31 - 1, -2**31]])
        want = np.clip(requant(acc, m, s) + zy, -128, 127)
        assert np.array_equal(cuvil_rq_model(acc, q[0], zy), want), (real, m, s, zy)
    assert kset.fast_requant(np.array([2**30, 2**30]), np.array([40, 32]))[1] == 0


def test_zy_folds_into_rnd_only_where_exact():
    """fold_zy: rnd + zy * 2^s gives the same floor at 2^s as adding zy after the shift, for
    every int32 accumulator, and is refused where the sum could leave int32 (large s) or for the
    64-bit form (s = 0)."""
    for s_, zy in ((5, -128), (13, 77), (22, -128), (1, 127)):
        q = np.array([[1518500250, 1 << (s_ - 1), s_]], dtype=np.int64)
        folded = kset.fold_zy(q.astype(np.int32), zy)
        assert folded is not None
        acc = np.concatenate([RNG.integers(-2**31, 2**31, 2000, dtype=np.int64), [-2**31, 2**31 - 1, 0]])
        hi = (acc * q[0, 0]) >> 32
        assert np.array_equal((hi + int(folded[0, 1])) >> s_, ((hi + q[0, 1]) >> s_) + zy)
    assert kset.fold_zy(np.array([[1 << 30, 1 << 29, 30]], dtype=np.int32), -5) is None
    assert kset.fold_zy(np.array([[1 << 30, 40, 0]], dtype=np.int32), 3) is None


def test_shared_helpers_live_in_one_header_each():
    """Kernel headers include the set's shared helper headers instead of carrying copies."""
    helpers = {p.name for p in TEMPLATES.glob("cuvil_*.h")}
    assert {"cuvil_dsp_common.h", "cuvil_dsp_dwrow.h"} <= helpers
    for name in kernels_with_sources("cortex_m_dsp"):  # .h files and rendered .h.j2 alike
        text = kernel_source("cortex_m_dsp", name)
        assert "#define CUVIL_DSP_COMMON_H" not in text and '#include "cuvil_dsp_common.h"' in text


def test_every_dsp_kernel_has_a_header_and_a_rule():
    headers = [*TEMPLATES.glob("*.h"), *TEMPLATES.glob("*.h.j2")]
    # argmax_s8_dsp (int8 ArgMax heads) has its grid in test_integer_models.py
    assert {p.name.split(".")[0] for p in headers if not p.name.startswith("cuvil_")} == DSP_KERNELS | {"argmax_s8_dsp"}
    assert get_board(DSP).kernels == ("cortex_m_dsp",) and get_board(PORTABLE).kernels == ("portable",)


def test_portable_board_file_is_board_toml_with_portable_kernels():
    """board_portable.toml is board.toml but for name, description, kernels and the flash
    section (real boards only): the comparison is of kernels alone."""
    folder = kc.ROOT / "targets" / "cortex_m7"
    dsp = tomllib.loads((folder / "board.toml").read_text())
    portable = tomllib.loads((folder / "board_portable.toml").read_text())
    for key in ("name", "description", "kernels", "flash"):
        dsp.pop(key, None)
        portable.pop(key, None)
    assert dsp == portable


# --- the case grid on QEMU ------------------------------------------------------------------------
@dataclass
class Pair:
    net: kc.Net
    info: dict[str, dict]  # board -> build info (manifest)
    raw: dict[str, list]  # board -> run_samples' raw int8 outputs, per output (samples, size)
    want: list  # per sample {output: int8 array}
    samples: list  # the float samples that ran


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    def make(group: str) -> Pair:
        folder = tmp_path_factory.mktemp(f"dsp_{group}")
        net = kc.save_net(kc.make_net(f"dsp_{group}", GROUPS[group]), folder)
        g = kc.reference_graph(net, DSP, PROFILE, "int8", int4=True)  # the dsp_w4_ cases' layers int4
        samples = kc.float_samples(net, FLOAT_SAMPLES, seed=31)
        samples += kc.dequantized(g, kc.int8_samples(g, INT8_SAMPLES, seed=32))
        info, raw = {}, {}
        for board in (DSP, PORTABLE):
            info[board] = kc.build(net, folder / board, board, PROFILE, "int8", int4=True)
            raw[board] = run_samples(get_board(board), info[board], samples, False)["raw"]
        return Pair(net, info, raw, [run_quantized_model(g, s)[0] for s in samples], samples)
    return kc.Lazy(make)


def test_m7_dsp_tools_present():
    missing = missing_tools(TOOLS)
    assert not missing, f"missing tools: {missing} (these tests never skip)"


@pytest.mark.slow
@pytest.mark.parametrize("group", list(GROUPS))
def test_dsp_build_equals_portable_build(grid, group):
    run = grid(group)
    names = [t["name"] for t in run.info[DSP]["outputs"]]
    for name, got, want in zip(names, run.raw[DSP], run.raw[PORTABLE]):
        assert np.array_equal(got, want), f"{group} output {name}: {kc.mismatch(got, want)}"


@pytest.mark.slow
@pytest.mark.parametrize("group, cid", [pytest.param(g, c, id=c) for g, ids in GROUPS.items() for c in ids])
def test_dsp_kernel_bit_exact(grid, group, cid):
    run = grid(group)
    index = {t["name"]: i for i, t in enumerate(run.info[DSP]["outputs"])}
    for y in run.net.outputs[cid]:
        raw = run.raw[DSP][index[y]]
        for i, want in enumerate(run.want):
            got = raw[i].reshape(want[y].shape)
            assert np.array_equal(got, want[y]), f"{cid} output {y}, sample {i}: {kc.mismatch(got, want[y])}"


@pytest.mark.slow
def test_every_dsp_kernel_ran_and_every_dsp_case_reached_one(grid):
    """The grid is not vacuous: each DSP kernel was chosen somewhere, and each dsp_ case's
    weighted or pooling layer went to a DSP kernel (not the portable fallback)."""
    used = {layer["kernel"] for group in GROUPS for layer in grid(group).info[DSP]["layers"]}
    assert DSP_KERNELS <= used, f"never chosen: {sorted(DSP_KERNELS - used)}"
    layers = grid("dsp_paths").info[DSP]["layers"]
    kinds = ("Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool", "Add", "Softmax", "Transpose")
    for cid in GROUPS["dsp_paths"]:
        mine = [layer for layer in layers if layer["name"].startswith(cid + "_") and layer["op"] in kinds]
        assert mine and all(layer["kernel"] in DSP_KERNELS for layer in mine), (cid, mine)
    portable = {layer["kernel"] for group in GROUPS for layer in grid(group).info[PORTABLE]["layers"]}
    assert not portable & DSP_KERNELS


@pytest.mark.slow
def test_dsp_grid_covers_what_trained_models_produce(grid):
    """The dsp_ cases reach, on DSP kernels: shifts below 16 and above 60, a multiplier within
    2^8 of 2^31, biases whose worst-case bound |bias| + K * 255 * 128 passes int32, layers with
    and without the assembly requantization (fastq), 1280 channels, rows 112 wide, depthwise
    multiplier 2, groups, dilations, broadcast adds, FC rows past the column buffer."""
    run = grid("dsp_paths")
    g = kc.reference_graph(run.net, DSP, PROFILE, "int8")
    kernels = {layer["name"]: layer["kernel"] for layer in run.info[DSP]["layers"]}
    shifts, mults, over, fastq = [], [], 0, set()
    for node in g.nodes:
        q = getattr(node, "q", None)
        if node.name not in kernels or not q or "w" not in q:
            continue
        assert kernels[node.name] in DSP_KERNELS, (node.name, kernels[node.name])
        shifts += list(np.atleast_1d(q["shift"]))
        mults += list(np.atleast_1d(q["mult"]))
        k = int(np.prod(q["w"].shape)) // q["w"].shape[0]
        over += int(np.abs(q["bias"].astype(np.int64)).max() + k * 255 * 128 > 2**31 - 1)
        fastq.add(kset.fast_requant(q["mult"], q["shift"])[1])
    assert min(shifts) < 16 and max(shifts) > 60 and max(mults) >= 2**31 - 2**8 and over >= 3 and fastq == {0, 1}
    for cid in ("dsp_fc_1280_channels", "dsp_fc_k2100", "dsp_wide_rows_dw_mult2", "dsp_grouped3_dilated",
                "dsp_dw_dilated", "dsp_add_bcast_channel", "dsp_add_bcast_both", "dsp_avgpool_row_300"):
        mine = [kernels[n.name] for n in g.nodes if n.name.startswith(cid + "_") and n.name in kernels]
        assert mine and set(mine) <= DSP_KERNELS, (cid, mine)


@pytest.mark.slow
def test_residual_add_ran_in_place(grid):
    """dsp_add_residual_in_place's first Add wrote its output over the conv operand that dies
    there (the planner read add_s8_dsp's overlap rule, declarations.py), the second over one of
    its operands; test_dsp_kernel_bit_exact holds their outputs to the reference."""
    layers = grid("dsp_paths").info[DSP]["layers"]
    mine = [la for la in layers if la["name"].startswith("dsp_add_residual_in_place_")]
    r, c = [la for la in mine if la["op"] == "Conv"]
    first, second = [la for la in mine if la["op"] == "Add"]
    assert first["kernel"] == second["kernel"] == "add_s8_dsp"
    assert first["arena_offset"] == c["arena_offset"] != r["arena_offset"], mine
    assert second["arena_offset"] in (first["arena_offset"], r["arena_offset"]), mine
    portable = {la["name"]: la["arena_offset"] for la in grid("dsp_paths").info[PORTABLE]["layers"]}
    assert portable[first["name"]] != portable[c["name"]]  # the portable add has no overlap rule


@pytest.mark.slow
def test_conv_tile_variants_are_reached(grid):
    """conv2d_s8_dsp's variants (rules.conv_im2col, named in the manifest): 4-pixel and 3-pixel
    tiles, the "run" layout of 3-channel stems, the C requantization (a shift below 33) and
    the K-tiled path all run in the dsp_ cases; the tile_ cases end on tiles of 1, 2 and 3
    pixels, and one has the block add zy (too large to fold into rnd)."""
    layers = grid("dsp_paths").info[DSP]["layers"]
    variants = {layer.get("variant") for layer in layers if layer["kernel"] == "conv2d_s8_dsp"}
    assert {"4x2 w8", "3x2 w8", "4x2 w8 run", "4x2 w8 c-requant", "k-tiled w8"} <= variants, variants
    g = kc.reference_graph(grid("dsp_paths").net, DSP, PROFILE, "int8")
    nodes = {n.name: n for n in g.nodes}
    tails, unfolded = set(), 0
    for layer in layers:
        node = nodes.get(layer["name"])
        if layer["kernel"] == "conv2d_s8_dsp" and node is not None and "_tile_" in layer["name"]:
            n, h, w, _ = g.tensors[node.outputs[0]].shape  # NHWC
            tails.add(n * h * w % int(layer["variant"][0]))
            q, fastq = kset.fast_requant(node.q["mult"], node.q["shift"])
            unfolded += fastq == 1 and kset.fold_zy(q, int(node.q["zy"])) is None
    assert {1, 2, 3} <= tails and unfolded >= 1, (tails, unfolded)


@pytest.mark.slow
def test_dw3x3_variants_are_reached(grid):
    """conv2d_s8_dsp_dw3x3's variants (rules.conv_depthwise): stride 1 and 2, the whole image
    and the row ring, the clamping store, the transposed walk and the 2-output tail block
    ("t2": rows of 4k + 1 or 4k + 2 outputs) and the 3-output block ("3px": rows of 3) with the
    fast and the clamping store."""
    variants = {layer.get("variant") for layer in grid("dsp_paths").info[DSP]["layers"]
                if layer["kernel"] == "conv2d_s8_dsp_dw3x3"}
    for want in ("s1 w8 image", "s1 w8 ring", "s2 w8 image", "s2 w8 ring", "clamp", " T", "s1 w8 image t2",
                 "s1 w8 ring t2", "s2 w8 image t2", "s1 w8 image clamp t2", "s2 w8 image clamp t2",
                 "3px s1 w8 image", "3px s2 w8 image", "3px s1 w8 image clamp", "3px s2 w8 image clamp"):
        assert any(want in v for v in variants), (want, sorted(variants))


@pytest.mark.slow
def test_int4_layers_unpack_in_registers_or_say_why_not(grid):
    """The dsp_w4_ cases' layers have int4 weights (grids built with int4=True; their outputs are
    held bit for bit to the reference with the others): the GEMM and FC ones run the nibble
    streams (variants "w4", packed in flash: half the int8 bytes of the values), the depthwise
    one the 3x3 kernel on 16 x the values as int8 bytes and the one whose 16 x sums could leave
    int32 the int8 streams, both listed with their reason in the build information (never silently)."""
    run = grid("dsp_wide")
    info = run.info[DSP]
    layers = {la["name"]: la for la in info["layers"] if kc.W4_MARK in la["name"] and la.get("weight_bits")}
    assert set(layers) == set(kc.int4_layers(run.net)) == set(info["int4_layers"]) and len(layers) == 9
    unpacked = {f["layer"]: f for f in info["int4_unpacked"]}
    for name, la in layers.items():
        assert la["weight_bits"] == 4 and la["int4_weight_bytes"] == (la["int8_weight_bytes"] + 1) // 2
        if name.startswith(("dsp_w4_dw3x3_", "dsp_w4_trained_3x3_big_bias_")):
            assert la["weight_storage"] == "int8" and name in unpacked, la
            assert " w8" in la["variant"], la
        else:
            assert la["weight_storage"] == "int4" and name not in unpacked and " w4" in la["variant"], la
    assert "depthwise" in unpacked[next(n for n in unpacked if n.startswith("dsp_w4_dw3x3_"))]["reason"]
    assert "2^27" in unpacked[next(n for n in unpacked if n.startswith("dsp_w4_trained_3x3"))]["reason"]
    assert {la["variant"] for la in layers.values()} >= {"4x2 w4", "4x2 w4 run", "1x4 w4 pairs", "1x4 w4 pairs rq64",
                                                        "1x4 w4 pairs wide-k"}
    portable = {la["name"]: la["kernel"] for la in run.info[PORTABLE]["layers"] if la["name"] in layers}
    assert set(portable.values()) == {"conv2d_s8w4", "fc_s8w4"}  # the portable kernels read the nibbles too


@pytest.mark.slow
def test_int16_weight_layout_equals_the_int8_default(grid, tmp_path):
    """--weight-layout int16 (GEMM/FC weights pre-widened in flash) gives the same bits as the
    default int8 layout (SXTB16 in registers) on every dsp_ case, and stores more weight bytes;
    the default build stores GEMM/FC weights at one byte each."""
    run = grid("dsp_paths")
    info = kc.build(run.net, tmp_path / "w16", DSP, PROFILE, "int8", weight_layout="int16")
    raw = run_samples(get_board(DSP), info, run.samples, False)["raw"]
    for got, want in zip(raw, run.raw[DSP]):
        assert np.array_equal(got, want), kc.mismatch(got, want)
    assert run.info[DSP]["weight_layout"] == "int8" and info["weight_layout"] == "int16"
    wide = {layer["name"]: layer["weight_bytes"] for layer in info["layers"]}
    gemm = [layer for layer in run.info[DSP]["layers"] if layer["kernel"] in ("conv2d_s8_dsp", "fc_s8_dsp")]
    assert all(wide[layer["name"]] > layer["weight_bytes"] for layer in gemm)
    narrow_total, wide_total = sum(la["weight_bytes"] for la in gemm), sum(wide[la["name"]] for la in gemm)
    assert wide_total > 1.6 * narrow_total, (narrow_total, wide_total)  # bias and requant words are shared


# --- the example models ---------------------------------------------------------------------------
MODELS = {"digits": ("digits_cnn.onnx", 24), "resnet8": ("resnet8_fp32.onnx", 2), "ad": ("ad_fp32.onnx", 3),
          "kws": ("ds_cnn_kws_trained.onnx", 2), "vww": ("mobilenet_v1_025_vww_trained.onnx", 1)}
# The trained MLPerf Tiny DS-CNN and MobileNetV1-0.25 (scripts/train_mlperf_tiny.py): their trained
# weights give the wide accumulators and large shifts random weights do not (DESIGN.md section 8).
TRAINED = EXAMPLES.parents[1] / "benchmarks" / "models"


@pytest.fixture(scope="module")
def calib_files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dsp-models")
    rng = np.random.default_rng(5)
    np.save(tmp / "digits.npy", np.load(EXAMPLES / "digits_data.npz")["calib"])
    np.save(tmp / "resnet8.npy", rng.random((16, 3, 32, 32), dtype=np.float32))
    np.save(tmp / "ad.npy", rng.random((16, 640), dtype=np.float32))
    np.save(tmp / "kws.npy", rng.random((16, 1, 49, 10), dtype=np.float32))
    np.save(tmp / "vww.npy", rng.random((16, 3, 96, 96), dtype=np.float32))
    return tmp


def int8_of(info: dict, outputs: list[dict[str, np.ndarray]]) -> list[np.ndarray]:
    """The int8 values behind a float run's dequantized outputs, (samples, size) per output:
    each float is (q - zero point) x scale, exactly, so dividing back and rounding gives q."""
    return [np.stack([np.rint(o[t["name"]].reshape(-1) / t["scale"]) + t["zero_point"] for o in outputs])
            .astype(np.int8) for t in info["outputs"]]


@pytest.mark.slow
@pytest.mark.parametrize("model", list(MODELS))
def test_example_model_dsp_equals_portable_equals_reference(calib_files, model, tmp_path):
    """Every layer of the example and MLPerf Tiny models on the DSP set (no fallbacks), its int8
    outputs bit for bit those of the portable build, the integer reference and the host build."""
    from cuvil_sdk.commands import do_build
    onnx_name, count = MODELS[model]
    onnx_name = str(TRAINED / onnx_name) if (TRAINED / onnx_name).is_file() else onnx_name
    calib = calib_files / f"{model}.npy"
    if model == "digits":
        x = np.load(EXAMPLES / "digits_data.npz")["x"][:count]
    else:
        x = np.random.default_rng(6).random((count, *np.load(calib).shape[1:]), dtype=np.float32)
    outputs, kernels, fallbacks = {}, {}, {}
    for board, profile in ((DSP, PROFILE), (PORTABLE, PROFILE), ("host", "standard")):
        req = request(onnx_name, board, profile, calib)
        info = do_build(req, tmp_path / board, 2)
        name = info["inputs"][0]["name"]
        samples = [{name: x[i:i + 1].reshape(info["inputs"][0]["shape"])} for i in range(count)]
        result = run_samples(req.board, info, samples, False)
        outputs[board] = result["raw"] if "raw" in result else int8_of(info, result["outputs"])
        kernels[board] = {layer["kernel"] for layer in info["layers"]}
        fallbacks[board] = info["fallbacks"]
    assert kernels[DSP] & DSP_KERNELS and not kernels[PORTABLE] & DSP_KERNELS
    assert fallbacks[DSP] == [], fallbacks[DSP]
    for got_host, got_dsp in zip(outputs["host"], outputs[DSP]):
        assert np.array_equal(got_host.reshape(got_dsp.shape), got_dsp), kc.mismatch(got_host, got_dsp)
    g = reference_graph(request(onnx_name, DSP, PROFILE, calib))
    want = [np.stack([run_quantized_model(g, {g.inputs[0]: x[i:i + 1]})[0][o].reshape(-1) for i in range(count)])
            for o in g.outputs]
    for got_dsp, got_portable, ref in zip(outputs[DSP], outputs[PORTABLE], want):
        assert np.array_equal(got_dsp, got_portable), kc.mismatch(got_dsp, got_portable)
        assert np.array_equal(got_portable, ref), kc.mismatch(got_portable, ref)


@pytest.mark.slow
def test_channels_last_input_removes_the_transpose(calib_files, tmp_path):
    """--input-layout nhwc on ResNet-8: the input takes N,H,W,C data, no transpose runs on the
    device, and the outputs equal those of the NCHW build fed the same images."""
    from cuvil_sdk.commands import do_build
    nchw = np.load(calib_files / "resnet8.npy")
    np.save(tmp_path / "calib_nhwc.npy", nchw.transpose(0, 2, 3, 1))
    x = np.random.default_rng(8).random((2, 3, 32, 32), dtype=np.float32)
    raw, layers = {}, {}
    for layout, calib, data in (("nchw", calib_files / "resnet8.npy", x),
                                ("nhwc", tmp_path / "calib_nhwc.npy", x.transpose(0, 2, 3, 1))):
        req = request("resnet8_fp32.onnx", DSP, PROFILE, calib)
        req.input_layout = layout
        info = do_build(req, tmp_path / layout, 2)
        assert info["inputs"][0]["shape"] == [1, *data.shape[1:]]
        name = info["inputs"][0]["name"]
        raw[layout] = run_samples(req.board, info, [{name: data[i:i + 1]} for i in range(2)], False)["raw"]
        layers[layout] = [layer["op"] for layer in info["layers"]]
    assert "Transpose" in layers["nchw"] and "Transpose" not in layers["nhwc"]
    for got, want in zip(raw["nhwc"], raw["nchw"]):
        assert np.array_equal(got, want), kc.mismatch(got, want)
