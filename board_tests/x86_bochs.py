"""A `host` library (the .so itself) run on Bochs, an x86-64 emulator with AVX-512 VNNI.

No CPU here has AVX-512 and QEMU's TCG does not emulate it, so the avx512vnni variant would
run nowhere in CI. Bochs (Debian's build has the EVEX decoder) emulates a Tiger Lake CPU with
AVX-512F/BW/VL and AVX512_VNNI. A Linux kernel does not boot to user space on Bochs 2.7 (its
Tiger Lake model enumerates a PKRU xstate of size 0, and past that the boot hangs), so the
library runs in a bare-metal program instead: shared_object.py loads the .so's segments and
applies its relocations as the dynamic loader would (its code bytes are the ones a Linux
process would run), fixtures/x86_bochs/boot.S enters long mode and enables the AVX-512 state
in XCR0 as an OS would, bare_main.c calls the library's `<name>_run_int8` on the samples and
prints the outputs on Bochs's debug port 0xE9. The library's dispatcher asks CPUID and XGETBV
there itself.

Two emulators: the host's Bochs 2.7 (model tigerlake: AVX-512 VNNI) and Debian 13's Bochs 3.0
(bochs3.py, model sapphire_rapids: AMX-TILE/AMX-INT8, AVX512_VNNI and AVX-VNNI). boot.S also
turns on the AMX tile state (XCR0 bits 17, 18) where the CPU has it and makes SYSCALL return 0,
for the amx variant's Linux permission request for the tile data (that variant uses tdpbuud only:
Bochs 3.0's signed AMX-INT8 dot products are wrong, bochs3.py); CUVIL_ISA_CAP in bare_io.h is the
program's CUVIL_ISA.

The image boots from an ISO (isolinux + mboot.c32, multiboot). Tools: gcc, objcopy,
genisoimage, bochs (packages bochs, bochsbios, vgabios, isolinux, syslinux-common,
genisoimage: scripts/setup.sh installs them). A missing one fails the caller, never skips.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np

import bochs3
from cuvil_sdk import runtime
from shared_object import SharedObject

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "x86_bochs"
ISOLINUX_BIN = Path("/usr/lib/ISOLINUX/isolinux.bin")
SYSLINUX_MODULES = Path("/usr/lib/syslinux/modules/bios")
BOCHS_SHARE = Path("/usr/share/bochs")
CPU_MODEL = "tigerlake"  # AVX-512 F/CD/BW/DQ/VL + AVX512_VNNI; no AVX-VNNI (VEX), as Ice/Tiger Lake
# Bochs 3.0 (bochs3.py, Debian 13's): AMX-TILE/AMX-INT8, AVX512_VNNI and AVX-VNNI
SAPPHIRE_RAPIDS = "sapphire_rapids"
PROVIDED = ("memcpy", "memmove", "memset", "memcmp", "strcmp", "getenv")  # what bare_main.c defines
BOCHS_IPS = 100_000_000  # emulated instructions per emulated second (only paces the BIOS timers)


def tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not installed (the Bochs AVX-512 check needs it: scripts/setup.sh installs it)"
    return path


def tool_file(path: Path) -> Path:
    assert path.exists(), f"{path} is missing (the Bochs AVX-512 check needs it: scripts/setup.sh installs it)"
    return path


def io_header(in_sizes: list[int], out_sizes: list[int], samples: int, run_int8: int, isa: int,
              isa_cap: str | None = None) -> str:
    lines = [*([f'#define CUVIL_ISA_CAP "{isa_cap}"'] if isa_cap else []), f"#define CUVIL_SAMPLES {samples}",
             f"#define CUVIL_IN_SIZES {', '.join(map(str, in_sizes))}",
             f"#define CUVIL_OUT_SIZES {', '.join(map(str, out_sizes))}", f"#define CUVIL_OUT_BYTES {sum(out_sizes)}",
             f"#define CUVIL_SO_RUN_INT8 {run_int8:#x}", f"#define CUVIL_SO_ISA {isa:#x}"]
    return "\n".join(lines) + "\n"


def tensor_layout(lib: Path) -> tuple[str, list[str], list[tuple[int, ...]], list[str], list[tuple[int, ...]]]:
    """The model's name and its inputs' and outputs' names and shapes, in C API order."""
    with runtime.load(lib) as model:
        return model.name, model.input_names, model.input_shapes, model.output_names, model.output_shapes


def link(folder: Path) -> dict[str, int]:
    """The bare-metal program (boot.S, bare_main.c with folder's bare_io.h, inputs.bin and
    so.bin) linked at 1 MiB; the addresses of its global symbols."""
    elf = folder / "image.elf"
    subprocess.run([tool("gcc"), "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-ffreestanding", "-fno-pic",
                    "-no-pie", "-static", "-nostdlib", "-fno-tree-loop-distribute-patterns", "-mno-red-zone",
                    "-Wl,--build-id=none", f"-Wa,-I{folder}", f"-I{folder}", "-T", str(FIXTURE / "image.ld"), "-o",
                    str(elf), str(FIXTURE / "boot.S"), str(FIXTURE / "bare_main.c"), "-lgcc"], check=True)
    listing = subprocess.run([tool("nm"), "--defined-only", str(elf)], capture_output=True, text=True,
                             check=True).stdout
    return {parts[2]: int(parts[0], 16) for parts in (line.split() for line in listing.splitlines()) if len(parts) == 3}


