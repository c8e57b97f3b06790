//! Quota: units of work per key per calendar UTC period (day or month).
//!
//! Owns: `QuotaPeriod` and its calendar math (`period_start_ms`, `period_end_ms`,
//! `period_len_s`), `UsageRecord` (one key's counters of one period, as the store keeps them)
//! and `QuotaCounter`, a key's in-memory counters of the current
//! and previous period. Called from listener threads (`reserve`, `view`) and from compute threads
//! when a job ends (`commit`, `release`); `restore` at start from the store's usage records.
//!
//! Accounting of one period: `used` (units of work that ended READY), `reserved` (units of work
//! admitted and not finished), `refunded` (reservations given back because the work FAILED),
//! `byOperation` (used units per operation). `remaining = limit − used − reserved`, never below 0.
//!
//! Invariant: `used` and `reserved` of a period live in one `AtomicU64` (used in the high 32 bits,
//! reserved in the low 32), so a reservation's limit check and every transition (reserve,
//! commit, release) is one compare-and-swap and a reader never sees a torn pair. Hence
//! `QUOTA_LIMIT_MAX` < 2^32.
//! Invariant: a reservation belongs to the period in which it was made; it is committed or
//! released there, even after the period has rolled over (the previous period is kept).
//! Invariant: at most two periods are kept per key (current and previous); a reservation older
//! than that is reported as `PeriodGone` and only the store's copy records it.
//! Invariant: the wall clock going backwards never rolls a counter back to an older period.
//! Deliberately absent: persistence (the store derives its `UsageRecord`s from the job records,
//! in the same batch as the job they belong to) and any clock read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::clock::{clamp_ms, datetime};
use crate::config::QUOTA_LIMIT_MAX;

/// Milliseconds per UTC day (no leap seconds in Unix time).
pub const MS_PER_DAY: u64 = 86_400_000;

/// The calendar period of a quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuotaPeriod {
    Day,
    Month,
}

impl QuotaPeriod {
    /// The contract's name: `day` or `month`.
    pub fn as_str(self) -> &'static str {
        match self {
            QuotaPeriod::Day => "day",
            QuotaPeriod::Month => "month",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "day" => Some(QuotaPeriod::Day),
            "month" => Some(QuotaPeriod::Month),
            _ => None,
        }
    }
}

/// Start (inclusive) of the period containing `now_ms`, in Unix milliseconds.
pub fn period_start_ms(now_ms: u64, period: QuotaPeriod) -> u64 {
    let now_ms = clamp_ms(now_ms);
    let day_start_ms = now_ms - now_ms % MS_PER_DAY;
    match period {
        QuotaPeriod::Day => day_start_ms,
        QuotaPeriod::Month => day_start_ms - (u64::from(datetime(now_ms).day()) - 1) * MS_PER_DAY,
    }
}

/// End (exclusive) of the period containing `now_ms`: the reset time, `resetsAt`.
pub fn period_end_ms(now_ms: u64, period: QuotaPeriod) -> u64 {
    let start_ms = period_start_ms(now_ms, period);
    match period {
        QuotaPeriod::Day => start_ms + MS_PER_DAY,
        QuotaPeriod::Month => {
            let start = datetime(start_ms);
            start_ms + u64::from(start.month().length(start.year())) * MS_PER_DAY
        }
    }
}

/// Length of the period containing `now_ms`, in seconds (a month is its own number of days).
pub fn period_len_s(now_ms: u64, period: QuotaPeriod) -> u64 {
    (period_end_ms(now_ms, period) - period_start_ms(now_ms, period)) / 1_000
}

/// Whole seconds from `now_ms` until `until_ms`, rounded up (0 if already past).
pub fn seconds_until(now_ms: u64, until_ms: u64) -> u64 {
    until_ms.saturating_sub(now_ms).div_ceil(1_000)
}

/// Usage of one key in one quota period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UsageRecord {
    /// Units of `READY` work (committed charges).
    pub used: i64,
    /// Units of work still queued or running.
    pub reserved: i64,
    /// Units refunded because the work ended `FAILED`.
    pub refunded: i64,
    /// Committed units that were wallet analyses (`byOperation.walletAnalysis`).
    pub wallet_analysis: i64,
    /// Committed units that were comparisons (`byOperation.comparison`).
    pub comparison: i64,
    /// Units charged for transaction scans (`byOperation.transactionScan`): synchronous, so
    /// charged at once and never reserved.
    pub transaction_scan: i64,
}

