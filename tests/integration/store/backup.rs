//! Backup and restore with the real binary (issue #43): the drill — a backup taken through
//! `xray backup` while clients keep admitting jobs and scans and a monitor watches a moving
//! ledger, then kill -9, `xray restore` into a fresh directory, a start on it: every job
//! acknowledged before the backup began is there (READY, or re-run to READY), none sent after
//! it ended is, usage is the units of the jobs it holds and of the scans answered before it,
//! every key and the signing keys are kept (reports served before are served byte for byte
//! after and verify with the published key set), and the monitor resumes from its cursors (its
//! event before the backup kept, not made again; the ledger's next change one new event). Also: one backup at a time (409),
//! refused targets (400), `/metrics`, the backup's permissions, and restores that refuse a
//! partial, a corrupted, a newer-schema backup or an existing target — writing nothing.
//!
//! Every wait is bounded; servers bind port 0.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;
use xray::signing::{verify_report, ReportType};

use crate::api::monitor_events::{timeline_spec, timeline_wallet};
use crate::api::serve_binary::{cli, log_lines, start, start_logging, Server};
use crate::api::support::{demo_tx, get, post, raw, scan_body, Reply, API, READY_WALLETS, SCAN_PATH};

/// How long a job may take to reach READY after a (re)start.
const SETTLE: Duration = Duration::from_secs(60);

fn admin_of(data: &Path) -> (SocketAddr, String) {
    let addr = std::fs::read_to_string(data.join("admin.addr")).expect("admin.addr");
    let token = std::fs::read_to_string(data.join("admin.token")).expect("admin.token");
    (addr.trim().parse().expect("admin address"), token.trim().to_owned())
}

fn admin(data: &Path, method: &str, path: &str, body: &str) -> Reply {
    let (addr, token) = admin_of(data);
    let bearer = format!("Bearer {token}");
    raw(addr, method, path, &[("authorization", &bearer), ("content-type", "application/json")], body)
}

fn metric(data: &Path, name: &str) -> u64 {
    let text = String::from_utf8(admin(data, "GET", "/metrics", "").raw_body).expect("UTF-8");
    let line = text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name} in {text}"));
    line.rsplit(' ').next().and_then(|v| v.parse().ok()).expect("a number")
}

/// Polls the analysis `id` until it is READY or FAILED; its last reply.
fn settled(server: &Server, key: &str, id: &str) -> Reply {
    let deadline = Instant::now() + SETTLE;
    loop {
        let reply = get(server.api, &format!("{API}/intelligence/analysis/{id}?wait=5"), key);
        let status = reply.body["data"]["status"].as_str().unwrap_or("").to_owned();
        if reply.status != 200 || status == "READY" || status == "FAILED" {
            return reply;
        }
        assert!(Instant::now() < deadline, "{id} still {status}");
    }
}

fn analysis_id(reply: &Reply) -> String {
    reply.body["data"]["analysisId"].as_str().unwrap_or_else(|| panic!("{reply:?}")).to_owned()
}

/// `POST /v1/admin/backup` with `body` is refused `400`, naming `field`, its message saying `why`.
fn refused_naming(data: &Path, body: &str, field: &str, why: &str) {
    let refused = admin(data, "POST", "/v1/admin/backup", body);
    assert_eq!((refused.status, &refused.body["error"]["details"]["field"]), (400, &Value::from(field)), "{refused:?}");
    assert!(refused.body["error"]["message"].as_str().is_some_and(|m| m.contains(why)), "{why}: {refused:?}");
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("metadata").permissions().mode() & 0o777
}

/// What the drill's load thread saw acknowledged: each id with the instants its request was
/// sent and its answer came back.
type Acked = Arc<Mutex<Vec<(String, Instant, Instant)>>>;

