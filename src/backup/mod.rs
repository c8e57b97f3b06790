//! Backup and restore of a node's data directory (issue #43): what an operator cannot rebuild —
//! API key digests and scopes, every account's quota usage, jobs and results, monitors and
//! their cursors, policies, feedback, webhook secrets (all in the store) and, beside the store,
//! the report-signing keys and the admin token.
//!
//! Data flow: `POST /v1/admin/backup {"to": DIR}` (or `xray backup --to DIR`, which sends it and
//! polls `GET /v1/admin/backup`) → `Backups::start` checks the target and that no backup runs,
//! answers at once, and hands the work to a thread of its own (`take`: a RocksDB checkpoint,
//! then a copy paced at `--backup-rate-kib-per-s`, every file digested, the manifest last).
//! `xray restore --from DIR --data-dir NEW` (`restore`) checks it all and makes `NEW`.
//!
//! Owns: `Backups` (one backup at a time, the last one's status, its progress in `/metrics`),
//! `BackupStatus` (the admin API's answer), `Refusal`.
//! Invariant: at most one backup runs per server; a second is refused (409) while it runs,
//! never queued; a panic in it ends it `FAILED`, never stuck `RUNNING`. Backups are written 0700/0600: they hold the signing key and the admin token.
//! The target is a new directory (an absolute path, outside the data directory), never an
//! existing one written into.
//! A server's stop ends a running backup within `copy::STOP_CHECK_MS` of the copy (`stop`): it
//! ends `FAILED` and removes what it wrote. An incremental backup (`base`) links the files an
//! earlier backup holds unchanged (`take`).
//! Deliberately absent: a cluster node's backup (the store is etcd: `etcdctl snapshot save`,
//! README "Backup and restore"); scheduling (a systemd timer, `deploy/`); retention of old
//! backups through the server (`xray backup --keep N` prunes beside the target: `retention`); cancelling a backup through the API (it is
//! bounded by its pace; a stop of the server ends it); the status across a restart (the
//! backups on disk, with their manifests, are the record).

pub mod copy;
pub mod manifest;
pub mod restore;
pub mod retention;
pub mod take;

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::Mutex;
use serde::Serialize;

use crate::store::Store;
pub use take::{BackupBase, BackupLayout, BackupOrder, BackupTarget};

/// Longest target path a backup accepts, in bytes (Linux's `PATH_MAX`).
pub const TARGET_PATH_BYTES_MAX: usize = 4096;
/// Most directories beside the target an incremental backup looks at for its base.
pub const BASE_CANDIDATES_MAX: usize = 1_000;
/// Most manifests an incremental backup reads, newest first, to find a base that checks out.
pub const BASE_MANIFESTS_READ_MAX: usize = 5;
/// Longest a directory name (the target's last component) may be, in bytes (Linux's `NAME_MAX`).
pub const TARGET_NAME_BYTES_MAX: usize = 255;
/// Longest the server's stop waits for a running backup to end, in milliseconds: a copy
/// stuck in a write to a hung disk is left behind (the process's exit ends it).
pub const STOP_WAIT_MS: u64 = 10_000;

/// Which earlier backup a new one shares unchanged files with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseChoice {
    /// None: every file is copied.
    Full,
    /// The backup in this directory (an absolute path; its manifest must check out).
    Dir(String),
    /// The newest backup beside the target (same parent directory) whose manifest checks out;
    /// none there: a full backup.
    Newest,
}

/// Where a backup is, as the admin API says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum BackupState {
    Running,
    Done,
    Failed,
}

/// The current or last backup (`GET /v1/admin/backup`, and the answer of `POST`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackupStatus {
    pub id: String,
    pub to: String,
    pub state: BackupState,
    pub started_at: String,
    pub ended_at: Option<String>,
    /// Bytes copied so far (all of them once `DONE`).
    pub bytes_copied: u64,
    /// Bytes the backup holds (known once the checkpoint is made; 0 before).
    pub bytes_total: u64,
    /// Of `bytesCopied`, the bytes linked from the base backup instead of written.
    pub bytes_shared: u64,
    /// The earlier backup whose unchanged files this one links (an incremental backup).
    pub base: Option<String>,
    /// Files the backup holds (once `DONE`).
    pub files: Option<usize>,
    /// The store's schema version, as the manifest records it (once `DONE`).
    pub schema_version: Option<u32>,
    /// Why it failed (`FAILED` only): the file and the system's words.
    pub error: Option<String>,
}

/// A backup's progress counters, written by its thread, read by the status and `/metrics`.
#[derive(Debug, Default)]
pub struct Progress {
    pub bytes_copied: AtomicU64,
    pub bytes_total: AtomicU64,
    pub bytes_shared: AtomicU64,
}

