#!/usr/bin/env bash
# Installs what building and testing need on a fresh Debian 12 machine (run as root, or
# with sudo available): Slurm's build dependencies and test framework, the macOS Rust
# targets, and zig (PyPI `ziglang`, pinned) as the C compiler for macOS targets.
set -euo pipefail

ZIGLANG_VERSION=0.17.0
# Slurm's Python test suite (cargo xtask cluster peer), for the system python3 the test user
# runs: pinned.
PEER_PIP_PACKAGES=(
  pytest==8.3.5 pytest-timeout==2.3.1 pexpect==4.9.0 jsondiff==2.2.1 jsonpatch==1.33
  requests==2.32.3 PyYAML==6.0.2
)
APT_PACKAGES=(
  build-essential autoconf automake libtool pkg-config python3 python3-pip curl
  check                                  # libcheck: Slurm's unit tests (make check)
  libmunge-dev munge                     # auth/munge and the tests that want it
  libjwt-dev libjson-c-dev               # auth/slurm (libjwt 1.x) and serializer/json
  libhwloc-dev libyaml-dev liblz4-dev    # slurmd topology, serializer/yaml, sbcast
  ccache
  sudo                                   # the peer suite's test user runs commands via sudo
  cmake xz-utils bzip2 perl              # cargo xtask deps: json-c/jansson/libjwt (CMake), hwloc/OpenSSL, .tar.xz/.tar.bz2
  libmariadb-dev libmariadb-dev-compat   # accounting_storage/mysql (slurmdbd)
  mariadb-server                         # the live cluster's private MariaDB (never the system service)
  ruby                                   # `ruby -c` of the generated Homebrew formulae (bottle tests)
)

sudo_() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

echo "== apt packages"
sudo_ env DEBIAN_FRONTEND=noninteractive apt-get update -qq
sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${APT_PACKAGES[@]}" >/dev/null

echo "== rust targets"
rustup target add aarch64-apple-darwin x86_64-apple-darwin

echo "== zig ${ZIGLANG_VERSION} (PyPI ziglang)"
if ! python3 -m ziglang version 2>/dev/null | grep -qx "${ZIGLANG_VERSION}"; then
  python3 -m pip install --quiet "ziglang==${ZIGLANG_VERSION}" \
    || python3 -m pip install --quiet --break-system-packages "ziglang==${ZIGLANG_VERSION}"
fi
python3 -m ziglang version

echo "== peer suite python packages (system python3)"
sudo_ /usr/bin/python3 -m pip install --quiet "${PEER_PIP_PACKAGES[@]}" \
  || sudo_ /usr/bin/python3 -m pip install --quiet --break-system-packages "${PEER_PIP_PACKAGES[@]}"
/usr/bin/python3 -c "import pytest, pytest_timeout, pexpect, jsondiff, jsonpatch, requests, yaml"