/// The drill's load: back to back, a new durable job (refresh) and a pre-sign scan, until
/// `stop`; the 202s land in `jobs`, the 200s in `scans`.
fn drill_load(api: SocketAddr, key: String, stop: Arc<AtomicBool>, jobs: Acked, scans: Acked) -> JoinHandle<()> {
    let transaction = demo_tx("approve");
    std::thread::spawn(move || {
        let mut n = 0usize;
        while !stop.load(Ordering::Relaxed) {
            let wallet = READY_WALLETS[n % READY_WALLETS.len()];
            let body = format!(r#"{{"wallet":"{wallet}","refresh":true}}"#);
            let sent = Instant::now();
            let reply = post(api, &format!("{API}/intelligence/wallet"), &key, &body);
            if reply.status == 202 {
                jobs.lock().expect("lock").push((analysis_id(&reply), sent, Instant::now()));
            }
            let sent = Instant::now();
            let scanned = post(api, SCAN_PATH, &key, &scan_body(&transaction, None));
            if scanned.status == 200 {
                scans.lock().expect("lock").push((format!("scan {n}"), sent, Instant::now()));
            }
            n += 1;
            std::thread::sleep(Duration::from_millis(20));
        }
    })
}

/// Waits (bounded) until `acked` holds at least `n`.
fn admitted(acked: &Acked, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while acked.lock().expect("lock").len() < n {
        assert!(Instant::now() < deadline, "the load admitted fewer than {n} in 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Seconds after the drill's start that its timeline's second event (dust to a watched wallet)
/// happens: after the backup, so that only the restored server can see it.
const DRILL_DUST_AT_S: u64 = 15;
const MONITORS: &str = "/v1/developer/monitors";

/// A poll-only monitor of the timeline's delegate and dust wallets (`dustLamports: 0`: the dust
/// is an event), in an account of its own (its re-analyses are charged there, not to the
/// account whose usage the drill checks).
fn drill_monitor(api: SocketAddr, data: &Path) -> (String, String) {
    let watcher = cli(
        data,
        "keys",
        &["create", "--name", "watcher", "--scopes", "monitor:read,monitor:write,wallet:analyze,analysis:read"],
    )
    .expect("a watcher key");
    let key = watcher["key"].as_str().expect("secret").to_owned();
    let wallets = [timeline_wallet("timeline_delegate"), timeline_wallet("timeline_dust")];
    let body = serde_json::json!({"wallets": wallets, "minSeverity": "low", "dustLamports": 0});
    let created = post(api, MONITORS, &key, &body.to_string());
    assert_eq!(created.status, 201, "{created:?}");
    (key, created.body["data"]["id"].as_str().expect("monitor id").to_owned())
}

/// The monitor's events, once there are at least `n` (bounded).
fn events_at_least(api: SocketAddr, key: &str, monitor: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let reply = get(api, &format!("{MONITORS}/{monitor}/events?limit=100"), key);
        assert_eq!(reply.status, 200, "{reply:?}");
        let events = reply.body["data"]["events"].as_array().expect("events").clone();
        if events.len() >= n {
            return events;
        }
        assert!(Instant::now() < deadline, "{} of {n} events: {events:?}", events.len());
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_drill_a_backup_under_load_restores_everything_acknowledged_before_it() {
    let root = tempfile::tempdir().expect("tempdir");
    let data = root.path().join("data");
    let start_ms = xray::clock::now_unix_ms() + 2_000;
    let dust_at_ms = start_ms + DRILL_DUST_AT_S * 1000;
    let timeline =
        timeline_spec(root.path(), start_ms, &[("timeline_delegate", 1), ("timeline_dust", DRILL_DUST_AT_S)])
            .to_string();
    let flags =
        ["--listener-threads", "2", "--compute-threads", "1", "--ledger", &timeline, "--monitor-interval-s", "1"];
    let mut server = start(&data, &flags);
    let key = server.first_key.clone().expect("first key");
    let reader = cli(&data, "keys", &["create", "--name", "reader", "--scopes", "usage:read,analysis:read"])
        .expect("a second key");
    let reader_key = reader["key"].as_str().expect("secret").to_owned();
    let (watcher_key, monitor) = drill_monitor(server.api, &data);

    // Before: READY analyses, with their signed reports, the published key set, and the
    // monitor's first event (the delegate approval, a second into the timeline).
    let mut before = Vec::new();
    for wallet in &READY_WALLETS[..4] {
        let id = analysis_id(&post(
            server.api,
            &format!("{API}/intelligence/wallet"),
            &key,
            &format!(r#"{{"wallet":"{wallet}"}}"#),
        ));
        let ready = settled(&server, &key, &id);
        assert_eq!(ready.body["data"]["status"], "READY", "{ready:?}");
        assert!(ready.body["data"]["signature"].is_object(), "a READY report is signed: {ready:?}");
        before.push((id, ready.body["data"].clone()));
    }
    let keys_before = raw(server.api, "GET", "/.well-known/xray-keys.json", &[], "").body;
    let first_event = events_at_least(server.api, &watcher_key, &monitor, 1).remove(0);

    // Load: jobs and scans admitted back to back while the backup runs.
    let (jobs, scans): (Acked, Acked) = Default::default();
    let stop = Arc::new(AtomicBool::new(false));
    let load = drill_load(server.api, key.clone(), stop.clone(), jobs.clone(), scans.clone());
    admitted(&jobs, 3);
    admitted(&scans, 3);
    let backup_dir = root.path().join("backup");
    let began = Instant::now();
    let done = cli(&data, "backup", &["--wait-s", "60", "--to", backup_dir.to_str().expect("utf-8")]).expect("backup");
    let ended = Instant::now();
    assert!(
        xray::clock::now_unix_ms() < dust_at_ms,
        "the drill's premise: the backup ended before the timeline's dust ({DRILL_DUST_AT_S} s in)"
    );
    let so_far = jobs.lock().expect("lock").len();
    admitted(&jobs, so_far + 3);
    stop.store(true, Ordering::Relaxed);
    load.join().expect("load thread");
    assert_eq!(done["state"], "DONE", "{done}");
    assert!(done["bytesCopied"].as_u64().is_some_and(|n| n > 0) && done["bytesCopied"] == done["bytesTotal"], "{done}");
    assert_eq!((metric(&data, "xray_backups_done_total"), metric(&data, "xray_backup_running")), (1, 0));
    assert!(metric(&data, "xray_backup_last_success_timestamp_seconds") > 0);

    // The backup: private, with its manifest naming the store, the token and the signing keys.
    assert_eq!(mode(&backup_dir), 0o700);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(backup_dir.join("manifest.json")).expect("manifest")).expect("JSON");
    let paths: Vec<&str> =
        manifest["files"].as_array().expect("files").iter().filter_map(|f| f["path"].as_str()).collect();
    for needed in ["db/CURRENT", "admin.token", "signing-keys.json"] {
        assert!(paths.contains(&needed), "{needed} in {paths:?}");
    }
    for path in &paths {
        assert_eq!(mode(&backup_dir.join(path)), 0o600, "{path}");
    }
    assert_eq!(manifest["schemaVersion"], xray::store::SCHEMA_VERSION);

    server.kill_9();
    let restored_dir = root.path().join("restored");
    let restored =
        cli(&restored_dir, "restore", &["--from", backup_dir.to_str().expect("utf-8")]).expect("xray restore");
    assert_eq!(restored["files"].as_u64(), Some(paths.len() as u64), "{restored}");
    let again = cli(&restored_dir, "restore", &["--from", backup_dir.to_str().expect("utf-8")]);
    assert!(again.as_ref().is_err_and(|e| e.contains("exists")), "{again:?}");
    assert_eq!((mode(&restored_dir), mode(&restored_dir.join("admin.token"))), (0o700, 0o600));

    for path in &paths {
        assert_eq!(mode(&restored_dir.join(path)), 0o600, "restored {path}");
    }
    let server = start(&restored_dir, &flags);
    assert_eq!(server.first_key, None, "the restored store has its keys: no new first key");
    assert_eq!(get(server.api, &format!("{API}/status"), &reader_key).status, 200, "the second key works");
    let keys_after = raw(server.api, "GET", "/.well-known/xray-keys.json", &[], "").body;
    assert_eq!(keys_after, keys_before, "same signing keys");
    for (id, data_before) in &before {
        let reply = get(server.api, &format!("{API}/intelligence/analysis/{id}"), &key);
        assert_eq!(&reply.body["data"], data_before, "{id} is served as it was, signature included");
        verify_report(&reply.body["data"], &keys_after, ReportType::Analysis)
            .unwrap_or_else(|e| panic!("{id}, signed before the backup, verifies after the restore: {e:?}"));
    }
    let ready = drill_jobs_kept(&server, &key, &jobs, before.len() as u64, (began, ended));
    drill_usage(&server, &key, ready, &scans, (began, ended));

    // The monitor resumes from its cursors: the event seen before the backup is neither lost
    // nor made again, the dust that came after it is one new event; both verify.
    let events = events_at_least(server.api, &watcher_key, &monitor, 2);
    std::thread::sleep(Duration::from_secs(3));
    let events_now = events_at_least(server.api, &watcher_key, &monitor, 2);
    assert_eq!(events_now.len(), 2, "exactly two events: {events_now:?}");
    assert_eq!(events[0]["id"], first_event["id"], "the event made before the backup kept its id");
    assert_eq!(events[1]["wallet"], timeline_wallet("timeline_dust"), "{events:?}");
    for event in &events {
        verify_report(event, &keys_after, ReportType::MonitorEvent)
            .unwrap_or_else(|e| panic!("a monitor event verifies after the restore: {e:?} {event}"));
    }
}

/// Every job acknowledged before the backup began is kept (READY after the restart), none sent
/// after it ended is; returns the READY jobs the restored store holds, `before_ready` included.
fn drill_jobs_kept(server: &Server, key: &str, jobs: &Acked, before_ready: u64, window: (Instant, Instant)) -> u64 {
    let (began, ended) = window;
    let jobs = jobs.lock().expect("lock").clone();
    let (mut kept, mut ready) = (0u64, before_ready);
    for (id, sent, at) in &jobs {
        let reply = settled(server, key, id);
        if *at < began {
            assert_eq!(reply.status, 200, "{id}, acknowledged before the backup began, is kept: {reply:?}");
        }
        if *sent > ended {
            assert_eq!(reply.status, 404, "{id}, sent after the backup ended, is not in it: {reply:?}");
        }
        if reply.status == 200 {
            kept += 1;
            assert_eq!(reply.body["data"]["status"], "READY", "{reply:?}");
            ready += 1;
        }
    }
    assert!(jobs.iter().any(|(_, _, at)| *at < began), "the load admitted work before the backup");
    assert!(jobs.iter().any(|(_, sent, _)| *sent > ended), "and after it");
    eprintln!(
        "drill: {} jobs acknowledged under load ({} before the backup began, {} sent after it ended), {kept} kept; \
         backup in {:?}",
        jobs.len(),
        jobs.iter().filter(|(_, _, at)| *at < began).count(),
        jobs.iter().filter(|(_, sent, _)| *sent > ended).count(),
        ended - began
    );
    ready
}

/// Usage is the units of the READY jobs the store holds plus the scans answered before the
/// backup began — and at most those sent before it ended (a scan answered while the checkpoint
/// was made may be on either side of it).
fn drill_usage(server: &Server, key: &str, ready: u64, scans: &Acked, window: (Instant, Instant)) {
    let (began, ended) = window;
    let scans = scans.lock().expect("lock").clone();
    let surely = scans.iter().filter(|(_, _, at)| *at < began).count() as u64;
    let maybe = scans.iter().filter(|(_, sent, _)| *sent < ended).count() as u64;
    assert!(surely > 0, "scans were answered before the backup");
    let usage = get(server.api, &format!("{API}/usage"), key);
    let quota = &usage.body["data"]["quota"];
    let used = quota["used"].as_u64().expect("used");
    assert_eq!(quota["reserved"].as_u64(), Some(0), "{usage:?}");
    assert!(
        (ready + surely..=ready + maybe).contains(&used),
        "usage {used} is {ready} READY jobs + {surely}..={maybe} scans: {usage:?}"
    );
}

#[test]
fn one_backup_at_a_time_and_only_into_a_new_directory_outside_the_data() {
    let root = tempfile::tempdir().expect("tempdir");
    let data = root.path().join("data");
    // 16 KiB a second: the backup of even a fresh store runs for seconds.
    let _server = start(&data, &SLOW_BACKUP);
    let status = admin(&data, "GET", "/v1/admin/backup", "");
    assert_eq!(status.status, 404, "no backup yet: {status:?}");
    let to = root.path().join("slow");
    let began = Instant::now();
    let first = admin(&data, "POST", "/v1/admin/backup", &format!(r#"{{"to":"{}"}}"#, to.display()));
    assert_eq!((first.status, &first.body["data"]["state"]), (202, &Value::from("RUNNING")), "{first:?}");
    let second = admin(&data, "POST", "/v1/admin/backup", &format!(r#"{{"to":"{}/other"}}"#, root.path().display()));
    assert_eq!((second.status, &second.body["error"]["code"]), (409, &Value::from("CONFLICT")), "{second:?}");
    assert_eq!(second.body["error"]["details"]["reason"], "backup_running", "{second:?}");
    assert_eq!(metric(&data, "xray_backup_running"), 1);
    let unknown = admin(&data, "POST", "/v1/admin/backup", r#"{"to":"/x","rate":1}"#);
    assert_eq!(unknown.status, 400, "{unknown:?}");
    let deadline = Instant::now() + Duration::from_secs(120);
    let done = loop {
        let status = admin(&data, "GET", "/v1/admin/backup", "");
        if status.body["data"]["state"] != "RUNNING" {
            break status;
        }
        assert!(status.body["data"]["bytesTotal"].as_u64().is_some(), "{status:?}");
        assert!(Instant::now() < deadline, "the backup at 16 KiB/s took over two minutes: {status:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(done.body["data"]["state"], "DONE", "{done:?}");
    assert!(to.join("manifest.json").is_file());
    // Targets are judged once no backup runs (a second one is refused before its target is read).
    for (body, why) in [
        (r#"{"to":"relative/dir"}"#.to_owned(), "absolute"),
        (format!(r#"{{"to":"{}"}}"#, root.path().display()), "exists"),
        (format!(r#"{{"to":"{}/no/such/parent"}}"#, root.path().display()), "parent"),
        (format!(r#"{{"to":"{}/inside"}}"#, data.display()), "data directory"),
    ] {
        refused_naming(&data, &body, "to", why);
    }
    // The pace held: its bytes at 16 KiB/s, less the one second a copy may catch up.
    let total = done.body["data"]["bytesTotal"].as_u64().expect("bytesTotal");
    let least = Duration::from_secs_f64(total as f64 / 16_384.0 - 1.0);
    assert!(began.elapsed() >= least, "{total} bytes in {:?}: faster than 16 KiB/s", began.elapsed());
}

/// READY analyses of `wallets`, their reports as served.
fn ready_reports(server: &Server, key: &str, wallets: &[&str]) -> Vec<(String, Value)> {
    wallets
        .iter()
        .map(|wallet| {
            let id = analysis_id(&post(
                server.api,
                &format!("{API}/intelligence/wallet"),
                key,
                &format!(r#"{{"wallet":"{wallet}"}}"#),
            ));
            let ready = settled(server, key, &id);
            assert_eq!(ready.body["data"]["status"], "READY", "{ready:?}");
            (id, ready.body["data"].clone())
        })
        .collect()
}

/// `(path, sha256)` of every file a backup's manifest lists.
fn manifest_files(dir: &Path) -> Vec<(String, String)> {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest")).expect("JSON");
    let files = manifest["files"].as_array().expect("files").iter();
    files
        .map(|f| (f["path"].as_str().expect("path").to_owned(), f["sha256"].as_str().expect("sha").to_owned()))
        .collect()
}

#[test]
fn an_incremental_backup_links_what_is_unchanged_and_stands_alone() {
    use std::os::unix::fs::MetadataExt;
    let root = tempfile::tempdir().expect("tempdir");
    let data = root.path().join("data");
    let backups = root.path().join("backups");
    std::fs::create_dir(&backups).expect("mkdir");
    let flags = ["--listener-threads", "1", "--compute-threads", "1"];
    let mut server = start(&data, &flags);
    let key = server.first_key.clone().expect("first key");
    let mut reports = ready_reports(&server, &key, &READY_WALLETS[..4]);
    let full = backups.join("1-full");
    let first = cli(&data, "backup", &["--wait-s", "60", "--to", full.to_str().expect("utf-8")]).expect("full");
    assert_eq!((first["base"].clone(), first["bytesShared"].as_u64()), (Value::Null, Some(0)), "{first}");
    reports.extend(ready_reports(&server, &key, &READY_WALLETS[4..8]));

    let next = backups.join("2-next");
    let done = cli(&data, "backup", &["--wait-s", "60", "--incremental", "--to", next.to_str().expect("utf-8")])
        .expect("incremental");
    assert_eq!(done["base"], full.to_str().expect("utf-8"), "the newest backup beside it: {done}");
    let shared = done["bytesShared"].as_u64().expect("bytesShared");
    assert!(shared > 0 && shared < done["bytesTotal"].as_u64().expect("total"), "{done}");
    assert_eq!(metric(&data, "xray_backup_bytes_shared"), shared);
    // A file the base holds unchanged is the base's file (one inode); any other is a copy.
    let in_full: std::collections::HashMap<String, String> = manifest_files(&full).into_iter().collect();
    let (mut linked, mut copied) = (0, 0);
    for (path, sha) in manifest_files(&next) {
        let same_inode = std::fs::metadata(next.join(&path)).expect("file").ino()
            == std::fs::metadata(full.join(&path)).map(|m| m.ino()).unwrap_or(0);
        assert_eq!(same_inode, in_full.get(&path) == Some(&sha), "{path}");
        if same_inode {
            linked += 1;
        } else {
            copied += 1;
        }
    }
    assert!(linked > 0 && copied > 0, "{linked} linked, {copied} copied");

    // An explicit base, and the refusals of a base.
    let third = backups.join("3-explicit");
    let explicit = cli(
        &data,
        "backup",
        &["--wait-s", "60", "--base", full.to_str().expect("utf-8"), "--to", third.to_str().expect("utf-8")],
    )
    .expect("explicit base");
    assert_eq!(explicit["base"], full.to_str().expect("utf-8"), "{explicit}");
    // A base file that rotted (same size, another byte; a new inode, so the backups that
    // linked the good one keep it) is not linked into a new backup: it is copied from the store.
    let inode = |path: &Path| std::fs::metadata(path).expect("file").ino();
    let (rotten, _) = manifest_files(&third)
        .into_iter()
        .find(|(p, _)| p.ends_with(".sst") && in_full.contains_key(p) && inode(&third.join(p)) == inode(&full.join(p)))
        .expect("a table file the explicit backup linked from its base");
    let mut bytes = std::fs::read(full.join(&rotten)).expect("read");
    bytes[0] ^= 0x01;
    let swapped = full.join("db/.rotten");
    std::fs::write(&swapped, &bytes).expect("write");
    std::fs::set_permissions(&swapped, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::rename(&swapped, full.join(&rotten)).expect("swap");
    let fourth = backups.join("4-over-rot");
    let over = cli(
        &data,
        "backup",
        &["--wait-s", "60", "--base", full.to_str().expect("utf-8"), "--to", fourth.to_str().expect("utf-8")],
    )
    .expect("a backup over a rotten base");
    assert_eq!(over["state"], "DONE", "{over}");
    assert!(over["bytesShared"].as_u64().is_some_and(|n| n > 0), "the rest is still linked: {over}");
    assert_ne!(inode(&fourth.join(&rotten)), inode(&full.join(&rotten)), "the rotten file is not linked");
    let restored_over = root.path().join("restored-over-rot");
    cli(&restored_over, "restore", &["--from", fourth.to_str().expect("utf-8")])
        .expect("it restores: every digest holds");
    let both = format!(r#"{{"to":"{}/x","base":"{}","incremental":true}}"#, backups.display(), full.display());
    let not_a_backup = format!(r#"{{"to":"{}/y","base":"{}"}}"#, backups.display(), root.path().display());
    for (body, why) in [(both, "one of them"), (not_a_backup, "manifest.json")] {
        refused_naming(&data, &body, "base", why);
    }

    // Retention: the newest two finished backups are kept, the rest (the base included) go;
    // a directory that is not a backup stays.
    std::fs::create_dir(backups.join("not-a-backup")).expect("mkdir");
    let fifth = backups.join("5-kept");
    let kept = cli(
        &data,
        "backup",
        &["--wait-s", "60", "--incremental", "--keep", "2", "--to", fifth.to_str().expect("utf-8")],
    )
    .expect("a backup with --keep");
    let removed: Vec<&str> =
        kept["pruned"]["backups"].as_array().expect("pruned").iter().filter_map(Value::as_str).collect();
    let expected: Vec<String> = [&full, &next, &third].iter().map(|p| p.display().to_string()).collect();
    assert_eq!(removed, expected, "{kept}");
    assert!(!full.exists() && fourth.exists() && fifth.exists() && backups.join("not-a-backup").exists());

    // Each backup stands alone: with its base gone, the incremental one restores whole.
    server.stop_gracefully();
    let restored = root.path().join("restored");
    cli(&restored, "restore", &["--from", fourth.to_str().expect("utf-8")]).expect("restore of an incremental backup");
    let server = start(&restored, &flags);
    assert_eq!(server.first_key, None);
    let keys = raw(server.api, "GET", "/.well-known/xray-keys.json", &[], "").body;
    for (id, data_before) in &reports {
        let reply = get(server.api, &format!("{API}/intelligence/analysis/{id}"), &key);
        assert_eq!(&reply.body["data"], data_before, "{id}");
        assert!(verify_report(&reply.body["data"], &keys, ReportType::Analysis).is_ok(), "{id} verifies");
    }
}

/// Flags of a server whose backups run 16 KiB a second: for minutes, even of a fresh store.
const SLOW_BACKUP: [&str; 6] = ["--listener-threads", "1", "--compute-threads", "1", "--backup-rate-kib-per-s", "16"];

/// Starts a backup of the server on `data` into `to` and waits (bounded) until it has copied
/// some bytes.
fn backup_copying(data: &Path, to: &Path) {
    let started = admin(data, "POST", "/v1/admin/backup", &format!(r#"{{"to":"{}"}}"#, to.display()));
    assert_eq!(started.status, 202, "{started:?}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while admin(data, "GET", "/v1/admin/backup", "").body["data"]["bytesCopied"].as_u64().unwrap_or(0) == 0 {
        assert!(Instant::now() < deadline, "the backup copied nothing in 20 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_stop_of_the_server_ends_a_running_backup_and_removes_what_it_wrote() {
    let root = tempfile::tempdir().expect("tempdir");
    let data = root.path().join("data");
    let mut server = start(&data, &SLOW_BACKUP);
    let to = root.path().join("slow");
    backup_copying(&data, &to);
    assert!(to.is_dir());
    let stopping = Instant::now();
    server.stop_gracefully();
    assert!(stopping.elapsed() < Duration::from_secs(10), "stopped in {:?}", stopping.elapsed());
    assert!(!to.exists(), "the stopped backup removed what it wrote");
    assert!(!data.join("backup-staging").exists(), "and its staging directory");
}

/// kill -9 in the middle of a backup: its target has no manifest, so restore refuses it and
/// writes nothing; the next start removes the staging directory. And in the log of a backup
/// and of a stop that ends one (at debug level), neither the admin token nor the signing key.
#[test]
fn a_backup_cut_by_kill_9_is_refused_by_restore_and_its_staging_removed_at_the_next_start() {
    let root = tempfile::tempdir().expect("tempdir");
    let data = root.path().join("data");
    let mut server = start(&data, &SLOW_BACKUP);
    let cut = root.path().join("cut");
    backup_copying(&data, &cut);
    server.kill_9();
    assert!(cut.is_dir() && !cut.join("manifest.json").exists(), "a cut backup has no manifest");
    assert!(data.join("backup-staging").is_dir(), "kill -9 leaves the staging directory");
    let target = root.path().join("restored");
    let refused = cli(&target, "restore", &["--from", cut.to_str().expect("utf-8")]);
    assert!(refused.as_ref().is_err_and(|e| e.contains("did not finish")), "{refused:?}");
    assert!(!target.exists(), "a refused restore writes nothing");

    let server = start_logging(&data, &SLOW_BACKUP, "debug");
    assert!(!data.join("backup-staging").exists(), "the next start removes the staging directory");
    backup_copying(&data, &root.path().join("stopped"));
    let log = log_lines(server).join("\n");
    let token = std::fs::read_to_string(data.join("admin.token")).expect("admin.token");
    let keys: Value =
        serde_json::from_slice(&std::fs::read(data.join("signing-keys.json")).expect("keys")).expect("JSON");
    let private = keys["current"]["privateKey"].as_str().expect("the current private key").to_owned();
    assert!(log.contains("backup started") && log.contains("the server is stopping"), "{log}");
    assert!(!log.contains(token.trim()), "the admin token is not logged");
    assert!(!log.contains(&private), "the signing key is not logged");
}

#[test]
fn a_restore_refuses_a_partial_a_corrupted_or_a_newer_backup_and_writes_nothing() {
    let root = tempfile::tempdir().expect("tempdir");
    let data = root.path().join("data");
    let mut server = start(&data, &["--listener-threads", "1", "--compute-threads", "1"]);
    let good = root.path().join("good");
    cli(&data, "backup", &["--wait-s", "60", "--to", good.to_str().expect("utf-8")]).expect("xray backup");
    server.stop_gracefully();
    let manifest_text = std::fs::read_to_string(good.join("manifest.json")).expect("manifest");
    let manifest: Value = serde_json::from_str(&manifest_text).expect("JSON");

    let copy_of_good = |name: &str| {
        let dir = root.path().join(name);
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::create_dir(dir.join("db")).expect("mkdir db");
        for file in manifest["files"].as_array().expect("files") {
            let path = file["path"].as_str().expect("path");
            std::fs::copy(good.join(path), dir.join(path)).expect("copy");
        }
        dir
    };
    let partial = copy_of_good("partial"); // no manifest: the backup never finished
    let corrupted = copy_of_good("corrupted");
    std::fs::write(corrupted.join("manifest.json"), &manifest_text).expect("manifest");
    let files = manifest["files"].as_array().expect("files");
    let victim = files.iter().find(|f| f["bytes"].as_u64() > Some(0)).and_then(|f| f["path"].as_str()).expect("a file");
    let mut bytes = std::fs::read(corrupted.join(victim)).expect("read");
    bytes[0] ^= 0x01;
    std::fs::write(corrupted.join(victim), bytes).expect("write");
    let newer = copy_of_good("newer");
    let mut future = manifest.clone();
    future["schemaVersion"] = Value::from(xray::store::SCHEMA_VERSION + 1);
    std::fs::write(newer.join("manifest.json"), future.to_string()).expect("manifest");
    // A manifest edited to leave the signing keys out: restoring it would make a server sign
    // with a new key.
    let keyless = copy_of_good("keyless");
    let mut edited = manifest.clone();
    let kept: Vec<Value> = files.iter().filter(|f| f["path"] != "signing-keys.json").cloned().collect();
    let dropped: u64 =
        files.iter().filter(|f| f["path"] == "signing-keys.json").filter_map(|f| f["bytes"].as_u64()).sum();
    edited["files"] = Value::from(kept);
    edited["totalBytes"] = Value::from(manifest["totalBytes"].as_u64().expect("total") - dropped);
    std::fs::write(keyless.join("manifest.json"), edited.to_string()).expect("manifest");

    // A backup whose store directory is a link to another one's: nothing is read through it.
    let linked = root.path().join("linked");
    std::fs::create_dir(&linked).expect("mkdir");
    for name in ["manifest.json", "admin.token", "signing-keys.json"] {
        std::fs::copy(good.join(name), linked.join(name)).expect("copy");
    }
    std::os::unix::fs::symlink(good.join("db"), linked.join("db")).expect("symlink");

    let cases = [
        (&partial, "did not finish"),
        (&corrupted, "corrupted"),
        (&newer, "newer"),
        (&keyless, "signing-keys.json"),
        (&linked, "a link?"),
    ];
    for (from, why) in cases {
        let target = root.path().join(format!("into-{}", from.file_name().expect("name").to_string_lossy()));
        let refused = cli(&target, "restore", &["--from", from.to_str().expect("utf-8")]);
        assert!(refused.as_ref().is_err_and(|e| e.contains(why)), "{why}: {refused:?}");
        assert!(!target.exists(), "a refused restore writes nothing");
    }
    let leftovers: Vec<_> = std::fs::read_dir(root.path())
        .expect("ls")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|name| name.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "no staging left behind: {leftovers:?}");

    // The good one restores, and the server starts on it.
    let restored = root.path().join("restored");
    cli(&restored, "restore", &["--from", good.to_str().expect("utf-8")]).expect("restore");
    let mut again = start(&restored, &["--listener-threads", "1", "--compute-threads", "1"]);
    assert_eq!(again.first_key, None);
    again.stop_gracefully();
}

/// A disk that fills mid-backup: the backup ends `FAILED` naming the cause, leaves nothing on
/// that disk, and the server serves on; the next backup elsewhere is whole. Needs a small
/// file system: a 16 KiB tmpfs, mounted when the test runs as root (as CI does); elsewhere it
/// says so and checks nothing.
#[test]
fn a_backup_onto_a_full_disk_fails_cleanly_and_the_server_serves_on() {
    let root = tempfile::tempdir().expect("tempdir");
    let small = root.path().join("small");
    std::fs::create_dir(&small).expect("mkdir");
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16k"])
        .arg("tmpfs")
        .arg(&small)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        // CI runs as root: there, not checking is a failure, not a pass.
        assert!(std::env::var_os("CI").is_none(), "cannot mount a tmpfs under CI: the full-disk case is not checked");
        eprintln!("a_backup_onto_a_full_disk…: cannot mount a tmpfs here (not root): not checked");
        return;
    }
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(small.clone());
    let data = root.path().join("data");
    let server = start(&data, &["--listener-threads", "1", "--compute-threads", "1"]);
    let key = server.first_key.clone().expect("first key");
    let failed = cli(&data, "backup", &["--wait-s", "60", "--to", small.join("backup").to_str().expect("utf-8")]);
    let error = failed.expect_err("a backup larger than its disk fails");
    assert!(error.contains("No space left on device"), "{error}");
    assert_eq!(std::fs::read_dir(&small).expect("ls").count(), 0, "the failed backup is removed");
    assert!(!data.join("backup-staging").exists(), "and its staging directory");
    let status = admin(&data, "GET", "/v1/admin/backup", "");
    assert_eq!(status.body["data"]["state"], "FAILED", "{status:?}");
    assert_eq!((metric(&data, "xray_backups_failed_total"), metric(&data, "xray_backup_running")), (1, 0));
    assert_eq!(get(server.api, &format!("{API}/status"), &key).status, 200, "the server serves on");
    let good = root.path().join("good");
    let done =
        cli(&data, "backup", &["--wait-s", "60", "--to", good.to_str().expect("utf-8")]).expect("the next backup");
    assert_eq!(done["state"], "DONE", "{done}");
}
