"""The cuvil QEMU bootloader: build it, run it under qemu-system-arm, check images for it.

The bootloader (targets/cortex_m7/bootloader/bootloader.c) speaks ST AN3155 on UART0 of
the `cortex-m7` board's QEMU model, so that `cuvil-sdk flash` can be exercised end to end
without hardware. Everything it needs comes from the board file's `[flash]` table:

    start, app_start, sectors     the flash model (one sector size), what is read-only
    device_id                     what GET ID answers
    bootloader_sources            C files, relative to the board folder
    bootloader_ram_bytes/_stack_bytes
    bootloader_uart_rx_irq        the NVIC line of UART0's receive interrupt (wakes it from WFI)
    bootloader_command            the QEMU command line, with {elf} and {port}
    image_header                  the integrity-header module (also used by `flash`)

plus the board's [toolchain] and its linker template (regions: the bootloader's flash is
[start, app_start), so a successful link proves that it fits below the application).
"""
from __future__ import annotations

import importlib.util
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import jinja2

from ..boards import Board, get_board, linker_context
from ..errors import CuvilError, ToolError, UsageError
from ..runners.emulator import board_command
from .image import FlashGeometry

BOARD = "cortex-m7"
ELF_NAME = "bootloader.elf"


def _flash_table(board: Board) -> dict[str, Any]:
    table = board.get("flash")
    if not isinstance(table, dict) or "bootloader_sources" not in table:
        raise UsageError(f"board '{board.name}' has no cuvil bootloader ([flash] bootloader_sources)")
    return table


def header_module(board: Board) -> ModuleType | None:
    """The board's image-header module ([flash] image_header, a file in the board folder), or None."""
    name = board.get("flash.image_header")
    if not name:
        return None
    path = Path(board.family_dir) / name
    spec = importlib.util.spec_from_file_location(f"cuvil_image_header_{path.parent.name}", path)
    if spec is None or spec.loader is None or not path.exists():
        raise UsageError(f"board '{board.name}': [flash] image_header {name} not found in {board.family_dir}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def image_problem(board: Board, image: bytes) -> str | None:
    """Why the board's bootloader would refuse to start `image` (a .bin at app_start), or None."""
    module = header_module(board)
    return None if module is None else module.problem(image)


def _defines(board: Board) -> dict[str, int]:
    _flash_table(board)
    geometry = FlashGeometry.from_board(board)
    sizes = {s.size for s in geometry.sectors}
    if len(sizes) != 1:
        raise UsageError(f"board '{board.name}': the cuvil bootloader needs sectors of one size, not {sorted(sizes)}")
    ram_origin = int(board.get("memory.ram_origin", 0))
    return {
        "BL_UART_BASE": int(board.get("peripherals.uart0")),
        "BL_UART_RX_IRQ": int(board.get("flash.bootloader_uart_rx_irq")),
        "BL_FLASH_START": geometry.start,
        "BL_APP_START": geometry.app_start,
        "BL_FLASH_END": geometry.end,
        "BL_SECTOR_SIZE": sizes.pop(),
        "BL_DEVICE_ID": geometry.device_id,
        # An application's initial stack pointer must lie in the board's RAM budget.
        "BL_RAM_START": ram_origin,
        "BL_RAM_END": ram_origin + board.ram_bytes,
    }


def linker_script(board: Board) -> str:
    """The board's linker template rendered for the bootloader: flash = [start, app_start)."""
    table = _flash_table(board)
    geometry = FlashGeometry.from_board(board)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(board.family_dir)), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    template = env.get_template(board.get("firmware.linker_template", "linker.ld.j2"))
    context = linker_context(board)  # what the template takes for an application, then the bootloader's regions
    context.update({
        "board_name": f"{board.name} bootloader",
        "flash_origin": geometry.start,
        "flash_bytes": geometry.app_start - geometry.start,
        "ram_bytes": int(table.get("bootloader_ram_bytes", 65536)),
        "stack_bytes": int(table.get("bootloader_stack_bytes", 4096)),
    })
    return template.render(context)


def build_bootloader(out_dir: Path, board: Board | str = BOARD, timeout_s: float = 120.0) -> Path:
    """Compile and link the bootloader into out_dir; return the ELF (out_dir/bootloader.elf).

    Raises ToolError when the cross compiler is missing or the build fails (the message
    carries the compiler's first error line)."""
    board = get_board(board) if isinstance(board, str) else board
    table = _flash_table(board)
    prefix = str(board.get("toolchain.prefix", ""))
    gcc = prefix + "gcc"
    if shutil.which(gcc) is None:
        raise ToolError(f"{gcc} not found: install the Debian package gcc-arm-none-eabi")
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "linker.ld").write_text(linker_script(board))
    defines = _defines(board)
    cpu = list(board.get("toolchain.cpu_flags", []))
    cflags = cpu + list(board.get("toolchain.cflags", [])) + [f"-D{k}=0x{v:X}u" for k, v in defines.items()]
    cflags += ["-I", str(board.family_dir)]
    objects = []
    for source in table["bootloader_sources"]:
        path = Path(board.family_dir) / source
        obj = out / (path.stem + ".o")
        _run([gcc, *cflags, "-c", str(path), "-o", str(obj)], out, timeout_s)
        objects.append(str(obj))
    elf = out / ELF_NAME
    link = [gcc, *cpu, *board.get("toolchain.linkflags", []), "-T", str(out / "linker.ld"),
            f"-Wl,-Map={out / 'bootloader.map'}", *objects, "-o", str(elf)]
    link += [f"-l{lib}" for lib in board.get("toolchain.libs", [])]
    _run(link, out, timeout_s)
    return elf


