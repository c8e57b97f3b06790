#!/usr/bin/env bash
# Installs the system packages the build needs, only when they are missing. Safe to repeat.
# Needed: C compilers (ring, mimalloc, lz4), clang++ (RocksDB's C++: .cargo/config.toml),
# libclang (bindgen, for the rocksdb crate), protoc (etcd-client's generated gRPC code) and,
# for the cluster tests and the `--store etcd:` deployment, etcd 3.4+ with etcdctl; for the
# Python client test, python3's venv module. Uses apt-get (Debian/Ubuntu), as root or through
# sudo.
set -euo pipefail

need=()
command -v cc >/dev/null 2>&1 || need+=(build-essential)
command -v c++ >/dev/null 2>&1 || need+=(g++)
command -v clang++ >/dev/null 2>&1 || need+=(clang)
dpkg -s libclang-dev >/dev/null 2>&1 || need+=(libclang-dev)
command -v protoc >/dev/null 2>&1 || need+=(protobuf-compiler)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || need+=(etcd-client)
# tests/pyclient/run.sh makes a venv (Debian's python3 has no ensurepip without python3-venv)
python3 -c 'import ensurepip' >/dev/null 2>&1 || need+=(python3-venv)

if ((${#need[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi

# The independent verifier of signed reports (Python: cryptography + rfc8785, pinned).
if ! python3 -c 'import cryptography, rfc8785' >/dev/null 2>&1; then
  echo "installing: tests/signing/requirements.txt (pip)" >&2
  pip install --quiet -r "$(dirname "$0")/../tests/signing/requirements.txt"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install the Rust toolchain (https://rustup.rs) and retry" >&2
  exit 1
fi