impl UsageRecord {
    /// Counter-wise sum (wrapping: a stored record is input too, and a merge must not fail).
    pub fn add(&mut self, other: &UsageRecord) {
        self.used = self.used.wrapping_add(other.used);
        self.reserved = self.reserved.wrapping_add(other.reserved);
        self.refunded = self.refunded.wrapping_add(other.refunded);
        self.wallet_analysis = self.wallet_analysis.wrapping_add(other.wallet_analysis);
        self.comparison = self.comparison.wrapping_add(other.comparison);
        self.transaction_scan = self.transaction_scan.wrapping_add(other.transaction_scan);
    }
}

/// What a unit of quota was spent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    WalletAnalysis,
    Comparison,
    TransactionScan,
}

/// Why a reservation is given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseCause {
    /// The work was never admitted (queue full, store write failed): not charged, not refunded.
    NotAdmitted,
    /// The work ended FAILED: not charged, and counted in `refunded`.
    Failed,
    /// The key was rotated while the work was in flight: the unit leaves this key's `reserved`
    /// and its outcome is counted on the successor (`QuotaCounter::inherit`), not here.
    Inherited,
}

/// One reserved unit. Not `Clone`: `commit` and `release` consume it, so a unit is settled once.
/// The store persists it with the job record (period + operation) and rebuilds it on recovery
/// with `Reservation::recovered`.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    pub period_start_ms: u64,
    pub operation: Operation,
}

impl Reservation {
    /// A reservation read back from a job record after a restart; the restored `UsageRecord`
    /// already counts it in `reserved`.
    pub fn recovered(period_start_ms: u64, operation: Operation) -> Self {
        Self { period_start_ms, operation }
    }
}

/// `429 QUOTA_EXHAUSTED`: the details of the refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("quota of {limit} units exhausted until {resets_at_ms}")]
pub struct QuotaExhausted {
    pub limit: u64,
    /// Units charged (READY work) this period.
    pub used: u64,
    /// Units of work still running this period (they count against the limit).
    pub reserved: u64,
    pub resets_at_ms: u64,
    /// The units the refused request needed at once (a sequence scan needs one a transaction).
    pub needed: u64,
}

/// A reservation that could not be settled in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SettleError {
    /// Its period is older than the previous one; only the store's record can settle it.
    #[error("the reservation's period is no longer held in memory")]
    PeriodGone,
    /// The period has no reserved unit (settled twice, or restored from an older record).
    #[error("the period has no reserved unit to settle")]
    NothingReserved,
}

/// Used units per operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByOperation {
    pub wallet_analysis: u64,
    pub comparison: u64,
    pub transaction_scan: u64,
}

/// A key's quota in the current period, for the status and usage endpoints and the headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaView {
    pub limit: u64,
    pub used: u64,
    pub reserved: u64,
    pub remaining: u64,
    pub refunded: u64,
    pub by_operation: ByOperation,
    pub period: QuotaPeriod,
    pub period_start_ms: u64,
    /// Exclusive end of the period: `resetsAt`.
    pub period_end_ms: u64,
}

const RESERVED_MASK: u64 = u32::MAX as u64;

fn pack(used: u64, reserved: u64) -> u64 {
    (used.min(RESERVED_MASK) << 32) | reserved.min(RESERVED_MASK)
}

fn unpack(units: u64) -> (u64, u64) {
    (units >> 32, units & RESERVED_MASK)
}

/// The counters of one period.
#[derive(Debug)]
struct PeriodCounter {
    start_ms: u64,
    end_ms: u64,
    units: AtomicU64,
    refunded: AtomicU64,
    wallet_analysis: AtomicU64,
    comparison: AtomicU64,
    transaction_scan: AtomicU64,
}

impl PeriodCounter {
    fn empty(now_ms: u64, period: QuotaPeriod) -> Self {
        Self::from_usage(period_start_ms(now_ms, period), &UsageRecord::default(), period)
    }

