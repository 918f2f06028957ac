#!/usr/bin/env bash
# Set up everything cuvil-sdk needs on Debian 12 (x86-64): toolchains, QEMU, and a
# virtual environment (.venv) with the SDK and its test dependencies. Safe to run again:
# it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# g++ and g++-aarch64-linux-gnu: board_tests/test_dropin_c.py compiles the generated C as C++ too
# (arm-none-eabi-g++ comes with gcc-arm-none-eabi). bochs (its terminal display satisfies the
# package's display dependency without wxWidgets), its BIOSes, isolinux and genisoimage:
# board_tests/x86_bochs.py runs the host library's AVX-512 VNNI kernels on Bochs's Tiger Lake CPU.
APT_PACKAGES=(
  python3 python3-venv python3-pip gcc g++ libc6-dev file
  gcc-arm-none-eabi binutils-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm
  gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
  stm32flash chromium
  bochs bochs-term bochsbios vgabios isolinux syslinux-common genisoimage
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  python3 -m venv .venv
fi
stamp=.venv/.cuvil-installed
want="$(sha1sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing cuvil-sdk, its test dependencies and labgrid (the farm extra) into .venv" >&2
  .venv/bin/python -m pip install -q --upgrade pip >&2
  .venv/bin/python -m pip install -q -e ".[test,farm]" >&2
  echo "$want" > "$stamp"
fi

# Bochs 3.0 (Debian 13's .debs and their libraries, unpacked under ~/.cache/cuvil-sdk/bochs-3.0 by
# board_tests/bochs3.py with a private apt configuration; the host's Bochs 2.7 stays): its
# sapphire_rapids CPU runs the host library's avxvnni and avx512vnni variants (board_tests/x86_bochs.py).
.venv/bin/python board_tests/bochs3.py >/dev/null

# The CUDA toolkit here ships nvcc without cuobjdump; NVIDIA's wheel carries it (used to check
# the sm_87 code embedded in jetson builds). The SDK finds nvcc on PATH or in /usr/local/cuda/bin,
# and cuobjdump beside nvcc or in that wheel inside .venv (cuvil_sdk/cuda_tools.py).
nvcc="$(command -v nvcc || true)"
[ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
if [ -n "$nvcc" ] && [ ! -x "$(dirname "$(readlink -f "$nvcc")")/cuobjdump" ] && ! command -v cuobjdump >/dev/null 2>&1 \
   && ! .venv/bin/python -c 'import glob, nvidia, sys; sys.exit(not glob.glob(nvidia.__path__[0] + "/cu*/bin/cuobjdump"))' 2>/dev/null; then
  echo "setup: installing cuobjdump (NVIDIA's nvidia-cuda-cuobjdump wheel, into .venv)" >&2
  .venv/bin/python -m pip install -q nvidia-cuda-cuobjdump >&2
fi
