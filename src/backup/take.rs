//! Taking one backup of a running node: a RocksDB checkpoint, then a paced, digested copy of
//! it and of the data directory's other irreplaceable files, then the manifest.
//!
//! Owns: `BackupLayout` (what of a data directory a backup holds), `BackupTarget` (the new
//! directory, held by its parent's file descriptor), `BackupBase` (an earlier backup whose
//! unchanged files are shared), `take` (the whole procedure, on the backup's own thread) and
//! the staging directory's name.
//! Invariant: the store's part is one RocksDB checkpoint — a consistent point in time: every
//! write acknowledged before it is in, nothing half-written — made by hard links inside the data
//! directory (same file system: instant, no copy yet), so the server keeps serving while the
//! copy runs at its pace. The manifest is written last, atomically: a target without one is not
//! a backup (restore refuses it). A failed or stopped backup removes the target it made and the
//! staging directory; the server is not touched either way (a panic too: it ends the backup
//! as a failure). The target is made through its parent directory's descriptor, opened when
//! the backup was accepted, and every file in it through the target's own descriptor, opened
//! (not through a link) right after it was made: a path swapped for a link meanwhile does not
//! move it. While the checkpoint's hard links keep obsolete store files alive on the data disk,
//! the copy stops if that disk falls below `DATA_DISK_FREE_MIN_PERCENT` free.
//! Incremental: a file of the base backup with the same path, size and SHA-256 as the one to
//! back up (RocksDB's table files never change once written) is hard-linked from the base
//! instead of copied — read and digested, not written; the link is then read back (a regular
//! file, 0600, the same digest) or removed and the file copied, so a rotten base file never
//! passes into a new backup. Each backup stays whole on its own: removing its base removes
//! nothing of it (a link is a name of the same file).
//! Deliberately absent: the ledger cache and `admin.addr` (rebuilt at start); links across
//! file systems (a file the link fails for is copied).

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::copy::{
    copy_file, create_private_dir_new, digest_file_paced, sync_dir, write_new_atomically, Pace, DIR_MODE, FILE_MODE,
};
use super::manifest::{BackupManifest, FileEntry, MANIFEST_BYTES_MAX, MANIFEST_FILE_NAME, MANIFEST_FORMAT};
use super::Progress;
use crate::store::Store;

/// Where a backup stages the store's checkpoint, inside the data directory (hard links need
/// the same file system). A leftover of a crash is removed by the next backup.
pub const STAGING_DIR_NAME: &str = "backup-staging";
/// Least free space, in percent of its size, the data disk keeps while a backup runs: the
/// checkpoint's hard links hold store files compaction has dropped, so a long backup grows
/// the store's footprint; below this the backup stops, not the server.
pub const DATA_DISK_FREE_MIN_PERCENT: u64 = 5;
/// A backup's error when its thread panicked (the panic itself is in the log).
pub const PANICKED: &str = "the backup's thread panicked (see the log)";

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

/// The new directory a backup writes: a name in a parent directory held open since the backup
/// was accepted, so the path checked is the directory written.
#[derive(Debug, Clone)]
pub struct BackupTarget {
    /// The path as the operator gave it (for the status and messages).
    pub shown: PathBuf,
    pub parent: Arc<File>,
    pub name: OsString,
}

impl BackupTarget {
    /// The target reached through the parent's descriptor (Linux's `/proc/self/fd`).
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.parent.as_raw_fd())).join(&self.name)
    }
}

/// An earlier backup whose files a new one shares where they are unchanged.
#[derive(Debug, Clone)]
pub struct BackupBase {
    pub dir: PathBuf,
    pub manifest: BackupManifest,
}

