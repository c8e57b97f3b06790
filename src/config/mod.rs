//! Every limit and default of the service, in one place, each with its unit in its name.
//!
//! Owns: the named constants the rest of the crate reads; `ServeConfig` (`serve.rs`), the one
//! struct `xray serve` runs with (defaults from these constants, then a TOML file, then
//! environment variables and flags), validated whole at start; and the typed values of its
//! settings (`values.rs`: `SourceSpec`, `IoDriver`). Constants are read from every thread; a
//! `ServeConfig` is built once on the main thread and never changed after start.
//!
//! Invariant: no other module hard-codes a limit or default that an operator or a reviewer
//! would want to find here. Deliberately elsewhere: formats fixed by the contract or by
//! Solana (key and id byte lengths, in `auth::key`; unit conversions), and the engine's model
//! parameters (dust thresholds, time windows, evidence caps), which live with the engine
//! because they are part of what its version numbers name.
//! Invariant: a leaf — nothing here imports another module of this crate, so every module may
//! read its limits.

/// Signatures read per wallet by default (`getSignaturesForAddress` depth); past it the
/// history is reported as truncated in coverage.
pub const HISTORY_DEPTH_DEFAULT: u32 = 1_000;
/// Upper bound an operator may set for the history depth.
pub const HISTORY_DEPTH_MAX: u32 = 20_000;
/// Time one job may run, ledger reads and engine together, unless the operator sets another:
/// past it the job ends FAILED (`UPSTREAM_UNAVAILABLE`, refunded). Retries of one call can take
/// a minute (`RPC_ATTEMPTS_MAX` × `RPC_REQUEST_TIMEOUT_MS` plus backoff), so two such calls fit.
pub const JOB_DEADLINE_S_DEFAULT: u64 = 180;
pub const JOB_DEADLINE_S_MAX: u64 = 3_600;
/// Ledger bytes one job may read (every answer and retry), unless the operator sets another:
/// past it the job ends FAILED (`ANALYSIS_FAILED`, refunded). A wallet at the largest history
/// depth of busy jsonParsed transactions reads ~100 MiB.
pub const JOB_LEDGER_BYTES_MAX_DEFAULT: u64 = 512 * 1024 * 1024;
/// Smallest ledger-byte budget an operator may set (one account answer must fit).
pub const JOB_LEDGER_BYTES_MIN: u64 = 1024 * 1024;
pub const JOB_LEDGER_BYTES_MAX_MAX: u64 = 16 * 1024 * 1024 * 1024;
/// Largest page `getSignaturesForAddress` accepts (Solana's own limit).
pub const SIGNATURES_PAGE_LEN_MAX: u32 = 1_000;
/// Accounts per `getMultipleAccounts` call (Solana's own limit).
pub const MULTIPLE_ACCOUNTS_LEN_MAX: usize = 100;
/// Mints, nonce and stake candidates looked up per wallet; the rest is not read.
pub const RELATED_ACCOUNTS_MAX: usize = 500;
/// Token accounts of one owner kept in a view (per token program).
pub const TOKEN_ACCOUNTS_MAX: usize = 2_000;
/// Nonce accounts naming one wallet as their authority kept from one `getProgramAccounts`
/// answer (anyone can create them, so a griefer can name a wallet thousands of times): the
/// lowest addresses are kept, the count of all is reported.
pub const NAMED_NONCE_ACCOUNTS_MAX: usize = 100;
/// Of the nonce accounts naming the wallet that its history does not show it creating, how
/// many have their own recent history read (to find who created and funded them), and how
/// many signatures deep.
pub const OUTSIDER_NONCES_MAX: usize = 10;
pub const OUTSIDER_NONCE_SIGNATURES_MAX: u32 = 10;
/// Signatures (and so transactions) read of the wallet's first funder, one hop out, when the
/// labels list sanctioned addresses: its recent history only — one `getSignaturesForAddress`
/// page and this many `getTransaction`s per wallet.
pub const FUNDER_HOP_SIGNATURES_MAX: u32 = 25;

/// Bytes the node's ledger cache (`ledger::cache`: finalized transactions and address
/// histories, `<data-dir>/ledger-cache`) may hold on disk; the oldest files go first past it.
/// 0 turns the cache off. Only the `rpc:` source uses it (the demo and snapshots are local).
pub const LEDGER_CACHE_BYTES_DEFAULT: u64 = 1024 * 1024 * 1024;
/// The smallest non-zero cache: below a few memtables FIFO compaction would drop files as
/// soon as they are flushed.
pub const LEDGER_CACHE_BYTES_MIN: u64 = 64 * 1024 * 1024;
pub const LEDGER_CACHE_BYTES_MAX: u64 = 1024 * 1024 * 1024 * 1024;
/// Share of the cache's bytes given to address histories (the rest holds transactions), in
/// percent: a history of 1,000 signatures is ~150 KB, a transaction ~3 KB.
pub const LEDGER_CACHE_HISTORY_PERCENT: u64 = 20;
/// Memtable of each of the cache's column families: data is on disk (and counted against the
/// bound) once one fills.
pub const LEDGER_CACHE_WRITE_BUFFER_BYTES: usize = 8 * 1024 * 1024;
/// Signatures looked up in the cache at once (one `multi_get`), before the misses are fetched
/// together: bounds what a job holds between its cache reads and the node's answers.
pub const LEDGER_CACHE_LOOKUP_LEN: usize = 200;
/// Accounts a wallet's last read named beyond its own (mints, nonce and stake accounts),
/// remembered to be read in the same `getMultipleAccounts` call as the wallet next time.
pub const LEDGER_CACHE_ACCOUNT_HINTS_MAX: usize = MULTIPLE_ACCOUNTS_LEN_MAX - 1;

