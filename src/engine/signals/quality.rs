//! Data quality: what the ledger read did not cover. These signals are `info`; partial
//! coverage lowers confidence (scoring) rather than inventing findings.

use super::Ctx;
use crate::engine::report::Severity;
use crate::facts;

pub fn detect(ctx: &mut Ctx<'_>) {
    let coverage = &ctx.view.coverage;
    let (wallet, slot) = (ctx.view.address, coverage.as_of_slot);
    if coverage.history_truncated {
        let read = coverage.transactions_read;
        let evidence =
            vec![ctx.book.account(&wallet, slot, || format!("history read to a depth of {read} transactions"))];
        ctx.emit(
            "partial_history",
            Severity::Info,
            "History partially read".to_owned(),
            format!("Only the newest {read} transactions were analyzed; older ones exist."),
            facts! { "transactionsAnalyzed" => read },
            evidence,
        );
    }
    let nothing_listed = coverage.transactions_read == 0 && coverage.transactions_missing == 0;
    if ctx.view.account.is_none() && nothing_listed && ctx.view.token_accounts.is_empty() {
        let evidence = vec![ctx.book.account(&wallet, slot, || "no account and no transactions".to_owned())];
        ctx.emit(
            "no_activity",
            Severity::Info,
            "No on-chain activity".to_owned(),
            format!("At slot {slot} the address has no account, no token accounts and no transactions: there is nothing to judge it by."),
            facts! { "asOfSlot" => slot },
            evidence,
        );
    }
    let missing = ctx.view.coverage.transactions_missing;
    if missing > 0 {
        let evidence =
            vec![ctx.book.account(&wallet, slot, || format!("{missing} listed transactions were not available"))];
        ctx.emit(
            "missing_transactions",
            Severity::Info,
            "Some transactions unavailable".to_owned(),
            format!("{missing} signatures in the wallet's history had no transaction at the ledger source."),
            facts! { "missing" => missing },
            evidence,
        );
    }
}
