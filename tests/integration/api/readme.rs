//! README.md as a newcomer pastes it. Every fenced `sh`/`bash` block runs in a fresh
//! `bash` (`set -euo pipefail`, so any failing command fails it) beside a real `xray serve` of
//! this build, with its `…` placeholders and fixed addresses filled in (`fills`); a block after
//! `<!-- readme-test: skip (why) -->` is skipped, saying why, and one after
//! `<!-- readme-test: needs CMD -->` runs where CMD is installed. And the demo table: its rows
//! are `xray demo list`, and each archetype analyzed through the API gives the table's signals
//! or refusal reason.
//!
//! A block runs in a scratch directory that links the repository's files and holds the
//! server's data directory as `./xray-data`, in a process group of its own that is killed when
//! it ends (a block's background servers go with it), within `BLOCK_TIMEOUT`. A failure names
//! the README line of its block, with its output. Deliberately absent: the network (a live node
//! is replaced by the local demo endpoint) and root (nothing is installed).

use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::serve_binary::{self, BIN};
use super::support::{
    compare_body, expected_pair_id, get, post, serve, wallet_body, KeyOptions, TestServer, API, COMPARE_PATH,
    OPEN_DELEGATION, SYBIL_A, SYBIL_B, WALLET_PATH,
};
use xray::config::{SourceSpec, DEMO_SEED_DEFAULT};
use xray::devtools::rpc_server::{spawn_spec_in_thread, FaultPlan};
use xray::ledger::demo::DemoLedger;

const README: &str = include_str!("../../../README.md");
const MARKER: &str = "<!-- readme-test:";
/// Longest a block may run (the slowest, the cluster's, takes about 3 s).
const BLOCK_TIMEOUT: Duration = Duration::from_secs(60);
/// Ports the README's cluster block binds, fixed in its text: `cluster::etcd` never hands
/// them out to its own members, since this test runs that block beside the cluster tests.
pub const CLUSTER_BLOCK_PORTS: [u16; 12] =
    [12379, 22379, 32379, 12380, 22380, 32380, 18081, 18082, 18083, 19901, 19902, 19903];

/// What the comment before a block asks.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Marker {
    Run,
    /// Skipped, for this reason.
    Skip(String),
    /// Run only where this command is installed.
    Needs(String),
}

/// One fenced shell block of the README.
#[derive(Debug)]
struct Block {
    /// README line of its opening fence (1-based).
    line: usize,
    text: String,
    marker: Marker,
}

/// Reads `<!-- readme-test: skip (reason) -->` or `<!-- readme-test: needs CMD -->`.
fn parse_marker(line: usize, text: &str) -> Marker {
    let inner = text.trim().strip_prefix(MARKER).and_then(|rest| rest.strip_suffix("-->")).map(str::trim);
    let inner = inner.unwrap_or_else(|| panic!("README.md:{line}: a readme-test comment on one line: {text}"));
    if let Some(reason) = inner.strip_prefix("skip (").and_then(|r| r.strip_suffix(')')) {
        assert!(!reason.trim().is_empty(), "README.md:{line}: a skipped block says why");
        return Marker::Skip(reason.to_owned());
    }
    match inner.strip_prefix("needs ") {
        Some(command) => Marker::Needs(command.trim().to_owned()),
        None => panic!("README.md:{line}: expected `skip (why)` or `needs CMD`: {text}"),
    }
}

/// Every fenced `sh` / `bash` block, with the marker on the last non-blank line before it. A
/// marker anywhere else (before another kind of block, or before prose) is an error.
fn shell_blocks(readme: &str) -> Vec<Block> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut blocks = Vec::new();
    let (mut at, mut pending): (usize, Option<(usize, Marker)>) = (0, None);
    while at < lines.len() {
        let (number, line) = (at + 1, lines[at].trim_start());
        at += 1;
        if line.starts_with(MARKER) {
            pending = Some((number, parse_marker(number, line)));
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let Some(lang) = line.strip_prefix("```") else {
            assert!(
                pending.is_none(),
                "README.md:{number}: a readme-test comment must come right before a shell block"
            );
            continue;
        };
        let indent = lines[at - 1].len() - line.len();
        let body: Vec<&str> = lines[at..].iter().take_while(|l| l.trim_start() != "```").copied().collect();
        at += body.len() + 1;
        let marker = pending.take().map(|(_, m)| m);
        if !matches!(lang.trim(), "sh" | "bash") {
            assert!(marker.is_none(), "README.md:{number}: a readme-test comment before a `{lang}` block");
            continue;
        }
        let text = body.iter().map(|l| l.get(indent..).unwrap_or(l.trim_start())).collect::<Vec<_>>().join("\n");
        blocks.push(Block { line: number, text, marker: marker.unwrap_or(Marker::Run) });
    }
    blocks
}