def build_image(lib: Path, samples: list[dict[str, np.ndarray]], folder: Path, isa_cap: str | None = None) -> dict:
    """A bootable ISO running the `host` library `lib` (the .so's own bytes, relocated) on
    `samples` (int8 codes by input name); isa_cap: the program's CUVIL_ISA (none by default).
    Linked twice: the first link places the library's image (zeros of its size) and the C
    functions it imports, the second carries it relocated there (same sizes, so nothing moves:
    checked)."""
    folder.mkdir(parents=True, exist_ok=True)
    name, in_names, in_shapes, out_names, out_shapes = tensor_layout(lib)
    so = SharedObject(lib)
    sizes = [[int(np.prod(s)) for s in shapes] for shapes in (in_shapes, out_shapes)]
    (folder / "bare_io.h").write_text(io_header(*sizes, len(samples), so.symbol(f"{name}_run_int8"),
                                                so.symbol(f"{name}_isa"), isa_cap))
    (folder / "inputs.bin").write_bytes(b"".join(s[n].astype(np.int8).tobytes() for s in samples for n in in_names))
    (folder / "so.bin").write_bytes(bytes(so.span))
    placed = link(folder)
    provided = {f: placed[f] for f in PROVIDED}
    (folder / "so.bin").write_bytes(so.relocated(placed["cuvil_so_image"], provided))
    assert link(folder) == placed, "the second link moved a symbol"
    elf = folder / "image.elf"
    iso_root = folder / "iso"
    boot = iso_root / "isolinux"
    boot.mkdir(parents=True, exist_ok=True)
    subprocess.run([tool("objcopy"), "-O", "binary", str(elf), str(iso_root / "image.bin")], check=True)
    shutil.copy(tool_file(ISOLINUX_BIN), boot)
    for module in ("ldlinux.c32", "libcom32.c32", "libutil.c32", "mboot.c32"):
        shutil.copy(tool_file(SYSLINUX_MODULES / module), boot)
    (boot / "isolinux.cfg").write_text("DEFAULT bare\nPROMPT 0\nTIMEOUT 0\nLABEL bare\n  KERNEL mboot.c32\n"
                                       "  APPEND /image.bin\n")
    iso = folder / "boot.iso"
    subprocess.run([tool("genisoimage"), "-quiet", "-o", str(iso), "-b", "isolinux/isolinux.bin", "-c",
                    "isolinux/boot.cat", "-no-emul-boot", "-boot-load-size", "4", "-boot-info-table", "-R",
                    str(iso_root)], check=True)
    return {"iso": iso, "output_names": out_names, "output_shapes": out_shapes, "samples": len(samples)}


def emulator(model: str) -> tuple[list[str], dict[str, str] | None, Path]:
    """The Bochs that emulates `model`: its command, environment (None: this process's) and BIOS
    folder. SAPPHIRE_RAPIDS is Bochs 3.0's (bochs3.py); the others the host's Bochs 2.7."""
    if model == SAPPHIRE_RAPIDS:
        return bochs3.command(), bochs3.environment(), bochs3.share()
    return [tool("bochs-bin")], None, BOCHS_SHARE


def bochsrc(iso: Path, log: Path, model: str, share: Path) -> str:
    return "\n".join([
        "megs: 64", f"cpu: model={model}, count=1, ips={BOCHS_IPS}",
        f"romimage: file={tool_file(share / 'BIOS-bochs-latest')}",
        f"vgaromimage: file={tool_file(share / 'VGABIOS-lgpl-latest')}",
        f"ata0-master: type=cdrom, path={iso}, status=inserted", "boot: cdrom",
        "port_e9_hack: enabled=1",  # bare_main.c's output, on Bochs's console
        # Debian's bochs has no 'nogui'; the VNC display waits for no viewer with timeout=0
        'display_library: rfb, options="timeout=0"', f"log: {log}",
        "panic: action=fatal", "error: action=report", "info: action=ignore", "clock: sync=none", ""])


def run(image: dict, folder: Path, timeout_s: float = 600.0, model: str = CPU_MODEL) -> dict:
    """Boot the image on Bochs (it ends at the image's write to the shutdown port); the isa line
    and the int8 outputs per sample, by output name, in their shapes. model: the CPU, Bochs 2.7's
    Tiger Lake (the host's bochs) or SAPPHIRE_RAPIDS (Bochs 3.0, bochs3.py)."""
    rc_file, debugger = folder / "bochsrc", folder / "continue.rc"
    command, env, share = emulator(model)
    rc_file.write_text(bochsrc(image["iso"], folder / "bochs.log", model, share))
    debugger.write_text("c\n")  # Debian's bochs has the debugger built in: start by continuing
    try:
        proc = subprocess.run([*command, "-q", "-f", str(rc_file), "-rc", str(debugger)], env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, cwd=folder, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"Bochs did not finish in {timeout_s:.0f} s: {(e.stdout or b'')[-400:]!r}") from None
    return parse(proc.stdout.decode(errors="replace"), image)


def parse(text: str, image: dict) -> dict:
    lines = [line[line.index("CUVIL "):].split(" ", 2)[1:] for line in text.splitlines() if "CUVIL " in line]
    assert ["done"] in lines, f"Bochs run did not finish: {text[-400:]}"
    isa = next(rest[0] for key, *rest in lines if key == "isa")
    refused = [rest[0] for key, *rest in lines if key == "rc"]
    outputs: list[dict[str, np.ndarray]] = [{} for _ in range(image["samples"])]
    for key, *rest in lines:
        if key == "out":
            sample, index, data = rest[0].split(" ")
            raw = np.frombuffer(bytes.fromhex(data), dtype=np.int8)
            outputs[int(sample)][image["output_names"][int(index)]] = raw.reshape(image["output_shapes"][int(index)])
    return {"isa": isa, "refused": refused, "outputs": outputs}