/// Monitors one account may hold (`monitors`).
pub const MONITORS_PER_ACCOUNT_MAX: usize = 100;
/// Wallets one monitor watches.
pub const MONITOR_WALLETS_MAX: usize = 100;
/// Wallets (monitor × wallet) one node checks; past it the node checks the first ones and
/// `/metrics` says how many it left out.
pub const MONITOR_WATCHES_PER_NODE_MAX_DEFAULT: usize = 10_000;
pub const MONITOR_WATCHES_PER_NODE_MAX_MAX: usize = 1_000_000;
/// Checks (one `getSignaturesForAddress` each, then maybe an admission) in flight at once.
pub const MONITOR_CHECKS_IN_FLIGHT_MAX_DEFAULT: usize = 32;
pub const MONITOR_CHECKS_IN_FLIGHT_MAX_MAX: usize = 4_096;
/// Seconds between two checks of one watched wallet, and the floor an operator may set.
pub const MONITOR_INTERVAL_S_DEFAULT: u64 = 60;
pub const MONITOR_INTERVAL_S_MIN: u64 = 1;
pub const MONITOR_INTERVAL_S_MAX: u64 = 86_400;
/// How often a node reads the monitors from the store again (created, changed, deleted on any
/// node), in milliseconds.
pub const MONITOR_RELOAD_MS: u64 = 1_000;
/// Least time between two fills of the monitors' free check slots (a finished check wakes
/// the scheduler; fills are batched this finely), in milliseconds.
pub const MONITOR_REFILL_MS: u64 = 10;
/// The scheduler's tick: due checks are started at most this late, in milliseconds.
pub const MONITOR_TICK_MS: u64 = 100;
/// A check's claim on a wallet's cursor (made before it admits a re-analysis) older than this
/// is a check that died mid-way (a kill, a lost node): the next check finishes or redoes it.
/// Longer than any admission takes; shorter than an operator would wait for an event.
pub const MONITOR_CLAIM_TTL_MS: u64 = 30_000;
/// A check's admission of its re-analysis gives up after this long (its claim is dropped and
/// the activity seen again next interval): well under `MONITOR_CLAIM_TTL_MS`.
pub const MONITOR_ADMIT_TIMEOUT_MS: u64 = 10_000;
/// Monitors read per page when a node reloads them.
pub const MONITOR_RELOAD_PAGE_LEN: usize = 256;
/// A check's upstream read gives up after this long (the next interval tries again).
pub const MONITOR_CHECK_TIMEOUT_MS: u64 = 10_000;
/// Events one page of `GET …/monitors/:id/events` holds at most (and its default).
pub const MONITOR_EVENTS_PAGE_LEN_MAX: usize = 100;
/// Bytes of analyses an events page reads (each event's `changes` comes from its analysis'
/// payload) before it ends early, with `nextAfter` naming its last event.
pub const MONITOR_EVENTS_PAGE_READ_BYTES_MAX: usize = 32 * 1024 * 1024;
pub const MONITOR_EVENTS_PAGE_LEN_DEFAULT: usize = 50;
/// Monitors one page of `GET …/monitors` holds at most.
pub const MONITORS_PAGE_LEN_MAX: usize = MONITORS_PER_ACCOUNT_MAX;
/// Attempts of a monitor write that lost a race with another (compare-and-set), before 503.
pub const MONITOR_WRITE_ATTEMPTS_MAX: usize = 4;
/// Re-analyses one monitor's wallets may trigger per budget period when the monitor names no
/// `reanalysesPerDay` (activity and the redo of a failed re-analysis count; baselines and
/// labels re-screens do not), in re-analyses per UTC day. Past it a check records
/// `budget_exhausted` and charges nothing until the period ends.
pub const MONITOR_REANALYSES_PER_DAY_DEFAULT: u32 = 100;
/// The largest `reanalysesPerDay` a monitor may set (the least is 1), re-analyses per UTC day.
pub const MONITOR_REANALYSES_PER_DAY_MAX: u32 = 100_000;
/// The monitors' budget period: a UTC day (from 00:00:00.000 UTC), in milliseconds.
pub const MONITOR_BUDGET_PERIOD_MS: u64 = 86_400_000;
/// SOL a watched wallet may receive in new activity that is still dust (not re-analyzed),
/// in lamports: strictly less than this (100_000 lamports = 0.0001 SOL).
pub const MONITOR_DUST_LAMPORTS_DEFAULT: u64 = 100_000;
/// The largest `dustLamports` a monitor may set (0 turns its dust filter off), in lamports (1 SOL).
pub const MONITOR_DUST_LAMPORTS_MAX: u64 = 1_000_000_000;
/// Tokens a watched wallet may receive of one mint in new activity that are still dust: strictly
/// less than one whole token (10^decimals base units) divided by this (1/10_000 of a token).
pub const MONITOR_DUST_TOKEN_FRACTION_DEFAULT: u64 = 10_000;
/// New signatures a check reads (one `getSignaturesForAddress` page) and then at most reads the
/// transactions of, to decide whether the activity is dust; a longer activity is re-analyzed.
pub const MONITOR_DUST_SIGNATURES_MAX: u32 = 20;

/// A feature record's key (`store::docs`), in bytes.
pub const DOC_KEY_BYTES_MAX: usize = 512;
/// A feature record's value, in bytes (a monitor of `MONITOR_WALLETS_MAX` wallets fits).
pub const DOC_VALUE_BYTES_MAX: usize = 64 * 1024;
/// Writes in one batch of feature records.
pub const DOC_BATCH_LEN_MAX: usize = 256;

// --- Signed reports (src/signing/) ---
/// Retired public keys the key set keeps published (`GET /.well-known/xray-keys.json`); a
/// rotation past it drops the oldest, and reports signed by a dropped key can no longer be
/// verified from the endpoint.
pub const SIGNING_KEYS_RETIRED_MAX: usize = 16;
/// How often a cluster node reads the shared signing keys again (a rotation on another node
/// reaches it within this), in milliseconds.
pub const SIGNING_KEYS_RELOAD_MS: u64 = 1_000;
/// `Cache-Control: max-age` of the published key set, in seconds.
pub const SIGNING_KEYS_MAX_AGE_S: u32 = 60;
/// The signing-key file (`<data-dir>/signing-keys.json`), in bytes: larger is refused unread.
pub const SIGNING_KEYS_FILE_BYTES_MAX: u64 = 64 * 1024;

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

/// Deepest nesting of arrays and objects read from any ledger source (every wire type, every
/// source). Solana's deepest jsonParsed answers nest about a dozen levels; reading is recursive
/// (serde), so a hostile answer nested 200,000 deep would overflow a compute thread's stack
/// and abort the process. Checked on simd-json's flat tape, before anything recursive runs.
pub const LEDGER_JSON_DEPTH_MAX: usize = 64;
/// Lists of one transaction as a ledger source sends it, bounded at parse (`ledger::bounded`).
/// Account keys, balances, token balances, loaded addresses and table indexes are indexed by
/// one byte: at most 256.
pub const TX_ACCOUNTS_MAX: usize = 256;
/// Top-level instructions, inner-instruction groups and the instructions of one group: the
/// runtime allows 64 in a transaction's whole instruction trace; four times that is room to spare.
pub const TX_INSTRUCTIONS_MAX: usize = 256;
/// Accounts of one instruction: one byte each in a packet of 1,232 bytes.
pub const TX_INSTRUCTION_ACCOUNTS_MAX: usize = 1_280;
/// Log lines of one transaction (the node cuts logs at 10 KB).
pub const TX_LOG_MESSAGES_MAX: usize = 4_096;

/// Starts of one job, at most. Each start is recorded before the job runs; a job found live
/// after this many took its process down every time (a stack overflow, an abort, the OOM
/// killer) and would take every restart down again, so its next start ends it `FAILED`
/// (`ANALYSIS_FAILED`, refunded) instead of running it. Five, not fewer: an operator's kill
/// while a slow job runs also counts, and one unlucky job should not fail for two of those.
pub const JOB_STARTS_MAX: u32 = 5;

