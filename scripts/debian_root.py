"""Debian packages unpacked into a private folder, for tools the host's Debian 12 does not have:
the arm64 Python that runs ONNX Runtime's aarch64 wheel (benchmarks/bench_aarch64.py) and Debian
13's Bochs 3.0 (board_tests/bochs3.py).

apt-get runs with a private configuration under WORK/apt (its own sources list, lists, cache and an
empty dpkg status, so every dependency is downloaded; the host's apt state is untouched), and the
.debs are unpacked with dpkg-deb -x: nothing is installed or configured.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"  # bookworm's holds trixie's keys too


def apt_command(work: Path, arch: str, suite: str) -> list[str]:
    """apt-get with a private configuration under WORK/apt: `arch` only, `suite` main."""
    apt = work / "apt"
    for sub in ("etc/sources.list.d", "etc/preferences.d", "state/lists/partial", "cache/archives/partial"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    (apt / "etc/sources.list").write_text(f"deb [arch={arch} signed-by={DEBIAN_KEYRING}] {DEBIAN_MIRROR} {suite} main\n")
    (apt / "status").touch()
    options = {"Dir::Etc::SourceList": apt / "etc/sources.list", "Dir::Etc::SourceParts": apt / "etc/sources.list.d",
               "Dir::Etc::Preferences": apt / "etc/preferences", "Dir::Etc::PreferencesParts": apt / "etc/preferences.d",
               "Dir::State": apt / "state", "Dir::State::status": apt / "status", "Dir::Cache": apt / "cache",
               "APT::Architecture": arch, "APT::Architectures::": arch, "Debug::NoLocking": "1"}
    if os.geteuid() == 0:  # the private folders are root's: apt's _apt user could not write them
        options["APT::Sandbox::User"] = "root"
    return ["apt-get", *[f"-o{k}={v}" for k, v in options.items()]]


def unpack(work: Path, root: Path, arch: str, suite: str, packages: tuple[str, ...], label: str) -> list[Path]:
    """Downloads `packages` and their dependencies, unpacks them into `root` (made again from
    nothing) and returns the .debs it unpacked. `label` names the caller in the progress line."""
    apt = apt_command(work, arch, suite)
    print(f"{label}: downloading {', '.join(packages)} and their dependencies from {DEBIAN_MIRROR} "
          f"({suite}, {arch}) into {work}", file=sys.stderr)
    subprocess.run([*apt, "-q", "update"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*apt, "-q", "-y", "--download-only", "--no-install-recommends", "install", *packages],
                   check=True, stdout=subprocess.DEVNULL)
    debs = sorted((work / "apt/cache/archives").glob("*.deb"))
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for deb in debs:
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return debs
