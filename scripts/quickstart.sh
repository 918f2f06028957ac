#!/usr/bin/env bash
# Quick start, command 1: set up, then run the main job: build the bundled digits CNN
# as Cortex-M7 firmware (lite profile) and run its test set under QEMU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/cuvil-sdk build --profile lite --board cortex-m7 --run
