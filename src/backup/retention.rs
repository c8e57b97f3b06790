//! Retention of backups in one directory (`xray backup --keep N`, which the systemd timer
//! runs): after a backup ends `DONE`, the finished backups beside it past the newest N are
//! removed, and so are the leftovers of backups a crash cut short, once a day old.
//!
//! Owns: `prune` and what it removed (`Pruned`).
//! Invariant: only what is certainly a backup is removed — a directory whose `manifest.json`
//! reads as one (newest by its `createdAtMs`), or a directory without a manifest that bears a
//! backup's mark (`.xray-backup`, made first by every backup), holds nothing but what a backup
//! writes, and whose newest change (the directory, `db/` and its files) is over
//! `LEFTOVER_AGE_S` old (a backup still being written is younger). The backup just taken is
//! never removed, whatever its time says. Anything else is left alone. Links are not followed.
//! Deliberately absent: retention by age or size (a count is what the timer needs), and
//! pruning through the admin API (the server never deletes an operator's backups).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::manifest::{BackupManifest, MANIFEST_FILE_NAME};

/// Age past which a directory without a manifest is a crash's leftover, in seconds.
pub const LEFTOVER_AGE_S: u64 = 24 * 3600;
/// Most entries of the backups' directory looked at.
pub const ENTRIES_MAX: usize = 10_000;
/// Most backups `--keep` keeps.
pub const KEEP_MAX: usize = 10_000;
/// Most files of an unfinished backup's `db/` whose times are read.
const DB_ENTRIES_READ_MAX: usize = 100_000;
/// The empty file every backup makes first in its directory.
pub const BACKUP_MARK_FILE_NAME: &str = ".xray-backup";
/// The names a backup's directory holds, besides its manifest.
const BACKUP_ENTRY_NAMES: [&str; 5] =
    [BACKUP_MARK_FILE_NAME, "db", "admin.token", "signing-keys.json", ".manifest.json.partial"];

/// What `prune` removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Finished backups past the newest `keep`.
    pub backups: Vec<PathBuf>,
    /// Unfinished backups a day old.
    pub leftovers: Vec<PathBuf>,
}

/// Keeps the backup `taken` (a name in `dir`) and the newest `keep - 1` other finished backups
/// in `dir`; removes the older ones and the day-old leftovers of unfinished ones.
pub fn prune(dir: &Path, taken: &std::ffi::OsStr, keep: usize, now: SystemTime) -> Result<Pruned, String> {
    assert!((1..=KEEP_MAX).contains(&keep), "--keep is checked by the command line");
    let mut finished: Vec<(u64, PathBuf)> = Vec::new();
    let mut pruned = Pruned::default();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.take(ENTRIES_MAX) {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        if !entry.file_type().is_ok_and(|t| t.is_dir()) || entry.file_name() == taken {
            continue;
        }
        let path = entry.path();
        match std::fs::symlink_metadata(path.join(MANIFEST_FILE_NAME)) {
            Ok(_) => {
                if let Ok(manifest) = BackupManifest::read(&path) {
                    finished.push((manifest.created_at_ms, path));
                }
            }
            Err(_) if is_leftover(&path, now) => pruned.leftovers.push(path),
            Err(_) => {}
        }
    }
    finished.sort();
    let old = finished.len().saturating_sub(keep - 1);
    pruned.backups = finished.into_iter().take(old).map(|(_, path)| path).collect();
    for path in pruned.backups.iter().chain(&pruned.leftovers) {
        std::fs::remove_dir_all(path).map_err(|e| format!("removing {}: {e}", path.display()))?;
    }
    Ok(pruned)
}