/// Largest file `xray ledger inspect` and the snapshot source read.
pub const LEDGER_FILE_BYTES_MAX: u64 = 256 * 1024 * 1024;

/// Wallets in the demo ledger's background population (a power of two: pairing uses XOR).
pub const DEMO_POPULATION_LEN: u32 = 1 << 17;
/// Default seed of the demo ledger.
pub const DEMO_SEED_DEFAULT: u64 = 0x5852_4159_2d44_454d; // "XRAY-DEM"

// ---- `xray serve` configuration ---------------------------------------------------------

/// Address of the public API by default.
pub const LISTEN_DEFAULT: &str = "127.0.0.1:8080";
/// Address of the admin listener (metrics, key management) by default: loopback only.
pub const ADMIN_LISTEN_DEFAULT: &str = "127.0.0.1:9901";
/// Data directory (RocksDB, admin token) by default, relative to the working directory.
pub const DATA_DIR_DEFAULT: &str = "./xray-data";
/// Admission queue length by default.
pub const QUEUE_CAPACITY_DEFAULT: usize = 1_024;
/// Upper bound an operator may set for the admission queue.
pub const QUEUE_CAPACITY_MAX: usize = 1 << 20;
/// Jobs one compute thread drives at once by default (ledger reads are I/O bound).
pub const JOBS_IN_FLIGHT_PER_THREAD_DEFAULT: usize = 16;
pub const JOBS_IN_FLIGHT_PER_THREAD_MAX: usize = 1_024;
/// Threads of either kind an operator may ask for.
pub const THREADS_MAX: usize = 256;
/// A READY result younger than this is reused instead of starting new work.
pub const FRESHNESS_WINDOW_S_DEFAULT: u64 = 300;
/// Finished analyses are kept this long.
pub const RETENTION_DAYS_DEFAULT: u32 = 30;
pub const RETENTION_DAYS_MAX: u32 = 3_650;
/// The pace of an online backup's copy (`backup::copy::Pace`), in KiB a second: 64 MiB/s by
/// default, a fraction of a disk's bandwidth, so the server's own reads and writes go on.
pub const BACKUP_RATE_KIB_PER_S_DEFAULT: u32 = 64 * 1024;
pub const BACKUP_RATE_KIB_PER_S_MAX: u32 = 10 * 1024 * 1024;
/// How long the answer of a request with an `Idempotency-Key` is kept and replayed (24 h); an
/// older answer is as good as absent and purged with the retention sweep.
pub const IDEMPOTENCY_TTL_MS: u64 = 24 * 3_600 * 1_000;
/// Idempotent answers one account keeps at most (answers); past it a new answer evicts the
/// account's oldest, so the guarantee is "the newest 100,000 keys of an account, each for
/// 24 h". Why 100,000: it is more than one key per second for the whole window (86,400 s), so a
/// client below ~1.1 keyed POSTs/s keeps every key 24 h, and one sending a fresh key at the
/// default rate (50/s) still keeps the last ~33 minutes — far longer than any retry waits. A
/// kept answer takes ~80 bytes on disk with its two index entries once compacted (measured,
/// `docs/idempotency.md`), so one account holds ~8 MB of answers at most instead of growing
/// with every keyed POST (issue #28). Eviction rather than `429`: a client sending a fresh key
/// per request must never be refused for it; an evicted key used again is a new request.
pub const IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX: usize = 100_000;
/// Oldest answers one write evicts at most (answers): one when the account is at its cap; more
/// only when the cap was lowered since the answers were written, so the account shrinks back to
/// it within a few writes while no single write grows without bound.
pub const IDEMPOTENCY_EVICTIONS_PER_WRITE_MAX: usize = 16;
/// Answers one purge batch deletes (one `WriteBatch`, one range tombstone on the time index):
/// the purge repeats batches until nothing older than its cutoff is left.
pub const IDEMPOTENCY_PURGE_BATCH_LEN: usize = 1_000;
/// Largest sanctions list file `xray labels import` reads (OFAC's sdn.xml is ~20 MB).
pub const SANCTIONS_FILE_BYTES_MAX: u64 = 256 * 1024 * 1024;
/// Domains the labels may hold (`[[domain]]`: phishing and trusted dApp sites).
pub const LABEL_DOMAINS_LEN_MAX: usize = 1_000_000;
/// Trusted domains a scan's `origin` is compared with for look-alikes, and the longest one
/// compared: at most 1,000 edit distances of 64 × 66 cells on a listener thread (well under a
/// millisecond), and only for domains within two characters of the host's length.
pub const TRUSTED_DOMAINS_COMPARED_MAX: usize = 1_000;
pub const TRUSTED_DOMAIN_COMPARED_LEN_MAX: usize = 64;
/// Longest host name (RFC 1035).
pub const DOMAIN_LEN_MAX: usize = 253;
/// Longest DNS name (RFC 1035: 253 characters written out).
pub const HOST_NAME_BYTES_MAX: usize = 253;
/// Hosts an operator may allow as webhook targets whatever their address (`webhook_allow_hosts`).
pub const WEBHOOK_ALLOW_HOSTS_MAX: usize = 64;
/// Labels files `labels_extra` may add (each bounded like one labels file).
pub const LABELS_EXTRA_FILES_MAX: usize = 16;
/// Bytes of the operator's `webhook_proxy` URL.
pub const PROXY_URL_BYTES_MAX: usize = 2_048;
/// Webhook deliveries in flight at once, all accounts together.
pub const WEBHOOK_IN_FLIGHT_MAX: usize = 16;
/// Webhook deliveries of one account in flight at once: a receiver that never answers holds
/// at most these (a quarter of all), each for at most `WEBHOOK_TIMEOUT_MS`.
pub const WEBHOOK_IN_FLIGHT_PER_ACCOUNT_MAX: usize = 4;
/// Due callbacks read from the outbox per page; the delivery thread walks the due set page by
/// page, so entries of accounts at their cap never hide the others'.
pub const WEBHOOK_DUE_PAGE_LEN: usize = 256;
/// Pending webhooks one account may have in the outbox (finished jobs whose delivery is not
/// settled). Past it, the oldest is given up (`FAILED`, `lastError: outbox_full`) when a new
/// one enters: a receiver that is down for the whole retry window keeps at most this many
/// waiting, and a POST is never refused for it (its job and its poll are unaffected).
pub const WEBHOOK_OUTBOX_PER_ACCOUNT_MAX: usize = 1_000;
/// Oldest webhooks one trim gives up at most (the outbox is trimmed after every completion
/// that adds to it, so it is over its bound by the few completions racing each other).
pub const OUTBOX_TRIM_BATCH_MAX: usize = 64;
/// Trims (`OUTBOX_TRIM_BATCH_MAX` each) one call makes of one account's outbox at most, until
/// one gives up fewer than a batch: bounds a call's store work to 1,024 webhooks given up. An
/// outbox still over its bound then is trimmed again (the housekeeping thread's next tick).
pub const OUTBOX_TRIM_ROUNDS_MAX: usize = 16;
/// Accounts whose outbox a webhook attached to a finished job grew, waiting for the
/// housekeeping thread's trim (every `HOUSEKEEPING_TICK_MS`, never on a listener thread). Past
/// it, an account is not queued — counted and logged by the next tick — and its trim waits for
/// its next completion, or its next attach that finds room.
pub const OUTBOX_TRIMS_WAITING_MAX: usize = 4_096;
/// Outbox pages read per cycle at most (bounds the reads one cycle makes: 1,024 records).
pub const WEBHOOK_DUE_PAGES_PER_CYCLE: usize = 4;
/// One webhook request's time, connection included (a short one: receivers answer at once).
pub const WEBHOOK_TIMEOUT_MS: u64 = 5_000;
/// Attempts per webhook before it is given up.
pub const WEBHOOK_ATTEMPTS_MAX: u32 = 10;
/// Time after a job finished within which its webhook is retried (1 h).
pub const WEBHOOK_RETRY_WINDOW_MS: u64 = 3_600_000;
/// The first retry's delay; each further one doubles it, up to `WEBHOOK_BACKOFF_MS_MAX`.
pub const WEBHOOK_BACKOFF_MS_BASE: u64 = 1_000;
pub const WEBHOOK_BACKOFF_MS_MAX: u64 = 600_000;
/// How often the delivery thread reads the outbox when it found nothing due.
pub const WEBHOOK_POLL_MS: u64 = 100;
/// `User-Agent` of webhook deliveries.
pub const WEBHOOK_USER_AGENT: &str = "wallet-xray-webhooks/1";
/// Longest `callbackUrl` accepted (bytes).
pub const CALLBACK_URL_BYTES_MAX: usize = 2_048;
/// Characters of a webhook signing secret (`whsec_` and base58 of 32 random bytes is at most
/// 50); the store refuses longer ones.
pub const WEBHOOK_SECRET_CHARS_MAX: usize = 64;
/// Long-poll (`wait`) requests held at once, all listener threads together.
pub const LONG_POLL_WAITERS_MAX_DEFAULT: usize = 10_000;
/// Failed authentications per second per client IP before `429` without a key lookup.
pub const IP_FAILURES_PER_S_DEFAULT: u32 = 20;
/// Largest configuration file read.
pub const CONFIG_FILE_BYTES_MAX: u64 = 1024 * 1024;

