#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs every test through ctest; then
# again under AddressSanitizer + UndefinedBehaviorSanitizer (fibers switch stacks: the sanitizers
# are how we know that is done right); then the real-thread lock tests under ThreadSanitizer.
# Between the first run and the sanitizers, scripts/own_adapter.sh makes the Debian package from
# that same build (cpack: nothing compiled again) and tests a lock from outside the repository
# through it.
# Tests that need redis-server or chromium start and stop their own (setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

echo "== build and test (RelWithDebInfo)"
scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600

echo "== test your own lock: the Debian package of build/, examples/own-adapter built against it, run"
scripts/own_adapter.sh

echo "== build and test the real-thread keyed locks (ThreadSanitizer)"
LOCKSTEP_BUILD_DIR=build-tsan LOCKSTEP_BUILD_TARGETS="lockstep_keyed_tests lockstep_core_tests lockstep_redis_tests" \
  scripts/build.sh -DLOCKSTEP_SANITIZE_THREAD=ON -DLOCKSTEP_BUILD_BENCH=OFF
ctest --test-dir build-tsan --output-on-failure -j"$(nproc)" --timeout 600 -R "KeyedRwMutex|FifoLock|under real threads"

echo "== build and test (ASan + UBSan)"
LOCKSTEP_BUILD_DIR=build-asan scripts/build.sh -DLOCKSTEP_SANITIZE=ON -DLOCKSTEP_BUILD_BENCH=OFF
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" --timeout 900