def _run(command: list[str], cwd: Path, timeout_s: float) -> None:
    try:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"building the bootloader: {Path(command[0]).name} took over {timeout_s:g} s") from exc
    if result.returncode != 0:
        lines = [l for l in (result.stderr + result.stdout).splitlines() if l.strip()]
        first = next((l for l in lines if "error" in l.lower()), lines[0] if lines else "failed")
        raise ToolError(f"building the bootloader failed: {first[:300]}")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class QemuBootloader:
    """qemu-system-arm running the bootloader, its UART0 on a TCP port of 127.0.0.1.

    Use as a context manager (or start()/stop()); `url` is what `cuvil-sdk flash --port`
    and pyserial open. QEMU runs in a session of its own and is killed on stop(). After
    GO the application owns UART0; `read_console()` connects and collects what it prints.
    """

    def __init__(self, elf: Path, board: Board | str = BOARD, start_timeout_s: float = 10.0) -> None:
        self.board = get_board(board) if isinstance(board, str) else board
        self.elf = Path(elf).resolve()
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    def command(self, port: int) -> list[str]:
        if not _flash_table(self.board).get("bootloader_command"):
            raise UsageError(f"board '{self.board.name}' has no [flash] bootloader_command")
        return board_command(self.board, "flash.bootloader_command", elf=str(self.elf), port=str(port))

    def start(self) -> "QemuBootloader":
        if not self.elf.exists():
            raise ToolError(f"no bootloader at {self.elf}")
        last = ""
        for _ in range(3):  # another process may take the free port before QEMU binds it
            self.port = free_port()
            self.proc = subprocess.Popen(self.command(self.port), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, start_new_session=True)
            deadline = time.monotonic() + self.start_timeout_s
            if self._wait_until_ready(deadline):
                return self
            last = self._stop_process()
            if "in use" not in last:
                break
        raise ToolError(f"QEMU did not start the bootloader: {last.strip().splitlines()[-1] if last.strip() else 'no message'}")

    def _wait_until_ready(self, deadline: float) -> bool:
        """QEMU listens on the port and, where the board file names one ([flash]
        bootloader_ready), the bootloader has printed its ready line: a signal from the
        emulated board, so a loaded machine cannot make the first 0x7F race its start-up."""
        ready = str(_flash_table(self.board).get("bootloader_ready", "")).encode()
        heard = bytearray()
        while time.monotonic() < deadline and self.proc is not None and self.proc.poll() is None:
            if ready and ready not in heard:
                heard += self._read_stdout(0.02)
            elif self._listening():
                return True
            else:
                time.sleep(0.02)
        return False

    def _read_stdout(self, wait_s: float) -> bytes:
        """What QEMU wrote on its stdout (the guest's semihosting output) within wait_s."""
        assert self.proc is not None and self.proc.stdout is not None
        readable, _, _ = select.select([self.proc.stdout], [], [], wait_s)
        return os.read(self.proc.stdout.fileno(), 4096) if readable else b""

    def _listening(self) -> bool:
        # /proc/net/tcp lists listening sockets (state 0A) without connecting to them: a
        # connection would be QEMU's one client and could race with the real one.
        needle = f":{self.port:04X} 00000000:0000 0A"
        try:
            return needle in Path("/proc/net/tcp").read_text()
        except OSError:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return True
            except OSError:
                return False

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def read_console(self, until: "re.Pattern[bytes]", timeout_s: float = 10.0) -> bytes:
        """Connect to UART0 and collect what arrives until `until` matches it (or the time is up)."""
        data = bytearray()
        deadline = time.monotonic() + timeout_s
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout_s) as conn:
            while not until.search(data) and time.monotonic() < deadline:
                conn.settimeout(max(0.01, deadline - time.monotonic()))
                try:
                    chunk = conn.recv(4096)
                except socket.timeout:
                    break
                if not chunk:
                    break
                data += chunk
        return bytes(data)

    def _stop_process(self) -> str:
        """Kill QEMU (its whole session); return what it wrote on stderr."""
        if self.proc is None:
            return ""
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        return err.decode(errors="replace") if err else ""

    def stop(self) -> str:
        return self._stop_process()

    def __enter__(self) -> "QemuBootloader":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """`python -m cuvil_sdk.flash.bootloader DIR`: build the bootloader into DIR and print its
    ELF's path, the `-kernel` of the QEMU board's command (docs/farm.md); one line and the
    error's exit code on failure."""
    import argparse
    import sys
    parser = argparse.ArgumentParser(prog="python -m cuvil_sdk.flash.bootloader",
                                     description="Build the cuvil QEMU bootloader and print its ELF's path.")
    parser.add_argument("out_dir", type=Path, help="the folder to build it in (made if missing)")
    parser.add_argument("--board", default=BOARD, help=f"the board whose [flash] table it follows ({BOARD})")
    args = parser.parse_args(argv)
    try:
        print(build_bootloader(args.out_dir, args.board))
    except CuvilError as exc:
        print(f"cuvil-sdk: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
