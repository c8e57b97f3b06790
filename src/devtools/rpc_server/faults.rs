//! Fault injection of the local JSON-RPC server: which requests fail, and how.
//!
//! Owns: `FaultPlan` (the `--fault-*` flags), `FaultKind` and `FaultSchedule`, the
//! deterministic rule that picks the faulted requests. Called from the server's one thread.
//!
//! The rule. Requests are numbered n = 0, 1, 2, … in the order the server receives them. With
//! s the sum of the shares (as parts per million), request n is faulted when
//! `ceil((n+1)·s) > ceil(n·s)`: exactly `ceil(N·s)` of the first N requests fault, evenly
//! spaced, the very first one included whenever s > 0 (share 0.5 faults requests 0, 2, 4, …;
//! share 1.0 faults all). With `first_requests_max = Some(k)`, requests from n = k on are
//! never faulted. The kind of each faulted request is picked by smooth weighted round-robin
//! over the kinds' shares (each kind gains its weight, the largest wins — ties to the
//! earlier kind in `FaultKind::ALL` — and pays the total back), so the kinds interleave in
//! proportion and the sequence is the same on every run.
//!
//! Invariant: no randomness and no clock; the same plan and the same request order give the
//! same faults. Every knob is bounded (`validate`). Deliberately absent: per-method faults.

use super::hostile::Hostile;

/// Share denominator: shares are kept as integer parts per million so the rule is exact.
const PPM: u64 = 1_000_000;
/// Longest latency the server adds to a response.
pub const FAULT_LATENCY_MS_MAX: u64 = 60_000;
/// Longest `Retry-After` the server sends.
pub const FAULT_RETRY_AFTER_S_MAX: u64 = 3_600;

/// How a faulted request fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// HTTP 429 with `Retry-After`.
    TooManyRequests,
    /// HTTP 500.
    ServerError,
    /// HTTP 200 whose body is not JSON.
    Malformed,
    /// HTTP 200 whose `Content-Length` promises the whole answer, then half of it and a
    /// closed connection.
    Truncated,
    /// The connection closes with no response at all.
    Drop,
}

impl FaultKind {
    pub const ALL: [FaultKind; 5] = [
        FaultKind::TooManyRequests,
        FaultKind::ServerError,
        FaultKind::Malformed,
        FaultKind::Truncated,
        FaultKind::Drop,
    ];

    /// What a request faulted this way gets, in words (`FaultPlan`'s `Display`).
    fn describe(self) -> &'static str {
        match self {
            FaultKind::TooManyRequests => "answered 429",
            FaultKind::ServerError => "answered 500",
            FaultKind::Malformed => "answered with a body that is not JSON",
            FaultKind::Truncated => "cut off halfway",
            FaultKind::Drop => "dropped with no answer",
        }
    }
}

/// What to inject. The default injects nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultPlan {
    /// Added to every response, faulted or not.
    pub latency_ms: u64,
    /// Shares (0.0–1.0, summing to at most 1.0) of the requests that fail each way.
    pub share_429: f64,
    pub share_500: f64,
    pub share_malformed: f64,
    pub share_truncated: f64,
    pub share_drop: f64,
    /// `Retry-After` seconds sent with each 429.
    pub retry_after_s: u64,
    /// Only requests numbered below this may fault; `None`: all may.
    pub first_requests_max: Option<u64>,
    /// Answer every JSON-RPC batch with one `-32600` error object, as endpoints on plans
    /// without batching do (single requests are served as usual).
    pub refuse_batches: bool,
    /// Every answer that is not faulted is made hostile this way (`hostile`).
    pub hostile: Option<Hostile>,
}

impl FaultPlan {
    /// A plan that fails `share` of the requests with `kind` only.
    pub fn only(kind: FaultKind, share: f64) -> FaultPlan {
        let mut plan = FaultPlan::default();
        *plan.share_mut(kind) = share;
        plan
    }

    pub fn share(&self, kind: FaultKind) -> f64 {
        match kind {
            FaultKind::TooManyRequests => self.share_429,
            FaultKind::ServerError => self.share_500,
            FaultKind::Malformed => self.share_malformed,
            FaultKind::Truncated => self.share_truncated,
            FaultKind::Drop => self.share_drop,
        }
    }

