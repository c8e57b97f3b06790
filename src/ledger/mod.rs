//! The ledger layer: everything the service knows about Solana comes through here.
//!
//! Owns: the JSON-RPC wire types (`wire`, their lists bounded at parse by `bounded`), their
//! decoding into the domain model (`model`, `instruction`), the `LedgerSource` trait (`read`),
//! its three implementations (`demo`, `snapshot`, `rpc`) and the `Source` that dispatches to
//! one of them (`source`), the fetch plan that turns a source into a `WalletView` (`view`) and
//! a job's budget of bytes read (`budget`).
//! The tools that serve, record and inspect ledger data are in `devtools`.
//!
//! Threads: sources run on compute threads, each on its own single-threaded tokio runtime
//! (futures need not be `Send`); the CLI runs them on a current-thread runtime too.
//!
//! Invariant: one wire format. Every source answers in the shapes of `wire`, and every view is
//! built by the same `view::build_view`, so the demo, a snapshot and a live node are read by
//! the same parser. Deliberately absent: scoring or judging anything (that is the engine's).

pub mod bounded;
pub mod budget;
pub mod cache;
pub mod demo;
pub mod fields;
pub mod in_process;
pub mod instruction;
pub mod model;
pub mod read;
pub mod rpc;
pub mod snapshot;
pub mod source;
pub mod transaction;
pub mod view;
pub mod wire;

pub use model::WalletView;
pub use read::LedgerSource;
pub use source::Source;

/// The async runtime ledger reads run on: current-thread tokio with I/O and timers, as each
/// compute thread has one; the CLI and dev tools build the same for their own reads.
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| format!("runtime: {e}"))
}

/// Why a ledger read failed. The three families are what callers act on: `Unavailable` may be
/// retried later (the analysis ends `UPSTREAM_UNAVAILABLE`), `NotFound` is an answer, and
/// `Malformed` means the source sent something that is not the Solana wire format.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LedgerError {
    /// Network failure, timeout, 429 or 5xx after the bounded retries.
    #[error("ledger source unavailable: {0}")]
    Unavailable(String),
    /// The node answered, but the thing asked for does not exist (or is not kept).
    #[error("not found: {0}")]
    NotFound(String),
    /// The response is not valid JSON or not the expected shape.
    #[error("malformed ledger response: {0}")]
    Malformed(String),
    /// The node answered with a JSON-RPC error object that is not one of the above.
    #[error("rpc error {code}: {message}")]
    Rpc { code: i64, message: String },
    /// The request itself is wrong (bad address, bad configuration); retrying cannot help.
    #[error("invalid ledger request: {0}")]
    Invalid(String),
    /// The job's budget of ledger bytes is spent (`budget`); final.
    #[error("{0}")]
    OverBudget(String),
}

impl LedgerError {
    /// Maps a JSON-RPC error object to a typed error. Codes follow the Solana node:
    /// -32005 node unhealthy / behind, -32004 / -32009 / -32007 slot or block not available,
    /// -32603 internal, -32602 invalid params, -32600 invalid request.
    pub fn from_rpc_error(e: wire::RpcErrorObject) -> Self {
        match e.code {
            -32005 | -32603 | -32016 | -32014 => LedgerError::Unavailable(format!("{} ({})", e.message, e.code)),
            -32004 | -32007 | -32009 | -32011 => LedgerError::NotFound(format!("{} ({})", e.message, e.code)),
            -32700 => LedgerError::Malformed(format!("{} ({})", e.message, e.code)),
            code => LedgerError::Rpc { code, message: e.message },
        }
    }

    /// The error object a node would send for this error, chosen so that `from_rpc_error`
    /// gives back the same family (the local server answers with it; the recorder writes it).
    pub fn to_rpc_error(&self) -> wire::RpcErrorObject {
        let (code, message) = match self {
            LedgerError::Unavailable(m) => (-32005, format!("Node is unavailable: {m}")),
            LedgerError::NotFound(m) => (-32004, format!("Not available: {m}")),
            LedgerError::Malformed(m) | LedgerError::OverBudget(m) => (-32603, format!("Internal error: {m}")),
            LedgerError::Rpc { code, message } => (*code, message.clone()),
            LedgerError::Invalid(m) => (-32602, format!("Invalid params: {m}")),
        };
        wire::RpcErrorObject { code, message, data: None }
    }

    /// True for failures worth another attempt.
    pub fn is_retryable(&self) -> bool {
        matches!(self, LedgerError::Unavailable(_) | LedgerError::Malformed(_))
    }
}