/// Rate limit of a new key unless the operator sets one (tokens per second, bucket size).
pub const KEY_RATE_PER_SECOND_DEFAULT: u32 = 50;
pub const KEY_BURST_DEFAULT: u32 = 100;
/// Quota of a new key unless the operator sets one (units per calendar month).
pub const KEY_QUOTA_LIMIT_DEFAULT: u64 = 10_000;
/// How often the housekeeping thread refills the work queue from the recovery backlog.
pub const HOUSEKEEPING_TICK_MS: u64 = 200;
/// How often finished results past their retention are purged.
pub const RETENTION_SWEEP_INTERVAL_S: u64 = 3_600;
/// Jobs deleted per purge call; a sweep calls again until a page comes back short, so it
/// always removes everything past the retention (no page cap that could fall behind).
pub const RETENTION_PURGE_PAGE_LEN: usize = 1_000;

// ---- HTTP edge (`http`, `api`): bounds on what a client controls ---------------------------
/// Open connections one listener thread serves at once; past it new connections are closed
/// at accept.
pub const CONNECTIONS_PER_THREAD_MAX: usize = 4_096;
/// Open connections one client address (an IPv6 /64) holds at once, over all threads; past it
/// its new connections are closed at accept. Trusted proxies are not clients.
pub const CONNECTIONS_PER_CLIENT_MAX: usize = 512;
/// Requests one connection carries; the last one's response says `Connection: close`, so a
/// client cannot pin one connection (and its thread's share of it) forever.
pub const REQUESTS_PER_CONNECTION_MAX: u64 = 100_000;
/// Time a response write may make no progress (a client that pipelines and never reads)
/// before the connection is closed.
pub const WRITE_STALL_TIMEOUT_MS: u64 = 10_000;
/// Longest write-stall timeout an operator may set.
pub const WRITE_STALL_TIMEOUT_MS_MAX: u64 = 3_600_000;
/// Trusted proxy networks an operator may list.
pub const TRUSTED_PROXY_NETWORKS_MAX: usize = 256;
/// `X-Forwarded-For` entries read, right to left, when the peer is a trusted proxy.
pub const FORWARDED_HOPS_MAX: usize = 16;
/// Longest PROXY protocol header read from a trusted proxy (v1 is ≤ 107 bytes; v2 with the
/// TLVs load balancers add fits easily).
pub const PROXY_HEADER_BYTES_MAX: usize = 1_024;
/// Largest request head (request line and headers); hyper answers 431 past it.
pub const HEADER_BYTES_MAX: usize = 16 * 1024;
/// hyper's read buffer per connection; it must hold a whole head, and hyper needs ≥ 8 KiB.
pub const READ_BUFFER_BYTES_MAX: usize = 2 * HEADER_BYTES_MAX;
/// Time from the first byte of a request head (or from accept) to its end.
pub const HEADER_READ_TIMEOUT_MS: u64 = 10_000;
/// Time a keep-alive connection may sit idle between requests.
pub const KEEP_ALIVE_IDLE_MS: u64 = 60_000;
/// Time to receive a whole request body once its head is read.
pub const BODY_READ_TIMEOUT_MS: u64 = 10_000;
/// Time a stop waits for in-flight requests before closing what is left.
pub const DRAIN_TIMEOUT_MS: u64 = 10_000;
/// Pending connections the kernel queues per listener socket.
pub const ACCEPT_BACKLOG_LEN: i32 = 1_024;
/// io_uring submission queue entries per thread.
pub const URING_ENTRIES: u32 = 1_024;
/// Listener threads when the machine's parallelism cannot be read.
pub const THREADS_FALLBACK: usize = 1;
/// Pause after a failed accept (e.g. out of file descriptors) before the next one.
pub const ACCEPT_ERROR_PAUSE_MS: u64 = 10;
/// How often a draining thread checks whether its connections have closed.
pub const DRAIN_POLL_MS: u64 = 5;
/// Largest request body of the single-work endpoints (contract §3 step 5: 4 KiB).
pub const BODY_BYTES_MAX: usize = 4096;
/// Most addresses in one batch (`POST …/intelligence/wallets`, issue #15).
pub const BATCH_WALLETS_MAX: usize = 100;
/// Largest body of a batch: 100 addresses of at most 44 characters, quoted and separated, are
/// 4.7 KB; the rest is room for whitespace and the flags.
pub const BATCH_BODY_BYTES_MAX: usize = 16 * 1024;
/// How often a cluster node looks at the policies' generation record, and reads them all again
/// when another node wrote one (`policy`).
pub const POLICY_RELOAD_INTERVAL_MS: u64 = 1_000;
/// A cluster node reads every policy at least this often, whatever the generation record says
/// (`policy`: a backstop for writes that did not move it, made by an older build).
pub const POLICY_FULL_RELOAD_INTERVAL_MS: u64 = 60_000;
/// Most addresses on each of a policy's lists (allow, deny; issue #31).
pub const POLICY_LIST_LEN_MAX: usize = 500;
/// Most severity overrides in a policy (more than the catalogue has kinds).
pub const POLICY_OVERRIDES_LEN_MAX: usize = 64;
/// The least SOL or token share a policy may draw a sweep at (`sweepThresholds.solSharePercent`,
/// `tokenSharePercent`; `engine::sweep`), in percent of the wallet's balance: below half, a
/// wallet's ordinary payments would read as drains.
pub const POLICY_SWEEP_SHARE_PERCENT_MIN: u64 = 50;
/// The largest such share, in percent (the whole balance).
pub const POLICY_SWEEP_SHARE_PERCENT_MAX: u64 = 100;
/// The largest `sweepThresholds.dustLamports` a policy may set — SOL coming back to a wallet
/// that still counts as nothing given back —, in lamports (1 SOL).
pub const POLICY_SWEEP_DUST_LAMPORTS_MAX: u64 = 1_000_000_000;
/// The largest `sweepThresholds.dustTokenUnits` a policy may set — tokens of one mint coming
/// back that still count as nothing given back —, in token base units (one whole token of 6
/// decimals, as USDC).
pub const POLICY_SWEEP_DUST_TOKEN_UNITS_MAX: u64 = 1_000_000;
/// Largest body of a transaction scan: five transactions of 1,232 bytes are 8,220 characters of
/// base64; the rest is room for the signer, the origin, the guards and whitespace.
pub const SCAN_BODY_BYTES_MAX: usize = 16 * 1024;
/// Largest body of a policy: two full lists of 44-character addresses, quoted and separated,
/// are 47 KB; the rest is room for overrides, weights and whitespace.
pub const POLICY_BODY_BYTES_MAX: usize = 64 * 1024;
/// Largest body the edge reads for any route (a scan's feedback); each route then applies its
/// own bound (`api::json`), so a single-work request over 4 KiB is still a 413.
pub const REQUEST_BODY_BYTES_MAX: usize = FEEDBACK_SCAN_BODY_BYTES_MAX;
const _: () = assert!(
    BODY_BYTES_MAX <= REQUEST_BODY_BYTES_MAX
        && BATCH_BODY_BYTES_MAX <= REQUEST_BODY_BYTES_MAX
        && POLICY_BODY_BYTES_MAX <= REQUEST_BODY_BYTES_MAX
        && SCAN_BODY_BYTES_MAX <= REQUEST_BODY_BYTES_MAX
        && SEQUENCE_TRANSACTIONS_MAX * TRANSACTION_BYTES_MAX.div_ceil(3) * 4 + 4096 <= SCAN_BODY_BYTES_MAX
);
/// Longest `wait` of a long poll (contract §4).
pub const WAIT_S_MAX: u32 = 30;
/// Longest client-supplied `X-Request-Id` that is echoed (contract §1).
pub const REQUEST_ID_LEN_MAX: usize = 64;
/// `Retry-After` of a `429 TOO_MANY_JOBS` (jobs take seconds; a poll says when one is done).
pub const TOO_MANY_JOBS_RETRY_AFTER_S: u64 = 2;
/// `Retry-After` of `409 IDEMPOTENCY_KEY_IN_PROGRESS`: an admission takes milliseconds.
pub const IDEMPOTENCY_RETRY_AFTER_S: u64 = 1;
/// Longest `Idempotency-Key` accepted (printable ASCII characters).
pub const IDEMPOTENCY_KEY_CHARS_MAX: usize = 255;
/// Live (queued or running) jobs one account may hold unless the operator sets another cap:
/// a quarter of the default queue, so one account cannot keep it full for everyone.
pub const LIVE_JOBS_PER_ACCOUNT_MAX_DEFAULT: usize = QUEUE_CAPACITY_DEFAULT / 4;
/// `Retry-After` of a `503 SERVICE_BUSY` (contract §6).
pub const SERVICE_BUSY_RETRY_AFTER_S: u64 = 1;
/// `Retry-After` of a 202 and of a poll of unfinished work (contract §4).
pub const POLL_RETRY_AFTER_S: &str = "1";
/// Striped locks serialising admissions of one (account, subject), so equal concurrent
/// requests make one job (POSTs only; a power of two is not required).
pub const ADMISSION_LOCK_STRIPES: usize = 256;
/// Queue fill (percent) above which `service.status` is `degraded` (contract §4).
pub const DEGRADED_QUEUE_PERCENT: usize = 90;
/// Longest a POST's answer waits for the group commit's `fsync` of its write (`--sync-writes`);
/// past it the answer is `503 SERVICE_BUSY` (the write stays logged; a retry deduplicates).
pub const WAL_SYNC_WAIT_MS_MAX: u64 = 5_000;

