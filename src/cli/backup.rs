//! `xray backup` (online, through a running server's admin listener: start, then follow it to
//! its end) and `xray restore` (offline: `backup::restore` makes a new data directory).
//!
//! Owns: the two commands' flags and their wiring. Runs on the main thread of the `xray`
//! process; `backup` on a current-thread tokio runtime.
//! Invariant: `backup` waits at most `--wait-s` (the server's backup goes on past it, and the
//! command says so); it exits non-zero unless the backup ended `DONE`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::Value;

use super::{print_json, AdminArgs};
use crate::admin::client::AdminClient;
use crate::ledger::runtime;

/// How long `xray backup` waits for the backup by default, in seconds.
const BACKUP_WAIT_S_DEFAULT: u64 = 3_600;
/// How often `xray backup` asks how the backup goes, in milliseconds.
const BACKUP_POLL_MS: u64 = 200;

#[derive(Args)]
pub struct BackupArgs {
    #[command(flatten)]
    admin: AdminArgs,
    /// The new directory to write the backup into: made by the server, so a path on its
    /// machine, outside its data directory, whose parent exists (relative: to this directory).
    #[arg(long)]
    to: PathBuf,
    /// Incremental: an earlier backup (a directory with its manifest.json) whose unchanged files
    /// the new one hard-links instead of copying (same file system; each backup stays whole).
    #[arg(long, conflicts_with = "incremental")]
    base: Option<PathBuf>,
    /// Incremental, from the newest backup beside --to (the same parent directory) whose
    /// manifest checks out; a full backup when there is none.
    #[arg(long)]
    incremental: bool,
    /// Once the backup is DONE, keep it and the newest N-1 other finished backups beside --to
    /// and remove the older ones (and unfinished ones a day old); only directories that are
    /// backups are touched. Reads that directory here: not with --admin-url.
    #[arg(long, conflicts_with = "admin_url", value_parser = clap::value_parser!(u64).range(1..=crate::backup::retention::KEEP_MAX as u64))]
    keep: Option<u64>,
    /// Seconds to wait for the backup to end (the server goes on with it past them).
    #[arg(long, default_value_t = BACKUP_WAIT_S_DEFAULT)]
    wait_s: u64,
}

#[derive(Args)]
pub struct RestoreArgs {
    /// The backup: a directory `xray backup` wrote (with its manifest.json).
    #[arg(long)]
    from: PathBuf,
    /// The new data directory to make (it must not exist; its parent must).
    #[arg(long)]
    data_dir: PathBuf,
}

/// Starts a backup, follows it to its end and prints its last status.
pub fn run_backup(args: &BackupArgs) -> Result<(), String> {
    let to = absolute_utf8("--to", &args.to)?;
    let base = args.base.as_deref().map(|b| absolute_utf8("--base", b)).transpose()?;
    let status = runtime()?.block_on(async {
        let client = AdminClient::locate(&args.admin.data_dir, args.admin.admin_url.as_deref())?;
        let started = client.start_backup(&to, base.as_deref(), args.incremental).await?;
        let id = started["id"].as_str().ok_or("the server's answer names no backup id")?.to_owned();
        let deadline = Instant::now().checked_add(Duration::from_secs(args.wait_s)).ok_or("--wait-s is too large")?;
        loop {
            tokio::time::sleep(Duration::from_millis(BACKUP_POLL_MS)).await;
            let status = client.backup_status().await?;
            if status["id"].as_str() != Some(id.as_str()) {
                return Err(format!("the server's last backup is no longer {id} (was it restarted?)"));
            }
            match status["state"].as_str() {
                Some("DONE") => return Ok(status),
                Some("FAILED") => {
                    return Err(format!("backup {id} failed: {}", status["error"].as_str().unwrap_or("?")))
                }
                _ if Instant::now() >= deadline => {
                    return Err(format!(
                        "backup {id} still runs after {} s: `GET /v1/admin/backup` follows it",
                        args.wait_s
                    ))
                }
                _ => {}
            }
        }
    })?;
    let Some(keep) = args.keep else { return print_json(&status) };
    let parent = std::path::Path::new(&to).parent().ok_or("--to names no parent directory")?;
    let keep = usize::try_from(keep).map_err(|_| "--keep is too large")?;
    let taken = std::path::Path::new(&to).file_name().ok_or("--to names no directory")?;
    let pruned = crate::backup::retention::prune(parent, taken, keep, std::time::SystemTime::now())?;
    let shown = |paths: &[PathBuf]| paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>();
    let mut out = status;
    out["pruned"] = serde_json::json!({"backups": shown(&pruned.backups), "leftovers": shown(&pruned.leftovers)});
    print_json(&out)
}

/// `path` made absolute against this directory (the server resolves what it is sent), as UTF-8.
fn absolute_utf8(flag: &str, path: &std::path::Path) -> Result<String, String> {
    let absolute = std::path::absolute(path).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    absolute.to_str().map(str::to_owned).ok_or_else(|| format!("{flag} {}: not UTF-8", absolute.display()))
}

/// Restores a backup into a new data directory and prints what it restored.
pub fn run_restore(args: &RestoreArgs) -> Result<(), String> {
    use crate::serve::{BACKED_UP_FILES, DB_DIR_NAME};
    let manifest = crate::backup::restore::restore(&args.from, &args.data_dir, DB_DIR_NAME, &BACKED_UP_FILES)?;
    let summary: Value = serde_json::json!({
        "restored": args.data_dir.display().to_string(),
        "backup": manifest.id,
        "createdAt": manifest.created_at,
        "schemaVersion": manifest.schema_version,
        "engine": manifest.engine,
        "files": manifest.files.len(),
        "bytes": manifest.total_bytes,
        "note": format!(
            "the state as of {}: API keys revoked and signing keys rotated after it are as they were then — \
             revoke them again (xray keys revoke) and rotate (xray signing-keys rotate) if that happened",
            manifest.created_at
        ),
    });
    print_json(&summary)
}