/// A directory without a manifest, with a backup's mark, that holds only what a backup writes
/// and has not changed for a day.
fn is_leftover(path: &Path, now: SystemTime) -> bool {
    let marked = std::fs::symlink_metadata(path.join(BACKUP_MARK_FILE_NAME)).is_ok_and(|m| m.is_file());
    let Ok(entries) = std::fs::read_dir(path) else { return false };
    let mut names = entries.take(BACKUP_ENTRY_NAMES.len() + 1).map(|e| e.map(|e| e.file_name()));
    let only_a_backups = names.all(|n| n.is_ok_and(|n| BACKUP_ENTRY_NAMES.iter().any(|b| n == *b)));
    let old = newest_change(path)
        .is_some_and(|changed| now.duration_since(changed).unwrap_or_default() > Duration::from_secs(LEFTOVER_AGE_S));
    marked && only_a_backups && old
}

/// The newest modification time of `dir`, its `db/` and `db/`'s files (a backup being written
/// changes these, not always `dir` itself).
fn newest_change(dir: &Path) -> Option<SystemTime> {
    let db = dir.join("db");
    let files = std::fs::read_dir(&db).into_iter().flatten().take(DB_ENTRIES_READ_MAX).filter_map(Result::ok);
    let times = [dir.to_path_buf(), db.clone()].into_iter().chain(files.map(|e| e.path()));
    times.filter_map(|p| std::fs::symlink_metadata(p).and_then(|m| m.modified()).ok()).max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backup::manifest::MANIFEST_FORMAT;

    fn backup(dir: &Path, name: &str, created_at_ms: u64) -> PathBuf {
        let path = dir.join(name);
        std::fs::create_dir_all(path.join("db")).unwrap();
        let manifest = BackupManifest {
            format: MANIFEST_FORMAT.into(),
            id: format!("bk_{created_at_ms}"),
            created_at: "2026-11-29T00:00:00.000Z".into(),
            created_at_ms,
            schema_version: 1,
            engine: "xray test".into(),
            total_bytes: 0,
            files: vec![],
        };
        std::fs::write(path.join(MANIFEST_FILE_NAME), serde_json::to_vec(&manifest).unwrap()).unwrap();
        path
    }

    #[test]
    fn the_newest_are_kept_and_only_backups_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        // Names that sort against their times: the manifest's time decides.
        let (a, b, c) = (backup(dir.path(), "c", 1), backup(dir.path(), "b", 2), backup(dir.path(), "a", 3));
        // The one just taken, with a clock that ran behind: kept all the same.
        let taken = backup(dir.path(), "taken", 0);
        let unfinished = dir.path().join("crashed");
        std::fs::create_dir_all(unfinished.join("db")).unwrap();
        std::fs::write(unfinished.join("admin.token"), b"x").unwrap();
        std::fs::write(unfinished.join(BACKUP_MARK_FILE_NAME), b"").unwrap();
        // Not a backup: someone's files; an empty directory (a disk's lost+found); a data
        // directory restored but never started (a backup's files, no mark).
        let someone_elses = dir.path().join("photos");
        std::fs::create_dir(&someone_elses).unwrap();
        std::fs::write(someone_elses.join("cat.jpg"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("lost+found")).unwrap();
        let restored = dir.path().join("restored");
        std::fs::create_dir_all(restored.join("db")).unwrap();
        std::fs::write(restored.join("admin.token"), b"x").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();

        let now = SystemTime::now();
        let taken_name = taken.file_name().unwrap();
        let pruned = prune(dir.path(), taken_name, 3, now).unwrap();
        assert_eq!(pruned, Pruned { backups: vec![a.clone()], leftovers: vec![] }, "the leftover is young");
        assert!(!a.exists() && b.exists() && c.exists() && taken.exists() && unfinished.exists());

        let tomorrow = now + Duration::from_secs(LEFTOVER_AGE_S + 60);
        let pruned = prune(dir.path(), taken_name, 3, tomorrow).unwrap();
        assert_eq!(pruned, Pruned { backups: vec![], leftovers: vec![unfinished.clone()] });
        assert!(!unfinished.exists() && b.exists() && c.exists() && taken.exists());
        assert!(someone_elses.join("cat.jpg").exists() && dir.path().join("notes.txt").exists());
        assert!(dir.path().join("lost+found").exists() && restored.join("admin.token").exists());
    }
}
