#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs every test through ctest, then
# again under AddressSanitizer + UndefinedBehaviorSanitizer (fibers switch stacks: the sanitizers
# are how we know that is done right).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

echo "== build and test (RelWithDebInfo)"
scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600

echo "== build and test (ASan + UBSan)"
LOCKSTEP_BUILD_DIR=build-asan scripts/build.sh -DLOCKSTEP_SANITIZE=ON -DLOCKSTEP_BUILD_BENCH=OFF
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" --timeout 900
