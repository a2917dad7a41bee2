#!/usr/bin/env bash
# Installs everything lockstep needs to build, test and benchmark on Debian 12, idempotently.
# Packages already present are left alone; apt-get runs only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang-format ccache
  catch2 librapidcheck-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libboost-context-dev libgoogle-perftools-dev
  chromium
)
# Each lock service lists what it needs in services/NAME/packages.txt (words; # starts a comment).
repo_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for list in "$repo_dir"/services/*/packages.txt; do
  [ -f "$list" ] || continue
  # shellcheck disable=SC2207 # one package name per word
  packages+=($(sed 's/#.*//' "$list"))
done

# The Node drivers of the ext adapters (services/ext/node): their npm packages, pinned by the lockfile. Needs
# Node 20 or newer (Debian 12's own nodejs is 18: NodeSource's nodejs 20 package, or any node 20 on
# PATH); without one, the ext adapters report what is missing and their tests skip (fail in CI).
# Idempotent: npm ci runs only when the lockfile differs from the one last installed.
install_node_drivers() {
  local dir
  dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/services/ext/node"
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "setup: node/npm not found: the ext adapters need Node 20 (e.g. NodeSource's nodejs package)" >&2
    return 0
  fi
  local major
  major="$(node -p 'process.versions.node.split(".")[0]')"
  if [ "$major" -lt 20 ]; then
    echo "setup: node $(node --version) is older than 20: the ext adapters need Node 20" >&2
    return 0
  fi
  local stamp="$dir/node_modules/.lockstep-lock.sha256"
  local want
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "setup: services/ext/node packages already installed"
    return 0
  fi
  echo "setup: npm ci --prefix services/ext/node"
  npm ci --prefix "$dir" --no-audit --no-fund
  echo "$want" > "$stamp"
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  install_node_drivers
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 3; }
  sudo="sudo"
fi

echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"

# Debian starts redis-server as a system service on install. lockstep's tests start their own
# servers on free loopback ports, so the stock service is stopped to leave nothing running.
if command -v systemctl >/dev/null && systemctl is-active --quiet redis-server 2>/dev/null; then
  $sudo systemctl stop redis-server || true
fi
install_node_drivers
echo "setup: done"
