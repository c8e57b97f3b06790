//! Dust: new activity of a watched wallet that does not merit a re-analysis — what a stranger
//! can send to any address (1-lamport transfers, address-poisoning look-alikes, failed
//! transactions naming it) and would otherwise cost the wallet's owner one quota unit per check.
//!
//! Owns: `DustRule` (the thresholds: the monitor's `dustLamports`, by default
//! `MONITOR_DUST_LAMPORTS_DEFAULT`, and `MONITOR_DUST_TOKEN_FRACTION_DEFAULT`), `Activity` and
//! `classify` (dust, inbound, or outbound — the decision over the new transactions, pure) and
//! `activity_class` (reads them through the check's source — the ledger cache first — and
//! classifies). Runs on the `xray-monitors` thread, inside a check that saw new activity,
//! before the monitor's daily budget is asked: dust is free, inbound activity is counted, and
//! outbound activity is never held by the budget (so a stranger's inflows, which can spend the
//! budget, can never hide a drain).
//!
//! New activity is dust when every new transaction is, together: the wallet signed none of
//! them; each either failed (it moved nothing but its own fee payer's fee) or only moved value
//! in — its instructions (outer and inner) are transfers, account creations of other accounts,
//! token-account initializations, mints to, memos, instructions the node parses but the model
//! does not (`Other`) or of programs it does not parse (`Raw`) that do not name the wallet; no
//! SOL balance of the wallet and no token balance it owns went down; and
//! what arrived in all of them together is below the rule: less than `lamports` of SOL and, for
//! each mint, less than 1/`token_fraction` of one whole token (from the balance's decimals; a
//! token of 0 decimals — an NFT — is never dust). A monitor's `dustLamports` of 0 turns it off:
//! nothing is below 0 lamports, so no activity is dust.
//! Invariant: never skips a re-analysis on missing data — a transaction the source does not
//! have or that does not parse, a token balance without its owner, a read that fails or times
//! out, or a signatures page that may not hold all of the new activity: not dust.
//! Invariant: bounded — at most `MONITOR_DUST_SIGNATURES_MAX` transactions (the check's one
//! signatures page), one `get_transactions` through the ledger cache (chunked there), within
//! `MONITOR_CHECK_TIMEOUT_MS`; their parse is the ledger's own (`Transaction::from_wire`).
//! Deliberately absent: a per-monitor token fraction (one named default); an event for dust — an
//! address-poisoning attempt shows at the wallet's next re-analysis, with the dust in its
//! history (and a labels reload that lists the sender re-screens it: `screen`).

use std::collections::HashMap;
use std::time::Duration;

use crate::config::{MONITOR_CHECK_TIMEOUT_MS, MONITOR_DUST_LAMPORTS_DEFAULT, MONITOR_DUST_TOKEN_FRACTION_DEFAULT};
use crate::ledger::cache::Cached;
use crate::ledger::instruction::{Instruction, InstructionKind};
use crate::ledger::model::Transaction;
use crate::ledger::read::LedgerSource;
use crate::ledger::source::Source;
use crate::ledger::wire::SignatureInfo;
use crate::pubkey::{Pubkey, Signature};

/// What arrives below which new activity is dust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DustRule {
    /// SOL received in all the new transactions, strictly less than this: dust (lamports).
    pub lamports: u64,
    /// Tokens of one mint received, strictly less than one whole token divided by this: dust.
    pub token_fraction: u64,
}

/// The rule of a monitor that sets no `dustLamports`.
pub const DUST_RULE_DEFAULT: DustRule =
    DustRule { lamports: MONITOR_DUST_LAMPORTS_DEFAULT, token_fraction: MONITOR_DUST_TOKEN_FRACTION_DEFAULT };

impl DustRule {
    /// The rule of a monitor whose threshold is `lamports` (0: nothing is dust).
    pub fn with_lamports(lamports: u64) -> DustRule {
        DustRule { lamports, ..DUST_RULE_DEFAULT }
    }
}

/// What a wallet's new activity is, for the monitor's daily budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// All dust: the cursor moves past it, nothing is admitted or charged.
    Dust,
    /// Value came in (above dust), or what happened cannot be told: re-analysed within the
    /// monitor's daily budget.
    Inbound,
    /// Something of the wallet's may have left or changed hands — it signed, a balance of its
    /// went down, an authority, owner, delegate, close, nonce or stake instruction, or an
    /// instruction of a program the model does not read that names the wallet: always
    /// re-analysed, never held by the budget (a drain must not wait for tomorrow).
    Outbound,
}

