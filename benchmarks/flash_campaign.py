#!/usr/bin/env python3
"""A fault campaign against `cuvil-sdk flash` (issue 38): every fault recovered or named.

On the simulated STM32 bootloader (sdk/flash/simulator.py), with one seeded image (an Intel
.hex in two sectors, so that there are two erases):

- cut: the link is cut after every --every-th host-to-device byte of a whole flash. The
  flash that was cut must fail with one line naming its step ("serial link lost", exit 7)
  without starting anything; the next flash, without a board reset, must succeed.
- lost-ack / nack: for every command of a clean flash and every ACK the bootloader sends
  in it, that ACK is lost on the way (the device acted; the host never hears it) or
  replaced by NACK. The flash must succeed in the same run. A lost ACK after GO's address
  may end in `go_confirmed: false` (the image runs; the ACK saying so was lost), nothing else.

Every run also checks what is on the board: the image read back byte for byte, started
at its first address, nothing stored that is not one of the image's blocks (so no filler
reached flash), only the image's sectors erased. A run that breaks any of this counts as
failed, with what broke. Not in the test suite (it takes minutes); the suite has one test
per fault kind.

    .venv/bin/python benchmarks/flash_campaign.py [--every 8] [--transport tcp|pty]
        [--kinds cut,lost-ack,nack] [--jobs N] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from cuvil_sdk.errors import FlashError  # noqa: E402
from cuvil_sdk.flash.an3155 import (COMMAND_NAMES, EXTENDED_ERASE, GET, GET_ID, GO, INIT,  # noqa: E402
                                    READ_MEMORY, WRITE_MEMORY)
from cuvil_sdk.flash.image import Image, load_image  # noqa: E402
from cuvil_sdk.flash.simulator import Fault, Simulator  # noqa: E402
from flash_helpers import FAST, geometry, image_bytes, write_hex  # noqa: E402
from flash_helpers import flash as flash_sim  # noqa: E402

KINDS = ("cut", "lost-ack", "nack")
# (address, bytes, seed): six blocks in sectors 0 and 1, the second segment off a block boundary
SEGMENTS = ((0x08000000, 1000, 1), (0x08008000 + 12, 510, 2))


def ack_positions(code: int, commands: int) -> list[tuple[int, int]]:
    """(ACK number, index among the bytes the device sends) of each ACK of a command: a
    NACK fault counts ACKs, a lost byte counts every byte sent (replies included)."""
    if code == GET:
        return [(0, 0), (1, 3 + commands)]  # ACK, count, version, the command list, ACK
    if code == GET_ID:
        return [(0, 0), (1, 4)]            # ACK, count, two ID bytes, ACK
    count = {INIT: 1, READ_MEMORY: 3, WRITE_MEMORY: 3, EXTENDED_ERASE: 2, GO: 2}[code]
    return [(i, i) for i in range(count)]


@dataclass
class Case:
    kind: str
    where: str
    faults: list[Fault]
    go_unconfirmed_ok: bool = False


@dataclass
class Tally:
    tried: int = 0
    recovered: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    completed_blocks: int = 0  # cuts inside a block whose completion stored other bytes (then erased)

    def add(self, case: Case, outcome: tuple[str | None, int]) -> None:
        problem, stray = outcome
        self.tried += 1
        self.completed_blocks += stray > 0
        row = self.by_kind.setdefault(case.kind, {"tried": 0, "recovered": 0, "failed": 0})
        row["tried"] += 1
        if problem is None:
            self.recovered += 1
            row["recovered"] += 1
        else:
            row["failed"] += 1
            self.failures.append({"kind": case.kind, "where": case.where, "problem": problem})


def expected_flash(image: Image) -> bytes:
    """All of flash as it must be after the image is flashed onto an erased chip."""
    g = geometry()
    flash = bytearray(b"\xff" * g.size)
    for address, data in image.blocks():
        flash[address - g.start:address - g.start + len(data)] = data
    return bytes(flash)


def stray_stores(sim: Simulator, image: Image) -> int:
    """How many WRITE MEMORYs stored something that is not one of the image's blocks."""
    blocks = set(image.blocks())
    return sum((a, d) not in blocks for a, d in sim.device.stores)


