#!/usr/bin/env bash
# The steps of docs/ci.md's workflow for an outside project ("Testing your own lock in CI"), run here
# against examples/own-adapter with the package built from this repository:
#   1. install the package       the workflow: sudo apt-get install ./lockstep_VERSION_amd64.deb
#                                here: dpkg-deb -x into a fresh temp prefix (no root, no container),
#                                after checking that what it depends on is installed
#   2. build the lock's binary   cmake against that prefix alone (find_package(lockstep))
#   3. matrix --adapter my-correct --report --junit             exit 0, matrix.html, a JUnit file
#                                                               with testcases and no failure
#   4. sweep --adapter my-correct --seeds 2000 --time BUDGET --report --junit
#                                                               exit 0, a report, a JUnit file
#   5. keep the reports          the workflow uploads them; here they are copied to --reports DIR,
#                                also when a step failed
# Usage: scripts/outside_ci.sh [--deb FILE] [--time DURATION] [--reports DIR]. Without --deb it packs
# build/ (scripts/lib/make_deb.sh; build it first with scripts/build.sh). --time is the sweep's
# budget (default 1s, about 1,300 seeds here, so the budget is what ends it). The seeds are the
# 2000 scripts/own_adapter.sh holds my-correct to, so the verdict does not depend on how many seeds
# this machine runs in the budget. It prints how long each step took. Temp dirs are removed on exit, failing or
# not. Exit 0 when every step held, 1 when one did not, 2 on bad usage, 3 when a tool or a package
# the .deb depends on is missing here.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

usage="valid: --deb FILE, --time DURATION (e.g. 1s), --reports DIR"
deb=""
budget="1s"
keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --deb | --time | --reports)
      [ $# -ge 2 ] || { echo "outside_ci: $1 needs a value; $usage" >&2; exit 2; }
      case "$1" in
        --deb) deb=$2 ;;
        --time) budget=$2 ;;
        --reports) keep=$2 ;;
      esac
      shift 2
      ;;
    *) echo "outside_ci: unknown argument '$1'; $usage" >&2; exit 2 ;;
  esac
done
if [ -n "$deb" ] && [ ! -f "$deb" ]; then
  echo "outside_ci: --deb $deb: no such file; $usage" >&2
  exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-outside-ci.XXXXXX")
reports=$tmp/reports
# As the workflow uploads the reports whatever the verdicts, --reports keeps them also after a
# failed step.
finish() {
  if [ -n "$keep" ] && [ -d "$reports" ]; then
    mkdir -p "$keep" && cp -r "$reports/." "$keep/" && echo "outside_ci: reports kept in $keep"
  fi
  rm -rf "$tmp"
}
trap finish EXIT
# shellcheck source=scripts/lib/outside_project.sh
. scripts/lib/outside_project.sh

[ -n "$deb" ] || deb=$(scripts/lib/make_deb.sh build)

echo "== 1. install $(basename "$deb")"
start=$(now_s)
require_deb_depends "$deb"
install_deb "$deb" "$tmp/root"
prefix=$tmp/root/usr
echo "outside_ci: installed in $(($(now_s) - start)) s"

echo "== 2. build the lock's binary against the package"
start=$(now_s)
build_example "$prefix" "$tmp/example"
bin=$tmp/example/my_lockstep
echo "outside_ci: built in $(($(now_s) - start)) s"

echo "== 3. matrix --adapter my-correct"
start=$(now_s)
expect_exit 0 "$bin" matrix --adapter my-correct --report "$reports/matrix" --junit "$reports/matrix.xml"
grep -q "cells as expected" "$tmp/out" "$tmp/err" || fail "matrix --adapter my-correct judged no cell"
for f in matrix/matrix.html matrix/matrix.md matrix/matrix.json matrix.xml; do
  [ -s "$reports/$f" ] || fail "the matrix wrote no $reports/$f"
done
echo "outside_ci: matrix in $(($(now_s) - start)) s"

echo "== 4. sweep --adapter my-correct --time $budget"
start=$(now_s)
echo "$outside_name: sweep --adapter my-correct --seeds 2000 --time $budget"
code=0
"$bin" sweep --adapter my-correct --seeds 2000 --time "$budget" \
  --report "$reports/sweep" --junit "$reports/sweep.xml" >"$tmp/out" 2>"$tmp/err" || code=$?
# A --time the sweep refuses is this script's bad usage: the sweep's one line, exit 2.
if [ "$code" -eq 2 ]; then
  echo "outside_ci: --time $budget: $(head -n 1 "$tmp/err")" >&2
  exit 2
fi
[ "$code" -eq 0 ] || { cat "$tmp/out" "$tmp/err" >&2; fail "the sweep exited $code, not 0"; }
tail -n 2 "$tmp/out"
ls "$reports"/sweep/*.json >/dev/null 2>&1 || fail "the sweep wrote no report in $reports/sweep"
echo "outside_ci: sweep in $(($(now_s) - start)) s"

# Both JUnit files parse, hold testcases, and no failure: what a CI's test view would show.
for junit in "$reports/matrix.xml" "$reports/sweep.xml"; do
  python3 - "$junit" <<'EOF' || fail "$junit is not what a CI reads (above)"
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.findall(".//testcase")
failed = [c.get("name") for c in cases if c.find("failure") is not None or c.find("error") is not None]
if not cases or failed:
    sys.exit("%s: %d testcases, failing: %s" % (sys.argv[1], len(cases), failed))
print("%s: %d testcases, none failing" % (sys.argv[1], len(cases)))
EOF
done

echo "outside_ci: ok"