/// The class of `activity` — the new transactions of `wallet`, `None` where one could not be
/// read; `complete`: they are all of it — under `rule` (see the module header). Outbound wins
/// over everything: one outbound transaction makes the whole activity outbound, whatever else
/// could not be read.
pub fn classify(activity: &[Option<Transaction>], complete: bool, wallet: &Pubkey, rule: &DustRule) -> Activity {
    let mut known = complete && !activity.is_empty();
    let mut sol_in: u128 = 0;
    // Mint → (base units received, decimals).
    let mut tokens_in: HashMap<Pubkey, (u128, u8)> = HashMap::new();
    for tx in activity {
        let Some(tx) = tx else {
            known = false;
            continue;
        };
        if tx.is_signer(wallet) {
            return Activity::Outbound;
        }
        if tx.failed() {
            continue;
        }
        if !tx.instructions.iter().all(|ix| moves_value_in(ix, wallet)) {
            return Activity::Outbound;
        }
        // A landed transaction always changes its fee payer's balance: none recorded means no
        // metadata, and what it did to the wallet cannot be told.
        if tx.sol_changes.is_empty() {
            known = false;
        }
        for change in tx.sol_changes.iter().filter(|c| c.account == *wallet) {
            match u128::try_from(change.delta()) {
                Ok(received) => sol_in = sol_in.saturating_add(received),
                Err(_) => return Activity::Outbound,
            }
        }
        for change in &tx.token_changes {
            match change.owner {
                // Whose balance moved cannot be told.
                None if change.delta() != 0 => known = false,
                Some(owner) if owner == *wallet => {
                    let Ok(received) = u128::try_from(change.delta()) else { return Activity::Outbound };
                    let entry = tokens_in.entry(change.mint).or_insert((0, change.decimals));
                    entry.0 = entry.0.saturating_add(received);
                }
                _ => {}
            }
        }
    }
    let below = sol_in < u128::from(rule.lamports)
        && tokens_in.values().all(|(received, decimals)| below_token_fraction(*received, *decimals, rule));
    match known && below {
        true => Activity::Dust,
        false => Activity::Inbound,
    }
}

/// Whether `activity` is all dust (`classify` of complete activity).
#[cfg(test)]
pub fn is_dust(activity: &[Option<Transaction>], wallet: &Pubkey, rule: &DustRule) -> bool {
    classify(activity, true, wallet, rule) == Activity::Dust
}

/// `received` base units < 10^`decimals` / `token_fraction`, without dividing.
fn below_token_fraction(received: u128, decimals: u8, rule: &DustRule) -> bool {
    match 10u128.checked_pow(u32::from(decimals)) {
        Some(whole) => received.saturating_mul(u128::from(rule.token_fraction)) < whole,
        // More than 38 decimals: one base unit is far below any fraction of a whole token.
        None => true,
    }
}

/// Whether an instruction can only move value into `wallet` (or does not concern it).
fn moves_value_in(ix: &Instruction, wallet: &Pubkey) -> bool {
    match &ix.kind {
        InstructionKind::SystemTransfer { .. }
        | InstructionKind::TokenTransfer { .. }
        | InstructionKind::TokenInitializeAccount { .. }
        | InstructionKind::AtaCreate { .. }
        | InstructionKind::TokenMintTo { .. }
        | InstructionKind::Memo { .. } => true,
        // What a program the model does not read did is seen only in the balances — and not
        // at all for what balances do not show (a compressed NFT's leaf, a Core asset): one
        // that names the wallet is not taken for dust.
        InstructionKind::Other | InstructionKind::Raw { .. } => !ix.accounts.contains(wallet),
        InstructionKind::SystemCreateAccount { account, .. } => account != wallet,
        // Authorities, owners, delegates, nonces, stake, closes, burns, freezes: never dust.
        _ => false,
    }
}

