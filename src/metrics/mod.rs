//! The Prometheus registry: what the API answered, what it refused, what it deduplicated, how
//! jobs ended (and why they FAILED) and how long all of it took — rendered as text exposition
//! 0.0.4 for the admin listener's `GET /metrics`, with the back ends' series (`backends`: ledger
//! calls, store writes and size) and the process's (`process`: memory, fds, CPU, threads).
//!
//! Owns: `Metrics` (counters and histograms), the closed label enums that index it
//! (`RouteLabel`, `RejectReason`, `JobLabel`, `JobOutcomeLabel`), the bucket bounds
//! (`REQUEST_DURATION_BUCKETS_US`, `JOB_DURATION_BUCKETS_MS`), the statuses that get their own
//! series (`STATUSES`), and `Gauges`, the point-in-time values the admin listener reads from
//! the queue, index, key table and stop signal and hands to `render`.
//! Called from listener threads (`observe_request`, `reject`, `deduplicated`, once or twice per
//! request), compute threads (`observe_job`, when a job ends READY or FAILED) and the admin
//! listener thread (`render`, once per scrape).
//!
//! Invariant: recording takes no lock and does not allocate: every series is a slot of a
//! fixed array of `AtomicU64` indexed by enums, bumped with `Relaxed` `fetch_add` (the
//! counters are independent; a scrape may see one request's count before its duration).
//! Invariant: memory is bounded and fixed at start: the set of series is the product of closed
//! enums and a fixed status list (anything else is `status="other"`); no label value comes
//! from a client.
//! Invariant: a histogram keeps per-bucket counts and derives `_count` (and `xray_jobs_total`)
//! from them at render, so `_count` always equals the `+Inf` bucket in one scrape.
//! Invariant: durations are recorded in integer units (`_us`, `_ms`) and rendered in seconds
//! by exact decimal formatting, without floating point.
//! Deliberately absent: per-key, per-IP and per-wallet labels (unbounded cardinality, and a
//! key id on a scrape is a fact about a customer); per-thread sharding of the atomics (the
//! contention of one `fetch_add` per series is small next to a request); the admin listener's
//! own requests.

use std::fmt::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error_code::ErrorCode;

/// Upper bounds (inclusive) of the request duration buckets, in microseconds. Long polls wait
/// up to 30 s (contract `wait`), hence the top of the range.
pub const REQUEST_DURATION_BUCKETS_US: [u64; 18] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000,
    5_000_000, 10_000_000, 30_000_000, 60_000_000,
];

/// Upper bounds (inclusive) of the job duration buckets, in milliseconds: from a cached
/// ledger (tens of ms) to a wallet that takes many paced RPC pages (minutes).
pub const JOB_DURATION_BUCKETS_MS: [u64; 16] =
    [10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000];

/// The HTTP statuses the contract uses, each with its own `status` label value; any other
/// status is counted under `status="other"`.
pub const STATUSES: [u16; 13] = [200, 202, 400, 401, 403, 404, 405, 413, 415, 422, 429, 500, 503];

const STATUS_SLOTS: usize = STATUSES.len() + 1;
const STATUS_OTHER: usize = STATUSES.len();
const REQUEST_BUCKETS: usize = REQUEST_DURATION_BUCKETS_US.len() + 1;
const JOB_BUCKETS: usize = JOB_DURATION_BUCKETS_MS.len() + 1;
/// Decimal places between a recorded unit and seconds.
const US_PER_S_DIGITS: usize = 6;
const MS_PER_S_DIGITS: usize = 3;

/// A closed label enum: its variants in slot order (`ALL`), their count, the label value of
/// each, and the slot it indexes.
macro_rules! label_enum {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident => $label:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in slot order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];
            const COUNT: usize = Self::ALL.len();

            /// The value whose label is `label`, if any (labels are unique within an enum).
            #[allow(dead_code)] // only enums read back from text (codes, method names) call it
            pub fn from_label(label: &str) -> Option<$name> {
                Self::ALL.iter().copied().find(|value| value.as_str() == label)
            }

            /// The label value in the exposition.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $label,)+
                }
            }

            fn slot(self) -> usize {
                self as usize
            }
        }
    };
}

mod backends;
mod process;

pub use backends::{
    CacheKind, CallOutcome, CheckOutcome, LedgerCacheMetrics, LedgerMethod, LedgerTotals, MonitorMetrics, RetryWait,
    ScanMetrics, StoreDisk, StoreWrite, WebhookOutcome, LEDGER, LEDGER_CACHE, MONITORS, SCAN, STORE, WEBHOOKS,
};

label_enum! {
    /// The code a job ended FAILED with (`code` label): the contract's job codes; anything else
    /// (a record written by another build) is `other`.
    pub enum FailedCode {
        AccountNotEligible => "ACCOUNT_NOT_ELIGIBLE",
        UpstreamUnavailable => "UPSTREAM_UNAVAILABLE",
        AnalysisFailed => "ANALYSIS_FAILED",
        Other => "other",
    }
}

impl FailedCode {
    /// The label of a stored error code.
    pub fn of(code: &str) -> FailedCode {
        FailedCode::from_label(code).unwrap_or(FailedCode::Other)
    }
}