/// One backup to take.
#[derive(Debug, Clone)]
pub struct BackupOrder {
    pub id: String,
    pub target: BackupTarget,
    pub base: Option<BackupBase>,
    pub created_at_ms: u64,
    pub schema_version: u32,
    pub bytes_per_s: u64,
    /// Set by the server's stop: the copy ends (`Interrupted`) and removes what it wrote.
    pub stop: Arc<AtomicBool>,
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
    let made = order.target.path();
    create_private_dir_new(&made).map_err(|e| format!("creating {}: {e}", order.target.shown.display()))?;
    let held = match hold_made_dir(&made) {
        Ok(held) => held,
        Err(why) => {
            // Not ours to remove: whatever is under that name now was not made by this backup.
            return Err(format!("{}: {why}", order.target.shown.display()));
        }
    };
    let to = PathBuf::from(format!("/proc/self/fd/{}", held.as_raw_fd()));
    // The mark of a directory a backup made: retention removes an unfinished one only with it.
    let marked = File::options()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(to.join(super::retention::BACKUP_MARK_FILE_NAME))
        .map_err(|e| format!("{}: marking it as a backup: {e}", order.target.shown.display()));
    if let Err(why) = marked {
        let _ = std::fs::remove_dir(order.target.path());
        return Err(why);
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        checkpoint_and_copy(store, layout, order, progress, &staging, &to)
    }))
    .unwrap_or_else(|_| Err(PANICKED.to_owned()));
    if let Err(e) = remove_if_present(&staging) {
        // Only the server's scratch space is left behind; the next backup removes it.
        tracing::warn!(error = %e, dir = %staging.display(), "could not remove the backup's staging directory");
    }
    if result.is_err() {
        if let Err(e) = remove_made_dir(&order.target, &to, &held) {
            tracing::warn!(error = %e, dir = %order.target.shown.display(), "could not remove a failed backup");
        }
    }
    result
}

/// Opens the directory just made at `made` without following a link, and checks it is the one
/// this backup made: a directory of this process's user, 0700.
fn hold_made_dir(made: &Path) -> Result<File, String> {
    use std::os::unix::fs::MetadataExt;
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(made)
        .map_err(|e| format!("opening the directory just made: {e}"))?;
    let meta = dir.metadata().map_err(|e| format!("the directory just made: {e}"))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o777 != DIR_MODE {
        return Err("the directory just made was replaced meanwhile".into());
    }
    Ok(dir)
}

/// Removes what a failed backup wrote: the contents through its held descriptor (`to`), then
/// its name — only while that name is still the directory it made.
fn remove_made_dir(target: &BackupTarget, to: &Path, held: &File) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    for entry in std::fs::read_dir(to)? {
        let entry = entry?;
        match entry.file_type()?.is_dir() {
            true => std::fs::remove_dir_all(entry.path())?,
            false => std::fs::remove_file(entry.path())?,
        }
    }
    let ours = held.metadata()?;
    let named = std::fs::symlink_metadata(target.path())?;
    if named.is_dir() && (named.dev(), named.ino()) == (ours.dev(), ours.ino()) {
        std::fs::remove_dir(target.path())?;
    }
    Ok(())
}

/// Fails when the data disk (`dir`'s file system) is below `DATA_DISK_FREE_MIN_PERCENT` free.
fn data_disk_has_room(dir: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|e| format!("the data directory: {e}"))?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is NUL-terminated and `stat` is written whole by a successful call.
    let stat = unsafe {
        if libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) != 0 {
            return Err(format!("the data disk's free space: {}", std::io::Error::last_os_error()));
        }
        stat.assume_init()
    };
    let (free, size) = (u128::from(stat.f_bavail), u128::from(stat.f_blocks));
    if size > 0 && free * 100 < size * u128::from(DATA_DISK_FREE_MIN_PERCENT) {
        return Err(format!(
            "the data disk is below {DATA_DISK_FREE_MIN_PERCENT} % free: the backup stops (its checkpoint keeps store files alive there)"
        ));
    }
    Ok(())
}

