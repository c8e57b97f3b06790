//! Command-line interface: the `xray` subcommands and their wiring to library functions.
//!
//! Owns: every clap definition of the binary (no other module defines flags), output of
//! command results as JSON on stdout, errors on stderr with a non-zero exit. `analyze` and
//! `compare` run `jobs::execute`, the compute threads' own path, with a progress line on a
//! terminal's stderr over `rpc:` (`progress`). Runs on the main thread; async commands get a
//! current-thread tokio runtime, the same kind compute threads use.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod backup;
mod progress;

use crate::config::{self, IoDriver, SourceSpec};
use crate::jobs::execute::{execute, JobSpec, Outcome};
use crate::ledger::runtime;
use crate::ledger::source::Source;

#[derive(Parser)]
#[command(name = "xray", version, about = "Wallet X-Ray: programmatic wallet intelligence for Solana")]
struct Cli {
    /// What to run; without one, `serve` with its defaults.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API (the default command): listeners, compute threads, RocksDB, admin.
    Serve(Box<ServeArgs>),
    /// API keys: create, list, revoke, rotate, through the admin listener of a running server.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Accounts: their webhook signing secrets, through the admin listener of a running server.
    #[command(subcommand)]
    Accounts(AccountsCommand),
    /// Feedback on analyses (false positives, confirmations, misses) and scans (false positives,
    /// false negatives), through the admin listener.
    #[command(subcommand)]
    Feedback(FeedbackCommand),
    /// The report-signing keys (signed reports), through the admin listener of a running server.
    #[command(subcommand)]
    SigningKeys(SigningKeysCommand),
    /// Take an online backup of a running server's data directory, through its admin listener
    /// (it keeps serving); waits for it and prints its status. Restore with `xray restore`.
    Backup(backup::BackupArgs),
    /// Make a new data directory from a backup (offline: checks every file first, writes
    /// nothing unless all of it is whole); then start `xray serve --data-dir` on it.
    Restore(backup::RestoreArgs),
    /// Ledger tools: inspect fixtures, record and serve snapshots.
    #[command(subcommand)]
    Ledger(LedgerCommand),
    /// The embedded demo ledger.
    #[command(subcommand)]
    Demo(DemoCommand),
    /// Labels files: import a sanctions list.
    #[command(subcommand)]
    Labels(LabelsCommand),
    /// Analyze one wallet: prints the JSON the API returns under `data.xray`.
    Analyze {
        /// The wallet's address (base58).
        wallet: String,
        #[command(flatten)]
        ledger: LedgerArgs,
        /// Indent the JSON for reading (the API sends it compact).
        #[arg(long)]
        pretty: bool,
    },
    /// Compare two wallets: prints the JSON the API returns under `data.comparison`.
    Compare {
        /// The first wallet's address (base58).
        wallet_a: String,
        /// The second wallet's address (base58).
        wallet_b: String,
        #[command(flatten)]
        ledger: LedgerArgs,
        /// Indent the JSON for reading (the API sends it compact).
        #[arg(long)]
        pretty: bool,
    },
    /// Print the signal catalogue (`--markdown`: as docs/signals.md).
    Signals {
        /// Markdown (docs/signals.md) instead of JSON.
        #[arg(long)]
        markdown: bool,
    },
    /// The HTTP edge alone with a stand-in handler, for load tests (loadtest/run.sh).
    #[command(hide = true)]
    Edge(EdgeArgs),
    /// Print the wallet view (the domain model the engine reads) of one wallet, for debugging.
    View {
        /// The wallet's address (base58).
        wallet: String,
        #[command(flatten)]
        ledger: LedgerArgs,
    },
}

/// `--ledger`'s help (`serve` and every command that reads a ledger).
const LEDGER_HELP: &str = "Ledger source: demo, demo:<seed>, demo+timeline (three demo wallets change over time, \
     for monitors; demo:<seed>+timeline), demo+script=<file> (a TOML of timeline events and their times), \
     snapshot:<dir> or rpc:<http(s)://url>";

#[derive(Args, Clone)]
pub struct LedgerArgs {
    #[arg(long, default_value = "demo", env = "XRAY_LEDGER", hide_env_values = true, help = LEDGER_HELP)]
    pub ledger: SourceSpec,
    /// Signatures read per wallet at most.
    #[arg(long, default_value_t = config::HISTORY_DEPTH_DEFAULT)]
    pub history_depth: u32,
    /// Labels file replacing the builtin labels (format: docs/labels.md).
    #[arg(long, env = "XRAY_LABELS")]
    pub labels: Option<PathBuf>,
    /// Labels files added to those; an address a later file lists is labelled as it says.
    #[arg(long, env = "XRAY_LABELS_EXTRA", value_delimiter = ',')]
    pub labels_extra: Vec<PathBuf>,
}

impl LedgerArgs {
    fn open(&self) -> Result<(Source, crate::ledger::view::ViewOptions), String> {
        let source = Source::open(&self.ledger, one_shot_rpc()).map_err(|e| e.to_string())?;
        Ok((source, crate::ledger::view::ViewOptions::deep(self.history_depth)))
    }
}

/// The rpc source's options for one command run: a refused nonce search is not remembered
/// for later jobs, since the process ends with this one.
fn one_shot_rpc() -> crate::ledger::rpc::RpcOptions {
    crate::ledger::rpc::RpcOptions { nonce_search_refusal_s: 0, ..Default::default() }
}