/// Counters over the server's life, for `/metrics`.
#[derive(Debug, Default)]
struct Counters {
    done: AtomicU64,
    failed: AtomicU64,
    last_success_ms: AtomicU64,
}

/// Why a backup is not started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// One runs; its status.
    Running(Box<BackupStatus>),
    /// This node's store is etcd.
    NotEmbedded,
    /// The target is not one a backup can be written to (the words say why).
    Target(String),
    /// The base is not a backup a new one can share files with (the words say why).
    Base(String),
    /// The server is stopping.
    Stopping,
    /// Something of this machine, not of the request, failed (the backup's thread could not be
    /// started; `/proc` is not mounted).
    Internal(String),
}

/// The backups of one server.
pub struct Backups {
    store: Option<Arc<dyn Store>>,
    layout: BackupLayout,
    bytes_per_s: u64,
    status: Arc<Mutex<Option<BackupStatus>>>,
    progress: Arc<Progress>,
    counters: Arc<Counters>,
    /// Set once by `stop`: no backup starts after it, the running one ends.
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Backups {
    /// `store` is `None` on a cluster node (its store is etcd); `bytes_per_s` paces the copy.
    pub fn new(store: Option<Arc<dyn Store>>, layout: BackupLayout, bytes_per_s: u64) -> Backups {
        assert!(bytes_per_s > 0, "the backup rate is checked at start");
        Backups {
            store,
            layout,
            bytes_per_s,
            status: Arc::new(Mutex::new(None)),
            progress: Arc::new(Progress::default()),
            counters: Arc::new(Counters::default()),
            stop: Arc::default(),
            thread: Mutex::new(None),
        }
    }

    /// The server's stop: refuses new backups, ends the running one (it removes what it wrote)
    /// and waits for its thread.
    pub fn stop(&self) {
        {
            // Under the status's lock: a start either ran before (its thread is joined here) or
            // sees the stop.
            let _slot = self.status.lock();
            self.stop.store(true, Ordering::Relaxed);
        }
        let Some(thread) = self.thread.lock().take() else { return };
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(STOP_WAIT_MS);
        while !thread.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if !thread.is_finished() {
            tracing::error!(wait_ms = STOP_WAIT_MS, "the running backup did not end (a hung disk?): left behind");
        } else if thread.join().is_err() {
            tracing::error!("the backup's thread panicked while stopping");
        }
    }

    /// The current or last backup, with the running one's progress.
    pub fn status(&self) -> Option<BackupStatus> {
        let mut status = self.status.lock().clone()?;
        if status.state == BackupState::Running {
            status.bytes_copied = self.progress.bytes_copied.load(Ordering::Relaxed);
            status.bytes_total = self.progress.bytes_total.load(Ordering::Relaxed);
            status.bytes_shared = self.progress.bytes_shared.load(Ordering::Relaxed);
        }
        Some(status)
    }

    /// Appends the backup series in the text exposition format (the admin's `/metrics`).
    pub fn render_metrics(&self, out: &mut String) {
        use std::fmt::Write;
        let running = self.status.lock().as_ref().is_some_and(|s| s.state == BackupState::Running);
        let series: [(&str, &str, &str, u64); 7] = [
            ("xray_backup_running", "gauge", "1 while a backup runs (one at a time).", u64::from(running)),
            (
                "xray_backup_bytes_copied",
                "gauge",
                "Bytes the running (or last) backup has copied.",
                self.progress.bytes_copied.load(Ordering::Relaxed),
            ),
            (
                "xray_backup_bytes_total",
                "gauge",
                "Bytes the running (or last) backup holds (0 until its checkpoint is made).",
                self.progress.bytes_total.load(Ordering::Relaxed),
            ),
            (
                "xray_backup_bytes_shared",
                "gauge",
                "Of the bytes copied, those the running (or last) backup linked from its base (incremental).",
                self.progress.bytes_shared.load(Ordering::Relaxed),
            ),
            (
                "xray_backups_done_total",
                "counter",
                "Backups that ended DONE since the server started.",
                self.counters.done.load(Ordering::Relaxed),
            ),
            (
                "xray_backups_failed_total",
                "counter",
                "Backups that ended FAILED since the server started.",
                self.counters.failed.load(Ordering::Relaxed),
            ),
            (
                "xray_backup_last_success_timestamp_seconds",
                "gauge",
                "Unix time the last DONE backup ended (0: none since the server started).",
                self.counters.last_success_ms.load(Ordering::Relaxed) / 1000,
            ),
        ];
        for (name, kind, help, value) in series {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
        }
    }

    /// Starts a backup into the new directory `to`, sharing unchanged files with `base`;
    /// answers at once with its `RUNNING` status.
    pub fn start(&self, to: &str, base: &BaseChoice, now_ms: u64) -> Result<BackupStatus, Refusal> {
        let store = self.store.clone().ok_or(Refusal::NotEmbedded)?;
        // Refused before any filesystem work; that work (a hung mount can block it) runs
        // without the lock, and both checks are made again once it is taken back.
        self.startable(&self.status.lock())?;
        let target = self.check_target(to)?;
        let find_newest = *base == BaseChoice::Newest;
        let base = resolve_base(base)?;
        // Held to the end: one start at a time, and a stop sees it or is seen.
        let mut slot = self.status.lock();
        self.startable(&slot)?;
        let status = BackupStatus {
            id: format!("bk_{now_ms}"),
            to: target.shown.display().to_string(),
            state: BackupState::Running,
            started_at: crate::clock::rfc3339_ms(now_ms),
            ended_at: None,
            bytes_copied: 0,
            bytes_total: 0,
            bytes_shared: 0,
            base: base.as_ref().map(|b| b.dir.display().to_string()),
            files: None,
            schema_version: None,
            error: None,
        };
        let mut order = BackupOrder {
            id: status.id.clone(),
            target,
            base,
            created_at_ms: now_ms,
            schema_version: crate::store::SCHEMA_VERSION,
            bytes_per_s: self.bytes_per_s,
            stop: self.stop.clone(),
        };
        for counter in [&self.progress.bytes_copied, &self.progress.bytes_total, &self.progress.bytes_shared] {
            counter.store(0, Ordering::Relaxed);
        }
        let (shared, progress, counters, layout) =
            (self.status.clone(), self.progress.clone(), self.counters.clone(), self.layout.clone());
        let thread = std::thread::Builder::new()
            .name("xray-backup".into())
            .spawn(move || {
                // A panic must not leave the status RUNNING (every later backup would be 409).
                let taken = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    if find_newest {
                        // Here, not on the admin thread: it reads a directory and manifests.
                        order.base = newest_beside(&order.target);
                        let found = order.base.as_ref().map(|b| b.dir.display().to_string());
                        if let Some(status) = shared.lock().as_mut() {
                            status.base = found;
                        }
                    }
                    take::take(&*store, &layout, &order, &progress)
                }));
                let outcome = taken.unwrap_or_else(|_| Err(take::PANICKED.to_owned()));
                finish(&shared, &progress, &counters, outcome);
            })
            .map_err(|e| Refusal::Internal(format!("starting the backup's thread: {e}")))?;
        *self.thread.lock() = Some(thread);
        *slot = Some(status.clone());
        tracing::info!(id = %status.id, to = %status.to, base = ?status.base, "backup started");
        Ok(status)
    }

    /// Whether a backup may start now, as the status `slot` says: not while the server stops,
    /// nor while another runs.
    fn startable(&self, slot: &Option<BackupStatus>) -> Result<(), Refusal> {
        if self.stop.load(Ordering::Relaxed) {
            return Err(Refusal::Stopping);
        }
        match slot.as_ref().filter(|s| s.state == BackupState::Running) {
            Some(running) => Err(Refusal::Running(Box::new(running.clone()))),
            None => Ok(()),
        }
    }

    /// An absolute path whose parent exists, that does not exist yet, outside the data
    /// directory; held by its parent's descriptor from here on.
    fn check_target(&self, to: &str) -> Result<BackupTarget, Refusal> {
        let refuse = |why: String| Err(Refusal::Target(why));
        let path = Path::new(to);
        if to.is_empty() || to.len() > TARGET_PATH_BYTES_MAX || !path.is_absolute() {
            return refuse(format!("{to:?} is not an absolute path (the server resolves it, not the client)"));
        }
        if path.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
            return refuse(format!("{to}: no .. in the target"));
        }
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return refuse(format!("{to}: names no directory to make"));
        };
        if name.len() > TARGET_NAME_BYTES_MAX {
            return refuse(format!("{to}: a directory name of at most {TARGET_NAME_BYTES_MAX} bytes"));
        }
        let parent = match open_dir(parent) {
            Ok(parent) => parent,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
                return refuse(format!("{to}: its parent directory must exist"));
            }
            Err(e) => return refuse(format!("{to}: its parent directory: {e}")),
        };
        let target = BackupTarget { shown: path.to_path_buf(), parent: Arc::new(parent), name: name.to_owned() };
        // Where the held parent really is (its descriptor's path), not where `to` pointed.
        let held = format!("/proc/self/fd/{}", target.parent.as_raw_fd());
        let parent_real =
            std::fs::read_link(&held).map_err(|e| Refusal::Internal(format!("{held} (is /proc mounted?): {e}")))?;
        if std::fs::symlink_metadata(target.path()).is_ok() {
            return refuse(format!("{to} exists: a backup goes into a new directory"));
        }
        if within(&parent_real, &self.layout.data_dir) {
            return refuse(format!("{to} is inside the data directory: put backups on another disk"));
        }
        Ok(target)
    }
}

