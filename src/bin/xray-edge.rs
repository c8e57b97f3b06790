//! `xray-edge`: the HTTP edge alone, serving a stand-in handler, for load tests.
//!
//! Owns: argument parsing only; everything runs in `xray::server::demo::run_edge`. Runs the
//! listener threads until SIGINT or SIGTERM. Invariant: no logic here (to become a hidden
//! `xray` subcommand at integration).

use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use mimalloc::MiMalloc;
use xray::server::demo::{run_edge, EdgeMode};
use xray::server::IoDriver;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

#[derive(Clone, Copy, ValueEnum)]
enum Mode {
    /// A fixed `{"status":"ok"}` for any request: the edge's own cost.
    Baseline,
    /// The contract's routing and checks with nothing behind them.
    Demo,
}

#[derive(Parser)]
#[command(name = "xray-edge", about = "The Wallet X-Ray HTTP edge with a stand-in handler (load tests)")]
struct Args {
    #[arg(value_enum)]
    mode: Mode,
    #[arg(long, default_value = xray::server::config::LISTEN_DEFAULT)]
    listen: std::net::SocketAddr,
    /// Listener threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// I/O driver: auto, uring or epoll.
    #[arg(long, default_value = "auto")]
    driver: IoDriver,
}

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_env("XRAY_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
    let args = Args::parse();
    let mode = match args.mode {
        Mode::Baseline => EdgeMode::Baseline,
        Mode::Demo => EdgeMode::Demo,
    };
    let threads = args.threads.unwrap_or_else(|| xray::server::ServerConfig::default().threads);
    match run_edge(mode, args.listen, threads, args.driver) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
