//! A backup's manifest (`manifest.json`, written last): what the backup holds and how to check
//! it — when and by which build it was taken, the store's schema version, and every file with
//! its size and SHA-256.
//!
//! Owns: `BackupManifest` and `FileEntry` (the stored form, `format: "xray.backup.v1"`), reading one
//! back with its limits, and `check_path` (a file's path inside a backup: relative, plain
//! components only).
//! Invariant: a manifest lists each file once, with a relative path of plain components (no
//! `..`, no root, no `.`), so a restore writes nothing outside its target; it is read bounded
//! (`MANIFEST_BYTES_MAX`, `FILES_MAX`) and refused whole if any of it is wrong.
//! Deliberately absent: a signature over the manifest (a backup is as trusted as the disk it
//! sits on, and it holds the signing key itself: whoever can alter it can sign anything).

use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

/// The manifest's `format`: bumped when its shape changes.
pub const MANIFEST_FORMAT: &str = "xray.backup.v1";
/// The manifest's file name in a backup directory.
pub const MANIFEST_FILE_NAME: &str = "manifest.json";
/// Largest manifest read (a store of 100k analyses has a few hundred files).
pub const MANIFEST_BYTES_MAX: u64 = 16 * 1024 * 1024;
/// Most files one backup may list.
pub const FILES_MAX: usize = 100_000;
/// Longest path of one file inside a backup, in bytes.
pub const PATH_BYTES_MAX: usize = 512;

/// The stored manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackupManifest {
    pub format: String,
    /// The backup's id (`bk_<createdAtMs>`), as the admin API named it.
    pub id: String,
    pub created_at: String,
    pub created_at_ms: u64,
    /// The store's schema version (`store::SCHEMA_VERSION` of the build that took it).
    pub schema_version: u32,
    /// The build that took it: `xray <version>`.
    pub engine: String,
    /// The sum of the files' sizes.
    pub total_bytes: u64,
    pub files: Vec<FileEntry>,
}

/// One file of a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileEntry {
    /// Relative to the backup directory (and to the data directory it restores).
    pub path: String,
    pub bytes: u64,
    /// SHA-256 of the file's bytes, lowercase hex.
    pub sha256: String,
}

impl BackupManifest {
    /// Reads and checks the manifest of the backup in `dir`: its format, its bounds, every
    /// path, no path twice, the total.
    pub fn read(dir: &Path) -> Result<BackupManifest, String> {
        let path = dir.join(MANIFEST_FILE_NAME);
        let bytes = read_bounded(&path, MANIFEST_BYTES_MAX).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "{} has no {MANIFEST_FILE_NAME}: not a backup, or one that did not finish (the manifest is written last)",
                dir.display()
            ),
            _ => format!("{}: {e}", path.display()),
        })?;
        let manifest: BackupManifest =
            serde_json::from_slice(&bytes).map_err(|e| format!("{}: not a backup manifest: {e}", path.display()))?;
        manifest.check().map_err(|why| format!("{}: {why}", path.display()))?;
        Ok(manifest)
    }

    pub(super) fn check(&self) -> Result<(), String> {
        if self.format != MANIFEST_FORMAT {
            return Err(format!("format {:?}: this build reads {MANIFEST_FORMAT:?}", self.format));
        }
        if self.files.len() > FILES_MAX {
            return Err(format!("{} files: at most {FILES_MAX}", self.files.len()));
        }
        let mut seen = std::collections::HashSet::with_capacity(self.files.len());
        let mut total: u64 = 0;
        for file in &self.files {
            check_path(&file.path)?;
            if !seen.insert(file.path.as_str()) {
                return Err(format!("{} is listed twice", file.path));
            }
            if file.sha256.len() != 64 || !file.sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            {
                return Err(format!("{}: sha256 is not 64 lowercase hex digits", file.path));
            }
            total = total.checked_add(file.bytes).ok_or("the sizes overflow")?;
        }
        if total != self.total_bytes {
            return Err(format!("totalBytes {} is not the sum of the files' sizes ({total})", self.total_bytes));
        }
        Ok(())
    }
}

/// A file's path inside a backup: relative, made of plain names only, bounded.
pub fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() || path.len() > PATH_BYTES_MAX {
        return Err(format!("a file path of {} bytes: 1..={PATH_BYTES_MAX}", path.len()));
    }
    let plain = Path::new(path).components().all(|c| matches!(c, Component::Normal(_)));
    if !plain || path.ends_with('/') || path.contains("//") || path == MANIFEST_FILE_NAME {
        return Err(format!("{path:?} is not a plain relative file path"));
    }
    Ok(())
}

/// The whole of a regular file, refused past `max` bytes; a link is not followed.
pub fn read_bounded(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::other(format!("larger than {max} bytes")));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(files: Vec<FileEntry>) -> BackupManifest {
        BackupManifest {
            format: MANIFEST_FORMAT.into(),
            id: "bk_1".into(),
            created_at: "2026-11-29T00:00:00.000Z".into(),
            created_at_ms: 1,
            schema_version: 3,
            engine: "xray 0.1.0".into(),
            total_bytes: files.iter().map(|f| f.bytes).sum(),
            files,
        }
    }

    fn entry(path: &str, bytes: u64) -> FileEntry {
        FileEntry { path: path.into(), bytes, sha256: "0".repeat(64) }
    }

    #[test]
    fn paths_are_plain_and_relative() {
        for good in ["db/000012.sst", "admin.token", "db/CURRENT"] {
            assert!(check_path(good).is_ok(), "{good}");
        }
        for bad in ["", "/etc/passwd", "../x", "db/../../x", "./db", "db/", "db//x", "manifest.json", &"a".repeat(513)]
        {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_manifest_is_checked_whole() {
        assert!(manifest(vec![entry("db/CURRENT", 16), entry("admin.token", 65)]).check().is_ok());
        assert!(manifest(vec![entry("db/CURRENT", 1), entry("db/CURRENT", 1)]).check().unwrap_err().contains("twice"));
        let mut m = manifest(vec![entry("db/CURRENT", 16)]);
        m.total_bytes = 17;
        assert!(m.check().unwrap_err().contains("totalBytes"));
        let mut m = manifest(vec![entry("db/CURRENT", 16)]);
        m.files[0].sha256 = "A".repeat(64);
        assert!(m.check().unwrap_err().contains("sha256"));
        let mut m = manifest(vec![]);
        m.format = "xray.backup.v2".into();
        assert!(m.check().unwrap_err().contains("format"));
    }

    #[test]
    fn a_directory_without_a_manifest_is_not_a_backup() {
        let dir = tempfile::tempdir().unwrap();
        assert!(BackupManifest::read(dir.path()).unwrap_err().contains("did not finish"));
        std::fs::write(dir.path().join(MANIFEST_FILE_NAME), b"{\"format\":1}").unwrap();
        assert!(BackupManifest::read(dir.path()).unwrap_err().contains("not a backup manifest"));
    }
}