// ---- Keys, rate limits and quota (`auth`, `limits`) ------------------------------------------
/// Keys held in memory, revoked ones included.
pub const KEY_TABLE_LEN_MAX: usize = 100_000;
/// Links of a key's rotation chain (`replaced_by`) followed to find the key that counts the
/// outcome of work admitted under an older key; a key rotated more often while one of its jobs
/// was in flight has that job counted on the key reached at this depth.
pub const KEY_SUCCESSION_HOPS_MAX: usize = 64;
/// Longest `Authorization` header value read; longer is `malformed`.
pub const AUTHORIZATION_LEN_MAX: usize = 256;
/// Longest key name, in characters.
pub const KEY_NAME_LEN_MAX: usize = 64;
/// Longest comma list `Scopes::parse_list` reads.
pub const SCOPE_LIST_LEN_MAX: usize = 256;

/// Bytes of a serialized transaction a scan reads: Solana's packet size (1,280-byte IPv6
/// minimum MTU less 48 bytes of headers), the most a transaction can be.
pub const TRANSACTION_BYTES_MAX: usize = 1_232;
/// Transactions one scan runs in sequence on one state at most (`transactions: [...]`, issue
/// #44 item 2): a Jito bundle's limit.
pub const SEQUENCE_TRANSACTIONS_MAX: usize = 5;
/// Scans whose upstream reads (lookup tables, pre-state, simulation) may be waiting in the
/// scan lane at once, every listener thread together; past it a scan answers 503 at once.
pub const SCAN_LANE_IN_FLIGHT_MAX: usize = 256;
/// Scans of one account that may wait on the lane at once: no account takes the whole lane,
/// nor its upstream requests (8 scans × 3 reads stay well inside `SCAN_RPC_CONCURRENCY_MAX`).
pub const SCAN_LANE_PER_ACCOUNT_MAX: usize = 8;
/// The scan lane's own upstream limits: more requests in flight than a job's source (scans
/// are many and small) and a smaller answer cap (a scan reads at most 100 accounts and one
/// simulation; the signer's history for counterparties, at most `SCAN_HISTORY_BYTES_MAX`).
pub const SCAN_RPC_CONCURRENCY_MAX: usize = 64;
pub const SCAN_RPC_RESPONSE_BYTES_MAX: usize = 8 * 1024 * 1024;
/// Longest text of the ledger's a scan answer repeats (an upstream error, a simulation's
/// error value); the rest is cut and the whole is logged.
pub const SCAN_UPSTREAM_TEXT_BYTES_MAX: usize = 240;
/// How long a scan waits for each upstream read (the pre-state, the simulation, a lookup
/// table) before reporting it as timed out: one round trip to a node, with room for a retry.
pub const SCAN_UPSTREAM_TIMEOUT_MS: u64 = 1_500;
/// Lookup tables the scan lane keeps, and for how long: a table can be extended, so an entry
/// is trusted briefly; a burst of scans of one dApp's transactions reads it once.
pub const SCAN_TABLE_CACHE_LEN: usize = 1_024;
pub const SCAN_TABLE_CACHE_TTL_MS: u64 = 2_000;
/// SPL Token mints whose decimals an rpc source keeps (`ledger::in_process::MintDecimals`): such a mint
/// cannot be closed, so its decimals never change at its address, and a token account's amount
/// renders without reading the mint again (a round trip each scan). Least recently used out
/// first, at 1 byte a mint plus the map's own.
pub const RPC_MINT_DECIMALS_CACHE_LEN: usize = 4_096;
/// Lookup-table reads that find no table (the address holds nothing, or something else) one
/// account may cause in a minute: such a scan is refused 400 and not charged, so without a
/// budget it would be a free upstream read at will. Past it: 429 until the minute ends.
pub const SCAN_TABLE_MISSES_PER_ACCOUNT_PER_MINUTE: u32 = 30;
/// Accounts whose table misses the lane remembers (least recently seen out first).
pub const SCAN_TABLE_MISS_ACCOUNTS_LEN: usize = 4_096;
/// Bytes of upstream answers the scan lane may hold at once, every scan on it together
/// (`--scan-buffered-bytes-max`): 256 scans × 2 × 8 MiB answers would otherwise buffer 4 GiB.
/// A read past it fails and its scan is answered 503 `SERVICE_BUSY`.
pub const SCAN_BUFFERED_BYTES_MAX_DEFAULT: u64 = 128 * 1024 * 1024;
/// A memory-resident source (the demo ledger) reads and simulates a scan on the listener
/// thread: past this many µs of that work (the thread's CPU time), a scan is charged one more
/// token of its key's rate limit per this many µs or part of it
/// (`--scan-listener-us-per-token`), so a key's scans cost its rate limit what they cost the
/// listener. A typical scan takes 40–70 µs (docs/benchmarks.md: nothing more); the heaviest
/// the runtime allows (63 instructions, each a program invocation that clears 512 KiB of VM
/// memory) ~0.85 ms: 4 more. 0 turns it off.
pub const SCAN_LISTENER_US_PER_TOKEN_DEFAULT: u64 = 200;
/// Rate-limit tokens one scan is charged beyond its first at most, whatever its work measured:
/// twice the heaviest transaction's.
pub const SCAN_LISTENER_EXTRA_TOKENS_MAX: u64 = 8;
/// Bytes of upstream answers one scan may read (its pre-state, simulation and the signer's
/// history together): one account's `SCAN_LANE_PER_ACCOUNT_MAX` scans hold at most half of
/// the default pool. Past it the read fails and the scan is answered without it.
pub const SCAN_BYTES_PER_SCAN_MAX: u64 = 8 * 1024 * 1024;
pub const SCAN_BUFFERED_BYTES_MIN: u64 = 16 * 1024;
pub const SCAN_BUFFERED_BYTES_MAX_MAX: u64 = 4 * 1024 * 1024 * 1024;
/// A scan that sends or approves something of the signer's compares the recipient with the
/// signer's counterparties: those of its newest transactions that are neither failed nor dust
/// (meaningful), read until this many are found (transactions). Dust and failed transactions
/// cost a stranger a fee each, so they take no place in the window: 25 dust transfers from a
/// look-alike cannot push the real counterparty out of it.
pub const SCAN_HISTORY_MEANINGFUL_WANTED: u32 = 25;
/// Signatures of the signer's history listed at most (`getSignaturesForAddress`, pages of at
/// most 1,000) while looking for them: failed ones are skipped without a fetch, so a flood of
/// failed transactions costs at most this many list entries (one or a few pages).
pub const SCAN_HISTORY_SIGNATURES_LISTED_MAX: u32 = 1_000;
/// Transactions fetched at most (`getTransaction`, one each) while looking for them: a wallet
/// flooded with 1,000 dust transfers costs this many fetches, not 1,000, and the answer says
/// the read stopped there (`counterparties.exhausted`). Six times the window.
pub const SCAN_HISTORY_TRANSACTIONS_READ_MAX: u32 = 150;
/// Bytes of ledger answers (signature pages and transactions) the history read takes at most,
/// within the scan's own `SCAN_BYTES_PER_SCAN_MAX`: 150 ordinary transactions are well under
/// 1 MiB; bloated ones stop the read here instead of taking the scan's whole budget.
pub const SCAN_HISTORY_BYTES_MAX: u64 = 2 * 1024 * 1024;
/// Counterparty addresses kept per wallet, and wallets whose counterparties are kept, each for
/// this long (milliseconds).
pub const SCAN_COUNTERPARTIES_MAX: usize = 256;
pub const SCAN_COUNTERPARTIES_CACHE_LEN: usize = 4_096;
pub const SCAN_COUNTERPARTIES_TTL_MS: u64 = 60_000;
/// Most entries a serialized scope list may have (a store record is input too).
pub const SCOPE_ENTRIES_MAX: usize = 16;
/// Longest account id (generated ones are `acct_` + at most 22 characters).
pub const ACCOUNT_ID_LEN_MAX: usize = 64;
/// Largest quota a key may have per period (used + reserved must fit 32 bits).
pub const QUOTA_LIMIT_MAX: u64 = 1_000_000_000;
/// Largest `ratePerSecond` a key may have (interval ≥ 1 µs keeps the arithmetic far from u64).
pub const RATE_PER_SECOND_MAX: u32 = 1_000_000;
/// Largest `burst` a key may have.
pub const BURST_MAX: u32 = 1_000_000;
/// Cells in the per-client-IP failure table; a power of two so the slot is a mask of the hash.
pub const IP_TABLE_SLOTS: usize = 4096;
/// Failed authentications one client IP may make at once before the per-second rate applies.
pub const IP_FAILURE_BURST_DEFAULT: u32 = 20;