    fn share_mut(&mut self, kind: FaultKind) -> &mut f64 {
        match kind {
            FaultKind::TooManyRequests => &mut self.share_429,
            FaultKind::ServerError => &mut self.share_500,
            FaultKind::Malformed => &mut self.share_malformed,
            FaultKind::Truncated => &mut self.share_truncated,
            FaultKind::Drop => &mut self.share_drop,
        }
    }

    /// Refuses shares outside 0.0–1.0 or summing past 1.0, and latencies or `Retry-After`
    /// past their limits.
    pub fn validate(&self) -> Result<(), String> {
        for kind in FaultKind::ALL {
            let share = self.share(kind);
            if !(0.0..=1.0).contains(&share) {
                return Err(format!("fault share of {kind:?} must be within 0.0..=1.0, got {share}"));
            }
        }
        let total: u64 = self.weights_ppm().iter().sum();
        if total > PPM {
            return Err(format!("fault shares sum to {}, more than 1.0", total as f64 / PPM as f64));
        }
        if self.latency_ms > FAULT_LATENCY_MS_MAX {
            return Err(format!("latency must be at most {FAULT_LATENCY_MS_MAX} ms"));
        }
        if self.retry_after_s > FAULT_RETRY_AFTER_S_MAX {
            return Err(format!("retry-after must be at most {FAULT_RETRY_AFTER_S_MAX} s"));
        }
        self.hostile.as_ref().map_or(Ok(()), Hostile::validate)
    }

    /// Shares in parts per million, in `FaultKind::ALL` order (invalid shares count as 0).
    fn weights_ppm(&self) -> [u64; 5] {
        FaultKind::ALL.map(|kind| {
            let share = self.share(kind);
            if (0.0..=1.0).contains(&share) {
                (share * PPM as f64).round() as u64
            } else {
                0
            }
        })
    }
}

/// The plan in words, as `xray ledger serve` announces it: "no faults", or each fault that is
/// on, e.g. "30 % of requests answered 500; JSON-RPC batches refused".
impl std::fmt::Display for FaultPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<String> = FaultKind::ALL
            .into_iter()
            .filter(|kind| self.share(*kind) > 0.0)
            .map(|kind| format!("{} % of requests {}", percent(self.share(kind)), kind.describe()))
            .collect();
        if self.share_429 > 0.0 {
            parts.push(format!("Retry-After: {} s on each 429", self.retry_after_s));
        }
        if let Some(first) = self.first_requests_max.filter(|_| !parts.is_empty()) {
            parts.push(format!("faults only among the first {first} requests"));
        }
        if self.latency_ms > 0 {
            parts.push(format!("{} ms added to every answer", self.latency_ms));
        }
        if self.refuse_batches {
            parts.push("JSON-RPC batches refused".into());
        }
        if let Some(hostile) = &self.hostile {
            parts.push(format!("every answer hostile: {hostile}"));
        }
        match parts.is_empty() {
            true => f.write_str("no faults"),
            false => f.write_str(&parts.join("; ")),
        }
    }
}

