//! Local JSON-RPC server (placeholder until it lands).

#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    #[arg(long)]
    pub snapshot: Option<std::path::PathBuf>,
    #[arg(long, default_value = "127.0.0.1:8899")]
    pub listen: String,
}

pub fn run(_args: ServeArgs) -> Result<(), String> {
    Err("not built yet".into())
}