// ---- Compute, admin, labels, ledger clients --------------------------------------------------
/// Longest a compute thread sleeps without a wake-up before looking at the queue again (a
/// safety net; submissions wake a thread at once).
pub const COMPUTE_IDLE_POLL_MS: u64 = 100;
/// Whole-request timeout of one admin call.
pub const ADMIN_REQUEST_TIMEOUT_MS: u64 = 10_000;
/// Largest admin answer read (a key list is bounded by the key table's size).
pub const ADMIN_RESPONSE_BYTES_MAX: usize = 64 * 1024 * 1024;
/// Largest token or address file read (both are one short line).
pub const ADMIN_FILE_BYTES_MAX: u64 = 1024;
/// Entries a labels file may hold.
pub const LABELS_LEN_MAX: usize = 1_000_000;
/// Largest labels file read.
pub const LABELS_FILE_BYTES_MAX: u64 = 256 * 1024 * 1024;
/// Longest `Retry-After` read, in seconds, before the cap to `backoff_max_ms` applies; longer
/// values are treated as absent (they are not a hint this client can honour).
pub const RPC_RETRY_AFTER_S_MAX: u64 = 86_400;
/// Idle pooled connections are closed after this long (nodes behind load balancers drop
/// idle connections on their own schedule; a stale one costs a failed attempt).
pub const RPC_POOL_IDLE_TIMEOUT_MS: u64 = 30_000;
/// Requests in one batch the local JSON-RPC server answers; more and the batch is refused whole.
pub const RPC_SERVER_BATCH_LEN_MAX: usize = 1_000;
/// A client of the local JSON-RPC server must send its request headers within this time.
pub const RPC_SERVER_HEADER_READ_TIMEOUT_MS: u64 = 10_000;
/// The local JSON-RPC server's pause after a failed `accept` before the next one.
pub const RPC_SERVER_ACCEPT_RETRY_DELAY_MS: u64 = 50;

