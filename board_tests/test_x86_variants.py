"""The x86-64 kernel variants of the `host` board (AMX-INT8, AVX-512 VNNI, AVX-VNNI, AVX2) and
the dispatcher that picks one at the first call (sdk/templates/common/x86_dispatch.j2).

- The SIMD grid's int8 conv, depthwise and fc cases (simd_cases.py, with the layers whose
  worst-case accumulator passes int32) run bit-exact against the numpy integer reference on
  every variant this CPU has; a variant it lacks is skipped with the reason in the test
  output (pyproject's -rs), e.g. "avx512vnni: this CPU lacks it".
- The same .so runs on Bochs's emulated Tiger Lake CPU (x86_bochs.py: its segments loaded and
  relocated into a bare-metal program, its dispatcher asking CPUID/XGETBV there) and picks
  avx512vnni: the grid bit-exact against the reference, ResNet-8 identical to this CPU's run.
- Bochs 3.0's Sapphire Rapids (AMX-TILE/AMX-INT8, AVX-VNNI) runs the grid at the avxvnni,
  avx512vnni and amx levels; at amx the large convolutions and the fc layers of 8 or more rows
  (the build's layer rows say which, and why the others decline) run their AMX tile kernels
  (tdpbuud), bit-exact, and ResNet-8 is identical to this CPU's run.
- The avxvnni variant also runs here with vpdpbusd emulated by AVX2
  (fixtures/vnni_emulate/cuvil_vnni_emulate.h), on any AVX2 CPU.
- objdump: the variants' functions hold vpdpbusd (VEX on ymm; EVEX, on zmm for conv and fc),
  the avx2 ones none, and the entry points and the dispatcher no AVX instruction at all.
- A C program dlopens a built ResNet-8 library and runs it natively, under `qemu-x86_64
  -cpu max` (identical output) and `-cpu Westmere` (refused: non-zero exit, no crash);
  runtime.load on a CPU without AVX2 (QEMU's SandyBridge) raises one line naming what it
  lacks; model.isa and CUVIL_ISA.
A missing gcc, objdump, qemu-x86_64 or Bochs fails these tests, never skips them.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import kernel_cases as kc
import simd_cases as sc
import x86_bochs
from cuvil_sdk import runtime
from cuvil_sdk.boards import get_board
from cuvil_sdk.commands import do_build
from cuvil_sdk.request import CompileRequest
from cuvil_sdk.profiles import get_profile
from cuvil_sdk.reference import run_int

HERE = Path(__file__).resolve().parent
EMULATE_DIR = HERE / "fixtures" / "vnni_emulate"
DLOPEN_RUN = HERE / "fixtures" / "x86_dispatch" / "dlopen_run.c"
RESNET8 = HERE.parent / "sdk" / "examples" / "resnet8_qdq.onnx"
VARIANTS = ["amx", "avx512vnni", "avxvnni", "avx2"]
# /proc/cpuinfo flags each variant needs (the dispatcher asks CPUID + XGETBV itself)
AVX512VNNI_FLAGS = {"avx512f", "avx512bw", "avx512vl", "avx512_vnni"}
CPU_FLAGS = {"amx": AVX512VNNI_FLAGS | {"amx_tile", "amx_int8"}, "avx512vnni": AVX512VNNI_FLAGS,
             "avxvnni": {"avx_vnni"}, "avx2": {"avx2", "fma"}}
# block and tile remainders, taps padded to quads, one input channel, bands, groups, the fast
# and the wide requantization, fc tails of 1..3 blocks; depthwise with 5x5 taps (an odd count
# of column pairs), a depth multiplier, dilation, bands; layers that take the amx variant (simd_cases.AMX_IDS)
# and layers that decline it; the Add cases
GRID_IDS = ["simd_conv_c19_oc40", "simd_conv_1x1_oc17", "simd_conv_oc28_tail", "simd_conv_odd_row_taps", "simd_conv_dscnn_stem",
            "simd_conv_bands", "simd_conv_grouped4", "simd_qdq_conv_shift31", "simd_qdq_conv_shift62_wide",
            "simd_amx_conv_s2_oc40", "simd_amx_qdq_conv_1x1_zp", "simd_qdq_conv_1x1_direct_relu_clamp",
            "simd_qdq_conv_3x3_panel_relu_clamp", "simd_conv_1x1_direct_c96_sat",
            "simd_gemm_k301_n70", "simd_gemm_k8_n5", "simd_amx_gemm_rows20_k150_n52",
            "simd_gemm_rows4", "simd_qdq_gemm_shift62_wide",
            "simd_qdq_gemm_mult_near_2_31", "simd_dw_c40", "simd_dw_c28_s1", "simd_dw_c28_s2", "simd_dw_5x5_s2", "simd_dw_2x2_asym", "simd_dw_bands",
            "simd_dw_mult2_s2", "simd_dw_dilated", "simd_qdq_dw_shift62_wide",
            # Add (the avx512vnni variant): tails, zero-point edges, scales far apart, broadcasts, saturation
            "simd_add_1000", "simd_add_relu_c48", "simd_add_bcast_channel", "simd_add_bcast_scalar",
            "simd_add_tail15_zp_edges", "simd_add_tail1_extreme_scales", "simd_add_bcast_pixel_first",
            "simd_add_bcast_scalar_first", "simd_add_saturating",
            # int4 weights (the grid is built with int4=True): the variants' quads built from nibbles
            "simd_w4_conv_c19_oc40", "simd_w4_conv_1x1_oc17", "simd_w4_conv_odd_row_taps", "simd_w4_gemm_k301_n70",
            "simd_w4_gemm_rows4"]
SAMPLES = 3
PART_FUNCTIONS = ["conv2d_s8_avx2_part", "dwconv2d_s8_avx2_part", "fc_s8_avx2_part", "conv2d_s8w4_avx2_part",
                  "fc_s8w4_avx2_part"]
pytestmark = pytest.mark.slow  # two builds of the grid and one of ResNet-8 (about 30 s of CPU in all)


def cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    raise AssertionError("no flags line in /proc/cpuinfo")


def lacks(variant: str) -> set[str]:
    return CPU_FLAGS[variant] - cpu_flags()


def tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not installed (the x86 variant tests need it)"
    return path


def emulated_library(info: dict, folder: Path) -> Path:
    """The build's generated C compiled again with the board's flags, the avxvnni variant's
    vpdpbusd emulated with AVX2 (same library name, in `folder`)."""
    out_dir = Path(info["out_dir"])
    lib = folder / Path(info["artifacts"]["so"]).name
    folder.mkdir(parents=True, exist_ok=True)
    cflags = get_board("host").get("toolchain.cflags")
    subprocess.run([tool("gcc"), *cflags, "-DCUVIL_X86_EMULATE_VNNI", f"-I{EMULATE_DIR}", f"-I{out_dir / 'src'}",
                    *[str(out_dir / s) for s in info["sources"]], "-shared", "-o", str(lib)], check=True)
    return lib


def copy_library(lib: Path, folder: Path) -> Path:
    """A copy loaded on its own (dlopen of the same path would share the first load's choice)."""
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(lib, folder / lib.name))


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    folder = tmp_path_factory.mktemp("x86_grid")
    net = kc.save_net(sc.make_net("x86_grid", GRID_IDS), folder)
    g = kc.reference_graph(net, "host", "standard", "int8", int4=True)
    info = kc.build(net, folder / "out", "host", "standard", int4=True)
    samples = kc.int8_samples(g, SAMPLES, seed=31)
    return {"net": net, "info": info, "samples": samples, "want": [run_int(g, s) for s in samples],
            "emulated": emulated_library(info, folder / "emulated")}