label_enum! {
    /// The public API's routes (`route` label); `Unmatched` is a path or method no route takes.
    pub enum RouteLabel {
        Wallet => "wallet",
        Wallets => "wallets",
        Analysis => "analysis",
        Compare => "compare",
        Comparison => "comparison",
        Transaction => "transaction",
        Monitors => "monitors",
        MonitorEvents => "monitor_events",
        Feedback => "feedback",
        Status => "status",
        Usage => "usage",
        Policy => "policy",
        Healthz => "healthz",
        SigningKeys => "signing_keys",
        Unmatched => "unmatched",
    }
}

label_enum! {
    /// Why a request was refused (`reason` label): one per contract error code, plus the
    /// per-IP limit of failed authentications.
    pub enum RejectReason {
        InvalidRequest => "invalid_request",
        InvalidAddress => "invalid_address",
        InvalidTransaction => "invalid_transaction",
        Unauthenticated => "unauthenticated",
        InsufficientScope => "insufficient_scope",
        NotFound => "not_found",
        MethodNotAllowed => "method_not_allowed",
        PayloadTooLarge => "payload_too_large",
        UnsupportedMediaType => "unsupported_media_type",
        AccountNotEligible => "account_not_eligible",
        ReportNotVerified => "report_not_verified",
        RateLimited => "rate_limited",
        /// Refused by the per-IP limit of failed authentications (not a code of its own: the
        /// answer is `RATE_LIMITED`, so the caller's refusal also counts it as `rate_limited`).
        RateLimitedIp => "rate_limited_ip",
        QuotaExhausted => "quota_exhausted",
        TooManyJobs => "too_many_jobs",
        IdempotencyKeyReused => "idempotency_key_reused",
        IdempotencyKeyInProgress => "idempotency_key_in_progress",
        Conflict => "conflict",
        ServiceBusy => "service_busy",
        Internal => "internal",
    }
}

label_enum! {
    /// The kind of a job (`kind` label).
    pub enum JobLabel {
        Analysis => "analysis",
        Comparison => "comparison",
    }
}

label_enum! {
    /// How a job ended (`outcome` label).
    pub enum JobOutcomeLabel {
        Ready => "ready",
        Failed => "failed",
    }
}

label_enum! {
    /// The class of an answered status (`status_class` label of the duration histogram).
    enum StatusClass {
        Success => "2xx",
        ClientError => "4xx",
        ServerError => "5xx",
        Other => "other",
    }
}

impl RejectReason {
    /// The reason a refusal with `code` is counted under. Every code has one today; the
    /// `Option` leaves room for a code that is deliberately not counted. The match is
    /// exhaustive, so a new code forces a decision here.
    pub fn from_code(code: ErrorCode) -> Option<Self> {
        Some(match code {
            ErrorCode::InvalidRequest => RejectReason::InvalidRequest,
            ErrorCode::InvalidAddress => RejectReason::InvalidAddress,
            ErrorCode::InvalidTransaction => RejectReason::InvalidTransaction,
            ErrorCode::Unauthenticated => RejectReason::Unauthenticated,
            ErrorCode::InsufficientScope => RejectReason::InsufficientScope,
            ErrorCode::NotFound => RejectReason::NotFound,
            ErrorCode::MethodNotAllowed => RejectReason::MethodNotAllowed,
            ErrorCode::PayloadTooLarge => RejectReason::PayloadTooLarge,
            ErrorCode::UnsupportedMediaType => RejectReason::UnsupportedMediaType,
            ErrorCode::AccountNotEligible => RejectReason::AccountNotEligible,
            ErrorCode::ReportNotVerified => RejectReason::ReportNotVerified,
            ErrorCode::RateLimited => RejectReason::RateLimited,
            ErrorCode::QuotaExhausted => RejectReason::QuotaExhausted,
            ErrorCode::TooManyJobs => RejectReason::TooManyJobs,
            ErrorCode::IdempotencyKeyReused => RejectReason::IdempotencyKeyReused,
            ErrorCode::IdempotencyKeyInProgress => RejectReason::IdempotencyKeyInProgress,
            ErrorCode::Conflict => RejectReason::Conflict,
            ErrorCode::ServiceBusy => RejectReason::ServiceBusy,
            ErrorCode::Internal => RejectReason::Internal,
            // Codes that end a job, never a request: nothing is refused with them.
            ErrorCode::UpstreamUnavailable | ErrorCode::AnalysisFailed => return None,
        })
    }
}

impl StatusClass {
    fn of(status: u16) -> StatusClass {
        match status / 100 {
            2 => StatusClass::Success,
            4 => StatusClass::ClientError,
            5 => StatusClass::ServerError,
            _ => StatusClass::Other,
        }
    }
}

/// The slot of `status` in a route's row of request counters.
fn status_slot(status: u16) -> usize {
    STATUSES.iter().position(|&s| s == status).unwrap_or(STATUS_OTHER)
}

/// The `status` label value of a slot.
fn status_label(slot: usize) -> String {
    STATUSES.get(slot).map_or_else(|| "other".to_owned(), u16::to_string)
}

/// A histogram of `B - 1` bounds and a `+Inf` bucket, in the unit of its bounds.
struct Histogram<const B: usize> {
    /// Not cumulative: slot `i` counts observations in `(bounds[i-1], bounds[i]]`; the last
    /// slot those above every bound.
    buckets: [AtomicU64; B],
    /// The sum of the observations (wraps after 2^64 units: half a million years of µs).
    sum: AtomicU64,
}

