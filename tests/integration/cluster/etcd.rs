//! A real etcd cluster on loopback for the cluster tests: `members` `etcd` processes (Debian's
//! `etcd-server`, installed by `scripts/deps.sh`), data on tmpfs (`/dev/shm`) where it exists,
//! short heartbeats so an election takes about a second. Killed (and its data removed) on drop.
//!
//! Invariant: no data directory outlives its test process. tmpfs is memory, and one cluster's
//! directory holds ~370 MB of it (three members' preallocated WAL segments): directories left
//! by earlier runs once filled `/dev/shm` until a build starved. So each directory is owned by
//! an exclusive lock on its `owner.lock` for as long as its cluster lives (the kernel drops the
//! lock with the process, a `kill -9` included), every new cluster first removes the
//! directories whose owner is gone, and the shared cluster is removed at process exit.
//!
//! `shared()` is one 3-member cluster for every test of the binary that only needs a working
//! etcd (each test writes under its own key prefix); tests that kill members or fill the
//! database start their own.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Longest wait for a started cluster to elect a leader and answer.
const READY_TIMEOUT_S: u64 = 30;
/// Name prefix of every cluster's data directory (what the sweep looks for).
const DATA_DIR_PREFIX: &str = "xray-etcd-";
/// The file whose exclusive lock marks a data directory as in use.
const OWNER_LOCK_FILE: &str = "owner.lock";
/// A directory younger than this is never swept: its maker may not have taken its lock yet.
const ABANDONED_AGE_S: u64 = 60;

pub struct Member {
    pub name: String,
    pub client_url: String,
    peer_url: String,
    child: Option<Child>,
}

pub struct EtcdCluster {
    pub members: Vec<Member>,
    args: Vec<String>,
    initial_cluster: String,
    _dir: tempfile::TempDir,
    dir_path: PathBuf,
    /// Holds the lock on `owner.lock` while the cluster lives.
    _owner: File,
}

/// A loopback port for an etcd member to listen on. Taken below the kernel's ephemeral range
/// (`ip_local_port_range`), where no outgoing connection (of the other tests, or of etcd's own
/// peers) can take it between this check and etcd's bind; each port is handed out once per
/// test process, starting at a random offset so that two test processes rarely meet.
fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u32>().ok())
        .filter(|low| *low > LOW + 1_000)
        .unwrap_or(32_768);
    let span = ephemeral_low - LOW;
    let _ = NEXT.compare_exchange(0, 1 + std::process::id() % span, Ordering::Relaxed, Ordering::Relaxed);
    for _ in 0..span {
        let port = (LOW + NEXT.fetch_add(1, Ordering::Relaxed) % span) as u16;
        // The README's cluster block binds fixed ports, and `api::readme` runs it beside us.
        if crate::api::readme::CLUSTER_BLOCK_PORTS.contains(&port) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port below the ephemeral range")
}

/// Where member data lives: tmpfs when the machine has it (fsync is then cheap), after the
/// directories of finished test processes are removed; locked as this process's own.
fn data_root() -> (tempfile::TempDir, File) {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        sweep_abandoned(shm);
        tempfile::Builder::new().prefix(DATA_DIR_PREFIX).tempdir_in(shm).ok()
    } else {
        None
    };
    let dir = dir.unwrap_or_else(|| tempfile::Builder::new().prefix(DATA_DIR_PREFIX).tempdir().expect("tempdir"));
    let owner = File::create(dir.path().join(OWNER_LOCK_FILE)).expect("etcd data owner lock file");
    owner.try_lock().expect("a new etcd data directory is locked by nobody else");
    (dir, owner)
}

