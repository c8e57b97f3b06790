//! The copy a backup and a restore make: file by file, each digested (SHA-256) as its bytes
//! pass, written private (files 0600, directories 0700), `fsync`ed, and paced to a byte rate
//! so that a backup does not take the disk from the server it runs beside.
//!
//! Owns: `Pace` (the rate, and the stop a server's shutdown sets), `copy_file`, `digest_file`,
//! `digest_file_paced`, `create_private_dir_new`, `sync_dir`.
//! Invariant: a source is opened without following a link and must be a regular file; a
//! target is created new (`O_EXCL`), never opened over an existing file; every byte read
//! counts in the `copied` counter the caller's progress reads. A pace never sleeps longer than
//! `STOP_CHECK_MS` without looking at its stop, and never lets a slow stretch be made up by
//! more than `BURST_MS` of full speed. The copy buffer is zeroed before it is freed (it held
//! the signing keys).
//! Deliberately absent: `O_DIRECT` and `copy_file_range` (the digest needs the bytes in user
//! space anyway, and the page cache keeps the server's reads warm).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use zeroize::Zeroize;

/// Bytes read and written at a time.
pub const COPY_CHUNK_BYTES: usize = 1024 * 1024;
/// Permission bits of every file a backup or a restore writes.
pub const FILE_MODE: u32 = 0o600;
/// Permission bits of every directory a backup or a restore makes.
pub const DIR_MODE: u32 = 0o700;

/// Longest a pace sleeps before it looks at its stop again, in milliseconds.
pub const STOP_CHECK_MS: u64 = 100;
/// Most time a copy that fell behind its rate (a slow disk, a busy machine) may then run at
/// full speed to catch up, in milliseconds: the rate holds over any window, not on average.
pub const BURST_MS: u64 = 1_000;

/// A byte rate: `admit(n)` sleeps until `n` more bytes fit in it, measured from the start;
/// and the stop that cuts the copy short (a server's shutdown).
pub struct Pace {
    bytes_per_s: u64,
    started: Instant,
    admitted: u64,
    stop: Arc<AtomicBool>,
}

impl Pace {
    pub fn new(bytes_per_s: u64) -> Pace {
        Pace::stoppable(bytes_per_s, Arc::default())
    }

    /// A pace whose `admit` fails (`Interrupted`) once `stop` is set.
    pub fn stoppable(bytes_per_s: u64, stop: Arc<AtomicBool>) -> Pace {
        assert!(bytes_per_s > 0, "a pace of zero bytes a second never ends");
        Pace { bytes_per_s, started: Instant::now(), admitted: 0, stop }
    }

    /// Counts `bytes` and sleeps while the copy is ahead of the rate; fails once stopped.
    pub fn admit(&mut self, bytes: u64) -> std::io::Result<()> {
        // Behind by more than a burst before these bytes: forgive the rest, so the catch-up
        // stays bounded.
        let burst = Duration::from_millis(BURST_MS);
        let due_before = self.due();
        if self.started.elapsed() > due_before + burst {
            self.started = Instant::now().checked_sub(due_before + burst).unwrap_or(self.started);
        }
        self.admitted = self.admitted.saturating_add(bytes);
        let mut ahead = self.due().saturating_sub(self.started.elapsed());
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "the server is stopping"));
            }
            if ahead.is_zero() {
                return Ok(());
            }
            let slice = ahead.min(Duration::from_millis(STOP_CHECK_MS));
            std::thread::sleep(slice);
            ahead -= slice;
        }
    }

    /// When the bytes admitted so far are due, from the start.
    fn due(&self) -> Duration {
        let due_us = u128::from(self.admitted) * 1_000_000 / u128::from(self.bytes_per_s);
        Duration::from_micros(u64::try_from(due_us).unwrap_or(u64::MAX))
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
    digest_file_paced(path, &mut Pace::new(u64::MAX), &AtomicU64::new(0))
}

/// As `digest_file`, its reads paced by `pace` and counted in `read`.
pub fn digest_file_paced(path: &Path, pace: &mut Pace, read: &AtomicU64) -> std::io::Result<(u64, String)> {
    pump(&mut open_source(path)?, None, pace, read)
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
    let result = loop {
        let read = match source.read(&mut buffer) {
            Ok(0) => break Ok((total, hex(&hasher.finalize()))),
            Ok(read) => read,
            Err(e) => break Err(e),
        };
        let chunk = &buffer[..read];
        hasher.update(chunk);
        if let Some(Err(e)) = target.as_mut().map(|t| t.write_all(chunk)) {
            break Err(e);
        }
        total += read as u64;
        copied.fetch_add(read as u64, Ordering::Relaxed);
        if let Err(e) = pace.admit(read as u64) {
            break Err(e);
        }
    };
    buffer.zeroize();
    result
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
            pace.admit(50_000).unwrap();
        }
        // 200 kB at 1 MB/s: 200 ms at least.
        assert!(started.elapsed() >= Duration::from_millis(200), "{:?}", started.elapsed());
    }

    #[test]
    fn a_pace_that_fell_behind_catches_up_for_one_burst_only() {
        let mut pace = Pace::new(1_000_000);
        // Three seconds behind (as after a stalled disk): only BURST_MS of it is made up.
        pace.started -= Duration::from_secs(3);
        let started = Instant::now();
        pace.admit(1_500_000).unwrap();
        // 1.5 MB at 1 MB/s with a 1 s burst: ~0.5 s of sleep, not none.
        assert!(started.elapsed() >= Duration::from_millis(400), "{:?}", started.elapsed());
    }

    #[test]
    fn a_stopped_pace_ends_within_a_check() {
        let stop = Arc::new(AtomicBool::new(false));
        let mut pace = Pace::stoppable(1, stop.clone());
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            stop.store(true, Ordering::Relaxed);
        });
        let started = Instant::now();
        // A day's worth of bytes at 1 B/s: ends when stopped.
        let err = pace.admit(86_400).unwrap_err();
        setter.join().unwrap();
        assert_eq!(err.kind(), std::io::ErrorKind::Interrupted);
        assert!(started.elapsed() < Duration::from_millis(150 + 3 * STOP_CHECK_MS), "{:?}", started.elapsed());
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
