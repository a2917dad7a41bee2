#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs every test once through ctest.
# Most run under AddressSanitizer + UndefinedBehaviorSanitizer (fibers switch stacks: the
# sanitizers are how we know that is done right); the few labelled not_sanitized, whose time goes
# to other processes or to statistics (cmake/helpers.cmake), run in the plain RelWithDebInfo tree,
# which builds the package and those tests' executables, not every test's. From that build
# scripts/own_adapter.sh makes the Debian package (cpack: nothing compiled again) and tests a lock
# from outside the repository through it; the real-thread lock tests run under ThreadSanitizer.
# Tests that need redis-server or chromium start and stop their own (setup.sh installs them).
# Each phase's time is printed at the end; scripts/build.sh uses ccache where it is installed. All
# three trees here are unity builds (LOCKSTEP_UNITY_BUILD, exported below for every build here,
# scripts/own_adapter.sh's included: it cuts the cold compile by a third); scripts/build.sh run on
# its own compiles one source per compiler run, which is where a missing #include fails.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase's wall time, printed at the end (also when a phase fails: the trap prints the phases
# run so far, the failed one last).
phase_names=()
phase_seconds=()
phase_name=""
phase_started=$SECONDS
phase() {
  if [ -n "$phase_name" ]; then
    phase_names+=("$phase_name")
    phase_seconds+=($((SECONDS - phase_started)))
  fi
  phase_name=$1
  phase_started=$SECONDS
  if [ -n "$phase_name" ]; then
    echo "== $phase_name"
  fi
}
print_phase_times() {
  local status=$?
  phase ""
  echo "== phase times (m:ss)"
  local i total=0
  for i in "${!phase_names[@]}"; do
    printf '%4d:%02d  %s\n' $((phase_seconds[i] / 60)) $((phase_seconds[i] % 60)) "${phase_names[i]}"
    total=$((total + phase_seconds[i]))
  done
  printf '%4d:%02d  total%s\n' $((total / 60)) $((total % 60)) "$([ "$status" -eq 0 ] || echo " (failed: exit $status)")"
}
trap print_phase_times EXIT

export LOCKSTEP_UNITY_BUILD=ON

phase "set up (scripts/setup.sh)"
scripts/setup.sh

phase "build the package and the not_sanitized tests (RelWithDebInfo)"
LOCKSTEP_BUILD_TARGETS="lockstep_package lockstep_not_sanitized_tests lockstep_bench" scripts/build.sh
phase "test: the tests labelled not_sanitized (RelWithDebInfo)"
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600 -L not_sanitized

phase "test your own lock: the Debian package of build/, examples/own-adapter built against it, run"
scripts/own_adapter.sh

phase "build the real-thread keyed locks (ThreadSanitizer)"
LOCKSTEP_BUILD_DIR=build-tsan LOCKSTEP_BUILD_TARGETS="lockstep_keyed_tests lockstep_core_tests lockstep_redis_tests" \
  scripts/build.sh -DLOCKSTEP_SANITIZE_THREAD=ON -DLOCKSTEP_BUILD_BENCH=OFF
phase "test the real-thread keyed locks (ThreadSanitizer)"
ctest --test-dir build-tsan --output-on-failure -j"$(nproc)" --timeout 600 -R "KeyedRwMutex|FifoLock|under real threads"

phase "build (ASan + UBSan)"
LOCKSTEP_BUILD_DIR=build-asan scripts/build.sh -DLOCKSTEP_SANITIZE=ON -DLOCKSTEP_BUILD_BENCH=OFF
phase "test: every other test (ASan + UBSan)"
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" --timeout 900 -LE not_sanitized
