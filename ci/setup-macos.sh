#!/usr/bin/env bash
# Installs what building and testing need on a macOS (Apple Silicon) machine with Homebrew
# and rustup, as ci/macos-arm64.yml runs it (lane 5, "Real macOS"; see docs/MACOS-TARGETS.md). NOT RUN by
# this project: no Mac is reachable from its machines; written by reading.
#
# - Homebrew formulae: the autotools that `cargo xtask build-slurm` regenerates Slurm's build
#   files with, cmake (third-party library builds), json-c and hwloc (used as they are by
#   `cargo xtask deps`; libjwt 1.x, jansson and OpenSSL's libcrypto are built by the driver,
#   because Homebrew's libjwt 3 is refused by Slurm's configure), and MariaDB (slurmdbd's
#   accounting_storage/mysql and the private database of `cargo xtask cluster`).
# - GNU libtoolize: Homebrew installs it as glibtoolize; its gnubin directory goes first on
#   PATH (written to $GITHUB_PATH on GitHub Actions, printed otherwise).
# - Rust: the x86_64-apple-darwin target (the shim lane cross-builds both macOS triples).
# - zig (PyPI ziglang, the version ci/setup-debian.sh pins): the shim's header tests compile
#   for aarch64-macos and x86_64-macos with it on every OS.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -s)" != Darwin ]; then
  echo "ci/setup-macos.sh is for macOS; on Debian use ci/setup-debian.sh" >&2
  exit 1
fi

BREW_FORMULAE=(autoconf automake libtool pkg-config cmake json-c hwloc mariadb)
ZIGLANG_VERSION=$(sed -n 's/^ZIGLANG_VERSION=//p' ci/setup-debian.sh)

echo "== Homebrew: ${BREW_FORMULAE[*]}"
brew install --quiet "${BREW_FORMULAE[@]}"

gnubin="$(brew --prefix libtool)/libexec/gnubin"
mysql_bin="$(brew --prefix mariadb)/bin"
if [ -n "${GITHUB_PATH:-}" ]; then
  echo "$gnubin" >> "$GITHUB_PATH"
  echo "$mysql_bin" >> "$GITHUB_PATH"
else
  echo "add to PATH: export PATH=\"$gnubin:$mysql_bin:\$PATH\""
fi

echo "== rust targets"
rustup target add aarch64-apple-darwin x86_64-apple-darwin

echo "== zig ${ZIGLANG_VERSION} (PyPI ziglang)"
if ! python3 -m ziglang version 2>/dev/null | grep -qx "${ZIGLANG_VERSION}"; then
  python3 -m pip install --quiet "ziglang==${ZIGLANG_VERSION}" \
    || python3 -m pip install --quiet --break-system-packages "ziglang==${ZIGLANG_VERSION}"
fi
python3 -m ziglang version