/// Whether `command` runs here (`--version` answers).
fn installed(command: &str) -> bool {
    Command::new(command).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// A loopback port nobody listens on now (bound, then released).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// The scratch directory blocks run in: `work/` links every entry of the repository (so
/// `tests/fixtures/…` and `deploy/…` resolve) and will hold `xray-data`; `tmp/` stands for
/// `/tmp/`; `logs/` gets each block's output.
struct Scratch {
    _dir: tempfile::TempDir,
    work: PathBuf,
    tmp: PathBuf,
    logs: PathBuf,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().expect("tempdir");
        let (work, tmp, logs) = (dir.path().join("work"), dir.path().join("tmp"), dir.path().join("logs"));
        for made in [&work, &tmp, &logs] {
            std::fs::create_dir(made).expect("scratch directory");
        }
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        for entry in std::fs::read_dir(repo).expect("repository").map(|e| e.expect("entry")) {
            let name = entry.file_name();
            if !matches!(name.to_str(), Some(".git" | "target" | "xray-data")) {
                std::os::unix::fs::symlink(entry.path(), work.join(&name)).expect("link");
            }
        }
        Scratch { _dir: dir, work, tmp, logs }
    }
}

/// What the test puts in place of the README's placeholders and fixed addresses, in order.
/// Placeholders: the values a reader copies from earlier answers. `127.0.0.1:8080`/`9901`: the
/// test's server (port 0). `127.0.0.1:8899`: a free port. The mainnet URL: the local demo
/// endpoint (no network here). `/tmp/`: the scratch directory. `cargo build --release`: a
/// no-op, since the test runs the binary cargo built for it (a build inside a test could
/// compile RocksDB again if anything in its environment differed).
fn fills(server: &serve_binary::Server, data: &Path, scratch: &Scratch, rpc_url: &str) -> Vec<(&'static str, String)> {
    let key = server.first_key.clone().expect("the first start prints its key");
    let account = server.first_account.clone().expect("the notice names the account");
    let analysis = post(server.api, WALLET_PATH, &key, &wallet_body(OPEN_DELEGATION));
    assert!(matches!(analysis.status, 200 | 202), "{analysis:?}");
    let pair = post(server.api, COMPARE_PATH, &key, &compare_body(SYBIL_A, SYBIL_B));
    assert!(matches!(pair.status, 200 | 202), "{pair:?}");
    let spare = serve_binary::keys(data, &["create", "--name", "spare", "--scopes", "usage:read"]).expect("spare key");
    let admin = std::fs::read_to_string(data.join("admin.addr")).expect("admin.addr");
    vec![
        ("svc_live_…", key),
        ("acct_…", account),
        ("an_…", analysis.data_str("analysisId")),
        ("pair_…", expected_pair_id(SYBIL_A, SYBIL_B)),
        ("key_…", spare["id"].as_str().expect("key id").to_owned()),
        ("127.0.0.1:8080", server.api.to_string()),
        ("127.0.0.1:9901", admin.trim().to_owned()),
        ("127.0.0.1:8899", format!("127.0.0.1:{}", free_port())),
        ("https://api.mainnet-beta.solana.com", rpc_url.to_owned()),
        ("/tmp/", format!("{}/", scratch.tmp.display())),
        ("cargo build --release", ": cargo build --release".to_owned()),
    ]
}

fn fill(text: &str, fills: &[(&str, String)]) -> String {
    fills.iter().fold(text.to_owned(), |text, (from, to)| text.replace(from, to))
}

