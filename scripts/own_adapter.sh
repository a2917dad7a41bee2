#!/usr/bin/env bash
# "Test your own lock", as CI must run it, from lockstep's Debian package: builds what the package
# holds in build/ (nothing more when the suite already did), packs that build with cpack
# (build/lockstep_VERSION_amd64.deb, cmake/package.cmake), checks what it holds and depends on,
# unpacks it into a fresh temp prefix (dpkg-deb -x: no root, no container), and from that prefix
# alone:
#   the packaged `lockstep`                  run sequential --adapter memory: exit 0
#   the packaged Python driver kit           its reference driver co-simulated: sequential exit 0;
#                                            with --bug extend-no-owner-check, stolen-lock exit 1
#                                            with ownership
# then builds examples/own-adapter (an outside project: find_package(lockstep)) against that prefix
# alone in a temp build dir (the compiler's header list and the link line are checked: nothing from
# this tree or /usr/local) and holds its binary to this:
#   sweep --adapter my-buggy --seeds 1000    exit 1, and the shrunk replay file it names replays
#                                            (the binary's own `replay` reproduces the trace hash:
#                                            exit 0)
#   sweep --adapter my-correct --seeds 2000  exit 0
#   matrix --adapter my-correct              exit 0 (every scenario its traits fit: as expected)
#   run stolen-lock --adapter my-buggy       exit 1 with ownership (its extend lengthens B's lock)
#   sweep --adapter my-rw-buggy / my-fifo-buggy (keyed locks)  exit 1 (mutual_exclusion / fifo)
#   sweep --adapter my-rw / my-fifo --seeds 2000               exit 0
#   sweep --adapter my-whole-client-buggy --seeds 1000         exit 1 (validity_within_lease)
#   sweep --adapter my-whole-client --seeds 2000               exit 0
#   run unanswered-renewal --adapter my-whole-client / -hopeful exit 0 / 1 (mutual_exclusion: its
#                                            watchdog counts an unanswered renewal as applied)
#   sweep --adapter my-fenced-buggy --seeds 300                exit 1 (fencing)
#   sweep --adapter my-fenced --seeds 2000                     exit 0
# It prints how long each stage took and the binary's size. Temp dirs are removed on exit, failing
# or not. Exit 0 when all of it held, 1 otherwise, 3 when a tool or a package the .deb depends on is
# missing here (scripts/setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

LOCKSTEP_BUILD_TARGETS=lockstep_package scripts/build.sh

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-own-adapter.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=scripts/lib/outside_project.sh
. scripts/lib/outside_project.sh

echo "== package lockstep: cpack in build/ (the build above, nothing compiled again)"
stage_start=$(now_s)
start=$stage_start
deb=$(scripts/lib/make_deb.sh build)
echo "own_adapter: $deb, $(du -h "$deb" | cut -f1), made in $(($(now_s) - start)) s"

echo "== install the package into a fresh prefix"
check_deb "$deb"
require_deb_depends "$deb"
install_deb "$deb" "$tmp/root"
prefix=$tmp/root/usr

echo "== the packaged lockstep and Python driver kit"
expect_exit 0 "$prefix/bin/lockstep" run sequential --adapter memory
driver="python3 $prefix/share/lockstep/python-driver/driver.py --sim"
kit=(env "PYTHONPATH=$prefix/lib/python3/dist-packages" "$prefix/bin/lockstep")
expect_exit 0 "${kit[@]}" run sequential --adapter ext --set "driver=$driver"
expect_exit 1 "${kit[@]}" run stolen-lock --adapter ext --json \
  --set "driver=$driver --bug extend-no-owner-check"
grep -q '"invariant": "ownership"' "$tmp/out" || fail "stolen-lock did not find the --bug driver's ownership violation"

echo "== build examples/own-adapter against the package alone"
start=$(now_s)
build_example "$prefix" "$tmp/example"
bin="$tmp/example/my_lockstep"
echo "own_adapter: my_lockstep built in $(($(now_s) - start)) s, $(stat -c %s "$bin") bytes"

echo "== run it"
expect_exit 1 "$bin" sweep --adapter my-buggy --seeds 1000 --report "$tmp/reports"
cat "$tmp/out"
# The replay line names this binary, not `lockstep`.
replay_file=$(sed -n 's/^ *replay: my_lockstep replay //p' "$tmp/out" | head -n 1)
[ -n "$replay_file" ] || fail "sweep of my-buggy printed no 'replay: my_lockstep replay FILE' line"
[ -f "$replay_file" ] || fail "the replay file $replay_file does not exist"
expect_exit 0 "$bin" replay "$replay_file"
grep -q "replay: reproduced" "$tmp/err" || fail "replay did not reproduce: $(cat "$tmp/err")"
echo "own_adapter: replay reproduced the shrunk counterexample"

expect_exit 0 "$bin" sweep --adapter my-correct --seeds 2000 --report "$tmp/reports"
tail -n 3 "$tmp/out"
expect_exit 0 "$bin" matrix --adapter my-correct
grep -q "cells as expected" "$tmp/out" "$tmp/err" || fail "matrix --adapter my-correct judged no cell"
expect_exit 1 "$bin" run stolen-lock --adapter my-buggy --json
grep -q '"invariant": "ownership"' "$tmp/out" || fail "stolen-lock did not find my-buggy's ownership violation"
cat "$tmp/out" "$tmp/err"

# The keyed locks: a state machine of the user's own, judged by the keyed checkers.
expect_exit 1 "$bin" sweep --adapter my-rw-buggy --seeds 300 --report "$tmp/reports"
grep -q "breaks mutual_exclusion" "$tmp/out" || fail "sweep did not catch my-rw-buggy: $(cat "$tmp/out")"
expect_exit 1 "$bin" sweep --adapter my-fifo-buggy --seeds 300 --report "$tmp/reports"
grep -q "breaks fifo" "$tmp/out" || fail "sweep did not catch my-fifo-buggy: $(cat "$tmp/out")"
expect_exit 0 "$bin" sweep --adapter my-rw --seeds 2000 --report "$tmp/reports"
expect_exit 0 "$bin" sweep --adapter my-fifo --seeds 2000 --report "$tmp/reports"

# A whole client: its own retry loop and validity, called once per acquire.
expect_exit 1 "$bin" sweep --adapter my-whole-client-buggy --seeds 1000 --report "$tmp/reports"
grep -q "validity_within_lease" "$tmp/out" || fail "sweep did not catch my-whole-client-buggy: $(cat "$tmp/out")"
expect_exit 0 "$bin" sweep --adapter my-whole-client --seeds 2000 --report "$tmp/reports"
# ... and its own renewal watchdog, run in place of the Locker's auto-extension.
expect_exit 0 "$bin" run unanswered-renewal --adapter my-whole-client
expect_exit 1 "$bin" run unanswered-renewal --adapter my-whole-client-hopeful --json
grep -q '"invariant": "mutual_exclusion"' "$tmp/out" || fail "unanswered-renewal did not catch my-whole-client-hopeful: $(cat "$tmp/out")"

# Fencing tokens from a counter named its own way, judged in the order the server granted leases.
expect_exit 1 "$bin" sweep --adapter my-fenced-buggy --seeds 300 --report "$tmp/reports"
grep -q "breaks fencing" "$tmp/out" || fail "sweep did not catch my-fenced-buggy: $(cat "$tmp/out")"
expect_exit 0 "$bin" sweep --adapter my-fenced --seeds 2000 --report "$tmp/reports"
echo "own_adapter: ok, in $(($(now_s) - stage_start)) s after the build"
