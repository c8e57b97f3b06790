//! Command-line interface: the `xray` subcommands and their wiring to library functions.
//!
//! Owns: clap definitions, output of command results as JSON on stdout, errors on stderr with
//! a non-zero exit. Runs on the main thread; async commands get a current-thread tokio
//! runtime, the same kind compute threads use.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::config;
use crate::ledger::source::{Source, SourceSpec};

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
    /// Ledger tools: inspect fixtures, record and serve snapshots.
    #[command(subcommand)]
    Ledger(LedgerCommand),
    /// The embedded demo ledger.
    #[command(subcommand)]
    Demo(DemoCommand),
    /// Analyze one wallet: prints the JSON the API returns under `data.xray`.
    Analyze {
        wallet: String,
        #[command(flatten)]
        ledger: LedgerArgs,
        /// Indent the JSON for reading (the API sends it compact).
        #[arg(long)]
        pretty: bool,
    },
    /// Compare two wallets: prints the JSON the API returns under `data.comparison`.
    Compare {
        wallet_a: String,
        wallet_b: String,
        #[command(flatten)]
        ledger: LedgerArgs,
        #[arg(long)]
        pretty: bool,
    },
    /// Print the signal catalogue (`--markdown`: as docs/signals.md).
    Signals {
        #[arg(long)]
        markdown: bool,
    },
    /// The HTTP edge alone with a stand-in handler, for load tests (loadtest/run.sh).
    #[command(hide = true)]
    Edge(EdgeArgs),
    /// Print the wallet view (the domain model the engine reads) of one wallet, for debugging.
    View {
        wallet: String,
        #[command(flatten)]
        ledger: LedgerArgs,
    },
}

#[derive(Args, Clone)]
pub struct LedgerArgs {
    /// Ledger source: demo, demo:<seed>, snapshot:<dir> or rpc:<http(s)://url>.
    #[arg(long, default_value = "demo", env = "XRAY_LEDGER")]
    pub ledger: String,
    /// Signatures read per wallet at most.
    #[arg(long, default_value_t = config::HISTORY_DEPTH_DEFAULT)]
    pub history_depth: u32,
    /// Labels file replacing the builtin labels (format: docs/labels.md).
    #[arg(long, env = "XRAY_LABELS")]
    pub labels: Option<PathBuf>,
}

impl LedgerArgs {
    fn open(&self) -> Result<(Source, crate::ledger::view::ViewOptions), String> {
        let spec: SourceSpec = self.ledger.parse().map_err(|e: crate::ledger::LedgerError| e.to_string())?;
        let source = Source::open(&spec, Default::default()).map_err(|e| e.to_string())?;
        Ok((source, crate::ledger::view::ViewOptions { history_depth: self.history_depth }))
    }
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
        #[arg(long)]
        name: String,
        /// Account the key belongs to (acct_…); a new account when omitted.
        #[arg(long)]
        account: Option<String>,
        /// Comma list of wallet:analyze, wallet:compare, analysis:read, usage:read.
        #[arg(long)]
        scopes: String,
        #[arg(long)]
        rate_per_second: Option<u32>,
        #[arg(long)]
        burst: Option<u32>,
        /// Quota units per period.
        #[arg(long)]
        quota: Option<u64>,
        /// Quota period: day or month (calendar UTC).
        #[arg(long)]
        period: Option<String>,
        /// Expiry, RFC 3339 (e.g. 2027-01-01T00:00:00Z).
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
        id: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Replace a key by a new one (printed once) with the same scopes, limits and quota usage.
    Rotate {
        id: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
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
    Inspect { file: PathBuf },
    /// Record the JSON-RPC responses for wallets from a live node into a snapshot directory.
    Record {
        #[arg(long)]
        rpc: String,
        #[arg(long = "wallet", required = true, num_args = 1..)]
        wallets: Vec<String>,
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = config::HISTORY_DEPTH_DEFAULT)]
        history_depth: u32,
    },
    /// Write demo wallets (every archetype, then N background wallets) as a snapshot.
    ExportDemo {
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 0)]
        wallets: u32,
        #[arg(long, default_value_t = config::DEMO_SEED_DEFAULT)]
        seed: u64,
    },
    /// Serve a snapshot (or the demo ledger) as a Solana JSON-RPC endpoint, with optional faults.
    Serve(crate::ledger::rpc_server::ServeArgs),
}

