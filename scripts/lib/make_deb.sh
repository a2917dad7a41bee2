#!/usr/bin/env bash
# Makes the Debian package of the build dir $1, already built (scripts/build.sh), with cpack
# (cmake/package.cmake), and prints the .deb's path on stdout; cpack's own output goes to stderr.
# It compiles nothing: cpack installs the build into a staging dir and packs it.
# Exit 0 with the path, 2 when $1 is not a configured build dir, 3 when cpack or dpkg-shlibdeps
# is missing, 4 when cpack failed.
set -euo pipefail
build_dir=${1:?usage: make_deb.sh BUILD_DIR}
for tool in cpack dpkg-shlibdeps dpkg-deb; do
  command -v "$tool" >/dev/null || {
    echo "make_deb: $tool not found: apt-get install cmake dpkg-dev (scripts/setup.sh does)" >&2
    exit 3
  }
done
[ -f "$build_dir/CPackConfig.cmake" ] || {
  echo "make_deb: $build_dir/CPackConfig.cmake missing: configure and build it first (scripts/build.sh)" >&2
  exit 2
}
build_dir=$(cd "$build_dir" && pwd)
rm -f "$build_dir"/lockstep_*.deb
(cd "$build_dir" && cpack -G DEB --config CPackConfig.cmake) >&2 || {
  echo "make_deb: cpack failed in $build_dir (output above)" >&2
  exit 4
}
debs=("$build_dir"/lockstep_*_amd64.deb)
[ -f "${debs[0]}" ] || {
  echo "make_deb: cpack made no lockstep_*_amd64.deb in $build_dir" >&2
  exit 4
}
echo "${debs[0]}"
