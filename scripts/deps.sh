#!/usr/bin/env bash
# Installs the system packages the build needs, only when they are missing.
# Needed: a C compiler (ring, mimalloc). Safe to run repeatedly.
set -euo pipefail

need=()
command -v cc >/dev/null 2>&1 || need+=(build-essential)

if ((${#need[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install the Rust toolchain (https://rustup.rs) and retry" >&2
  exit 1
fi