// ---- Storage (`store`): record bounds and RocksDB tuning -------------------------------------
/// Longest id, account, key id, wallet address or pair id accepted (bytes).
pub const STORE_ID_BYTES_MAX: usize = 64;
/// Longest engine version string (bytes): the engines' tag and a policy's `+<id>@<version>`.
pub const ENGINE_VERSION_BYTES_MAX: usize = 96;
/// Longest error code of a failed job (bytes).
pub const ERROR_CODE_BYTES_MAX: usize = 64;
/// Longest error message of a failed job (bytes).
pub const ERROR_MESSAGE_BYTES_MAX: usize = 1024;
/// Largest stored payload (an X-Ray or comparison JSON document).
pub const RESULT_BYTES_MAX: usize = 16 * 1024 * 1024;
/// Payload bytes of the completions a sink keeps while the store refuses writes (a full disk);
/// past it a result waits as a `FAILED` completion (refunded) instead of in memory.
pub const UNSETTLED_PAYLOAD_BYTES_MAX: usize = 64 * 1024 * 1024;
/// Admissions kept waiting for queue room because undoing them failed (see `jobs::admission`).
pub const STRANDED_TICKETS_MAX: usize = 1024;
/// Most records one paged call (`list_keys`, `live_jobs`, `purge_finished_before`) handles.
pub const STORE_PAGE_LEN_MAX: usize = 10_000;
/// Subject-index entries examined by `latest_ready_for` before it gives up (newest first).
pub const SUBJECT_SCAN_LEN_MAX: usize = 64;
/// Memory for finished jobs kept for polls and fresh-result reuse (`jobs::finished`): payloads
/// and records together. A typical X-Ray is 5 KB, so this holds ~10 k of them; a payload over
/// a shard's share (this / `FINISHED_CACHE_SHARDS`) is always read from the store.
pub const FINISHED_CACHE_BYTES: usize = 64 * 1024 * 1024;
/// Most finished jobs (and most `(account, subject)` entries) kept in memory.
pub const FINISHED_CACHE_ENTRIES_MAX: usize = 65_536;
/// Independently locked parts of that cache (listener and compute threads share it).
pub const FINISHED_CACHE_SHARDS: usize = 16;
/// Striped locks serialising state transitions of one job.
pub const JOB_LOCK_STRIPES: usize = 64;
/// Default shared block cache of all column families.
pub const BLOCK_CACHE_BYTES_DEFAULT: usize = 256 * 1024 * 1024;
/// Default total memtable budget of all column families.
pub const WRITE_BUFFER_BYTES_DEFAULT: usize = 128 * 1024 * 1024;
/// Default WAL size past which RocksDB flushes the column families that hold it back.
pub const WAL_BYTES_MAX_DEFAULT: u64 = 512 * 1024 * 1024;
/// Default RocksDB background threads (flushes and compactions), kept small: the cores belong
/// to listeners and compute threads.
pub const ROCKSDB_BACKGROUND_JOBS_DEFAULT: i32 = 2;
/// Bloom filter bits per key (about 1 % false positives).
pub const ROCKSDB_BLOOM_BITS_PER_KEY: f64 = 10.0;
/// Block size of the payload column families (payloads are a few KiB of JSON each).
pub const ROCKSDB_PAYLOAD_BLOCK_BYTES: usize = 16 * 1024;
/// RocksDB info-log files kept.
pub const ROCKSDB_INFO_LOG_FILES_KEPT: usize = 4;
/// Size at which a RocksDB info-log file is rolled.
pub const ROCKSDB_INFO_LOG_FILE_BYTES_MAX: usize = 16 * 1024 * 1024;
/// Background write-back of SST and WAL files, so no flush stalls on one large fsync.
pub const ROCKSDB_BYTES_PER_SYNC: u64 = 1024 * 1024;
/// Threads (`xray-store-work-i`) that run the API's blocking store sequences over RocksDB —
/// monitors, events pages (up to `MONITOR_EVENTS_PAGE_READ_BYTES_MAX` read each), feedback,
/// policy writes — off the listener threads; so at most this many pages' reads in memory at once.
pub const STORE_WORK_THREADS: usize = 2;
/// Niceness of those threads (Linux, per thread; 0 = the process's): a page's parse yields the
/// core to a listener thread that wakes up, so the listener's answers are not held behind it.
pub const STORE_WORK_NICE: i32 = 10;
/// Sequences waiting for one of those threads (each account at most
/// `REGISTRY_WORK_PER_ACCOUNT_MAX`, running or waiting); past it `503 SERVICE_BUSY`.
pub const STORE_WORK_QUEUE_LEN_MAX: usize = 64;