/// What a histogram held at one read.
struct HistogramSnapshot<const B: usize> {
    buckets: [u64; B],
    sum: u64,
}

impl<const B: usize> Histogram<B> {
    const fn new() -> Self {
        Histogram { buckets: [const { AtomicU64::new(0) }; B], sum: AtomicU64::new(0) }
    }

    fn observe(&self, bounds: &[u64], value: u64) {
        let slot = bounds.partition_point(|&bound| bound < value).min(B - 1);
        self.buckets[slot].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
    }

    fn snapshot(&self) -> HistogramSnapshot<B> {
        HistogramSnapshot {
            buckets: std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
            sum: self.sum.load(Ordering::Relaxed),
        }
    }
}

impl<const B: usize> HistogramSnapshot<B> {
    fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

/// The registry. Shared as `Arc<Metrics>`; every method takes `&self`.
pub struct Metrics {
    /// Answered requests by route and status slot.
    requests: [[AtomicU64; STATUS_SLOTS]; RouteLabel::COUNT],
    request_duration: [[Histogram<REQUEST_BUCKETS>; StatusClass::COUNT]; RouteLabel::COUNT],
    rejections: [AtomicU64; RejectReason::COUNT],
    deduplicated: [AtomicU64; JobLabel::COUNT],
    /// Also the jobs counter: a job's count is its histogram's count.
    job_duration: [[Histogram<JOB_BUCKETS>; JobOutcomeLabel::COUNT]; JobLabel::COUNT],
    jobs_failed: [[AtomicU64; FailedCode::COUNT]; JobLabel::COUNT],
}

/// Point-in-time values read at scrape time by the admin listener.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauges {
    pub queue_depth: usize,
    pub queue_capacity: usize,
    pub live_jobs: usize,
    pub long_poll_waiters: usize,
    pub keys: usize,
    pub draining: bool,
    /// The store's size, when it could be read.
    pub store_disk: Option<StoreDisk>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    pub const fn new() -> Metrics {
        Metrics {
            requests: [const { [const { AtomicU64::new(0) }; STATUS_SLOTS] }; RouteLabel::COUNT],
            request_duration: [const { [const { Histogram::new() }; StatusClass::COUNT] }; RouteLabel::COUNT],
            rejections: [const { AtomicU64::new(0) }; RejectReason::COUNT],
            deduplicated: [const { AtomicU64::new(0) }; JobLabel::COUNT],
            job_duration: [const { [const { Histogram::new() }; JobOutcomeLabel::COUNT] }; JobLabel::COUNT],
            jobs_failed: [const { [const { AtomicU64::new(0) }; FailedCode::COUNT] }; JobLabel::COUNT],
        }
    }

    /// One job of `kind` that ended FAILED with `code`.
    pub fn job_failed(&self, kind: JobLabel, code: FailedCode) {
        self.jobs_failed[kind.slot()][code.slot()].fetch_add(1, Ordering::Relaxed);
    }

    /// Jobs of `kind` that ended FAILED with `code` so far.
    pub fn jobs_failed(&self, kind: JobLabel, code: FailedCode) -> u64 {
        self.jobs_failed[kind.slot()][code.slot()].load(Ordering::Relaxed)
    }

    /// One answered request of the public API: its route, status and time from parsed request
    /// to response, in microseconds.
    pub fn observe_request(&self, route: RouteLabel, status: u16, elapsed_us: u64) {
        self.requests[route.slot()][status_slot(status)].fetch_add(1, Ordering::Relaxed);
        self.request_duration[route.slot()][StatusClass::of(status).slot()]
            .observe(&REQUEST_DURATION_BUCKETS_US, elapsed_us);
    }

    /// One refused request.
    pub fn reject(&self, reason: RejectReason) {
        self.rejections[reason.slot()].fetch_add(1, Ordering::Relaxed);
    }

    /// One wallet or compare request answered by a job already live or already READY.
    pub fn deduplicated(&self, kind: JobLabel) {
        self.deduplicated[kind.slot()].fetch_add(1, Ordering::Relaxed);
    }

    /// One job that ended, and its time from start to end in milliseconds.
    pub fn observe_job(&self, kind: JobLabel, outcome: JobOutcomeLabel, elapsed_ms: u64) {
        self.job_duration[kind.slot()][outcome.slot()].observe(&JOB_DURATION_BUCKETS_MS, elapsed_ms);
    }

    /// Requests answered so far on `route` with `status` (a status outside `STATUSES` reads
    /// the `other` series).
    pub fn requests(&self, route: RouteLabel, status: u16) -> u64 {
        self.requests[route.slot()][status_slot(status)].load(Ordering::Relaxed)
    }

    /// Refusals counted so far under `reason`.
    pub fn rejections(&self, reason: RejectReason) -> u64 {
        self.rejections[reason.slot()].load(Ordering::Relaxed)
    }

    /// Deduplicated requests so far of `kind`.
    pub fn deduplications(&self, kind: JobLabel) -> u64 {
        self.deduplicated[kind.slot()].load(Ordering::Relaxed)
    }