/// The class of the new activity `page` lists (newest first; `complete`: the page holds all
/// of it), its transactions read through `source`. `Inbound` whenever they cannot be read.
pub async fn activity_class(
    source: &Cached<Source>,
    wallet: &Pubkey,
    page: &[SignatureInfo],
    complete: bool,
    rule: &DustRule,
) -> Activity {
    if page.is_empty() {
        return Activity::Inbound;
    }
    let Some(signatures) = page.iter().map(|info| Signature::parse(&info.signature).ok()).collect::<Option<Vec<_>>>()
    else {
        return Activity::Inbound;
    };
    let read = source.get_transactions(&signatures);
    let results = match tokio::time::timeout(Duration::from_millis(MONITOR_CHECK_TIMEOUT_MS), read).await {
        Ok(Ok(results)) if results.len() == signatures.len() => results,
        Ok(Ok(_)) | Err(_) => return Activity::Inbound,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "reading a watched wallet's new transactions failed: not dust");
            return Activity::Inbound;
        }
    };
    let activity: Vec<Option<Transaction>> =
        results.iter().map(|r| r.as_ref().and_then(|r| Transaction::from_wire(&r.tx, r.slot, r.block_time))).collect();
    classify(&activity, complete, wallet, rule)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::instruction::{InstructionIndex, Program};
    use crate::ledger::model::{SolChange, TokenChange, TransactionVersion};

    const WALLET: Pubkey = Pubkey([1; 32]);
    const STRANGER: Pubkey = Pubkey([2; 32]);
    const MINT: Pubkey = Pubkey([3; 32]);
    const SOL: u64 = 1_000_000_000;

    fn instruction(kind: InstructionKind) -> Instruction {
        Instruction {
            index: InstructionIndex { outer: 0, inner: None },
            program_id: Pubkey::default(),
            program: Program::System,
            name: "transfer".into(),
            kind,
            accounts: vec![],
        }
    }

    /// `from` sends `lamports` to the wallet, signed by `from`.
    fn sol_in(from: Pubkey, lamports: u64) -> Transaction {
        Transaction {
            signature: Signature::default(),
            slot: 1,
            block_time: None,
            error: None,
            fee: 5_000,
            fee_payer: from,
            signers: vec![from],
            account_keys: vec![from, WALLET],
            version: TransactionVersion::Legacy,
            instructions: vec![instruction(InstructionKind::SystemTransfer { from, to: WALLET, lamports })],
            sol_changes: vec![
                SolChange { account: from, pre: 10 * SOL, post: 10 * SOL - lamports - 5_000 },
                SolChange { account: WALLET, pre: SOL, post: SOL + lamports },
            ],
            token_changes: vec![],
        }
    }

    /// A stranger sends `units` of a 6-decimal token to the wallet's token account.
    fn tokens_in(units: u64) -> Transaction {
        let account = Pubkey([4; 32]);
        let transfer = InstructionKind::TokenTransfer {
            source: Pubkey([5; 32]),
            destination: account,
            authority: STRANGER,
            amount: units,
            mint: None,
        };
        let change = TokenChange { account, mint: MINT, owner: Some(WALLET), decimals: 6, pre: 7, post: 7 + units };
        Transaction { instructions: vec![instruction(transfer)], token_changes: vec![change], ..sol_in(STRANGER, 0) }
    }

    fn dust(activity: Vec<Option<Transaction>>) -> bool {
        is_dust(&activity, &WALLET, &DUST_RULE_DEFAULT)
    }

    #[test]
    fn a_lamport_from_a_stranger_is_dust_and_a_sol_is_not() {
        assert!(dust(vec![Some(sol_in(STRANGER, 1))]));
        assert!(dust(vec![Some(sol_in(STRANGER, MONITOR_DUST_LAMPORTS_DEFAULT - 1))]));
        assert!(!dust(vec![Some(sol_in(STRANGER, SOL))]));
        assert!(!dust(vec![Some(sol_in(STRANGER, MONITOR_DUST_LAMPORTS_DEFAULT))]));
        // A monitor that turned its dust filter off: nothing is dust, not even a failure.
        let off = DustRule::with_lamports(0);
        assert!(!is_dust(&[Some(sol_in(STRANGER, 1))], &WALLET, &off));
        let mut failed = sol_in(STRANGER, 1);
        failed.error = Some("InsufficientFundsForFee".into());
        assert!(!is_dust(&[Some(failed)], &WALLET, &off));
        // What arrives counts together: many dusts that add up to more are not dust.
        let many = vec![Some(sol_in(STRANGER, MONITOR_DUST_LAMPORTS_DEFAULT / 2 + 1)); 2];
        assert!(!dust(many));
    }

    #[test]
    fn anything_the_wallet_signed_is_not_dust() {
        let mut own = sol_in(STRANGER, 1);
        own.signers.push(WALLET);
        assert!(!dust(vec![Some(own.clone())]));
        // Even a failed one: the wallet acted.
        own.error = Some("{\"InstructionError\":[0,{\"Custom\":1}]}".into());
        assert!(!dust(vec![Some(sol_in(STRANGER, 1)), Some(own)]));
    }

    #[test]
    fn a_failed_transaction_of_someone_else_is_dust() {
        let mut failed = sol_in(STRANGER, 5 * SOL);
        failed.error = Some("{\"InstructionError\":[0,{\"Custom\":1}]}".into());
        assert!(dust(vec![Some(failed)]));
    }

    #[test]
    fn an_unreadable_transaction_is_not_dust() {
        assert!(!dust(vec![None]));
        assert!(!dust(vec![Some(sol_in(STRANGER, 1)), None]));
        assert!(!dust(vec![]), "no activity read: nothing to skip on");
    }

    #[test]
    fn tokens_are_dust_below_a_ten_thousandth_of_one() {
        // 6 decimals: one token is 1_000_000 units, its 1/10_000 is 100.
        assert!(dust(vec![Some(tokens_in(1))]));
        assert!(dust(vec![Some(tokens_in(99))]));
        assert!(!dust(vec![Some(tokens_in(100))]));
        // An NFT (0 decimals) is never dust.
        let mut nft = tokens_in(1);
        nft.token_changes[0].decimals = 0;
        assert!(!dust(vec![Some(nft)]));
        // A balance whose owner is not told: cannot be judged.
        let mut unowned = tokens_in(1);
        unowned.token_changes[0].owner = None;
        assert!(!dust(vec![Some(unowned)]));
    }

    #[test]
    fn value_leaving_the_wallet_or_a_change_of_authority_is_not_dust() {
        let mut out = sol_in(STRANGER, 1);
        out.sol_changes[1] = SolChange { account: WALLET, pre: SOL, post: SOL - 1 };
        assert!(!dust(vec![Some(out)]));
        let mut drained = tokens_in(1);
        drained.token_changes[0].post = 0;
        assert!(!dust(vec![Some(drained)]));
        let nonce = InstructionKind::NonceInitialize { nonce: Pubkey([6; 32]), authority: WALLET };
        let with_nonce = Transaction { instructions: vec![instruction(nonce)], ..sol_in(STRANGER, 1) };
        assert!(!dust(vec![Some(with_nonce)]));
        let assign = InstructionKind::SystemCreateAccount {
            funder: STRANGER,
            account: WALLET,
            lamports: 1,
            space: 0,
            owner: Pubkey([7; 32]),
        };
        assert!(!dust(vec![Some(Transaction { instructions: vec![instruction(assign)], ..sol_in(STRANGER, 1) })]));
    }

    #[test]
    fn outbound_activity_is_told_apart_and_wins_over_what_cannot_be_read() {
        let class =
            |activity: Vec<Option<Transaction>>, complete| classify(&activity, complete, &WALLET, &DUST_RULE_DEFAULT);
        assert_eq!(class(vec![Some(sol_in(STRANGER, 1))], true), Activity::Dust);
        assert_eq!(class(vec![Some(sol_in(STRANGER, SOL))], true), Activity::Inbound);
        // A page that may not hold all of it, or a transaction not read: inbound, never dust.
        assert_eq!(class(vec![Some(sol_in(STRANGER, 1))], false), Activity::Inbound);
        assert_eq!(class(vec![Some(sol_in(STRANGER, 1)), None], true), Activity::Inbound);
        // Something of the wallet's left: outbound, whatever else could not be read.
        let mut out = sol_in(STRANGER, 1);
        out.sol_changes[1] = SolChange { account: WALLET, pre: SOL, post: SOL - 1 };
        assert_eq!(class(vec![None, Some(out)], false), Activity::Outbound);
        // No metadata (no balance changes at all): what it did cannot be told.
        let bare = Transaction { sol_changes: vec![], ..sol_in(STRANGER, 1) };
        assert_eq!(class(vec![Some(bare)], true), Activity::Inbound);
        // A program the model does not read that names the wallet (a compressed NFT's transfer
        // by a leaf delegate changes no balance): outbound.
        let mut raw = instruction(InstructionKind::Other);
        raw.accounts = vec![STRANGER, WALLET];
        let leaf = Transaction { instructions: vec![raw], ..sol_in(STRANGER, 0) };
        assert_eq!(class(vec![Some(leaf)], true), Activity::Outbound);
    }
}
