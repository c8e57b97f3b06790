//! Restore: a backup directory made into a data directory `xray serve` starts from, offline.
//!
//! Owns: `restore` — read the manifest, judge its schema version, check every file's size and
//! SHA-256, then copy into a hidden sibling of the target and rename it into place.
//! Invariant: nothing is written until the whole backup has checked out (a partial backup has
//! no manifest; a corrupted file fails its digest; a newer schema is refused by name), and
//! then the target appears by one rename or not at all: a restore that fails half-way (a full
//! disk) removes its sibling and leaves no target. An existing target is never written into.
//! Files are made 0600 and directories 0700, as the server makes them.
//! Deliberately absent: restoring into a running server's data directory (`xray serve` owns
//! it; restore makes a new one and the operator starts the server on it).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

use super::copy::{copy_file, create_private_dir_new, digest_file, sync_dir, Pace};
use super::manifest::BackupManifest;
use crate::store::{SCHEMA_VERSION, SCHEMA_VERSIONS_UPGRADED};

/// The store's file every backup must hold (RocksDB's pointer to its manifest).
const STORE_CURRENT_FILE: &str = "CURRENT";

/// Restores the backup in `from` as the new data directory `to`, whose `db_dir_name` holds the
/// store. Returns the manifest it restored.
pub fn restore(from: &Path, to: &Path, db_dir_name: &str) -> Result<BackupManifest, String> {
    let manifest = BackupManifest::read(from)?;
    judge_schema(&manifest)?;
    let current = format!("{db_dir_name}/{STORE_CURRENT_FILE}");
    if !manifest.files.iter().any(|f| f.path == current) {
        return Err(format!("{}: the backup holds no store ({current} is not in its manifest)", from.display()));
    }
    let parent = target_parent(to)?;
    for file in &manifest.files {
        let (bytes, sha256) = digest_file(&from.join(&file.path)).map_err(|e| format!("{}: {e}", file.path))?;
        if bytes != file.bytes || sha256 != file.sha256 {
            return Err(format!(
                "{}: {bytes} bytes with SHA-256 {sha256}, the manifest says {} bytes with {}: the backup is corrupted",
                file.path, file.bytes, file.sha256
            ));
        }
    }
    let name = to.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let staging = parent.join(format!(".{name}.restoring-{}", std::process::id()));
    create_private_dir_new(&staging).map_err(|e| format!("creating {}: {e}", staging.display()))?;
    match copy_all(from, &staging, &manifest) {
        Ok(()) => {
            std::fs::rename(&staging, to)
                .map_err(|e| format!("renaming {} to {}: {e}", staging.display(), to.display()))?;
            sync_dir(&parent).map_err(|e| format!("syncing {}: {e}", parent.display()))?;
            Ok(manifest)
        }
        Err(why) => {
            if let Err(e) = std::fs::remove_dir_all(&staging) {
                tracing::warn!(error = %e, dir = %staging.display(), "could not remove a failed restore");
            }
            Err(why)
        }
    }
}

fn judge_schema(manifest: &BackupManifest) -> Result<(), String> {
    let version = manifest.schema_version;
    if version > SCHEMA_VERSION {
        return Err(format!(
            "the backup's store has schema version {version}, newer than this build's {SCHEMA_VERSION}: restore it with the build that took it ({})",
            manifest.engine
        ));
    }
    if version != SCHEMA_VERSION && !SCHEMA_VERSIONS_UPGRADED.contains(&version) {
        return Err(format!("the backup's store has schema version {version}, which this build cannot read"));
    }
    Ok(())
}

/// The existing directory the new data directory `to` goes into; `to` must not exist.
fn target_parent(to: &Path) -> Result<PathBuf, String> {
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(format!("{} exists: restore makes a new data directory, it never writes into one", to.display()));
    }
    let parent = match to.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() || to.file_name().is_none() {
        return Err(format!("{}: its parent directory must exist", to.display()));
    }
    Ok(parent)
}

fn copy_all(from: &Path, staging: &Path, manifest: &BackupManifest) -> Result<(), String> {
    let mut pace = Pace::new(u64::MAX);
    let copied = AtomicU64::new(0);
    for file in &manifest.files {
        let target = staging.join(&file.path);
        make_parents(staging, &target)?;
        let (bytes, sha256) = copy_file(&from.join(&file.path), &target, &mut pace, &copied)
            .map_err(|e| format!("{}: {e}", file.path))?;
        if bytes != file.bytes || sha256 != file.sha256 {
            return Err(format!("{}: changed while it was restored", file.path));
        }
    }
    let mut dirs: Vec<PathBuf> =
        manifest.files.iter().filter_map(|f| staging.join(&f.path).parent().map(Path::to_path_buf)).collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        sync_dir(&dir).map_err(|e| format!("syncing {}: {e}", dir.display()))?;
    }
    Ok(())
}

/// Makes the directories between `root` and `file` (0700), as needed.
fn make_parents(root: &Path, file: &Path) -> Result<(), String> {
    let Some(parent) = file.parent() else { return Ok(()) };
    let mut at = root.to_path_buf();
    for part in
        parent.strip_prefix(root).map_err(|_| format!("{} is outside the restore", file.display()))?.components()
    {
        at.push(part);
        if !at.is_dir() {
            create_private_dir_new(&at).map_err(|e| format!("creating {}: {e}", at.display()))?;
        }
    }
    Ok(())
}