    /// Jobs of `kind` ended so far with `outcome`.
    pub fn jobs(&self, kind: JobLabel, outcome: JobOutcomeLabel) -> u64 {
        self.job_duration[kind.slot()][outcome.slot()].snapshot().count()
    }

    /// The registry and `gauges` as Prometheus text exposition 0.0.4. Request series with no
    /// observation are left out; every other series, and every `# HELP`/`# TYPE`, is always there.
    pub fn render(&self, gauges: &Gauges) -> String {
        let mut out = String::with_capacity(16 * 1024);
        // Writing into a String cannot fail.
        let _ = self.write_exposition(&mut out, gauges);
        out
    }

    fn write_exposition(&self, out: &mut String, gauges: &Gauges) -> fmt::Result {
        let name = "xray_http_requests_total";
        family(out, name, "counter", "Requests answered by the public API, by route and status.")?;
        for route in RouteLabel::ALL {
            for (slot, counter) in self.requests[route.slot()].iter().enumerate() {
                let value = counter.load(Ordering::Relaxed);
                if value != 0 {
                    let status = status_label(slot);
                    writeln!(out, "{name}{{route=\"{}\",status=\"{status}\"}} {value}", route.as_str())?;
                }
            }
        }

        let name = "xray_http_request_duration_seconds";
        family(out, name, "histogram", "Time from parsed request to response, by route and status class.")?;
        for route in RouteLabel::ALL {
            for class in StatusClass::ALL {
                let snapshot = self.request_duration[route.slot()][class.slot()].snapshot();
                if snapshot.count() != 0 {
                    let labels = format!("route=\"{}\",status_class=\"{}\"", route.as_str(), class.as_str());
                    histogram(out, name, &labels, &REQUEST_DURATION_BUCKETS_US, US_PER_S_DIGITS, &snapshot)?;
                }
            }
        }

        let name = "xray_rejections_total";
        let help = "Refused requests, by reason (rate_limited_ip is also counted as rate_limited).";
        family(out, name, "counter", help)?;
        for reason in RejectReason::ALL {
            let value = self.rejections(*reason);
            writeln!(out, "{name}{{reason=\"{}\"}} {value}", reason.as_str())?;
        }

        let name = "xray_deduplicated_total";
        family(out, name, "counter", "Wallet and compare requests answered by an existing job, by job kind.")?;
        for kind in JobLabel::ALL {
            writeln!(out, "{name}{{kind=\"{}\"}} {}", kind.as_str(), self.deduplications(*kind))?;
        }

        let snapshots = self.job_duration.each_ref().map(|row| row.each_ref().map(Histogram::snapshot));
        let name = "xray_jobs_total";
        family(out, name, "counter", "Jobs ended, by kind and outcome.")?;
        for kind in JobLabel::ALL {
            for outcome in JobOutcomeLabel::ALL {
                let count = snapshots[kind.slot()][outcome.slot()].count();
                writeln!(out, "{name}{{kind=\"{}\",outcome=\"{}\"}} {count}", kind.as_str(), outcome.as_str())?;
            }
        }
        let name = "xray_job_duration_seconds";
        family(out, name, "histogram", "Time from a job's start to its end, by kind and outcome.")?;
        for kind in JobLabel::ALL {
            for outcome in JobOutcomeLabel::ALL {
                let labels = format!("kind=\"{}\",outcome=\"{}\"", kind.as_str(), outcome.as_str());
                let snapshot = &snapshots[kind.slot()][outcome.slot()];
                histogram(out, name, &labels, &JOB_DURATION_BUCKETS_MS, MS_PER_S_DIGITS, snapshot)?;
            }
        }

        let name = "xray_jobs_failed_total";
        family(out, name, "counter", "Jobs ended FAILED, by kind and error code.")?;
        for kind in JobLabel::ALL {
            for code in FailedCode::ALL {
                let value = self.jobs_failed(*kind, *code);
                writeln!(out, "{name}{{kind=\"{}\",code=\"{}\"}} {value}", kind.as_str(), code.as_str())?;
            }
        }

        let gauge_values = [
            ("xray_queue_depth", "Jobs waiting in the compute queue.", gauges.queue_depth),
            ("xray_queue_capacity", "Capacity of the compute queue.", gauges.queue_capacity),
            ("xray_live_jobs", "Jobs admitted and not yet finished (status index entries).", gauges.live_jobs),
            ("xray_long_poll_waiters", "Poll requests waiting for a job to finish.", gauges.long_poll_waiters),
            ("xray_api_keys", "API keys in the key table.", gauges.keys),
            ("xray_draining", "1 while the server drains before stopping, else 0.", usize::from(gauges.draining)),
        ];
        for (name, help, value) in gauge_values {
            family(out, name, "gauge", help)?;
            writeln!(out, "{name} {value}")?;
        }
        backends::write_backends(out, gauges.store_disk)?;
        process::write_process(out)
    }
}

/// The `# HELP` and `# TYPE` lines of a metric family.
fn family(out: &mut String, name: &str, kind: &str, help: &str) -> fmt::Result {
    writeln!(out, "# HELP {name} {help}")?;
    writeln!(out, "# TYPE {name} {kind}")
}