/// Runs one block as `bash -c` in `scratch.work`: `Err` with the block's output when it exits
/// non-zero, outlives `limit`, or prints an API error document.
fn run(block: &Block, script: &str, scratch: &Scratch, limit: Duration) -> Result<Duration, String> {
    let (out, err) =
        (scratch.logs.join(format!("{}.out", block.line)), scratch.logs.join(format!("{}.err", block.line)));
    let target_dir = Path::new(BIN).parent().and_then(Path::parent).expect("<target dir>/release/xray");
    let started = Instant::now();
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(format!("set -euo pipefail\n{script}"))
        .current_dir(&scratch.work)
        .env("CARGO_TARGET_DIR", target_dir)
        .env("XRAY_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(File::create(&out).expect("stdout file"))
        .stderr(File::create(&err).expect("stderr file"))
        .process_group(0)
        .spawn()
        .expect("bash runs");
    let status = wait_bounded(&mut child, limit);
    kill_group(&mut child);
    let elapsed = started.elapsed();
    let (stdout, stderr) = (read(&out), read(&err));
    let error_document = stdout.lines().find(|l| l.starts_with(r#"{"error":"#));
    match (status, error_document) {
        (Some(s), None) if s.success() => Ok(elapsed),
        (status, document) => Err(format!(
            "README.md:{}: the block {} after {elapsed:?}{}\n--- block, as run ---\n{script}\n\
             --- stdout ---\n{}\n--- stderr ---\n{}",
            block.line,
            status.map_or("timed out".to_owned(), |s| format!("ended with {s}")),
            document.map(|d| format!(", printing an error: {d}")).unwrap_or_default(),
            tail(&stdout),
            tail(&stderr)
        )),
    }
}

/// The child's exit status, or `None` when it outlives `limit`.
fn wait_bounded(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().expect("wait") {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// SIGKILL to the block's process group (its own: `process_group(0)`), then reaps the shell.
fn kill_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
    let _ = child.wait();
}

fn read(path: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
}

/// The last lines of an output, enough to see what failed.
fn tail(text: &str) -> String {
    const LINES_SHOWN: usize = 40;
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(LINES_SHOWN)..].join("\n")
}

/// A line whose command (not its comment) still holds a placeholder: `…`, `<name>` or an
/// optional `[--flag]`, which a shell would run as they stand.
fn unfilled(script: &str) -> Option<&str> {
    script.lines().find(|line| {
        let code = line.split(" #").next().unwrap_or(line);
        !line.trim_start().starts_with('#') && ["…", " <", "[--"].iter().any(|p| code.contains(p))
    })
}

/// Why a block does not run here, or `None` when it does.
fn not_run(block: &Block) -> Option<String> {
    match &block.marker {
        Marker::Run => None,
        Marker::Skip(reason) => Some(reason.clone()),
        Marker::Needs(command) if installed(command) => None,
        Marker::Needs(command) => Some(format!("{command} is not installed")),
    }
}

#[test]
fn readme_shell_blocks_run_as_written() {
    let blocks = shell_blocks(README);
    assert!(blocks.len() >= 8, "the README's shell blocks were found: {blocks:?}");
    let scratch = Scratch::new();
    let data = scratch.work.join("xray-data");
    let mut server = serve_binary::start(&data, &["--listener-threads", "1", "--compute-threads", "1"]);
    let rpc = spawn_spec_in_thread(SourceSpec::Demo { seed: DEMO_SEED_DEFAULT }, FaultPlan::default()).expect("rpc");
    let fills = fills(&server, &data, &scratch, &rpc.url());
    let mut failures = Vec::new();
    for block in &blocks {
        if let Some(why) = not_run(block) {
            eprintln!("README.md:{}: skipped: {why}", block.line);
            continue;
        }
        if let Some(bare) = block.text.lines().find(|l| l.trim_start().starts_with("xray ")) {
            failures.push(format!(
                "README.md:{}: calls `xray` bare, which `make run` does not install: {bare}",
                block.line
            ));
        }
        let script = fill(&block.text, &fills);
        if let Some(left) = unfilled(&script) {
            failures.push(format!("README.md:{}: a placeholder this test does not fill: {left}", block.line));
            continue;
        }
        match run(block, &script, &scratch, BLOCK_TIMEOUT) {
            Ok(took) => eprintln!("README.md:{}: ran in {took:?}", block.line),
            Err(failure) => failures.push(failure),
        }
    }
    server.stop_gracefully();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// One row of the README's demo table, as `xray demo list` has it too.
#[derive(Debug, PartialEq, Eq)]
struct Row {
    name: String,
    address: String,
    description: String,
    expected: Vec<String>,
}

/// The rows of the demo table: `| `name` | `address` | description | `signal`, … or — |`.
fn demo_table(readme: &str) -> Vec<Row> {
    let code = |cell: &str| cell.trim().trim_matches('`').to_owned();
    readme
        .lines()
        .filter_map(|line| line.strip_prefix("| `")?.strip_suffix(" |"))
        .filter_map(|row| {
            let cells: Vec<&str> = row.split(" | ").collect();
            let [name, address, description, signals] = cells.as_slice() else { return None };
            let expected = match signals.trim() {
                "—" => Vec::new(),
                list => list.split(", ").map(code).collect(),
            };
            Some(Row { name: code(name), address: code(address), description: description.to_string(), expected })
        })
        .collect()
}

/// What the API makes of `wallet`: the signal kinds of its READY X-Ray, or
/// `not_eligible:<reason>` when it is refused at admission (422) or its job FAILED so.
fn answered(server: &TestServer, key: &str, wallet: &str) -> BTreeSet<String> {
    let reply = post(server.addr, WALLET_PATH, key, &wallet_body(wallet));
    if reply.status == 422 {
        let reason = reply.error()["details"]["reason"].as_str().expect("reason").to_owned();
        return BTreeSet::from([format!("not_eligible:{reason}")]);
    }
    assert!(matches!(reply.status, 200 | 202), "{reply:?}");
    let done = server.finish(&reply.poll_path(), key);
    let data = done.data();
    if done.job_status() == "FAILED" {
        assert_eq!(data["error"]["code"], "ACCOUNT_NOT_ELIGIBLE", "{data}");
        let message = data["error"]["message"].as_str().expect("message");
        let reason = message.rsplit_once('(').and_then(|(_, r)| r.strip_suffix(')')).expect("(reason)");
        return BTreeSet::from([format!("not_eligible:{reason}")]);
    }
    let signals = data["xray"]["signals"].as_array().expect("signals");
    signals.iter().map(|s| s["kind"].as_str().expect("kind").to_owned()).collect()
}

#[test]
fn the_demo_table_is_what_the_api_answers() {
    let rows = demo_table(README);
    let listed: Vec<Row> = DemoLedger::new(DEMO_SEED_DEFAULT)
        .archetype_list()
        .into_iter()
        .map(|a| Row {
            name: a.name.to_owned(),
            address: a.address,
            description: a.description.to_owned(),
            expected: a.expected_signals.iter().map(|s| s.to_string()).collect(),
        })
        .collect();
    assert_eq!(rows, listed, "the README's demo table is `xray demo list`");
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let status = get(server.addr, &format!("{API}/status"), &key.secret);
    assert_eq!(status.body["data"]["key"]["account"], key.account.as_str(), "the status names the key's account");
    for row in &rows {
        let expected: BTreeSet<String> = row.expected.iter().cloned().collect();
        assert_eq!(answered(&server, &key.secret, &row.address), expected, "{} ({})", row.name, row.address);
    }
}

#[test]
fn markers_and_blocks_are_read_as_written() {
    let text = "x\n<!-- readme-test: skip (a reason) -->\n```sh\necho a\n```\n\n  ```bash\n  echo b\n  ```\n\
                ```python\nprint()\n```\n<!-- readme-test: needs etcd -->\n\n```sh\necho c\n```\n";
    let blocks = shell_blocks(text);
    let got: Vec<(usize, &str, &Marker)> = blocks.iter().map(|b| (b.line, b.text.as_str(), &b.marker)).collect();
    assert_eq!(
        got,
        [
            (3, "echo a", &Marker::Skip("a reason".into())),
            (7, "echo b", &Marker::Run),
            (15, "echo c", &Marker::Needs("etcd".into()))
        ]
    );
    assert_eq!(fill("curl $K svc_live_… 127.0.0.1:8080", &[("svc_live_…", "k".into())]), "curl $K k 127.0.0.1:8080");
}

/// What makes a block fail, each named with its README line: a failing command, an API error
/// document on stdout, a placeholder left as the shell would run it, a run past its bound.
#[test]
fn a_broken_block_fails_naming_its_line() {
    let scratch = Scratch::new();
    let block = |line: usize, text: &str| Block { line, text: text.to_owned(), marker: Marker::Run };
    let failed = |b: &Block| run(b, &b.text, &scratch, BLOCK_TIMEOUT).expect_err("fails");
    assert!(run(&block(1, "echo fine"), "echo fine", &scratch, BLOCK_TIMEOUT).is_ok());
    assert!(failed(&block(7, "false\necho after")).starts_with("README.md:7: the block ended with"));
    let error = failed(&block(9, r#"echo '{"error":{"code":"NOT_FOUND"}}'"#));
    assert!(error.contains("README.md:9") && error.contains("printing an error"), "{error}");
    let slow = block(11, "sleep 5 &\nsleep 5");
    let timed_out = run(&slow, &slow.text, &scratch, Duration::from_millis(200)).expect_err("bounded");
    assert!(timed_out.starts_with("README.md:11: the block timed out"), "{timed_out}");
    assert_eq!(unfilled("$X keys create \\\n   [--account acct_…]"), Some("   [--account acct_…]"));
    assert_eq!(unfilled("$X analyze <address>"), Some("$X analyze <address>"));
    assert_eq!(unfilled("curl $API  # poll an_…"), None, "comments may name placeholders");
}
