//! Every limit and default of the service, in one place, each with its unit in its name.
//!
//! Owns: the named constants the rest of the crate reads. Called from every thread; constants
//! only. Invariant: no other module hard-codes a limit that an operator or a reviewer would
//! want to find here. Deliberately absent (for now): the runtime `Config` struct of the
//! server, which arrives with the API server and takes its defaults from these constants.

/// Signatures read per wallet by default (`getSignaturesForAddress` depth); past it the
/// history is reported as truncated in coverage.
pub const HISTORY_DEPTH_DEFAULT: u32 = 1_000;
/// Upper bound an operator may set for the history depth.
pub const HISTORY_DEPTH_MAX: u32 = 20_000;
/// Largest page `getSignaturesForAddress` accepts (Solana's own limit).
pub const SIGNATURES_PAGE_LEN_MAX: u32 = 1_000;
/// Accounts per `getMultipleAccounts` call (Solana's own limit).
pub const MULTIPLE_ACCOUNTS_LEN_MAX: usize = 100;
/// Mints, nonce and stake candidates looked up per wallet; the rest is not read.
pub const RELATED_ACCOUNTS_MAX: usize = 500;
/// Token accounts of one owner kept in a view (per token program).
pub const TOKEN_ACCOUNTS_MAX: usize = 2_000;

/// JSON-RPC requests in one batch for `getTransaction`.
pub const RPC_BATCH_LEN_MAX: usize = 50;
/// Batches in flight at once per RPC source.
pub const RPC_CONCURRENCY_MAX: usize = 4;
/// TCP (and TLS) connect timeout.
pub const RPC_CONNECT_TIMEOUT_MS: u64 = 3_000;
/// Whole-request timeout, headers and body.
pub const RPC_REQUEST_TIMEOUT_MS: u64 = 15_000;
/// Attempts per request, the first included.
pub const RPC_ATTEMPTS_MAX: u32 = 5;
/// First backoff; doubles per attempt, full jitter.
pub const RPC_BACKOFF_BASE_MS: u64 = 100;
/// Longest single backoff, also the cap on an honoured `Retry-After`.
pub const RPC_BACKOFF_MAX_MS: u64 = 5_000;
/// Largest response body read from an RPC endpoint.
pub const RPC_RESPONSE_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Largest request body the local JSON-RPC server (`xray ledger serve`) reads.
pub const RPC_SERVER_REQUEST_BYTES_MAX: usize = 1024 * 1024;
/// Connections the local JSON-RPC server serves at once.
pub const RPC_SERVER_CONNECTIONS_MAX: usize = 256;

/// Largest file `xray ledger inspect` and the snapshot source read.
pub const LEDGER_FILE_BYTES_MAX: u64 = 256 * 1024 * 1024;

/// Wallets in the demo ledger's background population (a power of two: pairing uses XOR).
pub const DEMO_POPULATION_LEN: u32 = 1 << 17;
/// Default seed of the demo ledger.
pub const DEMO_SEED_DEFAULT: u64 = 0x5852_4159_2d44_454d; // "XRAY-DEM"