/// Removes the etcd data directories under `root` whose owner process has ended.
fn sweep_abandoned(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with(DATA_DIR_PREFIX) && is_abandoned(&path) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// A directory is abandoned when it is older than `ABANDONED_AGE_S` and its lock is free (its
/// owner ended) or absent (left by a build before the locks).
fn is_abandoned(dir: &Path) -> bool {
    let age = dir.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
    if age.is_none_or(|age| age < Duration::from_secs(ABANDONED_AGE_S)) {
        return false;
    }
    match File::open(dir.join(OWNER_LOCK_FILE)) {
        Ok(lock) => lock.try_lock().is_ok(),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// The shared cluster's members and directory, for `remove_shared_at_exit`.
static SHARED_AT_EXIT: OnceLock<(Vec<libc::pid_t>, PathBuf)> = OnceLock::new();

/// Registered with `atexit` once the shared cluster runs: it is never dropped (it lives as long
/// as the process), so its members are killed and its data removed as the process exits.
extern "C" fn remove_shared_at_exit() {
    if let Some((pids, dir)) = SHARED_AT_EXIT.get() {
        for &pid in pids {
            // SAFETY: `pid` is a child of this process that nothing has waited for (its
            // `Child` is leaked with the cluster), so it is still ours to kill and reap.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

impl EtcdCluster {
    /// Starts `members` members with extra etcd flags `args` and waits until they answer.
    pub fn start(members: usize, args: &[&str]) -> EtcdCluster {
        let mut cluster = EtcdCluster::planned(members, args);
        cluster.spawn_all();
        cluster
    }

    /// A cluster whose ports are chosen but whose members are not started yet
    /// (`spawn_all`): what a node started before its etcd is pointed at.
    pub fn planned(members: usize, args: &[&str]) -> EtcdCluster {
        let (dir, owner) = data_root();
        let dir_path = dir.path().to_path_buf();
        let members: Vec<Member> = (0..members)
            .map(|i| Member {
                name: format!("m{i}"),
                client_url: format!("http://127.0.0.1:{}", free_port()),
                peer_url: format!("http://127.0.0.1:{}", free_port()),
                child: None,
            })
            .collect();
        let initial_cluster =
            members.iter().map(|m| format!("{}={}", m.name, m.peer_url)).collect::<Vec<_>>().join(",");
        let args = args.iter().map(|a| a.to_string()).collect();
        EtcdCluster { members, args, initial_cluster, _dir: dir, dir_path, _owner: owner }
    }

    /// Starts every member and waits until they answer.
    pub fn spawn_all(&mut self) {
        for i in 0..self.members.len() {
            self.spawn(i);
        }
        self.wait_ready();
    }

    fn spawn(&mut self, i: usize) {
        let member = &self.members[i];
        let data = self.dir_path.join(&member.name);
        let log = std::fs::File::create(self.dir_path.join(format!("{}.log", member.name))).expect("etcd log file");
        let mut command = Command::new("etcd");
        command
            .args(["--name", &member.name])
            .arg("--data-dir")
            .arg(&data)
            .args(["--listen-client-urls", &member.client_url, "--advertise-client-urls", &member.client_url])
            .args(["--listen-peer-urls", &member.peer_url, "--initial-advertise-peer-urls", &member.peer_url])
            .args(["--initial-cluster", &self.initial_cluster, "--initial-cluster-state", "new"])
            .args(["--initial-cluster-token", "xray-test", "--heartbeat-interval", "50", "--election-timeout", "500"])
            .args(["--logger", "zap", "--log-level", "warn"])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // SAFETY: `prctl` is async-signal-safe; it only asks the kernel to kill the child when
        // the thread that started it ends, so no member outlives its test.
        unsafe {
            use std::os::unix::process::CommandExt;
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("starting etcd (install Debian's etcd-server: scripts/deps.sh): {e}"));
        self.members[i].child = Some(child);
    }

    /// Every member's client URL.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// Waits until every running member reports a leader.
    pub fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(READY_TIMEOUT_S);
        let running: Vec<&Member> = self.members.iter().filter(|m| m.child.is_some()).collect();
        for member in running {
            loop {
                if self.leader_seen_by(&member.client_url).is_some() {
                    break;
                }
                if Instant::now() >= deadline {
                    let log = std::fs::read_to_string(self.dir_path.join(format!("{}.log", member.name)));
                    let log = log.unwrap_or_default();
                    let lines: Vec<&str> = log.lines().collect();
                    let tail = lines[lines.len().saturating_sub(20)..].join("\n");
                    panic!("etcd member {} did not become ready; its log ends:\n{tail}", member.name);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// The member id of the leader as `endpoint` sees it (`etcdctl endpoint status`).
    fn leader_seen_by(&self, endpoint: &str) -> Option<String> {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", endpoint, "--dial-timeout", "1s", "--command-timeout", "1s"])
            .args(["endpoint", "status", "-w", "json"])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let status: serde_json::Value = serde_json::from_str(&text).ok()?;
        let header = &status[0]["Status"];
        let leader = header["leader"].as_u64()?;
        (leader != 0).then(|| format!("{leader}:{}", header["header"]["member_id"].as_u64().unwrap_or(0)))
    }

    /// The index of the current leader.
    pub fn leader(&self) -> usize {
        for (i, member) in self.members.iter().enumerate().filter(|(_, m)| m.child.is_some()) {
            if let Some(seen) = self.leader_seen_by(&member.client_url) {
                let (leader, me) = seen.split_once(':').unwrap_or_default();
                if leader == me {
                    return i;
                }
            }
        }
        panic!("no etcd member is the leader");
    }

    /// kill -9 of member `i`.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `etcdctl snapshot save` of member 0's keyspace into `file` (a snapshot is taken from one
    /// member; it holds the whole keyspace).
    pub fn snapshot_save(&self, file: &Path) {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", &self.members[0].client_url, "snapshot", "save"])
            .arg(file)
            .output()
            .expect("etcdctl");
        assert!(out.status.success(), "snapshot save: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Disaster recovery as etcd's guide has it: every member killed and its data wiped, each
    /// restored from the snapshot `file` into a new data directory (`etcdctl snapshot restore`,
    /// etcd 3.4's; `etcdutl` from 3.5), then all started again.
    pub fn restore_from_snapshot(&mut self, file: &Path) {
        for i in 0..self.members.len() {
            self.kill(i);
            let data = self.dir_path.join(&self.members[i].name);
            if let Err(e) = std::fs::remove_dir_all(&data) {
                assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "wiping {}: {e}", data.display());
            }
        }
        for member in &self.members {
            let out = Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .args(["snapshot", "restore"])
                .arg(file)
                .args(["--name", &member.name, "--initial-cluster", &self.initial_cluster])
                .args(["--initial-cluster-token", "xray-test", "--initial-advertise-peer-urls", &member.peer_url])
                .arg("--data-dir")
                .arg(self.dir_path.join(&member.name))
                .output()
                .expect("etcdctl");
            assert!(out.status.success(), "snapshot restore: {}", String::from_utf8_lossy(&out.stderr));
        }
        self.spawn_all();
    }

    /// `etcdctl` against the cluster (alarms, compaction, defragmentation) with `input` on its
    /// stdin (`put <key>` reads a large value from there).
    pub fn etcdctl(&self, args: &[&str], input: &[u8]) -> String {
        use std::io::Write;
        let mut child = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args(["--endpoints", &self.endpoints().join(",")])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("etcdctl");
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(input);
        }
        let out = child.wait_with_output().expect("etcdctl");
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}

/// The 3-member cluster every test of this binary may share, started on first use by a thread
/// that lives as long as the test process (members die with the thread that started them, so
/// they end with the process and never with the test that happened to start them).
pub fn shared() -> &'static EtcdCluster {
    static SHARED: OnceLock<&'static EtcdCluster> = OnceLock::new();
    SHARED.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let cluster: &'static EtcdCluster = Box::leak(Box::new(EtcdCluster::start(3, &[])));
            let pids = cluster.members.iter().filter_map(|m| m.child.as_ref()).map(|c| c.id() as libc::pid_t).collect();
            if SHARED_AT_EXIT.set((pids, cluster.dir_path.clone())).is_ok() {
                // SAFETY: registers a plain `extern "C" fn` with no captured state.
                unsafe { libc::atexit(remove_shared_at_exit) };
            }
            let _ = tx.send(cluster);
            loop {
                std::thread::park();
            }
        });
        rx.recv().expect("the shared etcd cluster started")
    })
}

/// A key prefix no other test uses (tests share `shared()`).
pub fn fresh_prefix(test: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("xray-test/{}/{test}-{n}/", std::process::id())
}
