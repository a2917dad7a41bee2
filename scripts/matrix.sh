#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the scenario matrix in the simulator
# (no server needed). Writes reports/matrix/matrix.md, matrix.json and matrix.html. Exit 0 when every cell
# matched its expectation. Extra arguments go to `lockstep matrix` (e.g. --seeds 20).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/cli/lockstep matrix --world sim --fencing both --report reports/matrix "$@"
