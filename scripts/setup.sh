#!/usr/bin/env bash
# Installs everything lockstep needs to build, test and benchmark on Debian 12, idempotently.
# Packages already present are left alone; apt-get runs only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  catch2 librapidcheck-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libboost-context-dev liblua5.1-0-dev
  libhiredis-dev libmongoc-dev libbson-dev
  redis-server redis-tools faketime libfaketime
  python3-mockupdb
  chromium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
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
echo "setup: done"
