#!/usr/bin/env bash
# Applies .clang-format to every C++ source of the repository, or with --check only reports the
# files that differ (exit 1), as the test suite's format check does.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "format: clang-format not found: apt-get install clang-format (scripts/setup.sh does)" >&2
  exit 3
fi
mapfile -t files < <(git ls-files '*.cc' '*.h')
if [ "${1:-}" = "--check" ]; then
  clang-format --dry-run -Werror "${files[@]}"
else
  clang-format -i "${files[@]}"
fi
