//! Behaviour: how the wallet acts over time.
//!
//! Detectors: failed-transaction share among transactions it signed, bursts of automated
//! activity, a new wallet, a long-dormant wallet that woke up. Time comes from block times
//! and `Ctx::now_unix_s`, never from a clock.

use super::{Ctx, SIGNAL_EVIDENCE_MAX};
use crate::engine::report::Severity;
use crate::facts;
use crate::ledger::model::Transaction;

/// Signed transactions needed before a failure share means anything.
pub const FAILURE_SIGNED_MIN: usize = 10;
/// Failure share above which the signal fires, in percent.
pub const FAILURE_SHARE_PCT_MIN: usize = 20;
/// A burst: at least this many signed transactions …
pub const BURST_TX_MIN: usize = 20;
/// … within this window.
pub const BURST_WINDOW_S: i64 = 60;
/// A wallet whose first transaction is younger than this is new.
pub const NEW_WALLET_AGE_S_MAX: i64 = 7 * 86_400;
/// A silence longer than this, then …
pub const DORMANCY_GAP_S_MIN: i64 = 365 * 86_400;
/// … activity within this much of the as-of time, is a reactivation.
pub const REACTIVATION_RECENT_S_MAX: i64 = 30 * 86_400;

pub fn detect(ctx: &mut Ctx<'_>) {
    let signed: Vec<&Transaction> = ctx.view.transactions.iter().filter(|t| ctx.wallet_signed(t)).collect();
    failure_rate(ctx, &signed);
    bursts(ctx, &signed);
    new_wallet(ctx);
    dormant_reactivated(ctx);
}

fn failure_rate(ctx: &mut Ctx<'_>, signed: &[&Transaction]) {
    let failed: Vec<&&Transaction> = signed.iter().filter(|t| t.failed()).collect();
    if signed.len() < FAILURE_SIGNED_MIN || failed.len() * 100 <= signed.len() * FAILURE_SHARE_PCT_MIN {
        return;
    }
    let share_pct = failed.len() * 100 / signed.len();
    let severity = if share_pct >= 50 { Severity::Medium } else { Severity::Low };
    let evidence = failed
        .iter()
        .take(SIGNAL_EVIDENCE_MAX)
        .map(|t| ctx.book.transaction(t, || format!("failed: {}", t.error.as_deref().unwrap_or(""))))
        .collect();
    ctx.emit(
        "high_failure_rate",
        severity,
        format!("{share_pct} % of signed transactions failed"),
        format!("{} of the {} transactions the wallet signed failed.", failed.len(), signed.len()),
        facts! { "signed" => signed.len(), "failed" => failed.len(), "sharePercent" => share_pct },
        evidence,
    );
}

/// The densest window: most signed transactions within `BURST_WINDOW_S`.
fn bursts(ctx: &mut Ctx<'_>, signed: &[&Transaction]) {
    let mut timed: Vec<(i64, &Transaction)> = signed.iter().filter_map(|t| Some((t.block_time?, *t))).collect();
    timed.sort_by_key(|(time, t)| (*time, t.slot));
    let (mut best, mut best_start, mut start) = (0usize, 0usize, 0usize);
    for end in 0..timed.len() {
        while timed[end].0.saturating_sub(timed[start].0) > BURST_WINDOW_S {
            start += 1;
        }
        if end + 1 - start > best {
            (best, best_start) = (end + 1 - start, start);
        }
    }
    if best < BURST_TX_MIN {
        return;
    }
    let window = &timed[best_start..best_start + best];
    let evidence = window
        .iter()
        .take(SIGNAL_EVIDENCE_MAX)
        .map(|(_, t)| ctx.book.transaction(t, || "part of an automated burst".to_owned()))
        .collect();
    ctx.emit(
        "automated_bursts",
        Severity::Low,
        format!("{best} transactions within {BURST_WINDOW_S} s"),
        format!("The wallet signed {best} transactions between unix time {} and {}.", window[0].0, window[best - 1].0),
        facts! { "transactions" => best, "windowSeconds" => BURST_WINDOW_S, "startBlockTime" => window[0].0 },
        evidence,
    );
}

fn new_wallet(ctx: &mut Ctx<'_>) {
    let (Some(now), false) = (ctx.now_unix_s, ctx.view.coverage.history_truncated) else { return };
    let Some((first_time, first)) = ctx.oldest_first().find_map(|t| Some((t.block_time?, t))) else { return };
    let age_s = now.saturating_sub(first_time);
    if age_s >= NEW_WALLET_AGE_S_MAX {
        return;
    }
    let evidence = vec![ctx.book.transaction(first, || "the wallet's first transaction".to_owned())];
    ctx.emit(
        "new_wallet",
        Severity::Low,
        "New wallet".to_owned(),
        format!("The wallet's first transaction is {} hours before the as-of time.", age_s / 3600),
        facts! { "firstBlockTime" => first_time, "ageSeconds" => age_s },
        evidence,
    );
}

fn dormant_reactivated(ctx: &mut Ctx<'_>) {
    let Some(now) = ctx.now_unix_s else { return };
    let times: Vec<(i64, &Transaction)> = ctx.oldest_first().filter_map(|t| Some((t.block_time?, t))).collect();
    let gap = times
        .windows(2)
        .map(|w| (w[1].0.saturating_sub(w[0].0), w[0], w[1]))
        .rfind(|(gap, _, _)| *gap > DORMANCY_GAP_S_MIN);
    let Some((gap_s, before, after)) = gap else { return };
    if now.saturating_sub(after.0) > REACTIVATION_RECENT_S_MAX {
        return;
    }
    let evidence = vec![
        ctx.book.transaction(before.1, || "last activity before the silence".to_owned()),
        ctx.book.transaction(after.1, || "first activity after the silence".to_owned()),
    ];
    ctx.emit(
        "dormant_reactivated",
        Severity::Medium,
        "Dormant wallet reactivated".to_owned(),
        format!("The wallet was silent for {} days, then became active again.", gap_s / 86_400),
        facts! { "silentDays" => gap_s / 86_400, "lastBefore" => before.0, "firstAfter" => after.0 },
        evidence,
    );
}