#[derive(Args)]
struct EdgeArgs {
    /// `baseline`: a fixed `{"status":"ok"}` for any request (the edge's own cost);
    /// `demo`: the contract's routing and checks with nothing behind them.
    #[arg(value_enum)]
    mode: EdgeMode,
    #[arg(long, default_value = crate::config::LISTEN_DEFAULT)]
    listen: std::net::SocketAddr,
    /// Listener threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// I/O driver: auto, uring or epoll.
    #[arg(long, default_value = "auto")]
    driver: crate::server::IoDriver,
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
    /// Public API address.
    #[arg(long, env = "XRAY_LISTEN")]
    pub listen: Option<std::net::SocketAddr>,
    /// Admin listener address (metrics, key management; loopback unless admin_allow_remote).
    #[arg(long, env = "XRAY_ADMIN_LISTEN")]
    pub admin_listen: Option<std::net::SocketAddr>,
    /// Data directory: RocksDB, the admin token and address.
    #[arg(long, env = "XRAY_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Ledger source: demo, demo:<seed>, snapshot:<dir> or rpc:<http(s)://url>.
    #[arg(long, env = "XRAY_LEDGER")]
    pub ledger: Option<String>,
    /// Labels file replacing the builtin labels.
    #[arg(long, env = "XRAY_LABELS")]
    pub labels: Option<PathBuf>,
    #[arg(long, env = "XRAY_LISTENER_THREADS")]
    pub listener_threads: Option<usize>,
    #[arg(long, env = "XRAY_COMPUTE_THREADS")]
    pub compute_threads: Option<usize>,
    /// Admission queue length (a full queue answers 503 SERVICE_BUSY).
    #[arg(long, env = "XRAY_QUEUE_CAPACITY")]
    pub queue_capacity: Option<usize>,
    #[arg(long, env = "XRAY_JOBS_IN_FLIGHT_PER_THREAD")]
    pub jobs_in_flight_per_thread: Option<usize>,
    /// Base of absolute pollUrls (default http://<listen>).
    #[arg(long, env = "XRAY_PUBLIC_BASE_URL")]
    pub public_base_url: Option<String>,
    /// I/O driver of the listeners: auto, uring or epoll.
    #[arg(long, env = "XRAY_IO_DRIVER")]
    pub io_driver: Option<String>,
    #[arg(long, env = "XRAY_HISTORY_DEPTH")]
    pub history_depth: Option<u32>,
    /// Seconds a READY result is reused for an equal request.
    #[arg(long, env = "XRAY_FRESHNESS_WINDOW_S")]
    pub freshness_window_s: Option<u64>,
    #[arg(long, env = "XRAY_RETENTION_DAYS")]
    pub retention_days: Option<u32>,
    /// fsync the WAL on every durable write (power-loss durability).
    #[arg(long, env = "XRAY_SYNC_WRITES")]
    pub sync_writes: Option<bool>,
    #[arg(long, env = "XRAY_LONG_POLL_WAITERS_MAX")]
    pub long_poll_waiters_max: Option<usize>,
    #[arg(long, env = "XRAY_IP_FAILURES_PER_S")]
    pub ip_failures_per_s: Option<u32>,
}

impl ServeArgs {
    /// Defaults, then the config file, then these flags and variables.
    pub fn to_config(&self) -> Result<config::ServeConfig, String> {
        let mut c = config::ServeConfig::from_file(self.config.as_deref())?;
        macro_rules! layer {
            ($($field:ident),*) => { $( if let Some(v) = &self.$field { c.$field = v.clone().into(); } )* };
        }
        layer!(listen, admin_listen, data_dir, ledger, listener_threads, compute_threads, queue_capacity);
        layer!(jobs_in_flight_per_thread, io_driver, history_depth, freshness_window_s, retention_days);
        layer!(sync_writes, long_poll_waiters_max, ip_failures_per_s);
        if self.labels.is_some() {
            c.labels = self.labels.clone();
        }
        if self.public_base_url.is_some() {
            c.public_base_url = self.public_base_url.clone();
        }
        Ok(c)
    }
}

#[derive(Subcommand)]
enum DemoCommand {
    /// List the demo archetypes with their addresses.
    List {
        #[arg(long, default_value_t = config::DEMO_SEED_DEFAULT)]
        seed: u64,
    },
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    let command = cli.command.unwrap_or_else(|| Command::Serve(Box::default()));
    match run(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("XRAY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}

/// A current-thread runtime, as compute threads use.
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| format!("runtime: {e}"))
}

/// Prints a value as indented JSON on stdout (for people; the API writes compact JSON).
fn print_json<T: serde::Serialize>(value: &T) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value).map_err(|e| format!("stdout: {e}"))?;
    out.write_all(b"\n").map_err(|e| format!("stdout: {e}"))
}