def run_grid(grid: dict, lib: Path, isa: str, monkeypatch) -> tuple[str, list[dict]]:
    monkeypatch.setenv("CUVIL_ISA", isa)
    with runtime.load(lib) as model:
        return model.isa, [model.run_int8(s) for s in grid["samples"]]


def assert_outputs_equal(got: list[dict], want: list[dict], names: list[str], what: str) -> None:
    for name in names:
        for i, (a, b) in enumerate(zip(got, want)):
            assert np.array_equal(a[name], b[name]), f"{what} {name}, sample {i}: {kc.mismatch(a[name], b[name])}"


def assert_grid_matches(grid: dict, got: list[dict], what: str) -> None:
    assert_outputs_equal(got, grid["want"], [y for cid in GRID_IDS for y in grid["net"].outputs[cid]], what)


def test_grid_layers_run_the_x86_kernels(grid):
    """Every grid case's layer got its avx2-set kernel (the one carrying the variants; int4 cases
    the int4 one)."""
    chosen = sc.main_layer_kernels(grid["info"], grid["net"])
    for cid in GRID_IDS:
        assert chosen[cid] == sc.expected_kernel(cid, "avx2", int4=True), f"{cid}: {chosen[cid]}"
    assert [cid for cid in GRID_IDS if "_s8amx_" in chosen[cid]] == list(sc.AMX_IDS)


