//! The copy a backup and a restore make: file by file, each digested (SHA-256) as its bytes
//! pass, written private (files 0600, directories 0700), `fsync`ed, and paced to a byte rate
//! so that a backup does not take the disk from the server it runs beside.
//!
//! Owns: `Pace` (the rate), `copy_file`, `digest_file`, `create_private_dir_new`, `sync_dir`.
//! Invariant: a source is opened without following a link and must be a regular file; a
//! target is created new (`O_EXCL`), never opened over an existing file; every byte written
//! counts in the `copied` counter the caller's progress reads.
//! Deliberately absent: `O_DIRECT` and `copy_file_range` (the digest needs the bytes in user
//! space anyway, and the page cache keeps the server's reads warm).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// Bytes read and written at a time.
pub const COPY_CHUNK_BYTES: usize = 1024 * 1024;
/// Permission bits of every file a backup or a restore writes.
pub const FILE_MODE: u32 = 0o600;
/// Permission bits of every directory a backup or a restore makes.
pub const DIR_MODE: u32 = 0o700;

/// A byte rate: `admit(n)` sleeps until `n` more bytes fit in it, measured from the start.
pub struct Pace {
    bytes_per_s: u64,
    started: Instant,
    admitted: u64,
}

impl Pace {
    pub fn new(bytes_per_s: u64) -> Pace {
        assert!(bytes_per_s > 0, "a pace of zero bytes a second never ends");
        Pace { bytes_per_s, started: Instant::now(), admitted: 0 }
    }

    /// Counts `bytes` and sleeps while the copy is ahead of the rate.
    pub fn admit(&mut self, bytes: u64) {
        self.admitted = self.admitted.saturating_add(bytes);
        let due_us = u128::from(self.admitted) * 1_000_000 / u128::from(self.bytes_per_s);
        let due = Duration::from_micros(u64::try_from(due_us).unwrap_or(u64::MAX));
        if let Some(ahead) = due.checked_sub(self.started.elapsed()) {
            std::thread::sleep(ahead);
        }
    }
}

/// Opens `path` for reading: a regular file, not through a link.
fn open_source(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(format!("{} is not a regular file", path.display())));
    }
    Ok(file)
}

/// Copies `from` into a new file `to` (0600), paced, digesting as it goes; `fsync`s it.
/// Returns the bytes copied and their SHA-256 (hex).
pub fn copy_file(from: &Path, to: &Path, pace: &mut Pace, copied: &AtomicU64) -> std::io::Result<(u64, String)> {
    let mut source = open_source(from)?;
    let mut target = OpenOptions::new().write(true).create_new(true).mode(FILE_MODE).open(to)?;
    let digested = pump(&mut source, Some(&mut target), pace, copied)?;
    target.sync_all()?;
    Ok(digested)
}

/// The size and SHA-256 (hex) of the regular file at `path`.
pub fn digest_file(path: &Path) -> std::io::Result<(u64, String)> {
    pump(&mut open_source(path)?, None, &mut Pace::new(u64::MAX), &AtomicU64::new(0))
}

/// Reads `source` to its end, hashing every byte; each chunk also goes to `target` when there
/// is one, counts in `copied` and waits for `pace`. Returns the bytes read and their SHA-256.
fn pump(
    source: &mut File,
    mut target: Option<&mut File>,
    pace: &mut Pace,
    copied: &AtomicU64,
) -> std::io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; COPY_CHUNK_BYTES];
    let mut total: u64 = 0;
    loop {
        let read = source.read(&mut buffer)?;
        if read == 0 {
            return Ok((total, hex(&hasher.finalize())));
        }
        let chunk = &buffer[..read];
        hasher.update(chunk);
        if let Some(target) = target.as_mut() {
            target.write_all(chunk)?;
        }
        total += read as u64;
        copied.fetch_add(read as u64, Ordering::Relaxed);
        pace.admit(read as u64);
    }
}

/// Makes the directory `path` (0700); it must not exist yet.
pub fn create_private_dir_new(path: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().mode(DIR_MODE).create(path)
}

/// `fsync`s a directory, so the names made in it survive a crash.
pub fn sync_dir(path: &Path) -> std::io::Result<()> {
    File::open(path)?.sync_all()
}

/// Writes `bytes` to a new file `to` (0600) through a temporary name, `fsync`ed, then renamed:
/// `to` appears whole or not at all.
pub fn write_new_atomically(to: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = to.parent().ok_or_else(|| std::io::Error::other("a file path without a directory"))?;
    let name = to.file_name().ok_or_else(|| std::io::Error::other("a file path without a name"))?;
    let temporary = dir.join(format!(".{}.partial", name.to_string_lossy()));
    let mut file = OpenOptions::new().write(true).create_new(true).mode(FILE_MODE).open(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, to)?;
    sync_dir(dir)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_copy_is_private_whole_and_digested() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("from");
        let bytes: Vec<u8> = (0..3 * COPY_CHUNK_BYTES + 17).map(|i| (i % 251) as u8).collect();
        std::fs::write(&from, &bytes).unwrap();
        let to = dir.path().join("to");
        let copied = AtomicU64::new(0);
        let (size, digest) = copy_file(&from, &to, &mut Pace::new(u64::MAX / 2), &copied).unwrap();
        assert_eq!(size, bytes.len() as u64);
        assert_eq!(copied.load(Ordering::Relaxed), size);
        assert_eq!(std::fs::read(&to).unwrap(), bytes);
        assert_eq!(digest, hex(&Sha256::digest(&bytes)));
        assert_eq!(digest_file(&to).unwrap(), (size, digest));
        assert_eq!(std::fs::metadata(&to).unwrap().permissions().mode() & 0o777, FILE_MODE);
        // Never over an existing file.
        assert!(copy_file(&from, &to, &mut Pace::new(1 << 30), &copied).is_err());
    }

    #[test]
    fn a_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real"), b"secret").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        assert!(digest_file(&dir.path().join("link")).is_err());
    }

    #[test]
    fn the_pace_holds_the_rate() {
        let mut pace = Pace::new(1_000_000);
        let started = Instant::now();
        for _ in 0..4 {
            pace.admit(50_000);
        }
        // 200 kB at 1 MB/s: 200 ms at least.
        assert!(started.elapsed() >= Duration::from_millis(200), "{:?}", started.elapsed());
    }

    #[test]
    fn an_atomic_write_leaves_no_partial_file() {
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("manifest.json");
        write_new_atomically(&to, b"{}").unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"{}");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1);
    }
}