fn run(command: Command) -> Result<(), String> {
    match command {
        Command::Serve(args) => crate::serve::run(&args.to_config()?),
        Command::Keys(command) => run_keys(command),
        Command::Ledger(LedgerCommand::Inspect { file }) => {
            let summary = crate::ledger::inspect::inspect_file(&file).map_err(|e| e.to_string())?;
            print_json(&summary)
        }
        Command::Ledger(LedgerCommand::Record { rpc, wallets, out, history_depth }) => {
            let spec: SourceSpec =
                format!("rpc:{rpc}").parse().map_err(|e: crate::ledger::LedgerError| e.to_string())?;
            let wallets = parse_wallets(&wallets)?;
            let rt = runtime()?;
            let source = Source::open(&spec, Default::default()).map_err(|e| e.to_string())?;
            let report = rt
                .block_on(crate::ledger::snapshot::record(&source, &wallets, &out, history_depth))
                .map_err(|e| e.to_string())?;
            print_json(&report)
        }
        Command::Ledger(LedgerCommand::ExportDemo { out, wallets, seed }) => {
            let rt = runtime()?;
            let report =
                rt.block_on(crate::ledger::snapshot::export_demo(seed, wallets, &out)).map_err(|e| e.to_string())?;
            print_json(&report)
        }
        Command::Ledger(LedgerCommand::Serve(args)) => crate::ledger::rpc_server::run(args),
        Command::Demo(DemoCommand::List { seed }) => {
            let list = crate::ledger::demo::DemoLedger::new(seed).archetype_list();
            print_json(&list)
        }
        Command::Analyze { wallet, ledger, pretty } => {
            let labels = crate::labels::Labels::load(ledger.labels.as_deref())?;
            let view = read_eligible_view(&wallet, &ledger, &labels)?;
            print_payload(&crate::engine::analyze(&view, &labels), pretty)
        }
        Command::Compare { wallet_a, wallet_b, ledger, pretty } => {
            let labels = crate::labels::Labels::load(ledger.labels.as_deref())?;
            let (a, b) =
                (read_eligible_view(&wallet_a, &ledger, &labels)?, read_eligible_view(&wallet_b, &ledger, &labels)?);
            if a.address == b.address {
                return Err("the two wallets are the same address".into());
            }
            let (xa, xb) = (crate::engine::analyze(&a, &labels), crate::engine::analyze(&b, &labels));
            let side = |view, xray| crate::engine::compare::Side { view, xray, analysis_id: None };
            print_payload(&crate::engine::compare::compare(side(&a, &xa), side(&b, &xb), &labels), pretty)
        }
        Command::Signals { markdown: true } => {
            print!("{}", crate::engine::signals::catalogue_markdown());
            Ok(())
        }
        Command::Signals { markdown: false } => print_json(&crate::engine::signals::catalogue_json()),
        Command::Edge(args) => {
            let mode = match args.mode {
                EdgeMode::Baseline => crate::server::demo::EdgeMode::Baseline,
                EdgeMode::Demo => crate::server::demo::EdgeMode::Demo,
            };
            let threads = args.threads.unwrap_or_else(|| crate::server::ServerConfig::default().threads);
            crate::server::demo::run_edge(mode, args.listen, threads, args.driver)
        }
        Command::View { wallet, ledger } => {
            println!("{:#?}", read_view(&wallet, &ledger)?);
            Ok(())
        }
    }
}

/// Prints an API payload: compact, byte for byte what the API sends, or indented.
fn print_payload<T: serde::Serialize>(value: &T, pretty: bool) -> Result<(), String> {
    if pretty {
        return print_json(value);
    }
    println!("{}", serde_json::to_string(value).map_err(|e| e.to_string())?);
    Ok(())
}

/// Reads a wallet's view after the contract's validation and classification (local, then
/// ledger): an address that cannot be a user wallet is an error, as the API answers it.
fn read_eligible_view(
    wallet: &str,
    ledger: &LedgerArgs,
    labels: &crate::labels::Labels,
) -> Result<crate::ledger::WalletView, String> {
    use crate::eligibility::{self, LocalRefusal};
    match eligibility::check_local(wallet, labels) {
        Err(LocalRefusal::Invalid(e)) => return Err(format!("INVALID_ADDRESS: {wallet}: {}", e.reason())),
        Err(LocalRefusal::Ineligible(i)) => {
            return Err(format!("ACCOUNT_NOT_ELIGIBLE ({}): {}", i.reason(), i.message()))
        }
        Ok(_) => {}
    }
    let view = read_view(wallet, ledger)?;
    eligibility::classify_ledger(&view)
        .map_err(|i| format!("ACCOUNT_NOT_ELIGIBLE ({}): {}", i.reason(), i.message()))?;
    Ok(view)
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