def board_problem(sim: Simulator, image: Image, result: dict[str, Any], case: Case) -> str | None:
    """What is wrong on the board after a flash that reported success, or None."""
    want, have = expected_flash(image), bytes(sim.device.flash)
    if have != want:
        at = next(i for i in range(len(want)) if have[i] != want[i])
        return f"flash holds 0x{have[at]:02X} at 0x{geometry().start + at:08X}, not 0x{want[at]:02X}"
    # A fault at a frame boundary must not make anything but image blocks reach flash. A cut
    # inside a block's data may: completing it then stores that block's own address range,
    # which the next flash erases first (the whole-flash check above is what must hold).
    if case.kind != "cut" and stray_stores(sim, image):
        return "stored something that is not an image block"
    if set(sim.device.erased) != {s.index for s in image.plan(geometry())}:
        return f"erased sectors {sorted(set(sim.device.erased))}"
    if sim.device.go_address != image.start:
        return "the image was not started"
    if not result["verified"]:
        return "not verified"
    if not result["go_confirmed"] and not case.go_unconfirmed_ok:
        return "start reported unconfirmed"
    return None


def run_case(case: Case, firmware: Path, image: Image, transport: str) -> tuple[str | None, int]:
    """One flash with the case's faults (and, for a cut, the flash after it): what broke (None
    if all held), and how many stores were not image blocks."""
    with Simulator(geometry(), transport=transport, faults=case.faults) as sim:
        problem = flash_case(sim, case, firmware, image)
        return problem, stray_stores(sim, image)


def flash_case(sim: Simulator, case: Case, firmware: Path, image: Image) -> str | None:
    """The case's flash (a cut one first, then the next) on `sim`; what broke, or None."""
    if case.kind == "cut":
        try:
            flash_sim(sim, firmware, timeouts=FAST)
            return "the flash that was cut reported success"
        except FlashError as exc:
            text = str(exc)
            if "serial link lost" not in text or "\n" in text or exc.step not in text.split(":")[0]:
                return f"cut named badly: {text}"
        if sim.device.go_address is not None:
            return "started an image after a cut"
        sim.device.stores.clear()  # what the next flash stores must be the image's
        sim.device.erased.clear()
    try:
        result = flash_sim(sim, firmware, timeouts=FAST)
    except FlashError as exc:
        return f"flash failed: {exc}"
    return board_problem(sim, image, result, case)


def clean_run(firmware: Path) -> tuple[list[tuple[int, int]], int, int]:
    """The command log, the host-to-device byte count and the GET command count of a clean flash."""
    with Simulator(geometry(), transport="tcp") as sim:
        flash_sim(sim, firmware)
        return list(sim.device.log), sim.device.rx_count, len(sim.device.commands)


def step_names(log: list[tuple[int, int]]) -> list[str]:
    """Each logged command as 'NAME #n' (its occurrence number)."""
    seen: dict[int, int] = {}
    names = []
    for _, code in log:
        seen[code] = seen.get(code, 0) + 1
        names.append(f"{'0x7F' if code == INIT else COMMAND_NAMES[code]} #{seen[code]}")
    return names


