#!/usr/bin/env bash
# Every production adapter of the simulator under every fault kind its backend can strike, alone,
# fencing on and off, and under the full mix: each sweep must find no violation that a fault
# outside the adapter's envelope does not excuse. Prints one line per sweep (violating seeds, the
# seeds with excused violations, what excused them) and exits 1 if any sweep found an unexcused
# violation. Runs on every core.
#   scripts/envelope_sweeps.sh [SEEDS_PER_KIND [SEEDS_MIX]]     (defaults 5000 and 20000)
# Builds first unless LOCKSTEP_NO_BUILD=1; LOCKSTEP_BIN picks another lockstep binary;
# LOCKSTEP_ADAPTERS (space-separated) another set of adapters.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds_kind=${1:-5000}
seeds_mix=${2:-20000}
for n in "$seeds_kind" "$seeds_mix"; do
  if ! [[ $n =~ ^[1-9][0-9]{0,6}$ ]]; then
    echo "envelope_sweeps.sh: seed counts are whole numbers from 1 to 9999999, not \"$n\"" >&2
    exit 2
  fi
done
[[ ${LOCKSTEP_NO_BUILD:-0} == 1 ]] || LOCKSTEP_BUILD_TARGETS=lockstep scripts/build.sh >/dev/null
bin=${LOCKSTEP_BIN:-build/cli/lockstep}
out=$(mktemp -d -t lockstep-envelope-XXXXXX)
trap 'rm -rf "$out"' EXIT

adapters=${LOCKSTEP_ADAPTERS:-memory redis redlock mongo keyed-rw fifo postgres-session postgres-blocking postgres-xact etcd etcd-lock}
all_kinds="pause crash clock-drift clock-jump server-drift server-clock-jump failover latency loss partition server-restart server-pause"
jobs=()
for adapter in $adapters; do
  # The kinds its backend can strike: asked for all of them, the command refuses, naming those.
  kinds=$("$bin" sweep --adapter "$adapter" --faults "${all_kinds// /,}" --seeds 1 \
    --report "$out/probe" 2>&1 >/dev/null | sed -n 's/.* it can: //p' | tr -d ' ' | tr ',' ' ' || true)
  [[ -n $kinds ]] || kinds=$all_kinds
  for fencing in on off; do
    for kind in $kinds; do
      jobs+=("$adapter $fencing $kind $seeds_kind")
    done
    jobs+=("$adapter $fencing all $seeds_mix")
  done
done

run_one() {
  local adapter=$1 fencing=$2 kind=$3 seeds=$4
  local file="$out/$adapter.$fencing.$kind.json"
  "$bin" sweep --adapter "$adapter" --faults "$kind" --fencing "$fencing" --seeds "$seeds" \
    --keep-going --shrink 0 --json >"$file" 2>"$file.err" || true
  python3 - "$file" "$adapter" "$fencing" "$kind" <<'EOF'
import json, sys
path, adapter, fencing, kind = sys.argv[1:]
try:
    j = json.load(open(path))
except ValueError:
    print(f"{adapter:17} fencing {fencing:3} {kind:17} ERROR: no sweep report")
    sys.exit(0)
excused = ", ".join(f"{k} {n}" for k, n in sorted(j["excused_by"].items())) or "none"
print(f"{adapter:17} fencing {fencing:3} {kind:17} {j['seeds_run']:6} seeds  "
      f"{j['violating_seeds']:3} violating {j['violating_seed_list'][:5]}  "
      f"{j['excused_seeds']:6} with excused violations ({100 * j['excused_seeds'] / max(j['seeds_run'], 1):.1f}%), "
      f"{j['not_exercised_seeds']} not exercised; excused by: {excused}")
EOF
}
export -f run_one
export bin out
printf '%s\n' "${jobs[@]}" >"$out/jobs"
# The sweeps run as one job in a process group of its own (set -m), so a stopped script stops them.
set -m
xargs -a "$out/jobs" -P "$(nproc)" -L 1 bash -c 'run_one "$@"' _ >"$out/lines" &
sweeps=$!
set +m
trap 'kill -TERM -- -"$sweeps" 2>/dev/null; wait "$sweeps"; exit 143' INT TERM
wait "$sweeps"
trap - INT TERM
sort "$out/lines"

bad=$(python3 - "$out" <<'EOF'
import glob, json, sys
bad = 0
for path in glob.glob(sys.argv[1] + "/*.json"):
    try:
        bad += 1 if json.load(open(path))["violating_seeds"] > 0 else 0
    except ValueError:
        bad += 1
print(bad)
EOF
)
if [[ $bad -gt 0 ]]; then
  echo "envelope sweeps: $bad of ${#jobs[@]} sweeps found a violation no fault outside the envelope excuses" >&2
  exit 1
fi
echo "envelope sweeps: all ${#jobs[@]} sweeps hold (every violation excused by a fault outside the envelope)"