/// A share as a percentage without trailing zeros (0.3 → "30", 0.125 → "12.5").
fn percent(share: f64) -> String {
    let text = format!("{:.4}", share * 100.0);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The running state of the rule for one server.
#[derive(Debug, Clone)]
pub struct FaultSchedule {
    weights_ppm: [u64; 5],
    total_ppm: u64,
    first_requests_max: u64,
    next_request: u64,
    /// Smooth weighted round-robin credit of each kind.
    credit: [i64; 5],
}

impl FaultSchedule {
    pub fn new(plan: &FaultPlan) -> FaultSchedule {
        let weights_ppm = plan.weights_ppm();
        FaultSchedule {
            weights_ppm,
            total_ppm: weights_ppm.iter().sum::<u64>().min(PPM),
            first_requests_max: plan.first_requests_max.unwrap_or(u64::MAX),
            next_request: 0,
            credit: [0; 5],
        }
    }

    /// The fault of the next request (`None`: serve it normally).
    pub fn next_fault(&mut self) -> Option<FaultKind> {
        let n = self.next_request;
        self.next_request = n.saturating_add(1);
        if n >= self.first_requests_max || !is_faulted(n, self.total_ppm) {
            return None;
        }
        Some(self.pick_kind())
    }

    fn pick_kind(&mut self) -> FaultKind {
        for (credit, weight) in self.credit.iter_mut().zip(self.weights_ppm) {
            *credit += weight as i64;
        }
        let mut best = 0;
        for (i, credit) in self.credit.iter().enumerate() {
            if *credit > self.credit[best] {
                best = i;
            }
        }
        self.credit[best] -= self.total_ppm as i64;
        FaultKind::ALL[best]
    }
}

/// `ceil((n+1)·s) > ceil(n·s)` with s in parts per million (module doc).
fn is_faulted(n: u64, share_ppm: u64) -> bool {
    let faults_before = |k: u64| (u128::from(k) * u128::from(share_ppm)).div_ceil(u128::from(PPM));
    faults_before(n.saturating_add(1)) > faults_before(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn faults(plan: &FaultPlan, n: usize) -> Vec<Option<FaultKind>> {
        let mut schedule = FaultSchedule::new(plan);
        (0..n).map(|_| schedule.next_fault()).collect()
    }

    #[test]
    fn spaces_faults_evenly_starting_with_the_first() {
        let half = faults(&FaultPlan::only(FaultKind::ServerError, 0.5), 6);
        let e = Some(FaultKind::ServerError);
        assert_eq!(half, vec![e, None, e, None, e, None]);
        assert!(faults(&FaultPlan::only(FaultKind::Drop, 1.0), 50).iter().all(Option::is_some));
        assert!(faults(&FaultPlan::default(), 50).iter().all(Option::is_none));
        for share in [0.1, 0.25, 1.0 / 3.0, 0.7, 0.999] {
            let got = faults(&FaultPlan::only(FaultKind::Malformed, share), 1_000);
            let count = got.iter().filter(|f| f.is_some()).count() as f64;
            assert!((count - 1_000.0 * share).abs() <= 1.0, "{share}: {count}");
            assert!(got[0].is_some(), "{share}");
        }
    }

    #[test]
    fn faults_only_the_first_requests_when_asked() {
        let plan = FaultPlan { first_requests_max: Some(3), ..FaultPlan::only(FaultKind::TooManyRequests, 1.0) };
        let got = faults(&plan, 6);
        assert_eq!(got.iter().filter(|f| f.is_some()).count(), 3);
        assert!(got[..3].iter().all(Option::is_some));
    }

    #[test]
    fn interleaves_kinds_in_proportion() {
        let plan = FaultPlan { share_500: 0.5, share_drop: 0.25, share_malformed: 0.25, ..FaultPlan::default() };
        let got: Vec<FaultKind> = faults(&plan, 8).into_iter().map(Option::unwrap).collect();
        use FaultKind::*;
        assert_eq!(got, vec![ServerError, Malformed, Drop, ServerError, ServerError, Malformed, Drop, ServerError]);
        // Same plan, same sequence.
        assert_eq!(faults(&plan, 100), faults(&plan, 100));
    }

    #[test]
    fn describes_the_plan_in_words() {
        assert_eq!(FaultPlan::default().to_string(), "no faults");
        let plan = FaultPlan {
            share_500: 0.3,
            share_429: 0.125,
            retry_after_s: 2,
            first_requests_max: Some(40),
            latency_ms: 50,
            refuse_batches: true,
            hostile: Some(Hostile::Endless),
            ..FaultPlan::default()
        };
        assert_eq!(
            plan.to_string(),
            "12.5 % of requests answered 429; 30 % of requests answered 500; Retry-After: 2 s on each 429; \
             faults only among the first 40 requests; 50 ms added to every answer; JSON-RPC batches refused; \
             every answer hostile: endless (a body that never ends)"
        );
    }

    #[test]
    fn validates_bounds() {
        assert!(FaultPlan::only(FaultKind::Drop, 1.0).validate().is_ok());
        assert!(FaultPlan::only(FaultKind::Drop, 1.5).validate().is_err());
        assert!(FaultPlan::only(FaultKind::Drop, -0.1).validate().is_err());
        assert!(FaultPlan::only(FaultKind::Drop, f64::NAN).validate().is_err());
        assert!(FaultPlan { share_500: 0.6, share_429: 0.6, ..FaultPlan::default() }.validate().is_err());
        assert!(FaultPlan { latency_ms: FAULT_LATENCY_MS_MAX + 1, ..FaultPlan::default() }.validate().is_err());
        assert!(FaultPlan { retry_after_s: FAULT_RETRY_AFTER_S_MAX + 1, ..FaultPlan::default() }.validate().is_err());
    }
}
