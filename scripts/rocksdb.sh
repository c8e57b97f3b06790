#!/usr/bin/env bash
# RocksDB's C++, compiled as a unity build before cargo runs, for `librocksdb-sys` to link as
# a prebuilt library (its documented `ROCKSDB_LIB_DIR` + `ROCKSDB_STATIC`).
#
# Why: RocksDB's 343 source files are the build's critical path. Compiled one by one, as the
# crate's own build script does, each file parses the same heavy headers again: ~850 s of a
# fresh `make run` on 2 cores (clang++ 14). The same files, the same flags, included a few
# dozen per translation unit (RocksDB's own CI keeps its library compiling as one unit: its
# Makefile's `unity` target), took 188 s in 4 units (measured 2026-11-30, README "The two
# commands").
#
#   bash scripts/rocksdb.sh --dir   # prints the library's directory (nothing: not used here)
#   bash scripts/rocksdb.sh         # builds it there unless it is already built
#
# The sources are the ones cargo fetched for the locked `librocksdb-sys` (its RocksDB, its
# pre-generated build_version.cc); the flags are its build script's for Linux x86-64 with the
# crate features this project enables (lz4 only) and the release profile's opt-level 2. The
# directory's name carries the crate's and lz4-sys's versions, the compiler and REVISION (and
# holds flags.txt, the command line, for whoever reads it): change the flags,
# bump REVISION (a new directory, so cargo links the new library: ROCKSDB_LIB_DIR changes).
#
# Used only where those flags are known to be right: Linux on x86-64, the librocksdb-sys
# version they were read from (FLAGS_READ_FROM). Elsewhere, or with XRAY_ROCKSDB_UNITY=0,
# `--dir` prints nothing and the crate compiles RocksDB itself (slower, the same library).
# Environment: CARGO_TARGET_DIR [/var/tmp/xray-target], CXX [clang++], JOBS [nproc].
set -euo pipefail
cd "$(dirname "$0")/.."

REVISION=2
# The librocksdb-sys whose build script the flags below were read from. Another version (a
# Cargo.lock update) falls back to the crate's own build until its flags are read again.
FLAGS_READ_FROM=0.19.0+11.8.1
CXX=${CXX:-clang++}
TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/xray-target}
# The version Cargo.lock holds for package $1.
locked_version() { sed -n "/^name = \"$1\"\$/{n;s/^version = \"\(.*\)\"\$/\1/p;}" Cargo.lock; }
version=$(locked_version librocksdb-sys)
lz4_version=$(locked_version lz4-sys)

# Not the compiler's presence: `make` asks for the directory before `deps` installs clang.
# Anything that would change the crate's own flags (C++ flags, a C++ standard, a target CPU in
# the Rust flags) leaves RocksDB to the crate: these flags would no longer be its flags.
supported() {
  [ "${XRAY_ROCKSDB_UNITY:-1}" != 0 ] && [ "$(uname -s)" = Linux ] && [ "$(uname -m)" = x86_64 ] &&
    [ "$version" = "$FLAGS_READ_FROM" ] && [ -n "$lz4_version" ] &&
    [ -z "${CXXFLAGS:-}${CXXFLAGS_x86_64_unknown_linux_gnu:-}${ROCKSDB_CXX_STD:-}" ] &&
    ! printf '%s' "${RUSTFLAGS:-}${CARGO_ENCODED_RUSTFLAGS:-}${CARGO_BUILD_RUSTFLAGS:-}" | grep -q 'target-cpu'
}

dir="$TARGET_DIR/rocksdb/$version-lz4-$lz4_version-$(basename "$CXX")-r$REVISION"
if [ "${1:-}" = --dir ]; then
  if supported; then echo "$dir"; fi
  exit 0
fi
supported || { echo "rocksdb.sh: not used here (see its header); cargo compiles RocksDB" >&2; exit 0; }
command -v "$CXX" >/dev/null 2>&1 || { echo "rocksdb.sh: $CXX not found (scripts/deps.sh installs clang)" >&2; exit 1; }
# A library of the caller's own (ROCKSDB_LIB_DIR set elsewhere) is theirs to build.
if [ "${ROCKSDB_LIB_DIR:-$dir}" != "$dir" ]; then
  [ -f "$ROCKSDB_LIB_DIR/librocksdb.a" ] && exit 0
  echo "rocksdb.sh: ROCKSDB_LIB_DIR=$ROCKSDB_LIB_DIR holds no librocksdb.a (this script builds only $dir)" >&2
  exit 1
