"""Bochs 3.0 from Debian 13 ("trixie"), unpacked into a private folder next to the host's Bochs 2.7.

Bochs 2.7 (Debian 12's, installed system-wide: x86_bochs.py's Tiger Lake runs) has no AMX. Debian
13's bochs 3.0+dfsg-1 is configured with --enable-amx --enable-evex --enable-avx and has a
`sapphire_rapids` CPU model: AMX-TILE, AMX-INT8, AVX512-VNNI and AVX-VNNI. Its .debs and every
runtime library they need (trixie's libc6, libstdc++6, GTK for the built-in debugger's GUI, ...)
are fetched by apt-get with a private configuration (its own sources list, lists, cache and an
empty dpkg status, under CACHE/apt: the host's apt state is untouched), unpacked with dpkg-deb -x
into CACHE/root, and run through that root's own dynamic loader with its library folders; the
plugins (the rfb display) come from LTDL_LIBRARY_PATH, the BIOSes from CACHE/root/usr/share.

Known limit: Bochs 3.0's AMX-INT8 dot products are wrong for signed bytes. In its
cpu/avx/amx.cc (bochs_3.0+dfsg.orig.tar.xz), DPBDSS, DPBDSU and DPBDUS read each operand's
bytes as Bit8u and widen the "signed" ones with Bit32s(...), i.e. as 0..255, so tdpbssd, tdpbsud
and tdpbusd multiply a byte -1 as 255 (tdpbuud, unsigned by definition, is unaffected). An
AMX-INT8 conv variant (tdpbusd, with ldtilecfg, tileloadd/tilestored, tilezero, tilerelease) ran
on it to the end without a fault; its outputs differed from the reference at the pixels that
touch padding (the others saturated), consistent with that bug. A signed AMX kernel is therefore
not verifiable on this build as packaged: the amx variant that landed (conv2d_s8amx_avx2) uses
tdpbuud on weights made unsigned (w ^ 0x80) and subtracts 128 x each pixel's input sum, which is
right on Bochs and on silicon. Note that on this Bochs tdpbusd then gives the same sums as
tdpbuud, so only the objdump check of test_x86_variants.py tells them apart.

`python board_tests/bochs3.py` prepares it (scripts/setup.sh runs that; safe to run again: it
does nothing once CACHE/root/.done exists). The tests never download: a missing root fails them
with the command that makes it.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import debian_root

CACHE = Path(os.environ.get("CUVIL_BOCHS3_DIR", Path.home() / ".cache" / "cuvil-sdk" / "bochs-3.0"))
DEBIAN_SUITE = "trixie"
# bochs-term only satisfies bochs's display dependency (the harness uses the rfb display, in bochs)
PACKAGES = ("bochs", "bochsbios", "vgabios", "bochs-term")
VERSION_PREFIX = "3.0"
LIBRARY_DIRS = ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu")
PLUGINS = "usr/lib/x86_64-linux-gnu/bochs/plugins"
SHARE = "usr/share/bochs"


def prepare(cache: Path = CACHE) -> Path:
    """CACHE/root: trixie's bochs and its dependencies unpacked (made once: CACHE/root/.done)."""
    root = cache / "root"
    if (root / ".done").is_file():
        return root
    debs = debian_root.unpack(cache, root, "amd64", DEBIAN_SUITE, PACKAGES, "bochs3")
    bochs = [d for d in debs if d.name.startswith("bochs_")]
    assert len(bochs) == 1 and bochs[0].name.startswith(f"bochs_{VERSION_PREFIX}"), bochs
    for deb in debs:  # the archives are not needed once unpacked
        deb.unlink()
    (root / ".done").write_text(bochs[0].name + "\n")
    return root


def root() -> Path:
    """The prepared root; fails (never skips) when it is missing."""
    r = CACHE / "root"
    assert (r / ".done").is_file(), (f"Bochs 3.0 is not prepared in {r}: run scripts/setup.sh "
                                     f"(or `python {Path(__file__).name}`)")
    return r


def command() -> list[str]:
    """bochs-bin of the root, through the root's own loader and libraries."""
    r = root()
    return [str(r / "usr/lib64/ld-linux-x86-64.so.2"), "--library-path",
            ":".join(str(r / d) for d in LIBRARY_DIRS), str(r / "usr/bin/bochs-bin")]


def environment() -> dict[str, str]:
    return {**os.environ, "LTDL_LIBRARY_PATH": str(root() / PLUGINS)}


def share() -> Path:
    return root() / SHARE


if __name__ == "__main__":
    print(prepare())