/// One histogram series: cumulative `_bucket` lines, `_sum` and `_count`, in seconds.
/// `digits` is the number of decimal places between the unit of `bounds` and seconds.
fn histogram<const B: usize>(
    out: &mut String,
    name: &str,
    labels: &str,
    bounds: &[u64],
    digits: usize,
    snapshot: &HistogramSnapshot<B>,
) -> fmt::Result {
    let mut cumulative = 0u64;
    for (slot, count) in snapshot.buckets.iter().enumerate() {
        cumulative += count;
        match bounds.get(slot) {
            Some(&bound) => {
                let le = Decimal { value: bound, digits };
                writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}")?;
            }
            None => writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {cumulative}")?,
        }
    }
    writeln!(out, "{name}_sum{{{labels}}} {}", Decimal { value: snapshot.sum, digits })?;
    writeln!(out, "{name}_count{{{labels}}} {cumulative}")
}

/// `value / 10^digits`, written exactly in decimal with no trailing zeros (`1500` with 3
/// digits is `1.5`, `100` with 6 is `0.0001`, `2000` with 3 is `2`).
struct Decimal {
    value: u64,
    digits: usize,
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scale = 10u64.pow(self.digits as u32);
        let (whole, mut fraction) = (self.value / scale, self.value % scale);
        write!(f, "{whole}")?;
        if fraction == 0 {
            return Ok(());
        }
        let mut width = self.digits;
        while fraction % 10 == 0 {
            fraction /= 10;
            width -= 1;
        }
        write!(f, ".{fraction:0width$}")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;

    const ALL_CODES: [ErrorCode; 19] = [
        ErrorCode::InvalidRequest,
        ErrorCode::InvalidAddress,
        ErrorCode::InvalidTransaction,
        ErrorCode::Unauthenticated,
        ErrorCode::InsufficientScope,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::PayloadTooLarge,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::AccountNotEligible,
        ErrorCode::ReportNotVerified,
        ErrorCode::RateLimited,
        ErrorCode::QuotaExhausted,
        ErrorCode::TooManyJobs,
        ErrorCode::IdempotencyKeyReused,
        ErrorCode::IdempotencyKeyInProgress,
        ErrorCode::Conflict,
        ErrorCode::ServiceBusy,
        ErrorCode::Internal,
    ];

    /// One sample line taken apart: name, labels, value.
    #[derive(Debug)]
    struct Sample {
        name: String,
        labels: Vec<(String, String)>,
        value: f64,
    }

    fn is_name(s: &str) -> bool {
        let mut chars = s.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }

    /// A sample line `name{k="v",…} value` or `name value`; panics on anything else.
    fn parse_sample(line: &str) -> Sample {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("no value: {line}"));
        let value = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse::<f64>().unwrap_or_else(|_| panic!("bad value: {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series, Vec::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').unwrap_or_else(|| panic!("unclosed labels: {line}"));
                let labels = body
                    .split(',')
                    .map(|pair| {
                        let (k, v) = pair.split_once('=').unwrap_or_else(|| panic!("bad label: {line}"));
                        assert!(is_name(k) && !k.starts_with("__"), "bad label name: {line}");
                        let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"'));
                        let v = v.unwrap_or_else(|| panic!("unquoted label value: {line}"));
                        assert!(!v.contains(['"', '\\', '\n']), "unescaped label value: {line}");
                        (k.to_owned(), v.to_owned())
                    })
                    .collect();
                (name, labels)
            }
        };
        assert!(is_name(name), "bad metric name: {line}");
        Sample { name: name.to_owned(), labels, value }
    }

    /// Every line of `text` checked as exposition 0.0.4; the samples, with the family types.
    fn parse_exposition(text: &str) -> (Vec<Sample>, HashMap<String, String>) {
        assert!(text.ends_with('\n'), "exposition ends with a newline");
        let mut types = HashMap::new();
        let mut helps = HashMap::new();
        let mut samples = Vec::new();
        for line in text.lines() {
            if let Some(comment) = line.strip_prefix("# ") {
                let mut parts = comment.splitn(3, ' ');
                let (keyword, name, rest) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
                assert!(is_name(name), "{line}");
                match keyword {
                    "HELP" => assert!(helps.insert(name.to_owned(), rest.to_owned()).is_none(), "twice: {line}"),
                    "TYPE" => {
                        assert!(["counter", "gauge", "histogram"].contains(&rest), "{line}");
                        assert!(types.insert(name.to_owned(), rest.to_owned()).is_none(), "twice: {line}");
                    }
                    _ => panic!("unknown comment: {line}"),
                }
                continue;
            }
            assert!(!line.is_empty() && !line.starts_with('#'), "stray line: {line:?}");
            let sample = parse_sample(line);
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| sample.name.strip_suffix(suffix))
                .filter(|base| types.get(*base).is_some_and(|t| t == "histogram"))
                .unwrap_or(&sample.name);
            assert!(types.contains_key(family), "sample before its TYPE: {line}");
            assert!(sample.name.starts_with("xray_") || sample.name.starts_with("process_"), "{line}");
            samples.push(sample);
        }
        assert_eq!(types.len(), helps.len(), "a HELP for every TYPE");
        (samples, types)
    }

    fn find<'a>(samples: &'a [Sample], name: &str, labels: &[(&str, &str)]) -> Option<&'a Sample> {
        samples.iter().find(|s| {
            s.name == name
                && s.labels.len() == labels.len()
                && labels.iter().all(|(k, v)| s.labels.iter().any(|(lk, lv)| lk == k && lv == v))
        })
    }

    fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
        find(samples, name, labels).unwrap_or_else(|| panic!("no {name} {labels:?}")).value
    }

    #[test]
    fn label_enums_index_their_slots() {
        for (i, route) in RouteLabel::ALL.iter().enumerate() {
            assert_eq!(route.slot(), i);
        }
        for (i, reason) in RejectReason::ALL.iter().enumerate() {
            assert_eq!(reason.slot(), i);
        }
        assert_eq!(RouteLabel::ALL.len(), 15);
        assert_eq!(RejectReason::ALL.len(), 20);
        let routes: Vec<_> = RouteLabel::ALL.iter().map(|r| r.as_str()).collect();
        let expected = [
            "wallet",
            "wallets",
            "analysis",
            "compare",
            "comparison",
            "transaction",
            "monitors",
            "monitor_events",
            "feedback",
            "status",
            "usage",
            "policy",
            "healthz",
            "signing_keys",
            "unmatched",
        ];
        assert_eq!(routes, expected);
    }

    #[test]
    fn bucket_bounds_ascend() {
        assert!(REQUEST_DURATION_BUCKETS_US.windows(2).all(|w| w[0] < w[1]));
        assert!(JOB_DURATION_BUCKETS_MS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn counts_land_in_their_series() {
        let metrics = Metrics::default();
        metrics.observe_request(RouteLabel::Wallet, 202, 800);
        metrics.observe_request(RouteLabel::Wallet, 202, 900);
        metrics.observe_request(RouteLabel::Wallet, 429, 50);
        metrics.observe_request(RouteLabel::Status, 200, 10);
        metrics.reject(RejectReason::RateLimited);
        metrics.reject(RejectReason::RateLimitedIp);
        metrics.deduplicated(JobLabel::Comparison);
        metrics.observe_job(JobLabel::Analysis, JobOutcomeLabel::Failed, 1_500);

        assert_eq!(metrics.requests(RouteLabel::Wallet, 202), 2);
        assert_eq!(metrics.requests(RouteLabel::Wallet, 429), 1);
        assert_eq!(metrics.requests(RouteLabel::Compare, 202), 0);
        assert_eq!(metrics.rejections(RejectReason::RateLimited), 1);
        assert_eq!(metrics.rejections(RejectReason::QuotaExhausted), 0);
        assert_eq!(metrics.deduplications(JobLabel::Comparison), 1);
        assert_eq!(metrics.deduplications(JobLabel::Analysis), 0);
        assert_eq!(metrics.jobs(JobLabel::Analysis, JobOutcomeLabel::Failed), 1);
        assert_eq!(metrics.jobs(JobLabel::Analysis, JobOutcomeLabel::Ready), 0);

        let (samples, _) = parse_exposition(&metrics.render(&Gauges::default()));
        let requests = "xray_http_requests_total";
        assert_eq!(value(&samples, requests, &[("route", "wallet"), ("status", "202")]), 2.0);
        assert_eq!(value(&samples, requests, &[("route", "wallet"), ("status", "429")]), 1.0);
        assert_eq!(value(&samples, requests, &[("route", "status"), ("status", "200")]), 1.0);
        assert_eq!(samples.iter().filter(|s| s.name == requests).count(), 3, "zero series left out");
        let count = "xray_http_request_duration_seconds_count";
        assert_eq!(value(&samples, count, &[("route", "wallet"), ("status_class", "2xx")]), 2.0);
        assert_eq!(value(&samples, count, &[("route", "wallet"), ("status_class", "4xx")]), 1.0);
        let sum = "xray_http_request_duration_seconds_sum";
        assert_eq!(value(&samples, sum, &[("route", "wallet"), ("status_class", "2xx")]), 0.0017);
        assert_eq!(value(&samples, "xray_rejections_total", &[("reason", "rate_limited")]), 1.0);
        assert_eq!(value(&samples, "xray_rejections_total", &[("reason", "rate_limited_ip")]), 1.0);
        assert_eq!(value(&samples, "xray_rejections_total", &[("reason", "internal")]), 0.0);
        assert_eq!(value(&samples, "xray_deduplicated_total", &[("kind", "comparison")]), 1.0);
        let jobs = [("kind", "analysis"), ("outcome", "failed")];
        assert_eq!(value(&samples, "xray_jobs_total", &jobs), 1.0);
        assert_eq!(value(&samples, "xray_job_duration_seconds_sum", &jobs), 1.5);
        assert_eq!(value(&samples, "xray_job_duration_seconds_count", &jobs), 1.0);
    }

    #[test]
    fn unknown_status_goes_to_other() {
        let metrics = Metrics::default();
        metrics.observe_request(RouteLabel::Unmatched, 418, 5);
        metrics.observe_request(RouteLabel::Unmatched, 304, 5);
        metrics.observe_request(RouteLabel::Unmatched, 404, 5);
        assert_eq!(metrics.requests(RouteLabel::Unmatched, 418), 2, "418 and 304 share the other series");
        assert_eq!(metrics.requests(RouteLabel::Unmatched, 404), 1);
        let (samples, _) = parse_exposition(&metrics.render(&Gauges::default()));
        let requests = "xray_http_requests_total";
        assert_eq!(value(&samples, requests, &[("route", "unmatched"), ("status", "other")]), 2.0);
        assert!(find(&samples, requests, &[("route", "unmatched"), ("status", "418")]).is_none());
        let count = "xray_http_request_duration_seconds_count";
        assert_eq!(value(&samples, count, &[("route", "unmatched"), ("status_class", "4xx")]), 2.0);
        assert_eq!(value(&samples, count, &[("route", "unmatched"), ("status_class", "other")]), 1.0);
        for status in STATUSES {
            assert_ne!(status_slot(status), STATUS_OTHER);
            assert_eq!(status_label(status_slot(status)), status.to_string());
        }
    }

    #[test]
    fn every_error_code_has_a_reason() {
        let mut reached = Vec::new();
        for code in ALL_CODES {
            let reason = RejectReason::from_code(code).unwrap_or_else(|| panic!("{code:?} not counted"));
            assert_eq!(reason.as_str(), code.as_str().to_ascii_lowercase(), "{code:?}");
            reached.push(reason);
        }
        let unreached: Vec<_> = RejectReason::ALL.iter().filter(|r| !reached.contains(r)).collect();
        assert_eq!(unreached, [&RejectReason::RateLimitedIp], "every other reason is some code's");
    }

    #[test]
    fn histogram_buckets_are_cumulative() {
        let metrics = Metrics::default();
        // On a bound (inclusive), between bounds, above every bound.
        let observations = [100, 101, 250, 1_000_000, 90_000_000, 0];
        for us in observations {
            metrics.observe_request(RouteLabel::Compare, 202, us);
        }
        let (samples, _) = parse_exposition(&metrics.render(&Gauges::default()));
        let name = "xray_http_request_duration_seconds_bucket";
        let labels = |le| [("route", "compare"), ("status_class", "2xx"), ("le", le)];
        let buckets: Vec<&Sample> = samples.iter().filter(|s| s.name == name).collect();
        assert_eq!(buckets.len(), REQUEST_DURATION_BUCKETS_US.len() + 1);
        assert!(buckets.windows(2).all(|w| w[0].value <= w[1].value), "cumulative");
        let les: Vec<f64> = buckets.iter().map(|s| s.labels[2].1.parse().unwrap()).collect();
        assert!(les.windows(2).all(|w| w[0] < w[1]), "le ascending, +Inf last");
        assert_eq!(value(&samples, name, &labels("0.0001")), 2.0, "0 and 100 µs");
        assert_eq!(value(&samples, name, &labels("0.00025")), 4.0);
        assert_eq!(value(&samples, name, &labels("1")), 5.0);
        assert_eq!(value(&samples, name, &labels("60")), 5.0);
        assert_eq!(value(&samples, name, &labels("+Inf")), 6.0);
        let count = value(&samples, "xray_http_request_duration_seconds_count", &labels("+Inf")[..2]);
        assert_eq!(count, observations.len() as f64);
        let sum = value(&samples, "xray_http_request_duration_seconds_sum", &labels("+Inf")[..2]);
        assert!((sum - 91.000451).abs() < 1e-9, "{sum}");

        metrics.observe_job(JobLabel::Comparison, JobOutcomeLabel::Ready, 10);
        metrics.observe_job(JobLabel::Comparison, JobOutcomeLabel::Ready, 3_600_000);
        let (samples, _) = parse_exposition(&metrics.render(&Gauges::default()));
        let labels = |le| [("kind", "comparison"), ("outcome", "ready"), ("le", le)];
        assert_eq!(value(&samples, "xray_job_duration_seconds_bucket", &labels("0.01")), 1.0);
        assert_eq!(value(&samples, "xray_job_duration_seconds_bucket", &labels("1800")), 1.0);
        assert_eq!(value(&samples, "xray_job_duration_seconds_bucket", &labels("+Inf")), 2.0);
        assert_eq!(value(&samples, "xray_job_duration_seconds_count", &labels("")[..2]), 2.0);
        assert_eq!(value(&samples, "xray_jobs_total", &labels("")[..2]), 2.0);
    }

    #[test]
    fn empty_registry_renders_families_and_gauges() {
        let gauges = Gauges {
            queue_depth: 3,
            queue_capacity: 1024,
            live_jobs: 5,
            long_poll_waiters: 2,
            keys: 7,
            draining: true,
            store_disk: Some(StoreDisk { bytes: 4_096, pending_compaction_bytes: 0 }),
        };
        let text = Metrics::default().render(&gauges);
        let (samples, types) = parse_exposition(&text);
        let expected = [
            ("xray_http_requests_total", "counter"),
            ("xray_http_request_duration_seconds", "histogram"),
            ("xray_rejections_total", "counter"),
            ("xray_deduplicated_total", "counter"),
            ("xray_jobs_total", "counter"),
            ("xray_job_duration_seconds", "histogram"),
            ("xray_queue_depth", "gauge"),
            ("xray_queue_capacity", "gauge"),
            ("xray_live_jobs", "gauge"),
            ("xray_long_poll_waiters", "gauge"),
            ("xray_api_keys", "gauge"),
            ("xray_draining", "gauge"),
            ("xray_jobs_failed_total", "counter"),
            ("xray_ledger_calls_total", "counter"),
            ("xray_ledger_retries_total", "counter"),
            ("xray_ledger_transactions_read_total", "counter"),
            ("xray_ledger_cache_hits_total", "counter"),
            ("xray_ledger_cache_misses_total", "counter"),
            ("xray_ledger_cache_bytes", "gauge"),
            ("xray_scan_abandoned_total", "counter"),
            ("xray_scan_over_bytes_total", "counter"),
            ("xray_scan_signature_batches_total", "counter"),
            ("xray_scan_signature_batch_leaves_total", "counter"),
            ("xray_monitor_checks_total", "counter"),
            ("xray_monitor_watches", "gauge"),
            ("xray_monitor_watches_left_out", "gauge"),
            ("xray_monitor_lag_seconds", "gauge"),
            ("xray_ledger_retry_waits", "gauge"),
            ("xray_ledger_call_duration_seconds", "histogram"),
            ("xray_store_write_duration_seconds", "histogram"),
            ("xray_webhook_attempts_total", "counter"),
            ("xray_store_wal_syncs_total", "counter"),
            ("xray_store_disk_bytes", "gauge"),
            ("xray_store_pending_compaction_bytes", "gauge"),
            ("process_cpu_seconds_total", "counter"),
            ("process_resident_memory_bytes", "gauge"),
            ("process_virtual_memory_bytes", "gauge"),
            ("process_threads", "gauge"),
            ("process_start_time_seconds", "gauge"),
            ("process_open_fds", "gauge"),
            ("process_max_fds", "gauge"),
        ];
        assert_eq!(types.len(), expected.len(), "{types:?}");
        for (name, kind) in expected {
            assert_eq!(types.get(name).map(String::as_str), Some(kind), "{name}");
        }
        assert!(!samples.iter().any(|s| s.name.starts_with("xray_http_")), "no request seen, no request series");
        assert_eq!(samples.iter().filter(|s| s.name == "xray_rejections_total").count(), 20);
        assert_eq!(value(&samples, "xray_queue_depth", &[]), 3.0);
        assert_eq!(value(&samples, "xray_queue_capacity", &[]), 1024.0);
        assert_eq!(value(&samples, "xray_live_jobs", &[]), 5.0);
        assert_eq!(value(&samples, "xray_long_poll_waiters", &[]), 2.0);
        assert_eq!(value(&samples, "xray_api_keys", &[]), 7.0);
        assert_eq!(value(&samples, "xray_draining", &[]), 1.0);
        assert_eq!(value(&samples, "xray_store_disk_bytes", &[]), 4_096.0);
        assert!(value(&samples, "process_resident_memory_bytes", &[]) > 1_000_000.0, "this test's own memory");
        assert!(value(&samples, "process_threads", &[]) >= 1.0);
        assert!(value(&samples, "process_open_fds", &[]) >= 3.0);
        let started = value(&samples, "process_start_time_seconds", &[]);
        let now_s = crate::clock::now_unix_ms() as f64 / 1_000.0;
        assert!((now_s - 86_400.0..=now_s).contains(&started), "started {started}, now {now_s}");
        let text = Metrics::default().render(&Gauges::default());
        assert!(text.contains("\nxray_draining 0\n"));
    }

    #[test]
    fn concurrent_recording_sums_exactly() {
        const THREADS: u64 = 8;
        const PER_THREAD: u64 = 20_000;
        let metrics = Arc::new(Metrics::default());
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let metrics = Arc::clone(&metrics);
                std::thread::spawn(move || {
                    for i in 0..PER_THREAD {
                        metrics.observe_request(RouteLabel::Wallet, 202, i);
                        metrics.reject(RejectReason::ServiceBusy);
                        metrics.deduplicated(JobLabel::Analysis);
                        metrics.observe_job(JobLabel::Analysis, JobOutcomeLabel::Ready, t);
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let total = THREADS * PER_THREAD;
        assert_eq!(metrics.requests(RouteLabel::Wallet, 202), total);
        assert_eq!(metrics.rejections(RejectReason::ServiceBusy), total);
        assert_eq!(metrics.deduplications(JobLabel::Analysis), total);
        assert_eq!(metrics.jobs(JobLabel::Analysis, JobOutcomeLabel::Ready), total);
        let histogram = metrics.request_duration[RouteLabel::Wallet.slot()][StatusClass::Success.slot()].snapshot();
        assert_eq!(histogram.count(), total);
        assert_eq!(histogram.sum, THREADS * (PER_THREAD * (PER_THREAD - 1) / 2));
        let jobs = metrics.job_duration[JobLabel::Analysis.slot()][JobOutcomeLabel::Ready.slot()].snapshot();
        assert_eq!(jobs.sum, PER_THREAD * (0..THREADS).sum::<u64>());
    }

    #[test]
    fn decimals_are_exact() {
        let cases = [(0, 6, "0"), (100, 6, "0.0001"), (1_500, 3, "1.5"), (2_000, 3, "2"), (1_000_001, 6, "1.000001")];
        for (value, digits, text) in cases {
            assert_eq!(Decimal { value, digits }.to_string(), text);
        }
        assert_eq!(Decimal { value: u64::MAX, digits: 6 }.to_string(), "18446744073709.551615");
    }
}