/// `dir` or one of its ancestors is `data_dir` — by device and inode, so another path to it
/// (a link, a bind mount) is seen too.
fn within(dir: &Path, data_dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(data) = std::fs::metadata(data_dir) else { return false };
    dir.ancestors().any(|a| std::fs::metadata(a).is_ok_and(|m| (m.dev(), m.ino()) == (data.dev(), data.ino())))
}

/// Opens the directory `path` (following links: an operator's backup disk may be mounted
/// through one) to hold it.
fn open_dir(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC).open(path)
}

/// The base backup `choice` names, its manifest read and checked (`Newest` is looked for on the
/// backup's thread).
fn resolve_base(choice: &BaseChoice) -> Result<Option<BackupBase>, Refusal> {
    match choice {
        BaseChoice::Full | BaseChoice::Newest => Ok(None),
        BaseChoice::Dir(dir) => {
            let path = Path::new(dir);
            if dir.len() > TARGET_PATH_BYTES_MAX || !path.is_absolute() {
                return Err(Refusal::Base(format!("{dir:?} is not an absolute path")));
            }
            let manifest = manifest::BackupManifest::read(path)
                .map_err(|why| Refusal::Base(format!("{why}: not a base for an incremental backup")))?;
            Ok(Some(BackupBase { dir: path.to_path_buf(), manifest }))
        }
    }
}

