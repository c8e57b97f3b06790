//! Taking one backup of a running node: a RocksDB checkpoint, then a paced, digested copy of
//! it and of the data directory's other irreplaceable files, then the manifest.
//!
//! Owns: `BackupLayout` (what of a data directory a backup holds), `take` (the whole procedure, on
//! the backup's own thread) and the staging directory's name.
//! Invariant: the store's part is one RocksDB checkpoint — a consistent point in time: every
//! write acknowledged before it is in, nothing half-written — made by hard links inside the data
//! directory (same file system: instant, no copy yet), so the server keeps serving while the
//! copy runs at its pace. The manifest is written last, atomically: a target without one is not
//! a backup (restore refuses it). A failed backup removes the target it made and the staging
//! directory; the server is not touched either way.
//! Deliberately absent: the ledger cache and `admin.addr` (rebuilt at start), and incremental
//! copies (each backup is whole; see README "Backup and restore").

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::copy::{copy_file, create_private_dir_new, sync_dir, write_new_atomically, Pace};
use super::manifest::{BackupManifest, FileEntry, MANIFEST_FILE_NAME, MANIFEST_FORMAT};
use super::Progress;
use crate::store::Store;

/// Where a backup stages the store's checkpoint, inside the data directory (hard links need
/// the same file system). A leftover of a crash is removed by the next backup.
pub const STAGING_DIR_NAME: &str = "backup-staging";

/// What of a data directory a backup holds: the store (`db_dir_name`, through a checkpoint)
/// and the `files` beside it that cannot be rebuilt (the admin token, the signing keys), each
/// required. Not held: the config file and labels files (the operator's, outside the data
/// directory), the ledger cache and `admin.addr` (rebuilt at start).
#[derive(Debug, Clone)]
pub struct BackupLayout {
    pub data_dir: PathBuf,
    pub db_dir_name: &'static str,
    pub files: Vec<&'static str>,
}

/// One backup to take.
#[derive(Debug, Clone)]
pub struct BackupOrder {
    pub id: String,
    pub to: PathBuf,
    pub created_at_ms: u64,
    pub schema_version: u32,
    pub bytes_per_s: u64,
}

/// Takes the backup `order` of `store` laid out as `layout`; on failure removes what it made.
pub fn take(
    store: &dyn Store,
    layout: &BackupLayout,
    order: &BackupOrder,
    progress: &Progress,
) -> Result<BackupManifest, String> {
    let staging = layout.data_dir.join(STAGING_DIR_NAME);
    remove_if_present(&staging).map_err(|e| format!("removing the old staging directory: {e}"))?;
    create_private_dir_new(&order.to).map_err(|e| format!("creating {}: {e}", order.to.display()))?;
    let result = checkpoint_and_copy(store, layout, order, progress, &staging);
    if let Err(e) = remove_if_present(&staging) {
        // Only the server's scratch space is left behind; the next backup removes it.
        tracing::warn!(error = %e, dir = %staging.display(), "could not remove the backup's staging directory");
    }
    if result.is_err() {
        if let Err(e) = std::fs::remove_dir_all(&order.to) {
            tracing::warn!(error = %e, dir = %order.to.display(), "could not remove a failed backup");
        }
    }
    result
}

fn checkpoint_and_copy(
    store: &dyn Store,
    layout: &BackupLayout,
    order: &BackupOrder,
    progress: &Progress,
    staging: &Path,
) -> Result<BackupManifest, String> {
    store.checkpoint(staging).map_err(|e| format!("checkpoint of the store: {e}"))?;
    let mut sources = Vec::new();
    for name in sorted_files(staging)? {
        sources.push((staging.join(&name), format!("{}/{name}", layout.db_dir_name)));
    }
    // Every one of them: a backup without the signing keys would restore a server that signs
    // with a new key, so reports signed before would no longer verify.
    for name in &layout.files {
        sources.push((layout.data_dir.join(name), (*name).to_owned()));
    }
    let mut total: u64 = 0;
    for (path, _) in &sources {
        total += std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?.len();
    }
    progress.bytes_total.store(total, Ordering::Relaxed);
    create_private_dir_new(&order.to.join(layout.db_dir_name))
        .map_err(|e| format!("creating the store's directory: {e}"))?;
    let mut pace = Pace::new(order.bytes_per_s);
    let mut files = Vec::with_capacity(sources.len());
    for (from, path) in sources {
        let (bytes, sha256) = copy_file(&from, &order.to.join(&path), &mut pace, &progress.bytes_copied)
            .map_err(|e| format!("copying {path}: {e}"))?;
        files.push(FileEntry { path, bytes, sha256 });
    }
    let manifest = BackupManifest {
        format: MANIFEST_FORMAT.to_owned(),
        id: order.id.clone(),
        created_at: crate::clock::rfc3339_ms(order.created_at_ms),
        created_at_ms: order.created_at_ms,
        schema_version: order.schema_version,
        engine: format!("xray {}", env!("CARGO_PKG_VERSION")),
        total_bytes: files.iter().map(|f| f.bytes).sum(),
        files,
    };
    let body = serde_json::to_vec_pretty(&manifest).map_err(|e| format!("manifest: {e}"))?;
    let sync = |dir: &Path| sync_dir(dir).map_err(|e| format!("syncing {}: {e}", dir.display()));
    sync(&order.to.join(layout.db_dir_name))?;
    write_new_atomically(&order.to.join(MANIFEST_FILE_NAME), &body)
        .map_err(|e| format!("writing the manifest: {e}"))?;
    if let Some(parent) = order.to.parent() {
        sync(parent)?;
    }
    Ok(manifest)
}

/// The names of the regular files in `dir`, sorted (a checkpoint is one flat directory).
fn sorted_files(dir: &Path) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let kind = entry.file_type().map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = entry.file_name().into_string().map_err(|n| format!("{n:?}: a file name that is not UTF-8"))?;
        if !kind.is_file() {
            return Err(format!("{}/{name}: the checkpoint holds something other than a file", dir.display()));
        }
        names.push(name);
    }
    names.sort();
    Ok(names)
}

/// Removes a staging directory a backup cut short by the server's stop left behind (its hard
/// links keep obsolete store files on the data disk); called at start.
pub fn remove_stale_staging(data_dir: &Path) -> std::io::Result<()> {
    remove_if_present(&data_dir.join(STAGING_DIR_NAME))
}

fn remove_if_present(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}
