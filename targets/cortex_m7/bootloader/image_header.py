#!/usr/bin/env python3
"""The integrity header that the cuvil QEMU bootloader (bootloader.c) checks before GO.

An application image for the bootloader starts with its Cortex-M vector table. Words
7, 8 and 9 of that table are reserved by the core (it never reads them), so the header
lives there, and the image's first two words stay the initial stack pointer and the
reset vector that GO (AN3155) expects:

    offset 28  magic   0x4C565543 ("CUVL" in memory)
    offset 32  length  bytes of the image, from its first byte (the .bin as built)
    offset 36  crc32   CRC-32 (zlib's) of those `length` bytes, offsets 28-39 taken as 0

The build stamps it into the linked ELF (so .elf, .bin and .hex all carry it) by
running this file on the ELF, with only the standard library and objcopy:

    python image_header.py OBJCOPY ELF      (board key firmware.post_link)

`cuvil-sdk flash` loads this same file (board key flash.image_header) to refuse an
image without a valid header before it touches the board.
"""
from __future__ import annotations

import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

MAGIC = 0x4C565543
AT = 28      # vector table word 7
END = 40     # words 7, 8, 9
VECTOR_SECTION = ".isr_vector"


def image_crc(image: bytes) -> int:
    """CRC-32 of the image with the header bytes taken as zero."""
    return zlib.crc32(bytes(image[:AT]) + bytes(END - AT) + bytes(image[END:])) & 0xFFFFFFFF


def stamp(image: bytes) -> bytes:
    """The image with its header filled in."""
    if len(image) < END:
        raise ValueError(f"an image of {len(image)} bytes has no room for a vector table")
    header = struct.pack("<III", MAGIC, len(image), image_crc(image))
    return bytes(image[:AT]) + header + bytes(image[END:])


def problem(image: bytes) -> str | None:
    """Why the bootloader would refuse to start this image, or None if it would start it."""
    if len(image) < END:
        return f"the image is {len(image)} bytes long, too short for a vector table and header"
    magic, length, crc = struct.unpack_from("<III", image, AT)
    if magic != MAGIC:
        return (f"no integrity header (word 7 of the vector table is 0x{magic:08X}, not 0x{MAGIC:08X}): "
                f"build the firmware for a board whose build stamps it (e.g. cortex-m7-app)")
    if length != len(image):
        return f"the integrity header says {length} bytes but the image has {len(image)}"
    if crc != image_crc(image):
        return f"the image's CRC-32 is 0x{image_crc(image):08X}, its header says 0x{crc:08X}"
    return None


def stamp_elf(objcopy: str, elf: Path) -> bytes:
    """Stamp the header into the ELF's vector table; return the stamped binary image."""
    elf = Path(elf)
    with tempfile.TemporaryDirectory(prefix="cuvil-header-") as tmp:
        image_file, vectors_file = Path(tmp) / "image.bin", Path(tmp) / "vectors.bin"
        subprocess.run([objcopy, "-O", "binary", str(elf), str(image_file)], check=True)
        subprocess.run([objcopy, "-O", "binary", f"--only-section={VECTOR_SECTION}", str(elf), str(vectors_file)],
                       check=True)
        image, vectors = image_file.read_bytes(), vectors_file.read_bytes()
        if len(vectors) < END or image[:len(vectors)] != vectors:
            raise SystemExit(f"{elf.name}: the image does not start with its {VECTOR_SECTION} section")
        stamped = stamp(image)
        vectors_file.write_bytes(stamped[:len(vectors)])
        subprocess.run([objcopy, f"--update-section={VECTOR_SECTION}={vectors_file}", str(elf)], check=True)
        subprocess.run([objcopy, "-O", "binary", str(elf), str(image_file)], check=True)
        result = image_file.read_bytes()
    if result != stamped or problem(result) is not None:
        raise SystemExit(f"{elf.name}: stamping the integrity header failed")
    return result


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: image_header.py OBJCOPY ELF", file=sys.stderr)
        return 2
    stamp_elf(argv[0], Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