    fn from_usage(start_ms: u64, usage: &UsageRecord, period: QuotaPeriod) -> Self {
        Self {
            start_ms: period_start_ms(start_ms, period),
            end_ms: period_end_ms(start_ms, period),
            units: AtomicU64::new(pack(count(usage.used), count(usage.reserved))),
            refunded: AtomicU64::new(count(usage.refunded)),
            wallet_analysis: AtomicU64::new(count(usage.wallet_analysis)),
            comparison: AtomicU64::new(count(usage.comparison)),
            transaction_scan: AtomicU64::new(count(usage.transaction_scan)),
        }
    }

    fn by_operation(&self) -> ByOperation {
        ByOperation {
            wallet_analysis: self.wallet_analysis.load(Ordering::Relaxed),
            comparison: self.comparison.load(Ordering::Relaxed),
            transaction_scan: self.transaction_scan.load(Ordering::Relaxed),
        }
    }

    fn operation_counter(&self, operation: Operation) -> &AtomicU64 {
        match operation {
            Operation::WalletAnalysis => &self.wallet_analysis,
            Operation::Comparison => &self.comparison,
            Operation::TransactionScan => &self.transaction_scan,
        }
    }

    /// Applies `step` to (used, reserved) in one compare-and-swap loop; `None` from `step`
    /// leaves the counter as it is and returns the pair it saw.
    fn update(&self, step: impl Fn(u64, u64) -> Option<(u64, u64)>) -> Result<(u64, u64), (u64, u64)> {
        let mut current = self.units.load(Ordering::Acquire);
        loop {
            let (used, reserved) = unpack(current);
            let Some((next_used, next_reserved)) = step(used, reserved) else {
                return Err((used, reserved));
            };
            let next = pack(next_used, next_reserved);
            match self.units.compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok((next_used, next_reserved)),
                Err(seen) => current = seen,
            }
        }
    }

    /// Gives back one reserved unit, turning it into a used one if `charge`.
    fn settle(&self, charge: bool) -> Result<(), SettleError> {
        let step = |used: u64, reserved: u64| (reserved > 0).then(|| (used + u64::from(charge), reserved - 1));
        self.update(step).map(|_| ()).map_err(|_| SettleError::NothingReserved)
    }

    /// The period's numbers, in the store's record form.
    fn counts(&self) -> UsageRecord {
        let (used, reserved) = unpack(self.units.load(Ordering::Acquire));
        let by_operation = self.by_operation();
        UsageRecord {
            used: signed(used),
            reserved: signed(reserved),
            refunded: signed(self.refunded.load(Ordering::Relaxed)),
            wallet_analysis: signed(by_operation.wallet_analysis),
            comparison: signed(by_operation.comparison),
            transaction_scan: signed(by_operation.transaction_scan),
        }
    }
}

/// A stored counter as an in-memory one (a negative count, which only a damaged record could
/// hold, counts as zero).
fn count(stored: i64) -> u64 {
    u64::try_from(stored).unwrap_or(0)
}