def conv_weight_shapes(model: Path) -> dict[str, list[int]]:
    """Conv node name -> its weight's [oc, c, kh, kw], read from the ONNX file itself (through
    the DequantizeLinear of a QDQ model)."""
    g = onnx.load(str(model)).graph
    inits = {i.name: list(i.dims) for i in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    shapes = {}
    for n in g.node:
        if n.op_type == "Conv":
            w = n.input[1]
            while w not in inits:
                w = producer[w].input[0]
            shapes[n.name] = inits[w]
    return shapes


def test_host_build_names_the_amx_layers_and_why_the_others_decline(resnet8):
    """ResNet-8 on `host`: every convolution's layer row (the build info and report.json) names its
    variant: "amx" on the AMX tile kernel, else "no amx: <reason>" on conv2d_s8_avx2. Checked
    against the ONNX weights and the rows' output shapes: an amx layer has 32 or more output
    channels, rows of 8 or more pixels and kernel rows of kw * c taps (to quads) filling half
    their 64-byte slabs; a declined one names the numbers of the first of these it fails."""
    shapes = conv_weight_shapes(RESNET8)
    report = json.loads((Path(resnet8["info"]["out_dir"]) / "report.json").read_text())
    rows = [row for row in resnet8["info"]["layers"] if row["op"] == "Conv"]
    assert len(rows) == len(shapes) == 9
    assert [(r["kernel"], r["variant"]) for r in rows] == \
        [(r["kernel"], r.get("variant")) for r in report["layers"] if r["op"] == "Conv"]
    for row in rows:
        oc, c, _, kw = shapes[row["name"]]
        ow, kr = row["output_shape"][2], -(-kw * c // 4) * 4
        slabs = -(-kr // 64)
        if oc < 32:
            why = f"{oc} output channels"
        elif ow < 8:
            why = f"output rows of {ow} pixels"
        elif kr < 32 * slabs:
            why = f"{kr} taps per kernel row fill under 50% of {slabs} x 64-byte"
        else:
            assert (row["kernel"], row["variant"]) == ("conv2d_s8amx_avx2", "amx"), row
            continue
        assert row["kernel"] == "conv2d_s8_avx2" and row["variant"].startswith(f"no amx: {why}"), (why, row)
    variants = [r["variant"] for r in rows]
    assert variants.count("amx") == 5 and {v.split(" (")[0] for v in variants} == {
        "amx", "no amx: 16 output channels", "no amx: 16 taps per kernel row fill under 50% of 1 x 64-byte tile rows"}


def test_grid_names_why_layers_decline_amx(grid):
    """The grid's declines: too few output channels, short rows, int4 weights (the amx kernels read
    int8 ones; the int4 twins of amx cases), fc layers of too few rows."""
    by_case = {cid: [r for r in grid["info"]["layers"] if r["name"].startswith(f"{cid}_")
                     and r["op"] in ("Conv", "Gemm")]
               for cid in ("simd_conv_1x1_oc17", "simd_conv_dscnn_stem", "simd_w4_conv_c19_oc40", "simd_gemm_rows4",
                           "simd_gemm_k301_n70")}
    variants = {cid: [r.get("variant") for r in rows] for cid, rows in by_case.items()}
    assert variants == {"simd_conv_1x1_oc17": ["no amx: 17 output channels (fewer than 32)"],
                        "simd_conv_dscnn_stem": ["no amx: output rows of 5 pixels (fewer than 8)"],
                        "simd_w4_conv_c19_oc40": ["no amx: int4 weights (the amx variant reads int8 ones)"],
                        "simd_gemm_rows4": ["no amx: 4 rows of inputs (fewer than 8)"],
                        "simd_gemm_k301_n70": ["no amx: 1 row of inputs (fewer than 8)"]}


@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_is_bit_exact_on_the_grid(grid, variant, tmp_path, monkeypatch):
    missing = lacks(variant)
    if missing:
        pytest.skip(f"{variant}: this CPU lacks it (no {', '.join(sorted(missing))} in /proc/cpuinfo)")
    isa, got = run_grid(grid, copy_library(Path(grid["info"]["artifacts"]["so"]), tmp_path), variant, monkeypatch)
    assert isa == variant
    assert_grid_matches(grid, got, variant)


def test_emulated_avxvnni_is_bit_exact_on_the_grid(grid, tmp_path, monkeypatch):
    """The avxvnni kernels with vpdpbusd emulated exactly by AVX2: this checks their weight
    layout (quads from two pair rows), the x + 128 panel and padding, bias_vnni and the
    offsets, on the whole grid (wide-accumulator layers included), not the instruction."""
    isa, got = run_grid(grid, copy_library(grid["emulated"], tmp_path), "avxvnni", monkeypatch)
    assert isa == "avxvnni"
    assert_grid_matches(grid, got, "emulated avxvnni")


def functions(lib: Path) -> dict[str, list[str]]:
    """Function name -> its instructions (mnemonic and operands), from objdump -d."""
    text = subprocess.run([tool("objdump"), "-d", "--no-show-raw-insn", str(lib)], capture_output=True, text=True,
                          check=True).stdout
    out: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.endswith(">:") and " <" in line:
            current = out.setdefault(line.split(" <", 1)[1][:-2], [])
        elif line.startswith(" ") and ":\t" in line:
            current.append(line.split(":\t", 1)[1].strip())
    return out


def test_variant_objects_hold_vpdpbusd_and_entry_points_no_avx(grid):
    fns = functions(Path(grid["info"]["artifacts"]["so"]))
    for part in PART_FUNCTIONS:
        assert not any("vpdpbusd" in i or "%zmm" in i for i in fns[part]), f"{part} (avx2) uses VNNI or zmm"
        if part == "dwconv2d_s8_avx2_part":  # depthwise: column pairs, 16 channels a zmm, no quads
            assert f"{part}_avxvnni" not in fns, part
            zmm = [f for f in fns if f.startswith("dwconv2d_s8_avx2_") and ("_zmm" in f or "avx512vnni" in f)]
            assert any(i.startswith("vpmaddwd") and "%zmm" in i for f in zmm for i in fns[f]), zmm
            continue
        vex = [i for i in fns[f"{part}_avxvnni"] if "vpdpbusd" in i]
        evex = [i for i in fns[f"{part}_avx512vnni"] if "vpdpbusd" in i]
        assert vex and all(i.startswith("{vex} vpdpbusd") and "%ymm" in i for i in vex), part
        assert evex and not [i for i in evex if i.startswith("{vex}")], f"{part}: no EVEX vpdpbusd"
        assert any("%zmm" in i for i in evex), f"{part}: no vpdpbusd on zmm"
    # the amx variants: tdpbuud only (on Bochs 3.0, which multiplies the signed forms' bytes as
    # unsigned, tdpbusd would pass the grid), and no other function touches the tiles
    amx_parts = {"conv2d_s8amx_avx2_part_amx", "fc_s8amx_avx2_part_amx"}
    for part in amx_parts:
        amx = [i.split()[0] for i in fns[part]]
        assert {"tdpbuud", "ldtilecfg", "tilerelease"} <= set(amx), (part, sorted(set(amx)))
        assert not [i for i in amx if i.startswith(("tdpbssd", "tdpbsud", "tdpbusd"))], part
    tiles = {f for f, ins in fns.items() if any(i.startswith(("tdp", "tile", "ldtilecfg")) for i in ins)}
    assert tiles == amx_parts, tiles
    name = grid["net"].name
    entry = [f for f in fns if f.startswith(f"{name}_") and "layers" not in f and "@plt" not in f]
    entry += [f for f in fns if f.startswith("cuvil_x86_")]
    assert len(entry) >= 8, entry
    for f in entry:  # SSE2 (x86-64's baseline) only: no VEX/EVEX instruction before the check
        assert not [i for i in fns[f] if i.startswith(("v", "{")) or "%ymm" in i or "%zmm" in i], f


@pytest.fixture(scope="module")
def resnet8(tmp_path_factory):
    folder = tmp_path_factory.mktemp("x86_resnet8")
    req = CompileRequest(model=RESNET8, board=get_board("host"), profile=get_profile("standard"))
    info = do_build(req, folder / "out", 2)
    program = folder / "dlopen_run"
    subprocess.run([tool("gcc"), "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-o", str(program), str(DLOPEN_RUN),
                    "-ldl"], check=True)
    x = np.random.default_rng(3).integers(-128, 128, size=(1, 3, 32, 32), dtype=np.int8)
    return {"info": info, "lib": Path(info["artifacts"]["so"]), "program": program, "x": x}


def dlopen_run(r8: dict, prefix: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, str(r8["program"]), str(r8["lib"]), "resnet8_qdq", str(r8["x"].size), "10"],
                          input=r8["x"].tobytes(), capture_output=True, timeout=120, env=env)


def test_dlopen_native_and_under_qemu_max_agree(resnet8):
    """The same library natively and under QEMU's `max` CPU (AVX2, no AVX-512): the avx2 path
    (or this CPU's best) gives the same int8 outputs as the Python runtime."""
    with runtime.load(resnet8["lib"]) as model:
        want = next(iter(model.run_int8(resnet8["x"]).values()))
    native = dlopen_run(resnet8, [])
    qemu = dlopen_run(resnet8, [tool("qemu-x86_64"), "-cpu", "max"])
    for run, where in ((native, "native"), (qemu, "qemu -cpu max")):
        assert run.returncode == 0, f"{where}: {run.stderr.decode()}"
        assert np.array_equal(np.frombuffer(run.stdout, dtype=np.int8), want.reshape(-1)), where
    assert qemu.stderr.decode().strip() == "isa avx2"


def test_dlopen_on_a_cpu_without_avx_is_refused(resnet8):
    """Westmere (SSE4.2, no AVX): the run function returns the error code, nothing faults."""
    run = dlopen_run(resnet8, [tool("qemu-x86_64"), "-cpu", "Westmere"])
    assert run.returncode == 3, (run.returncode, run.stderr.decode())
    assert run.stderr.decode().strip() == "refused: isa none, run returned 2, missing features 0xf"
    assert run.stdout == b""


def test_runtime_load_names_what_the_cpu_lacks(resnet8):
    """Python itself under QEMU's SandyBridge (AVX, no AVX2 or FMA): one TargetError line."""
    code = ("import sys\nfrom cuvil_sdk import runtime\nfrom cuvil_sdk.errors import TargetError\n"
            f"try:\n    runtime.load({str(resnet8['lib'])!r})\nexcept TargetError as e:\n"
            "    print(e.exit_code, e)\n    sys.exit(0)\nsys.exit('not refused')\n")
    run = subprocess.run([tool("qemu-x86_64"), "-cpu", "SandyBridge", sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout == ("6 'libresnet8_qdq.so' needs an x86-64 CPU with AVX2 and FMA; this one lacks AVX2, FMA: "
                          "build with --board host-portable\n")


def best_variant() -> str:
    return next(v for v in VARIANTS if not lacks(v))


def test_model_isa_is_the_cpus_best_and_cuvil_isa_caps_it(resnet8, grid, tmp_path, monkeypatch):
    monkeypatch.delenv("CUVIL_ISA", raising=False)
    with runtime.load(copy_library(resnet8["lib"], tmp_path / "native")) as model:
        assert model.isa == best_variant()
    monkeypatch.setenv("CUVIL_ISA", "amx")  # the library carries amx: this CPU's best, amx only where it has it
    with runtime.load(copy_library(resnet8["lib"], tmp_path / "native_amx")) as model:
        assert model.isa == best_variant()
    # the emulated library (avxvnni and avx2 only) runs avxvnni on any AVX2 CPU: its default, a
    # cap below, a cap above what it carries, an unknown name (ignored)
    for forced, want in ((None, "avxvnni"), ("avx2", "avx2"), ("avx512vnni", "avxvnni"), ("amx", "avxvnni"),
                         ("sse", "avxvnni")):
        if forced is None:
            monkeypatch.delenv("CUVIL_ISA", raising=False)
        else:
            monkeypatch.setenv("CUVIL_ISA", forced)
        with runtime.load(copy_library(grid["emulated"], tmp_path / str(forced))) as model:
            assert model.isa == want, forced


def test_dlopen_cuvil_isa_forces_avx2(resnet8):
    env = {"CUVIL_ISA": "avx2", "PATH": "/usr/bin:/bin"}
    run = dlopen_run(resnet8, [], env)
    assert run.returncode == 0 and run.stderr.decode().strip() == "isa avx2"



def test_avx512vnni_on_bochs_is_bit_exact_on_the_grid(grid, tmp_path):
    """Bochs's Tiger Lake (AVX-512 F/BW/VL + VNNI): the dispatcher picks avx512vnni and every grid
    case (wide-accumulator layers included) matches the numpy integer reference bit for bit."""
    image = x86_bochs.build_image(Path(grid["info"]["artifacts"]["so"]), grid["samples"], tmp_path)
    run = x86_bochs.run(image, tmp_path)
    assert run["isa"] == "avx512vnni" and not run["refused"], run
    assert_grid_matches(grid, run["outputs"], "avx512vnni on Bochs")


def test_resnet8_on_bochs_avx512_matches_this_cpu(resnet8, tmp_path):
    """The same .so on an AVX-512 VNNI CPU (Bochs) and on this one (its best variant, through
    runtime.load): identical int8 outputs."""
    rng = np.random.default_rng(5)
    with runtime.load(resnet8["lib"]) as model:
        name = model.input_names[0]
        samples = [{name: resnet8["x"]}, {name: rng.integers(-128, 128, resnet8["x"].shape, dtype=np.int8)}]
        here = [model.run_int8(s) for s in samples]
        outputs = model.output_names
    image = x86_bochs.build_image(resnet8["lib"], samples, tmp_path)
    run = x86_bochs.run(image, tmp_path)
    assert run["isa"] == "avx512vnni" and not run["refused"], run
    assert_outputs_equal(run["outputs"], here, outputs, f"ResNet-8 on Bochs vs {best_variant()} here")


@pytest.mark.parametrize("cap", ["amx", "avx512vnni", "avxvnni"])
def test_vnni_variants_on_bochs3_sapphire_rapids_are_bit_exact_on_the_grid(grid, cap, tmp_path):
    """Bochs 3.0's Sapphire Rapids (bochs3.py) has AVX-VNNI and AMX-INT8, which no CPU here has:
    the avxvnni variant's vpdpbusd itself (not the emulation above) bit-exact on the grid,
    avx512vnni on a second emulated CPU, and at the amx level the AMX tile kernels on the
    simd_cases.AMX_IDS layers (the others on avx512vnni). CUVIL_ISA (the bare program's
    environment) caps the choice."""
    image = x86_bochs.build_image(Path(grid["info"]["artifacts"]["so"]), grid["samples"], tmp_path, isa_cap=cap)
    run = x86_bochs.run(image, tmp_path, model=x86_bochs.SAPPHIRE_RAPIDS)
    assert run["isa"] == cap and not run["refused"], run
    assert_grid_matches(grid, run["outputs"], f"{cap} on Bochs 3.0 sapphire_rapids")


def test_resnet8_on_bochs3_amx_matches_this_cpu(resnet8, tmp_path):
    """ResNet-8 (five convolutions on the AMX tile kernel) on Bochs 3.0's Sapphire Rapids at the
    amx level and on this CPU: identical int8 outputs."""
    with runtime.load(resnet8["lib"]) as model:
        samples = [{model.input_names[0]: resnet8["x"]}]
        here = [model.run_int8(s) for s in samples]
        outputs = model.output_names
    image = x86_bochs.build_image(resnet8["lib"], samples, tmp_path)
    run = x86_bochs.run(image, tmp_path, model=x86_bochs.SAPPHIRE_RAPIDS)
    assert run["isa"] == "amx" and not run["refused"], run
    assert_outputs_equal(run["outputs"], here, outputs, f"ResNet-8 on Bochs 3.0 amx vs {best_variant()} here")
