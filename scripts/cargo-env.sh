# Sourced by the scripts that call cargo: the RocksDB library `make` builds and exports
# (scripts/rocksdb.sh), so a script run on its own links the same library as `make` does and
# never makes cargo compile RocksDB's C++ again in the shared target directory.
if [ -z "${ROCKSDB_LIB_DIR+set}" ]; then
  xray_rocksdb_dir=$(bash "$(dirname "${BASH_SOURCE[0]}")/rocksdb.sh" --dir)
  if [ -n "$xray_rocksdb_dir" ]; then
    bash "$(dirname "${BASH_SOURCE[0]}")/rocksdb.sh"
    export ROCKSDB_LIB_DIR="$xray_rocksdb_dir" ROCKSDB_STATIC=1
  fi
  unset xray_rocksdb_dir
fi