/// An in-memory count as a stored one (counts are below 2^32, see `QUOTA_LIMIT_MAX`).
fn signed(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The periods held in memory for one key.
#[derive(Debug)]
struct Periods {
    current: Arc<PeriodCounter>,
    previous: Option<Arc<PeriodCounter>>,
}

/// One key's quota counters: lock-free, shared by every thread that serves the key.
#[derive(Debug)]
pub struct QuotaCounter {
    limit: u64,
    period: QuotaPeriod,
    periods: ArcSwap<Periods>,
}

impl QuotaCounter {
    /// A counter with nothing used in the period containing `now_ms`. `limit` is capped at
    /// `QUOTA_LIMIT_MAX` (records are validated before they get here).
    pub fn new(limit: u64, period: QuotaPeriod, now_ms: u64) -> Self {
        let periods = Periods { current: Arc::new(PeriodCounter::empty(now_ms, period)), previous: None };
        Self { limit: limit.min(QUOTA_LIMIT_MAX), period, periods: ArcSwap::from_pointee(periods) }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn period(&self) -> QuotaPeriod {
        self.period
    }

    /// The periods, rolled forward to the period containing `now_ms` if it has begun. The new
    /// period starts at zero; the old current one becomes the previous one.
    ///
    /// Returns a guard, not an `Arc`: a guard does not touch the shared reference count, which
    /// would be a contended cache line for a hot key.
    fn periods_at(&self, now_ms: u64) -> Guard<Arc<Periods>> {
        let periods = self.periods.load();
        if now_ms < periods.current.end_ms {
            // Within the current period, or the wall clock went back: never roll backwards.
            return periods;
        }
        let fresh_start_ms = period_start_ms(now_ms, self.period);
        self.periods.rcu(|p| {
            if p.current.start_ms >= fresh_start_ms {
                return Arc::clone(p); // another thread rolled over first
            }
            Arc::new(Periods {
                current: Arc::new(PeriodCounter::empty(now_ms, self.period)),
                previous: Some(Arc::clone(&p.current)),
            })
        });
        self.periods.load()
    }

    fn counter_of(&self, period_start_ms: u64) -> Option<Arc<PeriodCounter>> {
        let periods = self.periods.load();
        if periods.current.start_ms == period_start_ms {
            return Some(Arc::clone(&periods.current));
        }
        periods.previous.as_ref().filter(|p| p.start_ms == period_start_ms).cloned()
    }

    /// Reserves one unit of the current period, or refuses when `used + reserved ≥ limit`.
    pub fn reserve(&self, operation: Operation, now_ms: u64) -> Result<Reservation, QuotaExhausted> {
        let period_start_ms = self.reserve_units(1, now_ms)?;
        Ok(Reservation { period_start_ms, operation })
    }

    /// Reserves `units` units of the current period in one step — all, or none when
    /// `used + reserved + units > limit` (the refusal then reports the counts as they were, none
    /// of them this request's). Answers one `Reservation` a unit, each settled on its own.
    pub fn reserve_n(&self, operation: Operation, units: u64, now_ms: u64) -> Result<Vec<Reservation>, QuotaExhausted> {
        let period_start_ms = self.reserve_units(units, now_ms)?;
        Ok((0..units).map(|_| Reservation { period_start_ms, operation }).collect())
    }

    /// `units` more reserved in the current period, whose start it answers, if they fit.
    fn reserve_units(&self, units: u64, now_ms: u64) -> Result<u64, QuotaExhausted> {
        debug_assert!(units >= 1, "a reservation of no unit");
        let periods = self.periods_at(now_ms);
        let current = &periods.current;
        let limit = self.limit;
        let fits = |used: u64, reserved: u64| used + reserved + units <= limit;
        match current.update(|used, reserved| fits(used, reserved).then_some((used, reserved + units))) {
            Ok(_) => Ok(current.start_ms),
            Err((used, reserved)) => {
                Err(QuotaExhausted { limit, used, reserved, resets_at_ms: current.end_ms, needed: units })
            }
        }
    }

    /// The work ended READY: the reserved unit becomes a used one in the reservation's period.
    pub fn commit(&self, reservation: Reservation) -> Result<(), SettleError> {
        let counter = self.counter_of(reservation.period_start_ms).ok_or(SettleError::PeriodGone)?;
        counter.settle(true)?;
        counter.operation_counter(reservation.operation).fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The work was not admitted or ended FAILED: the unit is given back (and, for FAILED,
    /// counted as refunded).
    pub fn release(&self, reservation: Reservation, cause: ReleaseCause) -> Result<(), SettleError> {
        let counter = self.counter_of(reservation.period_start_ms).ok_or(SettleError::PeriodGone)?;
        counter.settle(false)?;
        if cause == ReleaseCause::Failed {
            counter.refunded.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// A unit reserved on the key this one replaced ended (that key released it with
    /// `ReleaseCause::Inherited`): count its outcome here — used and its operation when
    /// `ready`, refunded otherwise — so rotating a key with work in flight leaves the
    /// successor's usage exact. No reservation of this key's is touched.
    pub fn inherit(&self, reservation: Reservation, ready: bool) -> Result<(), SettleError> {
        let counter = self.counter_of(reservation.period_start_ms).ok_or(SettleError::PeriodGone)?;
        if !ready {
            counter.refunded.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        // `pack` clamps each half, so this cannot spill into `reserved`.
        let _ = counter.update(|used, reserved| Some((used + 1, reserved)));
        counter.operation_counter(reservation.operation).fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The current period's numbers.
    pub fn view(&self, now_ms: u64) -> QuotaView {
        let periods = self.periods_at(now_ms);
        let current = &periods.current;
        let (used, reserved) = unpack(current.units.load(Ordering::Acquire));
        QuotaView {
            limit: self.limit,
            used,
            reserved,
            remaining: self.limit.saturating_sub(used + reserved),
            refunded: current.refunded.load(Ordering::Relaxed),
            by_operation: current.by_operation(),
            period: self.period,
            period_start_ms: current.start_ms,
            period_end_ms: current.end_ms,
        }
    }

    /// The current period at `now_ms`: its start and its counts.
    pub fn snapshot(&self, now_ms: u64) -> (u64, UsageRecord) {
        let periods = self.periods_at(now_ms);
        (periods.current.start_ms, periods.current.counts())
    }

    /// The counts of the period starting at `period_start_ms` (e.g. the one a reservation
    /// belongs to), if it is still held.
    pub fn snapshot_period(&self, period_start_ms: u64) -> Option<UsageRecord> {
        self.counter_of(period_start_ms).map(|c| c.counts())
    }

    /// Loads the stored usage of the period starting at `period_start_ms` as the current or
    /// previous period. Returns `false` (and changes nothing) for any other period: an older
    /// one no longer limits anything.
    pub fn restore(&self, period_start_ms_stored: u64, usage: &UsageRecord, now_ms: u64) -> bool {
        let periods = self.periods_at(now_ms);
        let start_ms = period_start_ms(period_start_ms_stored, self.period);
        let restored = Arc::new(PeriodCounter::from_usage(start_ms, usage, self.period));
        let is_current = start_ms == periods.current.start_ms;
        let is_previous = start_ms == period_start_ms(periods.current.start_ms.saturating_sub(1), self.period);
        if !is_current && !is_previous {
            return false;
        }
        self.periods.rcu(|p| {
            if is_current {
                Periods { current: Arc::clone(&restored), previous: p.previous.clone() }
            } else {
                Periods { current: Arc::clone(&p.current), previous: Some(Arc::clone(&restored)) }
            }
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-22T10:15:30.123Z
    const NOV_22: u64 = 1_795_342_530_123;

    /// Parses `YYYY-MM-DDTHH:MM:SS[.mmm]Z` (tests only; the service only formats).
    fn ms(text: &str) -> u64 {
        let num = |range: std::ops::Range<usize>| text[range].parse::<u64>().expect("test time digits");
        let month = time::Month::try_from(num(5..7) as u8).expect("test month");
        let date = time::Date::from_calendar_date(num(0..4) as i32, month, num(8..10) as u8).expect("test date");
        let millis = if text.len() > 20 { num(20..23) } else { 0 };
        let t = date.with_hms(num(11..13) as u8, num(14..16) as u8, num(17..19) as u8).expect("test time");
        u64::try_from(t.assume_utc().unix_timestamp()).expect("after 1970") * 1_000 + millis
    }

    #[test]
    fn calendar_periods() {
        use QuotaPeriod::{Day, Month};
        // (now, period, start, end, length in days)
        let cases = [
            ("2026-11-22T10:15:30.123Z", Day, "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", 1),
            ("2026-11-22T10:15:30.123Z", Month, "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", 30),
            ("2026-12-31T23:59:59.999Z", Month, "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z", 31),
            ("2026-12-31T23:59:59.999Z", Day, "2026-12-31T00:00:00Z", "2027-01-01T00:00:00Z", 1),
            ("2027-01-01T00:00:00Z", Month, "2027-01-01T00:00:00Z", "2027-02-01T00:00:00Z", 31),
            ("2028-02-15T12:00:00Z", Month, "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z", 29),
            ("2027-02-28T23:59:59Z", Month, "2027-02-01T00:00:00Z", "2027-03-01T00:00:00Z", 28),
            ("2100-02-10T00:00:00Z", Month, "2100-02-01T00:00:00Z", "2100-03-01T00:00:00Z", 28),
            ("2026-04-30T23:00:00Z", Month, "2026-04-01T00:00:00Z", "2026-05-01T00:00:00Z", 30),
        ];
        for (now, period, start, end, days) in cases {
            let now = ms(now);
            assert_eq!(period_start_ms(now, period), ms(start), "start of {now} {period:?}");
            assert_eq!(period_end_ms(now, period), ms(end), "end of {now} {period:?}");
            assert_eq!(period_len_s(now, period), days * 86_400, "length of {now} {period:?}");
        }
    }

    #[test]
    fn seconds_until_rounds_up() {
        let cases = [(0, 1_000, 1), (0, 1_001, 2), (0, 1, 1), (5, 5, 0), (10, 5, 0), (0, 86_400_000, 86_400)];
        for (now, until, want) in cases {
            assert_eq!(seconds_until(now, until), want, "{now}..{until}");
        }
    }

    #[test]
    fn period_names() {
        for period in [QuotaPeriod::Day, QuotaPeriod::Month] {
            assert_eq!(QuotaPeriod::parse(period.as_str()), Some(period));
            let json = serde_json::to_string(&period).expect("serializes");
            assert_eq!(json, format!("\"{}\"", period.as_str()));
        }
        assert_eq!(QuotaPeriod::parse("week"), None);
    }

    fn counter(limit: u64) -> QuotaCounter {
        QuotaCounter::new(limit, QuotaPeriod::Month, NOV_22)
    }

    #[test]
    fn reserve_commit_release_accounting() {
        let q = counter(3);
        let a = q.reserve(Operation::WalletAnalysis, NOV_22).expect("unit 1");
        let b = q.reserve(Operation::Comparison, NOV_22).expect("unit 2");
        let c = q.reserve(Operation::WalletAnalysis, NOV_22).expect("unit 3");
        let refused = q.reserve(Operation::WalletAnalysis, NOV_22).expect_err("over the limit");
        assert_eq!(
            refused,
            QuotaExhausted { limit: 3, used: 0, reserved: 3, resets_at_ms: ms("2026-12-01T00:00:00Z"), needed: 1 }
        );
        q.commit(a).expect("commit a");
        q.commit(b).expect("commit b");
        q.release(c, ReleaseCause::Failed).expect("release c");
        let v = q.view(NOV_22);
        assert_eq!((v.used, v.reserved, v.remaining, v.refunded), (2, 0, 1, 1));
        assert_eq!(v.by_operation, ByOperation { wallet_analysis: 1, comparison: 1, transaction_scan: 0 });
        let d = q.reserve(Operation::WalletAnalysis, NOV_22).expect("the refunded unit is free again");
        q.release(d, ReleaseCause::NotAdmitted).expect("release d");
        let v = q.view(NOV_22);
        assert_eq!((v.used, v.reserved, v.remaining, v.refunded), (2, 0, 1, 1), "not admitted is not refunded");
    }

    #[test]
    fn units_reserved_together_are_all_or_none() {
        let q = counter(5);
        let one = q.reserve(Operation::TransactionScan, NOV_22).expect("unit 1");
        let three = q.reserve_n(Operation::TransactionScan, 3, NOV_22).expect("units 2 to 4");
        assert_eq!(three.len(), 3);
        // Two more do not fit in the one left: refused whole, the counts as they were.
        let refused = q.reserve_n(Operation::TransactionScan, 2, NOV_22).expect_err("one left");
        assert_eq!((refused.used, refused.reserved, refused.needed), (0, 4, 2));
        assert_eq!(q.view(NOV_22).reserved, 4, "nothing of the refused request stays reserved");
        q.commit(one).expect("commit");
        for reservation in three {
            q.release(reservation, ReleaseCause::NotAdmitted).expect("each settles on its own");
        }
        let v = q.view(NOV_22);
        assert_eq!((v.used, v.reserved, v.remaining), (1, 0, 4));
        assert_eq!(q.reserve_n(Operation::TransactionScan, 4, NOV_22).map(|r| r.len()), Ok(4), "exactly the limit");
    }

    #[test]
    fn settling_twice_is_refused() {
        let q = counter(5);
        let a = q.reserve(Operation::WalletAnalysis, NOV_22).expect("unit");
        q.commit(a).expect("commit");
        let forged = Reservation::recovered(period_start_ms(NOV_22, QuotaPeriod::Month), Operation::WalletAnalysis);
        assert_eq!(q.commit(forged), Err(SettleError::NothingReserved));
        assert_eq!(q.view(NOV_22).used, 1);
    }

    #[test]
    fn zero_limit_refuses_everything() {
        let q = counter(0);
        assert!(q.reserve(Operation::WalletAnalysis, NOV_22).is_err());
        assert_eq!(q.view(NOV_22).remaining, 0);
    }

    #[test]
    fn remaining_never_below_zero_after_restore_over_limit() {
        let q = counter(10);
        let record = UsageRecord { used: 12, reserved: 1, ..UsageRecord::default() };
        assert!(q.restore(period_start_ms(NOV_22, QuotaPeriod::Month), &record, NOV_22));
        let v = q.view(NOV_22);
        assert_eq!((v.used, v.reserved, v.remaining), (12, 1, 0));
        assert!(q.reserve(Operation::Comparison, NOV_22).is_err());
    }

    #[test]
    fn rollover_starts_at_zero_and_settles_in_the_old_period() {
        let q = counter(2);
        let late = ms("2026-11-30T23:59:59.999Z");
        let a = q.reserve(Operation::WalletAnalysis, late).expect("november unit");
        let b = q.reserve(Operation::WalletAnalysis, late).expect("november unit");
        assert!(q.reserve(Operation::WalletAnalysis, late).is_err());
        let december = ms("2026-12-01T00:00:00Z");
        let v = q.view(december);
        assert_eq!((v.used, v.reserved, v.remaining, v.period_start_ms), (0, 0, 2, december));
        assert_eq!(v.period_end_ms, ms("2027-01-01T00:00:00Z"));
        // November's work finishes in December: it is charged to November.
        q.commit(a).expect("commit into previous period");
        q.release(b, ReleaseCause::Failed).expect("refund into previous period");
        let november = q.snapshot_period(period_start_ms(late, QuotaPeriod::Month)).expect("previous kept");
        assert_eq!((november.used, november.reserved, november.refunded), (1, 0, 1));
        assert_eq!(q.view(december).used, 0);
        // Two roll-overs later November is gone.
        let c = q.reserve(Operation::Comparison, december).expect("december unit");
        let february = ms("2027-02-01T00:00:00Z");
        q.view(february);
        assert_eq!(q.commit(c), Ok(()), "january's previous is december");
        let d = q.reserve(Operation::Comparison, february).expect("february unit");
        q.view(ms("2027-03-01T00:00:00Z"));
        q.view(ms("2027-04-01T00:00:00Z"));
        assert_eq!(q.commit(d), Err(SettleError::PeriodGone));
    }

    #[test]
    fn clock_going_back_does_not_roll_back() {
        let q = counter(5);
        let december = ms("2026-12-02T00:00:00Z");
        q.reserve(Operation::WalletAnalysis, december).expect("unit");
        let v = q.view(NOV_22);
        assert_eq!((v.period_start_ms, v.reserved), (ms("2026-12-01T00:00:00Z"), 1));
    }

    #[test]
    fn snapshot_restore_round_trip() {
        let q = counter(100);
        let a = q.reserve(Operation::WalletAnalysis, NOV_22).expect("unit");
        let _b = q.reserve(Operation::Comparison, NOV_22).expect("unit");
        q.commit(a).expect("commit");
        let (start_ms, record) = q.snapshot(NOV_22);
        assert_eq!(start_ms, ms("2026-11-01T00:00:00Z"));
        assert_eq!(record, UsageRecord { used: 1, reserved: 1, wallet_analysis: 1, ..UsageRecord::default() });
        let fresh = counter(100);
        assert!(fresh.restore(start_ms, &record, NOV_22));
        assert_eq!(fresh.view(NOV_22), q.view(NOV_22));
        // The recovered reservation settles against the restored count.
        let recovered = Reservation::recovered(start_ms, Operation::Comparison);
        fresh.commit(recovered).expect("recovered commit");
        assert_eq!(fresh.view(NOV_22).by_operation.comparison, 1);
    }

    #[test]
    fn restore_places_previous_and_ignores_older() {
        let q = counter(100);
        let used = |n| UsageRecord { used: n, ..UsageRecord::default() };
        assert!(q.restore(ms("2026-10-01T00:00:00Z"), &used(7), NOV_22));
        assert!(!q.restore(ms("2026-09-01T00:00:00Z"), &used(9), NOV_22));
        assert_eq!(q.snapshot_period(ms("2026-10-01T00:00:00Z")).map(|r| r.used), Some(7));
        assert_eq!(q.snapshot_period(ms("2026-09-01T00:00:00Z")), None);
        assert_eq!(q.view(NOV_22).used, 0);
    }

    #[test]
    fn concurrent_reservations_never_exceed_the_limit() {
        let q = counter(1_000);
        let granted: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..600).filter(|_| q.reserve(Operation::WalletAnalysis, NOV_22).is_ok()).count()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or(usize::MAX)).sum()
        });
        assert_eq!(granted, 1_000);
        assert_eq!(q.view(NOV_22).reserved, 1_000);
    }
}