def cases(kinds: list[str], every: int, log: list[tuple[int, int]], total: int, commands: int) -> list[Case]:
    out = []
    if "cut" in kinds:
        starts = [offset for offset, _ in log]
        names = step_names(log)
        for k in range(0, total, every):
            i = max(j for j, s in enumerate(starts) if s <= k)
            out.append(Case("cut", f"after byte {k} ({names[i]} +{k - starts[i]})", [Fault("cut", after_bytes=k)]))
    seen: dict[int, int] = {}
    for (_, code), name in zip(log, step_names(log)):
        seen[code] = seen.get(code, 0) + 1
        for number, tx_index in ack_positions(code, commands):
            if "lost-ack" in kinds:
                out.append(Case("lost-ack", f"{name} ACK {number}",
                                [Fault("drop", command=code, nth=seen[code], stage=tx_index, direction="tx")],
                                go_unconfirmed_ok=(code == GO and number == 1)))
            if "nack" in kinds:
                out.append(Case("nack", f"{name} ACK {number}",
                                [Fault("nack", command=code, nth=seen[code], stage=number)]))
    return out


def run_cases(todo: list[Case], firmware: Path, transport: str, jobs: int,
              report: Callable[[int, int], None]) -> list[tuple[str | None, int]]:
    """Each case's outcome (run_case), in order; `jobs` processes, each case on its own
    simulated board (the waits are timeouts, so two jobs gain even on a busy machine)."""
    image = load_image(firmware, geometry())
    outcomes: list[tuple[str | None, int]] = []
    if jobs <= 1:
        for case in todo:
            outcomes.append(run_case(case, firmware, image, transport))
            report(len(outcomes), len(todo))
        return outcomes
    with ProcessPoolExecutor(jobs) as pool:
        for future in [pool.submit(run_case, case, firmware, image, transport) for case in todo]:
            outcomes.append(future.result())
            report(len(outcomes), len(todo))
    return outcomes


def campaign(kinds: list[str], every: int, transport: str, jobs: int, work: Path,
             report: Callable[[int, int], None]) -> dict[str, Any]:
    firmware = write_hex(work / "campaign.hex", [(a, image_bytes(n, seed)) for a, n, seed in SEGMENTS])
    image = load_image(firmware, geometry())
    log, total, commands = clean_run(firmware)
    todo = cases(kinds, every, log, total, commands)
    began = time.monotonic()
    tally = Tally()
    for case, outcome in zip(todo, run_cases(todo, firmware, transport, jobs, report)):
        tally.add(case, outcome)
    return {
        "image": {"format": "hex", "bytes": image.size, "blocks": len(image.blocks()),
                  "sectors": [s.index for s in image.plan(geometry())]},
        "flash_bytes_host_to_device": total,
        "every": every,
        "transport": transport,
        "jobs": jobs,
        "tried": tally.tried,
        "recovered": tally.recovered,
        "failed": len(tally.failures),
        "by_kind": tally.by_kind,
        "cuts_whose_block_was_completed": tally.completed_blocks,
        "failures": tally.failures,
        "seconds": round(time.monotonic() - began, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=int, default=8, help="cut after every N-th host-to-device byte (default 8)")
    ap.add_argument("--transport", choices=["tcp", "pty"], default="tcp")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)}")
    ap.add_argument("--jobs", type=int, default=1, help="cases run at once, each in a process (default 1)")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout; progress on stderr")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    if unknown := set(kinds) - set(KINDS):
        ap.error(f"unknown --kinds {', '.join(sorted(unknown))}")

    def progress(done: int, total: int) -> None:
        if done == total or done % 50 == 0:
            print(f"{done}/{total}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="flash-campaign-") as tmp:
        result = campaign(kinds, args.every, args.transport, args.jobs, Path(tmp), progress)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for kind, row in result["by_kind"].items():
            print(f"{kind:9} tried {row['tried']:5}  recovered {row['recovered']:5}  failed {row['failed']:3}")
        print(f"{'all':9} tried {result['tried']:5}  recovered {result['recovered']:5}  failed {result['failed']:3}"
              f"  ({result['seconds']} s, {result['image']['bytes']}-byte image, {result['transport']})")
        print(f"cuts inside a block that the next flash completed with other bytes (then erased): "
              f"{result['cuts_whose_block_was_completed']}")
        for failure in result["failures"]:
            print(f"FAILED {failure['kind']} {failure['where']}: {failure['problem']}")
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