// --- the etcd store (`--store etcd:…`, issue #14) ---
/// Endpoints one `--store etcd:` list may name.
pub const ETCD_ENDPOINTS_MAX: usize = 16;
/// Longest keyspace prefix of a cluster in etcd (`--etcd-prefix`).
pub const ETCD_PREFIX_BYTES_MAX: usize = 64;
/// The keyspace prefix of a cluster by default.
pub const ETCD_PREFIX_DEFAULT: &str = "xray/";
/// Longest endpoint text (`http://host:port`).
pub const ETCD_ENDPOINT_BYTES_MAX: usize = 256;
/// Longest time one etcd request may take before the call fails `Unavailable` (503): long
/// enough for a leader election (etcd's default election timeout is 1 s), short enough that a
/// client is answered.
pub const ETCD_REQUEST_TIMEOUT_MS: u64 = 5_000;
/// Longest time to connect to an endpoint.
pub const ETCD_CONNECT_TIMEOUT_MS: u64 = 3_000;
/// Longest a cluster node waits at start for its etcd to answer (a node and its etcd started
/// together), and the pause between its attempts.
pub const ETCD_START_WAIT_S_MAX: u64 = 60;
pub const ETCD_START_RETRY_MS: u64 = 500;
/// Time to live of a node's lease: a node that stops renewing it for this long loses its jobs
/// to the other nodes (adoption) and leaves the live-node count.
pub const ETCD_LEASE_TTL_S: i64 = 6;
/// Compare-and-swap attempts of one operation before it gives up `Unavailable` (contention).
pub const ETCD_CAS_ATTEMPTS_MAX: usize = 64;
/// Largest value written to etcd: etcd refuses requests over 1.5 MiB by default
/// (`--max-request-bytes`), and a completion carries a payload and a few small records.
pub const ETCD_VALUE_BYTES_MAX: usize = 1024 * 1024;
/// Finished jobs one purge transaction deletes (5 operations each; etcd's default
/// `--max-txn-ops` is 128).
pub const ETCD_PURGE_JOBS_PER_TXN: usize = 24;
/// Calls waiting on one node's etcd client at once; past it a call fails `Unavailable` (503)
/// instead of queueing without bound.
pub const ETCD_CALLS_IN_FLIGHT_MAX: usize = 4096;
/// Blocking sequences of store calls a node runs off its listener threads at once (the
/// monitors' registry on a cluster: each a few etcd round trips); past it `503 SERVICE_BUSY`.
pub const ETCD_BLOCKING_IN_FLIGHT_MAX: usize = 32;
/// Of those (or of the store-work pool's, `STORE_WORK_THREADS` + `STORE_WORK_QUEUE_LEN_MAX`,
/// over RocksDB), at most this many of one account, held until each sequence ends (past it
/// `503 SERVICE_BUSY` for that account).
pub const REGISTRY_WORK_PER_ACCOUNT_MAX: usize = 4;
/// Sends of one etcd request that never reached a member (a refused connection: the client's
/// balancer picked a dead member), and the pause between them.
pub const ETCD_UNSENT_ATTEMPTS_MAX: usize = 8;
pub const ETCD_UNSENT_PAUSE_MS: u64 = 20;
/// Pace of a cluster node's upkeep rounds: adoption of orphaned jobs, the live node count.
pub const ADOPTION_INTERVAL_MS: u64 = 1_000;
/// Live jobs (oldest first) a round looks at for orphans.
pub const ADOPTION_PAGE_LEN: usize = 512;
/// A job this node owns but does not hold is re-queued only past this age (two etcd request
/// timeouts: an admission still in progress is never mistaken for a lost one).
pub const ADOPTION_OWN_AGE_MIN_MS: u64 = 2 * ETCD_REQUEST_TIMEOUT_MS;

// ---- Feedback on analyses (`feedback/`, issue #31 item 2) ----

/// Feedback records one account keeps at most (records); past it a new record evicts the
/// account's least recently written one, in the same batch.
pub const FEEDBACK_PER_ACCOUNT_MAX: usize = 10_000;
/// A record not written for this long is deleted by the hourly retention purge (days).
pub const FEEDBACK_RETENTION_DAYS: u32 = 365;
/// A feedback `note`, in characters (Unicode scalar values); the contract's 4 KiB body bounds
/// its bytes.
pub const FEEDBACK_NOTE_CHARS_MAX: usize = 1_000;
/// Attempts of a feedback write that lost a compare-and-set race with another, before 503.
pub const FEEDBACK_WRITE_ATTEMPTS_MAX: usize = 4;
/// Records one page of the admin listing holds at most (and its default: 100).
pub const FEEDBACK_PAGE_LEN_MAX: usize = 1_000;
pub const FEEDBACK_PAGE_LEN_DEFAULT: usize = 100;
/// Records one admin page reads at most while filtering (`verdict=`, `kind=`) before it ends
/// early with `nextAfter`: a filter that matches little never walks an account whole.
pub const FEEDBACK_PAGE_SCAN_MAX: usize = 5_000;
/// Records one page of the account's own listing (`GET /v1/developer/feedback`) holds at most,
/// and its default: a page of the monitors' size (`MONITOR_EVENTS_PAGE_LEN_*`).
pub const FEEDBACK_OWN_PAGE_LEN_MAX: usize = 100;
pub const FEEDBACK_OWN_PAGE_LEN_DEFAULT: usize = 50;
/// Largest body of `POST /v1/developer/feedback` carrying a scan's signed answer (bytes). A scan
/// judges a message of at most 1,232 bytes (`TRANSACTION_BYTES_MAX`); its answer names every
/// account each instruction reads as a 46-byte quoted address, so a packet full of account
/// indexes answers ~60 KB at worst: twice that is room for findings, effects and whitespace. An
/// analysis' feedback keeps the contract's `BODY_BYTES_MAX`.
/// Memory: the edge reads a body before it authenticates (`http::conn`), and only this route
/// (`api::router::body_bytes_max`) reads this much; every other keeps its own bound (4, 16 or
/// 64 KiB). A connection reads one body at a time, within `BODY_READ_TIMEOUT_MS` (10 s), so an
/// unauthenticated client holds at most `CONNECTIONS_PER_CLIENT_MAX` × 128 KiB = 512 × 128 KiB
/// = 64 MiB of bodies, and one listener thread at most `CONNECTIONS_PER_THREAD_MAX` × 128 KiB =
/// 4,096 × 128 KiB = 512 MiB (the policy's 64 KiB made that 32 MiB and 256 MiB), reached only
/// by 8 or more client addresses (/64s) at once. Each listener thread's parse scratch is sized
/// `REQUEST_BODY_BYTES_MAX` once (`api::json`); a scan's answer is parsed twice (its shape, then
/// `serde_json` to verify it) and the parsed value is dropped before the record is written.
pub const FEEDBACK_SCAN_BODY_BYTES_MAX: usize = 128 * 1024;
/// Finding kinds a scan's feedback record keeps at most (each kind once; the scan catalogue
/// has fewer).
pub const FEEDBACK_SCAN_FINDING_KINDS_MAX: usize = 32;
/// Records the retention purge deletes in one batch (two writes each, and the tally: within etcd's default 128 operations of a transaction).
pub const FEEDBACK_PURGE_BATCH_LEN: usize = 40;

mod serve;
mod values;

pub use serve::ServeConfig;
pub use values::{redact_url, InvalidValue, IoDriver, LogFormat, ProxyNetwork, SourceSpec, StoreSpec};
