#!/usr/bin/env bash
# Configures and builds lockstep in build/ (Release with debug info, warnings as errors).
# Extra arguments go to cmake's configure step, e.g. -DLOCKSTEP_SANITIZE=ON.
# LOCKSTEP_BUILD_DIR picks another build dir; LOCKSTEP_BUILD_TARGETS builds only those targets.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${LOCKSTEP_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DLOCKSTEP_WERROR=ON "$@" >/dev/null
# shellcheck disable=SC2086 # the target list is meant to split into words
cmake --build "$build_dir" -j"$(nproc)" ${LOCKSTEP_BUILD_TARGETS:+--target $LOCKSTEP_BUILD_TARGETS}