fi
[ -f "$dir/librocksdb.a" ] && exit 0

# One builder at a time (two `make`s at once would both build).
mkdir -p "$TARGET_DIR/rocksdb"
exec 9>>"$TARGET_DIR/rocksdb/.lock"
flock 9
[ -f "$dir/librocksdb.a" ] && exit 0

cargo fetch --locked --quiet
cargo_home=${CARGO_HOME:-$HOME/.cargo}
src=$(ls -d "$cargo_home"/registry/src/*/"librocksdb-sys-$version" | head -1)
lz4=$(ls -d "$cargo_home"/registry/src/*/"lz4-sys-$lz4_version"/liblz4/lib | head -1)
[ -f "$src/rocksdb_lib_sources.txt" ] && [ -f "$lz4/lz4.h" ] ||
  { echo "rocksdb.sh: the fetched sources of librocksdb-sys $version or lz4-sys are missing" >&2; exit 1; }

jobs=${JOBS:-$(nproc)}
# Units: few, so that headers are parsed rarely, and two a job, so that no job is left with
# one long unit while the others idle. Measured on 2 cores (clang++ 14, 2026-11-30): 2 units
# 230 s, 4 units 188 s, 8 units 221 s, 16 units 228-256 s; one file a unit (the crate's own
# build) ~850 s.
units=$((jobs * 2))
((units >= 4)) || units=4
((units <= 64)) || units=64
work=$(mktemp -d "$TARGET_DIR/rocksdb/build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The crate's list (its build script skips util/build_version.cc for its own pre-generated one).
grep -v '^util/build_version.cc$' "$src/rocksdb_lib_sources.txt" | sed 's#^#rocksdb/#' > "$work/sources"
echo build_version.cc >> "$work/sources"
split -n "l/$units" -d -a 3 "$work/sources" "$work/unit."
for list in "$work"/unit.???; do
  sed "s|.*|#include \"$src/&\"|" "$list" > "$list.cc"
done

# librocksdb-sys 0.19's build script on x86_64-unknown-linux-gnu, features lz4 (no rtti, no
# jemalloc, no io-uring), with cc's defaults for opt-level 2 and no debug info.
flags=(-O2 -ffunction-sections -fdata-sections -fPIC -m64 -std=c++20 -w -msse2 -include cstdint
  -I "$src/rocksdb/include/" -I "$src/rocksdb/" -I "$src/rocksdb/third-party/gtest-1.8.1/fused-src/"
  -DLZ4=1 -I "$lz4" -I "$src" -DNDEBUG=1 -DHAVE_ALIGNED_NEW -DHAVE_UINT128_EXTENSION
  -DOS_LINUX -DROCKSDB_PLATFORM_POSIX -DROCKSDB_LIB_IO_POSIX -DROCKSDB_SCHED_GETCPU_PRESENT
  -DROCKSDB_AUXV_GETAUXVAL_PRESENT -DROCKSDB_FALLOCATE_PRESENT -DROCKSDB_RANGESYNC_PRESENT)
echo "rocksdb.sh: compiling RocksDB $version ($(wc -l < "$work/sources") files in $units units," \
  "$jobs jobs, $CXX) into $dir" >&2
started=$(date +%s)
export CXX
# A unit that fails prints its first errors; xargs still waits for the others (exit 1, not
# 255), then fails the script.
printf '%s\n' "$work"/unit.???.cc |
  xargs -d '\n' -P "$jobs" -I{} sh -c '"$CXX" "$@" -c "$0" -o "$0.o" 2>"$0.err" || { echo "rocksdb.sh: $0 failed:" >&2; head -c 4000 "$0.err" >&2; exit 1; }' {} "${flags[@]}"
ar crs "$work/librocksdb.a" "$work"/unit.???.cc.o
printf '%s\n' "$CXX ${flags[*]}" > "$work/flags.txt"
mkdir -p "$dir"
mv "$work/flags.txt" "$dir/flags.txt"
mv "$work/librocksdb.a" "$dir/librocksdb.a"
echo "rocksdb.sh: built in $(($(date +%s) - started)) s" >&2
