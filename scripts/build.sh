#!/usr/bin/env bash
# Configures and builds lockstep in build/ (Release with debug info, warnings as errors).
# Extra arguments go to cmake's configure step, e.g. -DLOCKSTEP_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${LOCKSTEP_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DLOCKSTEP_WERROR=ON "$@" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