/// The newest backup in the target's parent directory (by its manifest's modification time)
/// whose manifest checks out, read through the held parent; `None` when there is none, or
/// when the directory holds more than `BASE_CANDIDATES_MAX` entries (then a full backup).
fn newest_beside(target: &BackupTarget) -> Option<BackupBase> {
    use std::os::unix::ffi::OsStrExt;
    let (parent, held) =
        (target.shown.parent()?, PathBuf::from(format!("/proc/self/fd/{}", target.parent.as_raw_fd())));
    let entries: Vec<std::fs::DirEntry> =
        std::fs::read_dir(&held).ok()?.take(BASE_CANDIDATES_MAX + 1).filter_map(Result::ok).collect();
    if entries.len() > BASE_CANDIDATES_MAX {
        tracing::warn!(dir = %parent.display(), max = BASE_CANDIDATES_MAX, "too many entries to find the newest backup: a full backup");
        return None;
    }
    let mut candidates: Vec<(std::time::SystemTime, std::ffi::OsString)> = entries
        .iter()
        .filter(|e| !e.file_name().as_bytes().starts_with(b"."))
        .filter_map(|e| {
            let manifest = std::fs::symlink_metadata(e.path().join(manifest::MANIFEST_FILE_NAME)).ok()?;
            Some((manifest.modified().ok()?, e.file_name()))
        })
        .collect();
    candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
    candidates.into_iter().take(BASE_MANIFESTS_READ_MAX).find_map(|(_, name)| {
        let manifest = manifest::BackupManifest::read(&held.join(&name)).ok()?;
        Some(BackupBase { dir: parent.join(name), manifest })
    })
}

fn finish(
    shared: &Mutex<Option<BackupStatus>>,
    progress: &Progress,
    counters: &Counters,
    outcome: Result<manifest::BackupManifest, String>,
) {
    let now_ms = crate::clock::now_unix_ms();
    let mut slot = shared.lock();
    let Some(status) = slot.as_mut() else { return };
    status.ended_at = Some(crate::clock::rfc3339_ms(now_ms));
    status.bytes_copied = progress.bytes_copied.load(Ordering::Relaxed);
    status.bytes_total = progress.bytes_total.load(Ordering::Relaxed);
    status.bytes_shared = progress.bytes_shared.load(Ordering::Relaxed);
    match outcome {
        Ok(manifest) => {
            status.state = BackupState::Done;
            status.files = Some(manifest.files.len());
            status.schema_version = Some(manifest.schema_version);
            counters.done.fetch_add(1, Ordering::Relaxed);
            counters.last_success_ms.store(now_ms, Ordering::Relaxed);
            tracing::info!(id = %status.id, bytes = manifest.total_bytes, files = manifest.files.len(), "backup done");
        }
        Err(why) => {
            status.state = BackupState::Failed;
            tracing::error!(id = %status.id, error = %why, "backup failed");
            status.error = Some(why);
            counters.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}
