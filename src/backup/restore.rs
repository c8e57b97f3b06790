//! Restore: a backup directory made into a data directory `xray serve` starts from, offline.
//!
//! Owns: `restore` — read the manifest, judge its schema version, check every file's size and
//! SHA-256, then copy into a hidden sibling of the target and rename it into place.
//! Invariant: nothing is written until the whole backup has checked out (a partial backup has
//! no manifest; a corrupted file fails its digest; a newer schema is refused by name), and
//! then the target appears by one rename or not at all: a restore that fails half-way (a full
//! disk) removes its sibling and leaves no target. An existing target is never written into.
//! Files are made 0600 and directories 0700, as the server makes them. Nothing is read through
//! a link inside the backup.
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
/// store and beside it every one of `files` (the signing keys, the admin token). Returns the
/// manifest it restored.
pub fn restore(from: &Path, to: &Path, db_dir_name: &str, files: &[&str]) -> Result<BackupManifest, String> {
    let manifest = BackupManifest::read(from)?;
    judge_schema(&manifest)?;
    judge_files(&manifest, db_dir_name, files).map_err(|why| format!("{}: {why}", from.display()))?;
    let parent = target_parent(to)?;
    for file in &manifest.files {
        no_linked_directory(from, &file.path)?;
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
    let placed = copy_all(from, &staging, &manifest).and_then(|()| rename_no_replace(&staging, to));
    if let Err(why) = placed {
        // The copy holds the signing key and the admin token: never left behind.
        if let Err(e) = std::fs::remove_dir_all(&staging) {
            tracing::warn!(error = %e, dir = %staging.display(), "could not remove a failed restore");
        }
        return Err(why);
    }
    sync_dir(&parent).map_err(|e| format!("syncing {}: {e}", parent.display()))?;
    Ok(manifest)
}

/// The store's files (`db_dir_name/<name>`, one level) and exactly `files` beside them, each
/// of those present: nothing else is restored.
fn judge_files(manifest: &BackupManifest, db_dir_name: &str, files: &[&str]) -> Result<(), String> {
    let current = format!("{db_dir_name}/{STORE_CURRENT_FILE}");
    for needed in std::iter::once(current.as_str()).chain(files.iter().copied()) {
        if !manifest.files.iter().any(|f| f.path == needed) {
            return Err(format!("the backup does not hold {needed} (its manifest does not list it)"));
        }
    }
    let in_store = |path: &str| {
        path.strip_prefix(db_dir_name).and_then(|p| p.strip_prefix('/')).is_some_and(|name| !name.contains('/'))
    };
    match manifest.files.iter().find(|f| !in_store(&f.path) && !files.contains(&f.path.as_str())) {
        Some(stray) => Err(format!("{} is not a file a data directory holds", stray.path)),
        None => Ok(()),
    }
}

/// Every directory between the backup `from` and its file `path` is a directory of the backup,
/// not a link to one elsewhere (the file itself is opened without following a link).
fn no_linked_directory(from: &Path, path: &str) -> Result<(), String> {
    let mut at = from.to_path_buf();
    for part in Path::new(path).parent().into_iter().flat_map(Path::components) {
        at.push(part);
        let kind = std::fs::symlink_metadata(&at).map_err(|e| format!("{}: {e}", at.display()))?.file_type();
        if !kind.is_dir() {
            return Err(format!("{}: not a directory of the backup (a link?): the backup is corrupted", at.display()));
        }
    }
    Ok(())
}

/// Renames `from` to `to` unless `to` exists (even as an empty directory, which a plain rename
/// would replace).
fn rename_no_replace(from: &Path, to: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let refuse = |e: std::io::Error| format!("renaming {} to {}: {e}", from.display(), to.display());
    let c_path =
        |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|e| refuse(std::io::Error::other(e)));
    let (from_c, to_c) = (c_path(from)?, c_path(to)?);
    // SAFETY: both are NUL-terminated paths that live across the call; AT_FDCWD resolves them
    // as `rename` would.
    let done = unsafe {
        libc::renameat2(libc::AT_FDCWD, from_c.as_ptr(), libc::AT_FDCWD, to_c.as_ptr(), libc::RENAME_NOREPLACE)
    };
    if done == 0 {
        Ok(())
    } else {
        Err(refuse(std::io::Error::last_os_error()))
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