/// Where the admin listener of a server is: its data directory, or an explicit URL.
#[derive(Args)]
struct AdminArgs {
    /// Data directory of the server (holds the admin token and the admin address).
    #[arg(long, env = "XRAY_DATA_DIR", default_value = config::DATA_DIR_DEFAULT)]
    data_dir: PathBuf,
    /// Admin listener URL (http://host:port), instead of the address recorded in the data dir.
    #[arg(long)]
    admin_url: Option<String>,
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Create a key; prints it (with the secret `key`, shown this once) as JSON.
    Create {
        #[command(flatten)]
        admin: AdminArgs,
        /// A name for people (listings, logs); not secret.
        #[arg(long)]
        name: String,
        /// Account the key belongs to (acct_…) [default: a new account].
        #[arg(long)]
        account: Option<String>,
        /// Comma list of wallet:analyze, wallet:compare, analysis:read, usage:read, transaction:scan,
        /// monitor:write, monitor:read, policy:read, policy:write.
        #[arg(long)]
        scopes: String,
        #[arg(long, help = format!(
            "Requests per second the key's token bucket refills [default: {}]",
            crate::config::KEY_RATE_PER_SECOND_DEFAULT
        ))]
        rate_per_second: Option<u32>,
        #[arg(long, help = format!(
            "Requests the key may send at once (the bucket's size) [default: {}]",
            crate::config::KEY_BURST_DEFAULT
        ))]
        burst: Option<u32>,
        #[arg(long, help = format!(
            "Quota units per period (a scan or an X-Ray is one unit) [default: {}]",
            crate::config::KEY_QUOTA_LIMIT_DEFAULT
        ))]
        quota: Option<u64>,
        /// Quota period: day or month (calendar UTC) [default: month].
        #[arg(long)]
        period: Option<String>,
        /// Expiry, RFC 3339 (e.g. 2027-01-01T00:00:00Z) [default: never].
        #[arg(long)]
        expires_at: Option<String>,
    },
    /// List every key (no secrets).
    List {
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Revoke a key: refused on the next request, on every thread.
    Revoke {
        /// The key's id (key_…), as `keys list` shows it.
        id: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Replace a key by a new one (printed once) with the same scopes, limits and quota usage.
    Rotate {
        /// The key's id (key_…), as `keys list` shows it.
        id: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

#[derive(Subcommand)]
enum LabelsCommand {
    /// Read the Solana addresses of an OFAC SDN list file (the legacy `sdn.csv` or `sdn.xml`,
    /// downloaded by the operator) and print a labels file (docs/labels.md) listing each as
    /// `sanctioned`, with the list's name and date as provenance. A summary goes to stderr.
    Import {
        /// `ofac-csv` (sdn.csv), `ofac-xml` (sdn.xml), `phishing-json` (a phishing-domain
        /// list in eth-phishing-detect's `config.json` format: its domains as `[[domain]]`), or
        /// `program-map` (a JSON object of program id → name, as Jupiter's
        /// `program-id-to-label` list: each a `program` label tagged `--tag`).
        #[arg(long)]
        format: String,
        /// For `program-map`: the registry category the list's programs are tagged with
        /// (`dex`, `amm`, `lending`, … as docs/program-registry.md lists them).
        #[arg(long, default_value = "dex")]
        tag: String,
        /// The list file.
        #[arg(long)]
        input: PathBuf,
        /// The list's name and date, kept with every label (e.g. "OFAC SDN 2026-11-20").
        #[arg(long)]
        list: String,
        /// Write the labels file here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print the builtin labels file (the labels used without `--labels`): a start for your
    /// own, or what an import is added to with `--labels-extra`.
    Builtin {
        /// Print the builtin program registry instead (docs/program-registry.md), the second
        /// half of the builtin labels.
        #[arg(long)]
        programs: bool,
    },
}

/// Runs `xray labels import`.
fn run_labels(command: LabelsCommand) -> Result<(), String> {
    use crate::labels::ofac;
    let (format, input, list, tag, out) = match command {
        LabelsCommand::Import { format, input, list, tag, out } => (format, input, list, tag, out),
        LabelsCommand::Builtin { programs: false } => {
            return write_stdout(crate::labels::DEFAULT_LABELS_TOML.as_bytes())
        }
        LabelsCommand::Builtin { programs: true } => {
            return write_stdout(crate::labels::PROGRAM_REGISTRY_TOML.as_bytes())
        }
    };
    let size = std::fs::metadata(&input).map_err(|e| format!("{}: {e}", input.display()))?.len();
    if size > config::SANCTIONS_FILE_BYTES_MAX {
        return Err(format!("{}: larger than {} bytes", input.display(), config::SANCTIONS_FILE_BYTES_MAX));
    }
    let text = std::fs::read_to_string(&input).map_err(|e| format!("{}: {e}", input.display()))?;
    let write = |labels: String| match &out {
        Some(path) => std::fs::write(path, &labels).map_err(|e| format!("{}: {e}", path.display())),
        None => write_stdout(labels.as_bytes()),
    };
    if format == "phishing-json" {
        let import = crate::labels::domains::read_phishing_list(&text, &list)?;
        eprintln!(
            "labels import: {} domains, {} entries skipped (not host names)",
            import.labels.len(),
            import.skipped
        );
        return write(crate::labels::domains::labels_toml(&import));
    }
    if format == "program-map" {
        let import = crate::labels::registry::read_program_map(&text)?;
        eprintln!(
            "labels import: {} programs tagged {tag:?}, {} entries skipped (no address, or no name)",
            import.programs.len(),
            import.skipped
        );
        return write(crate::labels::registry::labels_toml(&import, &list, &tag));
    }
    let import = match format.as_str() {
        "ofac-csv" => ofac::read_sdn_csv(&text)?,
        "ofac-xml" => ofac::read_sdn_xml(&text)?,
        other => return Err(format!("--format {other:?}: expected ofac-csv, ofac-xml, phishing-json or program-map")),
    };
    // Not parsed again here: `labels_toml` writes only addresses that parsed and quoted text
    // (a unit test loads what it writes), and parsing a list of 10⁶ entries back took most of
    // the command's time and memory.
    write(ofac::labels_toml(&import, &list))?;
    eprintln!(
        "{} Solana addresses labelled sanctioned ({list}); {} SOL entries skipped (not base58 of 32 bytes)",
        import.addresses.len(),
        import.skipped
    );
    Ok(())
}

#[derive(Subcommand)]
enum AccountsCommand {
    /// Create (or rotate) the account's webhook signing secret; prints it, shown this once, as
    /// JSON ({"account","secret","createdAt"}). Deliveries are signed with it from then on.
    WebhookSecret {
        #[command(flatten)]
        admin: AdminArgs,
        /// The account (acct_…).
        #[arg(long)]
        account: String,
    },
}

#[derive(Subcommand)]
enum FeedbackCommand {
    /// One page of an account's feedback, least recently written first, as JSON
    /// ({"account","feedback":[…],"nextAfter"}); pass `nextAfter` as --after for the next page.
    List {
        #[command(flatten)]
        admin: AdminArgs,
        /// The account (acct_…).
        #[arg(long)]
        account: String,
        /// The page's `nextAfter` of the previous page.
        #[arg(long)]
        after: Option<String>,
        /// Records on the page (1 to 1000; default 100).
        #[arg(long)]
        limit: Option<u32>,
        /// Only this verdict: false_positive, confirmed, missed (analyses) or false_negative (scans).
        #[arg(long)]
        verdict: Option<String>,
        /// Only this signal kind (`none`: records that name no signal — `missed`, and scans).
        #[arg(long)]
        kind: Option<String>,
    },
}

/// Runs one `xray feedback` command against the admin listener and prints its answer.
fn run_feedback(command: FeedbackCommand) -> Result<(), String> {
    use crate::admin::client::AdminClient;
    let FeedbackCommand::List { admin, account, after, limit, verdict, kind } = command;
    let mut query = Vec::new();
    for (name, value) in
        [("after", after), ("limit", limit.map(|n| n.to_string())), ("verdict", verdict), ("kind", kind)]
    {
        if let Some(value) = value {
            query.push(format!("{name}={value}"));
        }
    }
    let answer = runtime()?.block_on(async {
        AdminClient::locate(&admin.data_dir, admin.admin_url.as_deref())?.feedback(&account, &query.join("&")).await
    })?;
    print_json(&answer)
}

/// `xray signing-keys …`.
#[derive(Subcommand)]
enum SigningKeysCommand {
    /// The report-signing keys, current and retired, as /.well-known/xray-keys.json publishes
    /// them (a JWK set: kid, status, createdAt, the public key). Prints it.
    List {
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// A new report-signing key; the old one's public key stays published as retired (at
    /// /.well-known/xray-keys.json), so reports it signed still verify. Prints
    /// {"keyId","retiredKeyId","createdAt"}.
    Rotate {
        #[command(flatten)]
        admin: AdminArgs,
    },
}

/// Runs one `xray signing-keys` command against the admin listener and prints its answer.
fn run_signing_keys(command: SigningKeysCommand) -> Result<(), String> {
    use crate::admin::client::AdminClient;
    let answer = runtime()?.block_on(async {
        match command {
            SigningKeysCommand::List { admin } => {
                AdminClient::locate(&admin.data_dir, admin.admin_url.as_deref())?.signing_keys().await
            }
            SigningKeysCommand::Rotate { admin } => {
                AdminClient::locate(&admin.data_dir, admin.admin_url.as_deref())?.rotate_signing_key().await
            }
        }
    })?;
    print_json(&answer)
}

/// Runs one `xray accounts` command against the admin listener and prints its answer.
fn run_accounts(command: AccountsCommand) -> Result<(), String> {
    use crate::admin::client::AdminClient;
    let answer = runtime()?.block_on(async {
        match command {
            AccountsCommand::WebhookSecret { admin, account } => {
                AdminClient::locate(&admin.data_dir, admin.admin_url.as_deref())?.webhook_secret(&account).await
            }
        }
    })?;
    print_json(&answer)
}

/// Runs one `xray keys` command against the admin listener and prints its answer.
fn run_keys(command: KeysCommand) -> Result<(), String> {
    use crate::admin::client::AdminClient;
    let client = |admin: &AdminArgs| AdminClient::locate(&admin.data_dir, admin.admin_url.as_deref());
    let answer = runtime()?.block_on(async {
        match command {
            KeysCommand::Create { admin, name, account, scopes, rate_per_second, burst, quota, period, expires_at } => {
                let scopes: Vec<&str> = scopes.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
                let body = serde_json::json!({
                    "name": name, "account": account, "scopes": scopes, "ratePerSecond": rate_per_second,
                    "burst": burst, "quota": quota, "period": period, "expiresAt": expires_at,
                });
                client(&admin)?.create(&body).await
            }
            KeysCommand::List { admin } => client(&admin)?.list().await,
            KeysCommand::Revoke { id, admin } => client(&admin)?.act(&id, "revoke").await,
            KeysCommand::Rotate { id, admin } => client(&admin)?.act(&id, "rotate").await,
        }
    })?;
    print_json(&answer)
}

#[derive(Subcommand)]
enum LedgerCommand {
    /// Summarize a saved getTransaction or getBlock response as JSON.
    Inspect {
        /// The saved JSON-RPC response (a file of tests/fixtures/solana-rpc/, say).
        file: PathBuf,
    },
    /// Record the JSON-RPC responses for wallets from a live node into a snapshot directory.
    Record {
        /// The node's JSON-RPC URL (http(s)://…).
        #[arg(long)]
        rpc: String,
        /// A wallet to record (repeat the flag, or list several after it).
        #[arg(long = "wallet", required = true, num_args = 1..)]
        wallets: Vec<String>,
        /// The snapshot directory to write (format: docs/snapshot-format.md).
        #[arg(long)]
        out: PathBuf,
        /// Signatures recorded per wallet at most.
        #[arg(long, default_value_t = config::HISTORY_DEPTH_DEFAULT)]
        history_depth: u32,
    },
    /// Write demo wallets (every archetype, then N background wallets) as a snapshot.
    ExportDemo {
        /// The snapshot directory to write.
        #[arg(long)]
        out: PathBuf,
        /// Background wallets written after the archetypes.
        #[arg(long, default_value_t = 0)]
        wallets: u32,
        /// The demo ledger's seed.
        #[arg(long, default_value_t = config::DEMO_SEED_DEFAULT)]
        seed: u64,
    },
    /// Serve a snapshot (or the demo ledger) as a Solana JSON-RPC endpoint, with optional faults.
    Serve(LedgerServeArgs),
    /// Print the base64 of an unsigned transaction against a demo wallet, for the scan
    /// (`POST /v1/developer/intelligence/transaction`); `--list` names the cases.
    DemoTx {
        /// The case (sol-transfer, approve, drain, …).
        #[arg(required_unless_present = "list")]
        case: Option<String>,
        /// List the cases with their signer and what they do.
        #[arg(long)]
        list: bool,
        /// The demo ledger's seed.
        #[arg(long, default_value_t = config::DEMO_SEED_DEFAULT)]
        seed: u64,
    },
}

/// Flags of `xray ledger serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct LedgerServeArgs {
    /// Snapshot directory to serve (the same as `--ledger snapshot:<dir>`).
    #[arg(long, conflicts_with = "ledger")]
    pub snapshot: Option<PathBuf>,
    /// Ledger source to serve: demo, demo:<seed>, snapshot:<dir> or rpc:<http(s)://url>.
    #[arg(long)]
    pub ledger: Option<SourceSpec>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8899")]
    pub listen: SocketAddr,
    /// Milliseconds added to every response.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    /// Share (0.0–1.0) of requests answered 429 with `Retry-After`.
    #[arg(long = "fault-429", default_value_t = 0.0)]
    pub fault_429: f64,
    /// Share of requests answered 500.
    #[arg(long = "fault-500", default_value_t = 0.0)]
    pub fault_500: f64,
    /// Share of requests answered 200 with a body that is not JSON.
    #[arg(long, default_value_t = 0.0)]
    pub fault_malformed: f64,
    /// Share of requests whose body stops halfway (Content-Length promises more).
    #[arg(long, default_value_t = 0.0)]
    pub fault_truncated: f64,
    /// Share of requests whose connection closes with no response.
    #[arg(long, default_value_t = 0.0)]
    pub fault_drop: f64,
    /// `Retry-After` seconds sent with each 429.
    #[arg(long, default_value_t = 1)]
    pub retry_after_s: u64,
    /// Only the first N requests may fault; later ones are served cleanly.
    #[arg(long)]
    pub fault_first: Option<u64>,
    /// Refuse JSON-RPC batches with one error object, as endpoints without batching do.
    #[arg(long)]
    pub refuse_batches: bool,
    /// Make every answer hostile: padded:<bytes>, endless, token-balances:<n> or nested:<depth>.
    #[arg(long)]
    pub hostile: Option<crate::devtools::rpc_server::Hostile>,
}

impl LedgerServeArgs {
    /// The source to serve: `--snapshot <dir>` or `--ledger <spec>`, exactly one.
    pub fn source_spec(&self) -> Result<SourceSpec, String> {
        match (&self.snapshot, &self.ledger) {
            (Some(dir), None) => Ok(SourceSpec::Snapshot { dir: dir.clone() }),
            (None, Some(spec)) => Ok(spec.clone()),
            _ => Err("give exactly one of --snapshot <dir> or --ledger <spec>".into()),
        }
    }

    pub fn fault_plan(&self) -> crate::devtools::rpc_server::FaultPlan {
        crate::devtools::rpc_server::FaultPlan {
            latency_ms: self.latency_ms,
            share_429: self.fault_429,
            share_500: self.fault_500,
            share_malformed: self.fault_malformed,
            share_truncated: self.fault_truncated,
            share_drop: self.fault_drop,
            retry_after_s: self.retry_after_s,
            first_requests_max: self.fault_first,
            refuse_batches: self.refuse_batches,
            hostile: self.hostile,
        }
    }
}

#[derive(Args)]
struct EdgeArgs {
    /// `baseline`: a fixed `{"status":"ok"}` for any request (the edge's own cost);
    /// `demo`: the contract's routing and checks with nothing behind them.
    #[arg(value_enum)]
    mode: EdgeMode,
    /// Address to listen on.
    #[arg(long, default_value = crate::config::LISTEN_DEFAULT)]
    listen: std::net::SocketAddr,
    /// Listener threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// I/O driver: auto, uring or epoll.
    #[arg(long, default_value = "auto")]
    driver: IoDriver,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum EdgeMode {
    Baseline,
    Demo,
}

/// Flags of `xray serve`. Each overrides the config file; each has an `XRAY_*` variable that
/// a flag overrides in turn. Unset ones keep the file's value or the default (config.rs).
#[derive(Args, Default)]
pub struct ServeArgs {
    /// TOML config file (keys: the snake_case names of these flags; see README).
    #[arg(long, env = "XRAY_CONFIG")]
    pub config: Option<PathBuf>,
    /// Check the configuration (file, XRAY_* variables, flags) and print it, without starting
    /// anything; exits non-zero, saying why, when it is invalid.
    #[arg(long)]
    pub check_config: bool,
    /// Public API address.
    #[arg(long, env = "XRAY_LISTEN")]
    pub listen: Option<std::net::SocketAddr>,
    /// Admin listener address (metrics, key management; loopback unless admin_allow_remote).
    #[arg(long, env = "XRAY_ADMIN_LISTEN")]
    pub admin_listen: Option<std::net::SocketAddr>,
    /// Data directory: RocksDB, the admin token and address.
    #[arg(long, env = "XRAY_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    #[arg(long, env = "XRAY_LEDGER", hide_env_values = true, help = LEDGER_HELP)]
    pub ledger: Option<SourceSpec>,
    /// Store: rocksdb (embedded, in the data directory) or etcd:<host:port>[,<host:port>…] (a
    /// cluster of nodes sharing one etcd).
    #[arg(long, env = "XRAY_STORE")]
    pub store: Option<config::StoreSpec>,
    /// Keyspace prefix of this cluster in etcd.
    #[arg(long, env = "XRAY_ETCD_PREFIX")]
    pub etcd_prefix: Option<String>,
    /// Labels file replacing the builtin labels.
    #[arg(long, env = "XRAY_LABELS")]
    pub labels: Option<PathBuf>,
    /// Labels files added to those (a sanctions import, your own): repeat the flag, or
    /// comma-separate; an address a later file lists is labelled as that file says.
    #[arg(long, env = "XRAY_LABELS_EXTRA", value_delimiter = ',')]
    pub labels_extra: Option<Vec<PathBuf>>,
    /// Public listener threads, each a monoio runtime with its own SO_REUSEPORT socket.
    #[arg(long, env = "XRAY_LISTENER_THREADS")]
    pub listener_threads: Option<usize>,
    /// Compute threads (pinned to cores) that run the X-Ray engine.
    #[arg(long, env = "XRAY_COMPUTE_THREADS")]
    pub compute_threads: Option<usize>,
    /// Admission queue length (a full queue answers 503 SERVICE_BUSY).
    #[arg(long, env = "XRAY_QUEUE_CAPACITY")]
    pub queue_capacity: Option<usize>,
    /// Queued or running jobs one account may hold (past it: 429 TOO_MANY_JOBS).
    #[arg(long, env = "XRAY_LIVE_JOBS_PER_ACCOUNT_MAX")]
    pub live_jobs_per_account_max: Option<usize>,
    /// Jobs one compute thread runs at once (their ledger reads overlap).
    #[arg(long, env = "XRAY_JOBS_IN_FLIGHT_PER_THREAD")]
    pub jobs_in_flight_per_thread: Option<usize>,
    /// Base of absolute pollUrls (default http://<listen>).
    #[arg(long, env = "XRAY_PUBLIC_BASE_URL")]
    pub public_base_url: Option<String>,
    /// I/O driver of the listeners: auto, uring or epoll.
    #[arg(long, env = "XRAY_IO_DRIVER")]
    pub io_driver: Option<IoDriver>,
    /// Newest transactions of a wallet one analysis reads.
    #[arg(long, env = "XRAY_HISTORY_DEPTH")]
    pub history_depth: Option<u32>,
    /// Seconds one job may run (past it: FAILED UPSTREAM_UNAVAILABLE, refunded).
    #[arg(long, env = "XRAY_JOB_DEADLINE_S")]
    pub job_deadline_s: Option<u64>,
    /// Ledger bytes one job may read (past it: FAILED ANALYSIS_FAILED, refunded).
    #[arg(long, env = "XRAY_JOB_LEDGER_BYTES_MAX")]
    pub job_ledger_bytes_max: Option<u64>,
    /// Bytes of upstream answers the scan lane holds at once, every scan together (past it: a
    /// scan is answered 503 SERVICE_BUSY).
    #[arg(long, env = "XRAY_SCAN_BUFFERED_BYTES_MAX")]
    pub scan_buffered_bytes_max: Option<u64>,
    /// µs of a scan's work on the listener thread (the demo ledger reads and simulates there)
    /// per rate-limit token the scan is charged beyond its first; 0: one token a scan, always.
    #[arg(long, env = "XRAY_SCAN_LISTENER_US_PER_TOKEN")]
    pub scan_listener_us_per_token: Option<u64>,
    /// Seconds a READY result is reused for an equal request.
    #[arg(long, env = "XRAY_FRESHNESS_WINDOW_S")]
    pub freshness_window_s: Option<u64>,
    /// Bytes of the ledger cache (finalized transactions and histories read over `rpc:`); 0: off.
    #[arg(long, env = "XRAY_LEDGER_CACHE_BYTES")]
    pub ledger_cache_bytes: Option<u64>,
    /// Delivery attempts of one webhook before it is given up (1 to 10).
    #[arg(long, env = "XRAY_WEBHOOK_ATTEMPTS_MAX")]
    pub webhook_attempts_max: Option<u32>,
    /// Seconds between two checks of one watched wallet (monitors; at least 1).
    #[arg(long, env = "XRAY_MONITOR_INTERVAL_S")]
    pub monitor_interval_s: Option<u64>,
    /// Monitor checks in flight at once on this node.
    #[arg(long, env = "XRAY_MONITOR_CHECKS_IN_FLIGHT_MAX")]
    pub monitor_checks_in_flight_max: Option<usize>,
    /// Watched wallets (monitor × wallet) this node checks at most.
    #[arg(long, env = "XRAY_MONITOR_WATCHES_PER_NODE_MAX")]
    pub monitor_watches_per_node_max: Option<usize>,
    /// Days finished jobs and their results are kept (then purged hourly).
    #[arg(long, env = "XRAY_RETENTION_DAYS")]
    pub retention_days: Option<u32>,
    /// The pace of an online backup's copy (`xray backup`), in KiB a second.
    #[arg(long, env = "XRAY_BACKUP_RATE_KIB_PER_S")]
    pub backup_rate_kib_per_s: Option<u32>,
    /// fsync the WAL on every durable write (power-loss durability).
    #[arg(long, env = "XRAY_SYNC_WRITES")]
    pub sync_writes: Option<bool>,
    /// Polls waiting (`wait=`) at once, all threads together; past it a poll answers at once.
    #[arg(long, env = "XRAY_LONG_POLL_WAITERS_MAX")]
    pub long_poll_waiters_max: Option<usize>,
    /// Failed authentications per second one client address may make before it is refused
    /// (429); a valid key is never refused by it.
    #[arg(long, env = "XRAY_IP_FAILURES_PER_S")]
    pub ip_failures_per_s: Option<u32>,
    /// Open connections per client address (IPv6: per /64); past it new ones are closed.
    #[arg(long, env = "XRAY_CONNECTIONS_PER_CLIENT_MAX")]
    pub connections_per_client_max: Option<usize>,
    /// Requests one connection carries; the last answer says `Connection: close`.
    #[arg(long, env = "XRAY_REQUESTS_PER_CONNECTION_MAX")]
    pub requests_per_connection_max: Option<u64>,
    /// Milliseconds a response write may make no progress before the connection is closed.
    #[arg(long, env = "XRAY_WRITE_STALL_TIMEOUT_MS")]
    pub write_stall_timeout_ms: Option<u64>,
    /// Load balancer networks (comma-separated, e.g. 10.0.0.0/8,192.0.2.7) whose
    /// X-Forwarded-For or PROXY protocol header names the client.
    #[arg(long, env = "XRAY_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Option<Vec<config::ProxyNetwork>>,
    /// Connections from trusted proxies start with a PROXY protocol (v1/v2) header.
    #[arg(long, env = "XRAY_PROXY_PROTOCOL")]
    pub proxy_protocol: Option<bool>,
    /// Log lines as `text` or `json` (one object per line).
    #[arg(long, env = "XRAY_LOG_FORMAT")]
    pub log_format: Option<config::LogFormat>,
    /// One log line per API request (request id, route, status, duration, key id); `false`
    /// turns it off.
    #[arg(long, env = "XRAY_ACCESS_LOG")]
    pub access_log: Option<bool>,
    /// Hosts a callbackUrl may name whatever their address, over http too (comma-separated,
    /// e.g. 127.0.0.1,hooks.internal); by default webhooks reach public https hosts only.
    /// localhost is the loopback: 127.0.0.1 or ::1 allows it too (reaching that address), and
    /// localhost allows both.
    #[arg(long, env = "XRAY_WEBHOOK_ALLOW_HOSTS", value_delimiter = ',')]
    pub webhook_allow_hosts: Option<Vec<String>>,
    /// A proxy for every webhook delivery (http://host:port); the environment's HTTP_PROXY,
    /// HTTPS_PROXY and ALL_PROXY are never used for webhooks. Targets are checked before the
    /// request goes to it, but it resolves them again: it must refuse private addresses too.
    #[arg(long, env = "XRAY_WEBHOOK_PROXY", hide_env_values = true)]
    pub webhook_proxy: Option<String>,
}

impl ServeArgs {
    /// Defaults, then the config file, then these flags and variables.
    pub fn to_config(&self) -> Result<config::ServeConfig, String> {
        let mut c = config::ServeConfig::from_file(self.config.as_deref())?;
        macro_rules! layer {
            ($($field:ident),*) => { $( if let Some(v) = &self.$field { c.$field = v.clone().into(); } )* };
        }
        layer!(
            listen,
            admin_listen,
            data_dir,
            store,
            etcd_prefix,
            ledger,
            listener_threads,
            compute_threads,
            queue_capacity
        );
        layer!(jobs_in_flight_per_thread, io_driver, history_depth, freshness_window_s, retention_days);
        layer!(backup_rate_kib_per_s);
        layer!(sync_writes, long_poll_waiters_max, ip_failures_per_s, connections_per_client_max);
        layer!(requests_per_connection_max, write_stall_timeout_ms, trusted_proxies, proxy_protocol);
        layer!(live_jobs_per_account_max, job_deadline_s, job_ledger_bytes_max, log_format, access_log);
        layer!(webhook_allow_hosts, ledger_cache_bytes, scan_buffered_bytes_max, scan_listener_us_per_token);
        layer!(monitor_interval_s, monitor_checks_in_flight_max, monitor_watches_per_node_max, webhook_attempts_max);
        if self.labels.is_some() {
            c.labels = self.labels.clone();
        }
        if let Some(extra) = &self.labels_extra {
            c.labels_extra = extra.clone();
        }
        if self.public_base_url.is_some() {
            c.public_base_url = self.public_base_url.clone();
        }
        if self.webhook_proxy.is_some() {
            c.webhook_proxy = self.webhook_proxy.clone();
        }
        Ok(c)
    }
}

#[derive(Subcommand)]
enum DemoCommand {
    /// List the demo archetypes with their addresses.
    List {
        /// The demo ledger's seed.
        #[arg(long, default_value_t = config::DEMO_SEED_DEFAULT)]
        seed: u64,
    },
}

/// The clap command with each `serve` flag's default in its help, read off
/// `ServeConfig::default()` (the flags are optional layers over the file, so clap itself has no
/// default to show, and a default written in a doc comment would drift from the code).
fn command_with_defaults() -> clap::Command {
    use clap::CommandFactory;
    Cli::command().mut_subcommand("serve", |serve| {
        serve_defaults().into_iter().fold(serve, |serve, (id, default)| {
            serve.mut_arg(id, |arg| {
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                arg.help(format!("{help} [default: {default}]"))
            })
        })
    })
}

/// Each `serve` flag (by its field name) and its default as help shows it.
fn serve_defaults() -> Vec<(&'static str, String)> {
    let d = config::ServeConfig::default();
    let none = |text: &str| text.to_owned();
    vec![
        ("listen", d.listen.to_string()),
        ("admin_listen", d.admin_listen.to_string()),
        ("data_dir", d.data_dir.display().to_string()),
        ("ledger", d.ledger.to_string()),
        ("store", d.store.to_string()),
        ("etcd_prefix", d.etcd_prefix.clone()),
        ("labels", none("the builtin labels")),
        ("labels_extra", none("none")),
        ("listener_threads", format!("one per core, {}", d.listener_threads)),
        ("compute_threads", format!("one per core, {}", d.compute_threads)),
        ("queue_capacity", d.queue_capacity.to_string()),
        ("live_jobs_per_account_max", d.live_jobs_per_account_max.to_string()),
        ("jobs_in_flight_per_thread", d.jobs_in_flight_per_thread.to_string()),
        ("public_base_url", none("http://<listen>")),
        ("io_driver", d.io_driver.to_string()),
        ("history_depth", d.history_depth.to_string()),
        ("job_deadline_s", d.job_deadline_s.to_string()),
        ("job_ledger_bytes_max", d.job_ledger_bytes_max.to_string()),
        ("scan_buffered_bytes_max", d.scan_buffered_bytes_max.to_string()),
        ("scan_listener_us_per_token", format!("{} (0: off)", d.scan_listener_us_per_token)),
        ("freshness_window_s", d.freshness_window_s.to_string()),
        ("ledger_cache_bytes", format!("{} (0: off; rpc: sources only)", d.ledger_cache_bytes)),
        ("webhook_attempts_max", d.webhook_attempts_max.to_string()),
        ("monitor_interval_s", d.monitor_interval_s.to_string()),
        ("monitor_checks_in_flight_max", d.monitor_checks_in_flight_max.to_string()),
        ("monitor_watches_per_node_max", d.monitor_watches_per_node_max.to_string()),
        ("retention_days", d.retention_days.to_string()),
        ("backup_rate_kib_per_s", d.backup_rate_kib_per_s.to_string()),
        ("sync_writes", d.sync_writes.to_string()),
        ("long_poll_waiters_max", d.long_poll_waiters_max.to_string()),
        ("ip_failures_per_s", d.ip_failures_per_s.to_string()),
        ("connections_per_client_max", d.connections_per_client_max.to_string()),
        ("requests_per_connection_max", d.requests_per_connection_max.to_string()),
        ("write_stall_timeout_ms", d.write_stall_timeout_ms.to_string()),
        ("trusted_proxies", none("none: every peer is the client")),
        ("proxy_protocol", d.proxy_protocol.to_string()),
        ("log_format", d.log_format.as_str().to_owned()),
        ("access_log", d.access_log.to_string()),
        ("webhook_allow_hosts", none("none: public https hosts only")),
        ("webhook_proxy", none("none: deliveries connect directly")),
    ]
}

/// `xray serve --check-config`: the configuration as `serve` would run with it, validated and
/// printed (secrets redacted), nothing started.
fn check_config(args: &ServeArgs) -> Result<(), String> {
    let config = args.to_config()?;
    config.validate()?;
    write_stdout(format!("config ok: {}\n", config.summary()).as_bytes())
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&command_with_defaults().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let command = cli.command.unwrap_or_else(|| Command::Serve(Box::default()));
    // A config that does not load is reported by `run` (as every other error).
    let log_format = match &command {
        Command::Serve(args) => args.to_config().map_or(config::LogFormat::Text, |c| c.log_format),
        _ => config::LogFormat::Text,
    };
    let _log = init_tracing(log_format);
    match run(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Lines buffered for the log writer thread; past it lines are dropped rather than making a
/// listener thread wait for stderr (the access log writes one per request).
const LOG_LINES_BUFFERED_MAX: usize = 128 * 1024;

/// The log filter when `XRAY_LOG` is not set.
const LOG_FILTER_DEFAULT: &str = "info,litesvm=off";

/// Logs to stderr through a writer thread, filtered by `XRAY_LOG` (default `info`), coloured
/// only when stderr is a terminal. The guard
/// flushes what is buffered when dropped: hold it until the command ends.
fn init_tracing(format: config::LogFormat) -> tracing_appender::non_blocking::WorkerGuard {
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_LINES_BUFFERED_MAX)
        .lossy(true)
        .finish(std::io::stderr());
    // litesvm logs a simulated transaction's own failures (an unknown payer, too few lamports)
    // at error level: a scan's answer, not the server's health, so they are off by default.
    let filter = tracing_subscriber::EnvFilter::try_from_env("XRAY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(LOG_FILTER_DEFAULT));
    // Colour codes only for a person at a terminal: a file or a journal gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(writer).with_ansi(ansi);
    let _ = match format {
        config::LogFormat::Text => builder.try_init(),
        config::LogFormat::Json => builder.json().flatten_event(true).with_current_span(false).try_init(),
    };
    guard
}

/// Prints a value as indented JSON on stdout (for people; the API writes compact JSON).
fn print_json<T: serde::Serialize>(value: &T) -> Result<(), String> {
    let mut text = serde_json::to_vec_pretty(value).map_err(|e| format!("JSON: {e}"))?;
    text.push(b'\n');
    write_stdout(&text)
}

/// Writes a command's output to stdout. A reader that stopped reading (`xray … | head`) ends
/// the output, not the command with an error: a closed pipe is success.
fn write_stdout(bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("stdout: {e}")),
        _ => Ok(()),
    }
}

fn run(command: Command) -> Result<(), String> {
    match command {
        Command::Serve(args) if args.check_config => check_config(&args),
        Command::Serve(args) => crate::serve::run(&args.to_config()?),
        Command::Keys(command) => run_keys(command),
        Command::Accounts(command) => run_accounts(command),
        Command::Feedback(command) => run_feedback(command),
        Command::SigningKeys(command) => run_signing_keys(command),
        Command::Backup(args) => backup::run_backup(&args),
        Command::Restore(args) => backup::run_restore(&args),
        Command::Labels(command) => run_labels(command),
        Command::Ledger(LedgerCommand::Inspect { file }) => {
            let summary = crate::devtools::inspect::inspect_file(&file).map_err(|e| e.to_string())?;
            print_json(&summary)
        }
        Command::Ledger(LedgerCommand::Record { rpc, wallets, out, history_depth }) => {
            let spec: SourceSpec = format!("rpc:{rpc}").parse().map_err(|e: config::InvalidValue| e.to_string())?;
            let wallets = parse_wallets(&wallets)?;
            let rt = runtime()?;
            let source = Source::open(&spec, one_shot_rpc()).map_err(|e| e.to_string())?;
            let report = rt
                .block_on(crate::devtools::recorder::record(&source, &wallets, &out, history_depth))
                .map_err(|e| e.to_string())?;
            print_json(&report)
        }
        Command::Ledger(LedgerCommand::ExportDemo { out, wallets, seed }) => {
            eprintln!("export-demo: {}", crate::devtools::recorder::export_announcement(wallets, &out));
            let rt = runtime()?;
            let report =
                rt.block_on(crate::devtools::recorder::export_demo(seed, wallets, &out)).map_err(|e| e.to_string())?;
            print_json(&report)
        }
        Command::Ledger(LedgerCommand::DemoTx { list: true, seed, .. }) => {
            let ledger = crate::ledger::demo::DemoLedger::new(seed);
            for (name, archetype, what) in crate::devtools::demo_tx::CASES {
                let signer = ledger.archetype(archetype).map(|k| k.to_string()).unwrap_or_default();
                println!("{name:<16} {archetype} ({signer}) {what}");
            }
            Ok(())
        }
        Command::Ledger(LedgerCommand::DemoTx { case, seed, .. }) => {
            let case = case.ok_or("name a case, or --list")?;
            println!("{}", runtime()?.block_on(crate::devtools::demo_tx::build(&case, seed))?);
            Ok(())
        }
        Command::Ledger(LedgerCommand::Serve(args)) => {
            crate::devtools::rpc_server::run(&args.source_spec()?, args.listen, args.fault_plan())
        }
        Command::Demo(DemoCommand::List { seed }) => {
            let list = crate::ledger::demo::DemoLedger::new(seed).archetype_list();
            print_json(&list)
        }
        Command::Analyze { wallet, ledger, pretty } => {
            let labels = crate::labels::Labels::load_with(ledger.labels.as_deref(), &ledger.labels_extra)?;
            let wallet = checked_address(&wallet, &labels)?;
            run_job(&JobSpec::Analysis { wallet }, &ledger, &labels, pretty)
        }
        Command::Compare { wallet_a, wallet_b, ledger, pretty } => {
            let labels = crate::labels::Labels::load_with(ledger.labels.as_deref(), &ledger.labels_extra)?;
            let (wallet_a, wallet_b) = (checked_address(&wallet_a, &labels)?, checked_address(&wallet_b, &labels)?);
            crate::eligibility::check_pair(&wallet_a, &wallet_b).map_err(|e| format!("INVALID_REQUEST: {e}"))?;
            run_job(&JobSpec::Comparison { wallet_a, wallet_b, reuse: [None, None] }, &ledger, &labels, pretty)
        }
        Command::Signals { markdown: true } => {
            let whole = crate::engine::signals::catalogue_markdown() + &crate::scan::catalogue::catalogue_markdown();
            write_stdout(whole.as_bytes())
        }
        Command::Signals { markdown: false } => print_json(&crate::engine::signals::catalogue_json()),
        Command::Edge(args) => {
            let mode = match args.mode {
                EdgeMode::Baseline => crate::devtools::edge::EdgeMode::Baseline,
                EdgeMode::Demo => crate::devtools::edge::EdgeMode::Demo,
            };
            let threads = args.threads.unwrap_or_else(|| crate::http::ServerConfig::default().threads);
            crate::devtools::edge::run_edge(mode, args.listen, threads, args.driver)
        }
        Command::View { wallet, ledger } => write_stdout(format!("{:#?}\n", read_view(&wallet, &ledger)?).as_bytes()),
    }
}

/// Runs one job exactly as a compute thread does (`jobs::execute`) and prints its payload:
/// compact, byte for byte what the API serves, or indented. A FAILED job is an error naming
/// its contract code.
fn run_job(spec: &JobSpec, ledger: &LedgerArgs, labels: &crate::labels::Labels, pretty: bool) -> Result<(), String> {
    let (source, options) = ledger.open()?;
    let runtime = runtime()?;
    // Only a remote node is slow enough to watch; the line is gone before the result prints.
    let reporter = progress::Reporter::start(matches!(ledger.ledger, SourceSpec::Rpc { .. }));
    let outcome = runtime.block_on(execute(&source, labels, spec, options, &()));
    reporter.finish();
    let payload = match outcome {
        Outcome::Ready { payload } => payload,
        Outcome::Failed { code, message } => return Err(format!("{}: {message}", code.as_str())),
    };
    if pretty {
        let value: serde_json::Value = serde_json::from_slice(&payload).map_err(|e| format!("payload: {e}"))?;
        return print_json(&value);
    }
    let mut line = payload;
    line.push(b'\n');
    write_stdout(&line)
}

/// Steps 6 and 7 of the contract for one address, as the API answers them.
fn checked_address(text: &str, labels: &crate::labels::Labels) -> Result<crate::pubkey::Pubkey, String> {
    use crate::eligibility::{check_local, LocalRefusal};
    check_local(text, labels).map_err(|refusal| match refusal {
        LocalRefusal::Invalid(e) => format!("INVALID_ADDRESS: {text}: {}", e.reason()),
        LocalRefusal::Ineligible(i) => format!("ACCOUNT_NOT_ELIGIBLE ({}): {}", i.reason(), i.message()),
    })
}

/// Reads one wallet's view from the source `ledger` names, on a current-thread runtime.
fn read_view(wallet: &str, ledger: &LedgerArgs) -> Result<crate::ledger::WalletView, String> {
    let wallet = crate::pubkey::Pubkey::parse(wallet).map_err(|e| format!("wallet: {e}"))?;
    let (source, options) = ledger.open()?;
    runtime()?.block_on(crate::ledger::view::build_view(&source, &wallet, options)).map_err(|e| e.to_string())
}

fn parse_wallets(texts: &[String]) -> Result<Vec<crate::pubkey::Pubkey>, String> {
    texts.iter().map(|t| crate::pubkey::Pubkey::parse(t).map_err(|e| format!("wallet {t:?}: {e}"))).collect()
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: LedgerServeArgs,
    }

    fn parse(args: &[&str]) -> Result<LedgerServeArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("serve").chain(args.iter().copied())).map(|c| c.serve)
    }

    #[test]
    fn reads_source_and_fault_flags() {
        let args =
            parse(&["--ledger", "demo:7", "--fault-429", "0.25", "--fault-drop", "0.5", "--fault-first", "3"]).unwrap();
        assert_eq!(args.source_spec().unwrap(), SourceSpec::Demo { seed: 7 });
        let plan = args.fault_plan();
        assert_eq!((plan.share_429, plan.share_drop, plan.first_requests_max), (0.25, 0.5, Some(3)));
        assert_eq!(plan.retry_after_s, 1);
        assert!(plan.validate().is_ok());
        assert_eq!(args.listen, "127.0.0.1:8899".parse::<SocketAddr>().unwrap());

        let snapshot = parse(&["--snapshot", "/tmp/snap", "--listen", "127.0.0.1:0"]).unwrap();
        assert_eq!(snapshot.source_spec().unwrap(), SourceSpec::Snapshot { dir: "/tmp/snap".into() });
    }

    /// `--help` says what every flag of every command does, and each `serve` flag its default.
    #[test]
    fn every_flag_has_help_and_every_serve_flag_its_default() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                if !matches!(id, "help" | "version") && arg.get_help().is_none() {
                    missing.push(format!("{path} --{id}"));
                }
            }
            for sub in command.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut command = command_with_defaults();
        command.build();
        let mut missing = Vec::new();
        walk(&command, "xray", &mut missing);
        assert!(missing.is_empty(), "flags without help: {missing:?}");
        let serve = command.find_subcommand("serve").expect("serve");
        for arg in serve.get_arguments().filter(|a| !matches!(a.get_id().as_str(), "help" | "config" | "check_config"))
        {
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            assert!(help.contains("[default: "), "--{} shows no default: {help}", arg.get_id());
        }
    }

    #[test]
    fn refuses_ambiguous_or_missing_sources() {
        assert!(parse(&["--snapshot", "/tmp/a", "--ledger", "demo"]).is_err());
        assert!(parse(&[]).unwrap().source_spec().is_err());
        assert!(parse(&["--ledger", "mainnet"]).is_err(), "a spec that does not parse is refused by clap");
        assert!(parse(&["--ledger", "demo", "--fault-500", "0.7", "--fault-429", "0.7"])
            .unwrap()
            .fault_plan()
            .validate()
            .is_err());
    }
}