fn checkpoint_and_copy(
    store: &dyn Store,
    layout: &BackupLayout,
    order: &BackupOrder,
    progress: &Progress,
    staging: &Path,
    to: &Path,
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
    create_private_dir_new(&to.join(layout.db_dir_name)).map_err(|e| format!("creating the store's directory: {e}"))?;
    let mut pace = Pace::stoppable(order.bytes_per_s, order.stop.clone());
    let shared = order.base.as_ref().map(SharedFiles::of).unwrap_or_default();
    let mut files = Vec::with_capacity(sources.len());
    for (from, path) in sources {
        data_disk_has_room(&layout.data_dir)?;
        let target = to.join(&path);
        let entry = match shared.link(&from, &path, &target, &mut pace, progress)? {
            Some(entry) => entry,
            None => {
                let (bytes, sha256) = copy_file(&from, &target, &mut pace, &progress.bytes_copied)
                    .map_err(|e| format!("copying {path}: {e}"))?;
                FileEntry { path, bytes, sha256 }
            }
        };
        files.push(entry);
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
    // What restore would refuse is not a backup: checked before it is called one.
    manifest.check().map_err(|why| format!("the manifest: {why}"))?;
    let body = serde_json::to_vec_pretty(&manifest).map_err(|e| format!("manifest: {e}"))?;
    if body.len() as u64 > MANIFEST_BYTES_MAX {
        return Err(format!("the manifest is {} bytes: restore reads at most {MANIFEST_BYTES_MAX}", body.len()));
    }
    sync_dir(&to.join(layout.db_dir_name)).map_err(|e| format!("syncing the store's directory: {e}"))?;
    sync_dir(to).map_err(|e| format!("syncing the backup's directory: {e}"))?;
    write_new_atomically(&to.join(MANIFEST_FILE_NAME), &body).map_err(|e| format!("writing the manifest: {e}"))?;
    order.target.parent.sync_all().map_err(|e| format!("syncing the target's parent directory: {e}"))?;
    Ok(manifest)
}

/// The files of a base backup, by path, that a new backup may link instead of copying.
#[derive(Default)]
struct SharedFiles<'a> {
    dir: Option<&'a Path>,
    by_path: HashMap<&'a str, &'a FileEntry>,
}

impl<'a> SharedFiles<'a> {
    fn of(base: &'a BackupBase) -> SharedFiles<'a> {
        let by_path = base.manifest.files.iter().map(|f| (f.path.as_str(), f)).collect();
        SharedFiles { dir: Some(&base.dir), by_path }
    }

    /// Links `path` of the base to `target` when the base holds it unchanged (same size and
    /// SHA-256 as `from`, read paced); `None` when it must be copied.
    fn link(
        &self,
        from: &Path,
        path: &str,
        target: &Path,
        pace: &mut Pace,
        progress: &Progress,
    ) -> Result<Option<FileEntry>, String> {
        let (Some(dir), Some(held)) = (self.dir, self.by_path.get(path)) else { return Ok(None) };
        let size = std::fs::symlink_metadata(from).map_err(|e| format!("{path}: {e}"))?.len();
        if size != held.bytes {
            return Ok(None);
        }
        let read = std::sync::atomic::AtomicU64::new(0);
        let (bytes, sha256) = digest_file_paced(from, pace, &read).map_err(|e| format!("reading {path}: {e}"))?;
        if bytes != held.bytes || sha256 != held.sha256 {
            return Ok(None);
        }
        let source = dir.join(path);
        let linkable = std::fs::symlink_metadata(&source).is_ok_and(|m| m.is_file() && m.len() == bytes);
        // Another file system, or the base changed: the file is copied.
        if !linkable || std::fs::hard_link(&source, target).is_err() {
            return Ok(None);
        }
        // Read back: the base's file, as linked, must be what the manifest says (it may have
        // rotted, or be another file by now) and as private as a copy.
        match linked_as_expected(target, &sha256, pace) {
            Ok(true) => {}
            Ok(false) => {
                std::fs::remove_file(target)
                    .map_err(|e| format!("removing a link to a changed base file {path}: {e}"))?;
                tracing::warn!(path, "a base backup's file differs from its manifest: copied instead");
                return Ok(None);
            }
            // Not read to its end (the server is stopping, a read failed): the backup fails.
            Err(e) => return Err(format!("reading back {path}: {e}")),
        }
        progress.bytes_copied.fetch_add(bytes, Ordering::Relaxed);
        progress.bytes_shared.fetch_add(bytes, Ordering::Relaxed);
        Ok(Some(FileEntry { path: path.to_owned(), bytes, sha256 }))
    }
}

/// Whether the file linked at `target` is a regular file of this process's user, 0600, whose
/// SHA-256 is `sha256`; an error when it could not be read to its end.
fn linked_as_expected(target: &Path, sha256: &str, pace: &mut Pace) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let meta = std::fs::symlink_metadata(target)?;
    if !meta.is_file() || meta.mode() & 0o777 != FILE_MODE || meta.uid() != uid {
        return Ok(false);
    }
    let read = std::sync::atomic::AtomicU64::new(0);
    Ok(digest_file_paced(target, pace, &read)?.1 == sha256)
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
