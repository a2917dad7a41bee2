#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy's checks) over the project's own translation units in
# build/compile_commands.json: adapters, base, cli, ext, known_bad, real, scenarios, sim (not tests,
# property_tests or bench). Prints every finding and a summary; exit 0 when there is none, 1 when
# there is any warning or error, 3 when clang-tidy or the compilation database is missing.
# One clang-tidy at a time by default (about 10 minutes on an idle core); TIDY_JOBS=N runs N.
# Extra arguments are regexes on the file paths to check instead of all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
if ! command -v run-clang-tidy >/dev/null || ! command -v clang-tidy >/dev/null; then
  echo "tidy: run-clang-tidy / clang-tidy not found: apt-get install clang-tidy" >&2
  exit 3
fi
if [ ! -f build/compile_commands.json ]; then
  echo "tidy: build/compile_commands.json missing: configure first," \
    "cmake -S . -B build -G Ninja (the build exports it)" >&2
  exit 3
fi
if [ $# -eq 0 ]; then
  set -- "^$root/(adapters|base|cli|ext|known_bad|real|scenarios|sim)/"
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# run-clang-tidy exits non-zero only on errors, so the findings are counted from its output; it
# always colours, so the colour codes are taken out.
status=0
run-clang-tidy -p build -j "${TIDY_JOBS:-1}" -quiet "$@" 2>&1 |
  sed -u 's/\x1b\[[0-9;]*m//g' |
  { grep --line-buffered -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' || true; } |
  tee "$log" || status=$?
findings=$(grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error): ' "$log" | sort -u || true)
if [ -z "$findings" ]; then
  if [ "$status" -ne 0 ]; then
    echo "tidy: run-clang-tidy failed (exit $status) without a finding" >&2
    exit 1
  fi
  echo "tidy: no findings"
  exit 0
fi
echo
echo "tidy: $(wc -l <<<"$findings") distinct findings:"
sed "s|^$root/||" <<<"$findings"
exit 1
