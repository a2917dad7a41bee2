#!/usr/bin/env bash
# Configures and builds lockstep in build/ (Release with debug info, warnings as errors).
# Extra arguments go to cmake's configure step, e.g. -DLOCKSTEP_SANITIZE=ON.
# LOCKSTEP_BUILD_DIR picks another build dir; LOCKSTEP_BUILD_TARGETS builds only those targets;
# LOCKSTEP_UNITY_BUILD=ON compiles each target's sources in batches (scripts/test.sh: faster cold,
# but a missing #include can hide behind a file batched before it). Off by default, so a build
# here compiles one source per compiler run and a missing #include fails it.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${LOCKSTEP_BUILD_DIR:-build}
# A compiler cache where one is installed (setup.sh installs ccache): a second build of the same
# sources, in any build dir, takes its objects from the cache instead of compiling them again.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build_dir" -G Ninja -DLOCKSTEP_WERROR=ON "${launcher[@]}" \
  -DLOCKSTEP_UNITY_BUILD="${LOCKSTEP_UNITY_BUILD:-OFF}" "$@" >/dev/null
# shellcheck disable=SC2086 # the target list is meant to split into words
cmake --build "$build_dir" -j"$(nproc)" ${LOCKSTEP_BUILD_TARGETS:+--target $LOCKSTEP_BUILD_TARGETS}
