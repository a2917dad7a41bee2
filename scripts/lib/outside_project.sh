# shellcheck shell=bash disable=SC2154 # repo and tmp are the caller's (below)
# Sourced (not run) by scripts/own_adapter.sh and scripts/outside_ci.sh: installing lockstep's
# Debian package into a fresh prefix, building examples/own-adapter against that prefix alone, and
# holding commands to their exit codes. The caller runs under `set -euo pipefail` and sets `repo`
# (this repository) and `tmp` (a temp dir it removes on exit); messages start with the caller's
# name.

outside_name=$(basename "$0" .sh)

fail() {
  echo "$outside_name: FAILED: $*" >&2
  exit 1
}

# Runs the command; its exit code must be $1. Output goes to $tmp/out and $tmp/err.
expect_exit() {
  local want=$1
  shift
  echo "$outside_name: $* (expect exit $want)"
  local code=0
  "$@" >"$tmp/out" 2>"$tmp/err" || code=$?
  if [ "$code" -ne "$want" ]; then
    cat "$tmp/out" "$tmp/err" >&2
    fail "$* exited $code, not $want"
  fi
}

# Seconds since the epoch, for the stage timings the scripts print.
now_s() { date +%s; }

# The package names of the .deb $1's Depends (versions and alternatives dropped), one a line.
deb_depends() {
  dpkg-deb -f "$1" Depends | sed 's/([^)]*)//g; s/|[^,]*//g' | tr ',' '\n' | tr -d ' ' | sed '/^$/d'
}

# Exit 3 unless every package the .deb $1 depends on is installed here: unpacked by hand, the
# package needs what `apt-get install ./lockstep_*.deb` would have installed with it.
require_deb_depends() {
  local package missing=()
  for package in $(deb_depends "$1"); do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$package")
    fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "$outside_name: the package depends on ${missing[*]}, not installed here: apt-get install ${missing[*]}" >&2
    exit 3
  fi
}

# Fails unless the .deb $1 holds what cmake/package.cmake says (the command, the CMake package,
# headers, libraries, the Node drivers without node_modules, the Python driver kit; no source file
# or test) and depends on the runtime libraries the command loads and the -dev packages a build
# against it needs, by their Debian 12 names.
check_deb() {
  local deb=$1 want depends contents
  depends=" $(deb_depends "$deb" | tr '\n' ' ') "
  for want in libhiredis0.14 libmongoc-1.0-0 liblua5.1-0 libboost-context1.74.0 libfmt9 libpq5 \
    libtcmalloc-minimal4 libstdc++6 libhiredis-dev liblua5.1-0-dev libboost-context-dev \
    libmongoc-dev libpq-dev libfmt-dev nlohmann-json3-dev libcli11-dev pkg-config; do
    [[ "$depends" == *" $want "* ]] || fail "the package does not depend on $want: $depends"
  done
  contents=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./||')
  for want in usr/bin/lockstep usr/lib/cmake/lockstep/lockstepConfig.cmake \
    usr/lib/liblockstep_cli.a usr/include/lockstep/cli.h usr/include/lockstep/lockstep.h \
    usr/share/lockstep/ext/node/driver.js usr/lib/python3/dist-packages/lockstep_driver.py \
    usr/share/lockstep/python-driver/driver.py; do
    grep -qx "$want" <<<"$contents" || fail "the package lacks $want"
  done
  if grep -E 'node_modules|\.cc$|/tests/' <<<"$contents" >&2; then
    fail "the package holds node_modules, sources or tests (above)"
  fi
  # The public API alone: include/lockstep/*.h of this tree, nothing of lockstep's own headers.
  local installed_headers public_headers
  installed_headers=$(grep '^usr/include/.*\.h$' <<<"$contents" | sed 's|^usr/include/||' | sort)
  public_headers=$(cd "$repo/include" && find lockstep -name '*.h' | sort)
  [[ "$installed_headers" == "$public_headers" ]] ||
    fail "the package's headers are not exactly include/lockstep: $(diff <(echo "$public_headers") <(echo "$installed_headers") | head -5 | tr '\n' ' ')"
}

# Unpacks the .deb $1 into the fresh root $2 (dpkg-deb -x: no root, no container, nothing of this
# machine's dpkg database touched). The package's prefix is then $2/usr.
install_deb() {
  local deb=$1 root=$2
  [ ! -e "$root" ] || fail "$root exists: install_deb wants a fresh root"
  dpkg-deb -x "$deb" "$root"
  if grep -rl "$repo" "$root/usr/bin" "$root/usr/lib/cmake" "$root/usr/include" >&2; then
    fail "the package names the source tree $repo (files above)"
  fi
}

# Configures and builds examples/own-adapter in $2 against the lockstep under prefix $1 alone, and
# proves it: find_package found the prefix's package, every header the compiler read is the
# example's own, the prefix's or the system's (/usr/include, GCC's), and every lockstep library
# linked is the prefix's; nothing from this repository's tree or build dir, nothing from
# /usr/local. Its binary is $2/my_lockstep.
build_example() {
  local prefix=$1 build=$2 example=$repo/examples/own-adapter
  cmake -S "$example" -B "$build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF >/dev/null
  local found
  found=$(sed -n 's/^lockstep_DIR:PATH=//p' "$build/CMakeCache.txt")
  case "$found" in
    "$prefix"/*) ;;
    *) fail "find_package(lockstep) found $found, not the package in $prefix" ;;
  esac
  cmake --build "$build" -j"$(nproc)" >/dev/null

  # The compiler's own list of what it read (its depfiles, as ninja keeps them).
  local headers leaks
  headers=$(ninja -C "$build" -t deps | sed -n 's/^    //p' | sort -u)
  grep -q "^$prefix/include/lockstep/cli.h$" <<<"$headers" ||
    fail "the example did not read lockstep's headers from $prefix/include/lockstep"
  leaks=$(grep -v -e "^$prefix/" -e "^$example/" -e "^/usr/include/" -e "^/usr/lib/gcc/" \
    <<<"$headers" || true)
  [ -z "$leaks" ] || fail "the example read headers from outside the package and the system: $leaks"

  local linked
  linked=$(sed -n 's/^ *LINK_LIBRARIES = //p; s/^ *LINK_PATH = //p' "$build/build.ninja" | tr ' ' '\n')
  grep -q "^$prefix/lib/liblockstep_cli\.a$" <<<"$linked" ||
    fail "the example did not link lockstep's libraries from $prefix/lib"
  leaks=$(grep -e "liblockstep_" -e "$repo" -e "/usr/local" <<<"$linked" | grep -v "^$prefix/" || true)
  [ -z "$leaks" ] || fail "the example linked from outside the package: $leaks"
}
