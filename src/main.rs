//! The `xray` binary: command-line entry point over the `xray` library.
//!
//! Owns: argument parsing (clap) and the choice of what to run. Runs on the main thread; each
//! command builds the runtime it needs. Invariant: no logic beyond wiring — every command is a
//! library function that tests can call directly.

use mimalloc::MiMalloc;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

fn main() -> std::process::ExitCode {
    xray::cli::main()
}
