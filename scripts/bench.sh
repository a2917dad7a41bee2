#!/usr/bin/env bash
# Builds lockstep_bench in Release (build-bench/) and runs it: a console summary on stdout, the full
# results as JSON in reports/bench/bench.json, and the throughput plot, reports/bench/throughput.svg
# (scripts/plot_bench.py). Not part of the test suite.
#
# Extra arguments go to the benchmark, e.g.
#   scripts/bench.sh --benchmark_filter='Redis|redis' --benchmark_min_time=2
# lockstep's redis and redlock adapters beside the npm libraries through their drivers, one run:
#   scripts/bench.sh --benchmark_filter='Baseline_RedisPing|AcquireRelease/(redis|redlock|memory|ext:)|Ext_'
# The sweep's own speed, per adapter (seeds and simulator events per second, one core; the README's
# table), then on every core (--jobs N; run apart: forking a process that ran the others costs more):
#   scripts/bench.sh --benchmark_filter='BM_Sweep/[a-z]+/real' --benchmark_min_time=2
#   scripts/bench.sh --benchmark_filter='BM_Sweep/.*/jobs' --benchmark_min_time=2
# The ext cases need node >= 20 and services/ext/node/node_modules (scripts/setup.sh) and skip without them;
# the mongo cases need mongod on PATH or LOCKSTEP_MONGO_URI and skip without them.
# LOCKSTEP_BENCH_CPUS pins the run (and the redis-server it starts, a child) with taskset, e.g.
# LOCKSTEP_BENCH_CPUS=0 puts client and server on one core: Redis figures differ by regime
# (docs/benchmarks.md), so compare ratios from one run, not rows across runs.
# No -Werror here: GCC 12 at -O3 reports false positives that RelWithDebInfo (build.sh) does not.
set -euo pipefail
cd "$(dirname "$0")/.."
# LOCKSTEP_BENCH_BUILD_DIR and LOCKSTEP_BENCH_JOBS pick another build dir and fewer build jobs
# (on a machine shared with other builds).
build_dir=${LOCKSTEP_BENCH_BUILD_DIR:-build-bench}
out_dir=reports/bench
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_BUILD_BENCH=ON >/dev/null
cmake --build "$build_dir" --target lockstep_bench -j"${LOCKSTEP_BENCH_JOBS:-$(nproc)}"
mkdir -p "$out_dir"
pin=()
if [[ -n "${LOCKSTEP_BENCH_CPUS:-}" ]]; then pin=(taskset -c "$LOCKSTEP_BENCH_CPUS"); fi
"${pin[@]}" "$build_dir/bench/lockstep_bench" --benchmark_format=console \
  --benchmark_out="$out_dir/bench.json" --benchmark_out_format=json "$@"
echo "results: $out_dir/bench.json"
python3 scripts/plot_bench.py "$out_dir/bench.json" --out "$out_dir/throughput.svg"
