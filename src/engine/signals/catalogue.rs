//! The signal catalogue: every kind the engine can emit, in one table.
//!
//! Owns: `CATALOGUE`. docs/signals.md is generated from it (`xray signals --markdown`) and a
//! test fails when the two differ, so the document cannot drift from the code.
//! Invariant: kinds are unique; each names one of `scoring::DIMENSIONS`.

use crate::engine::report::Severity;

#[derive(Debug, Clone, Copy)]
pub struct SignalSpec {
    pub kind: &'static str,
    pub dimension: &'static str,
    /// Severity before adjustments the rule describes.
    pub severity: Severity,
    pub rule: &'static str,
    pub remediation: &'static str,
}

const fn s(
    kind: &'static str,
    dimension: &'static str,
    severity: Severity,
    rule: &'static str,
    remediation: &'static str,
) -> SignalSpec {
    SignalSpec { kind, dimension, severity, rule, remediation }
}

use Severity::*;

pub const CATALOGUE: &[SignalSpec] = &[
    // authority_exposure
    s("open_token_delegation", "authority_exposure", High,
      "A token account of the wallet has a delegate with a non-zero delegated amount. High when the approval is unlimited (u64::MAX) or covers the whole balance, medium for a partial approval, critical when the delegate is flagged.",
      "The wallet owner sends spl-token `revoke` for the token account."),
    s("foreign_close_authority", "authority_exposure", Medium,
      "A token account of the wallet has a close authority other than the wallet: that party can close the account once it is empty and take its rent.",
      "The close authority sends spl-token `setAuthority` (closeAccount) back to the wallet, or the owner moves the tokens to a new account."),
    s("token_account_owner_changed", "authority_exposure", Critical,
      "The history holds an spl-token `setAuthority` of type accountOwner, signed by the wallet, that handed one of its token accounts to another address.",
      "Ownership cannot be taken back by the wallet; treat the account as lost and stop sending tokens to it."),
    s("wallet_assigned", "authority_exposure", Critical,
      "The wallet account itself is owned by a program other than the System Program after a system `assign`: the program now controls its lamports.",
      "The wallet is compromised: move any remaining assets with a fresh key and never reuse this address."),
    s("foreign_nonce_authority", "authority_exposure", High,
      "A durable nonce account the wallet created or used has an authority other than the wallet. Critical when that authority has advanced the nonce: presigned transactions may be replayed at any time.",
      "The nonce authority sends system `authorizeNonceAccount` back to the wallet, or the wallet stops signing transactions that use this nonce."),
    s("outsider_nonce_authority", "authority_exposure", High,
      "A durable nonce account names the wallet as its authority, but the wallet's history does not show it creating the account: someone else created and funded it (found by searching the System program's nonce accounts for the wallet as authority, `getProgramAccounts`; the account's own newest 10 transactions are read for its creation). A phishing site can have the wallet sign a transaction that uses this nonce; that signature never expires, and whoever holds it submits it whenever they like. Being named in a transaction of the wallet's history is not creating it: only a `createAccount` the wallet paid for is. Critical when the creator is flagged or sanctioned; medium when the reads do not reach its creation (it may be the wallet's own, from beyond the history depth). `coverage.nonceSearch` says when the search was cut or failed.",
      "The wallet (the nonce's authority) sends system `withdrawNonceAccount` of the whole balance to itself, which closes the account: every transaction presigned with it becomes invalid."),
    s("foreign_stake_authority", "authority_exposure", High,
      "A stake account funded by the wallet has a staker or withdrawer other than the wallet. Critical when the withdrawer is foreign: it can withdraw the stake.",
      "The current withdrawer sends stake `authorize` (Withdrawer, then Staker) back to the wallet."),
    // asset_risk
    s("permanent_delegate_mint", "asset_risk", High,
      "The wallet holds a Token-2022 mint whose permanentDelegate extension lets another address transfer or burn any holder's tokens.",
      "Move the balance out of the mint (sell or redeem) unless the issuer is trusted."),
    s("transfer_hook_mint", "asset_risk", Medium,
      "The wallet holds a Token-2022 mint with a transferHook extension: every transfer runs a program the mint's authority chose and can change.",
      "Check the hook program before transacting; prefer mints without hooks for large balances."),
    s("freeze_authority_mint", "asset_risk", Low,
      "The wallet holds a mint whose freeze authority can freeze its token account. Info for labelled stablecoins, whose issuers keep one by policy.",
      "Nothing to send; keep large balances in mints without a freeze authority unless the issuer is trusted."),
    s("transfer_fee_mint", "asset_risk", Low,
      "The wallet holds a Token-2022 mint whose transferFeeConfig extension charges a fee on every transfer (the newer configured fee, in basis points, above zero). Medium from 5 % (500 basis points). Its fee authority can change the fee (up to 100 %, from two epochs later) and withdraw what is withheld.",
      "Nothing to send; account for the fee before selling or moving the tokens, and treat a mint whose fee authority is unknown as able to raise it."),
    s("non_transferable_mint", "asset_risk", Low,
      "The wallet holds a Token-2022 mint with the nonTransferable extension: its tokens can never be transferred or sold, only burned. Unrequested soulbound tokens are a common lure toward phishing sites.",
      "Do not follow links the token carries; the owner may burn the balance and `closeAccount` to reclaim the rent."),
    s("default_frozen_mint", "asset_risk", Low,
      "The wallet holds a Token-2022 mint whose defaultAccountState extension is frozen: every new token account of the mint starts frozen until the issuer's freeze authority thaws it, so the issuer decides who may hold and move it. Info for labelled stablecoins.",
      "Nothing to send; expect tokens sent to a new account to stay frozen until the issuer thaws it."),
    s("close_authority_mint", "asset_risk", Low,
      "The wallet holds a Token-2022 mint with a mintCloseAuthority: that address can close the mint once its supply is zero, after which the same address can be re-created as a mint with other properties. High when the close authority is flagged.",
      "Nothing to send; prefer mints without a close authority for balances kept long."),
    s("mintable_supply_mint", "asset_risk", Low,
      "The wallet holds a mint whose mint authority is still set to an address the labels do not know (nor is the mint labelled): that address can mint any amount and dilute the holding. High when the mint authority is flagged.",
      "Nothing to send; treat the token's supply as unbounded unless the issuer is trusted."),
    s("frozen_token_account", "asset_risk", Medium,
      "A token account of the wallet is frozen: its tokens cannot move until the freeze authority thaws it.",
      "Only the mint's freeze authority can send spl-token `thawAccount`; contact the issuer."),
    s("unsolicited_token", "asset_risk", Low,
      "Someone else created a token account for the wallet for a mint not in the labels: a common lure for scam tokens.",
      "Do not interact with the token; the owner may burn the balance and `closeAccount` to reclaim the rent."),
    s("rent_locked_empty_accounts", "asset_risk", Info,
      "Token accounts of the wallet are empty but still hold rent-exempt lamports.",
      "The owner sends spl-token `closeAccount` for each empty account to reclaim the lamports."),
    // counterparty_risk
    s("flagged_program_interaction", "counterparty_risk", Critical,
      "A transaction signed by the wallet invoked a flagged program, as an outer instruction or through a CPI.",
      "Revoke every approval granted around that transaction and move assets to a fresh wallet if any authority changed."),
    s("sanctioned_counterparty", "counterparty_risk", Critical,
      "An address the labels list as sanctioned (category `sanctioned`, e.g. imported from the OFAC SDN list by `xray labels import`) is a counterparty of the wallet: it sent or received a transfer, funded the wallet first, is the delegate of one of its token accounts, or the authority of a nonce or stake account tied to it. One signal per address, naming its roles and the list.",
      "Stop transacting with the address and review the exposure with compliance; revoke any delegation or authority it holds."),
    s("sanctioned_funder_exposure", "counterparty_risk", High,
      "One hop out: the wallet's first funder (an address the labels know nothing of) sent to or received from a sanctioned address among its most recent transactions. Read only when the labels list sanctioned addresses (the builtin synthetic entries tagged `demo` count on the demo ledger only), at most `FUNDER_HOP_SIGNATURES_MAX` (25) of the funder's transactions, reported in `coverage.funderHop`. One signal per sanctioned address, citing the wallet's first funding and the funder's transfers.",
      "Review where the wallet's funds came from with compliance before paying out to it; the funder, not the wallet, dealt with the listed address."),
    s("flagged_counterparty_transfer", "counterparty_risk", High,
      "The wallet sent SOL or tokens to, or received them from, a flagged address.",
      "Stop transacting with the address; if funds went out unintentionally, check the wallet's approvals and authorities."),
    s("flagged_funder", "counterparty_risk", High,
      "The wallet's first funding came from a flagged address.",
      "Treat the wallet as controlled by or tied to that actor; do not pay out to it without review."),
    s("address_poisoning_received", "counterparty_risk", Medium,
      "The wallet received a dust transfer from an address whose first and last four characters match a real counterparty: a poisoning attempt aimed at the wallet's address book.",
      "Never copy recipients from history; verify the whole address before sending."),
    s("wallet_swept", "counterparty_risk", High,
      "A transaction the wallet signed moved at least 90 % of its SOL (net of the fee) or at least 99 % of its balance of a token to addresses it had never dealt with before (no earlier non-dust transfer either way, not labelled), and the wallet gained nothing beyond dust in return: the wallet was drained, whoever the recipient is. The same judgement as the pre-sign scan's `asset_sweep` (read from the transaction's balances before and after); the shares and the dust are the defaults, which an account's policy may move (`sweepThresholds`). One signal for the wallet: the newest sweep described, every sweep counted (`facts.sweeps`) and the newest ones cited.",
      "Treat the key as compromised: move whatever is left with a fresh key, revoke what can be revoked, and never reuse this address."),
    s("sent_to_lookalike", "counterparty_risk", Critical,
      "The wallet sent funds to a look-alike of a real counterparty after receiving poisoning dust from it.",
      "The transfer cannot be reversed; report the address and verify full addresses from now on."),
    // behaviour
    s("high_failure_rate", "behaviour", Medium,
      "More than 20 % of the transactions the wallet signed failed (at least 10 signed): typical of bots and of drained wallets whose transactions are front-run.",
      "Review the failing programs; nothing to send."),
    s("automated_bursts", "behaviour", Low,
      "The wallet signed 20 or more transactions within 60 seconds: automated activity.",
      "Nothing to send; weigh the wallet as a bot."),
    s("new_wallet", "behaviour", Low,
      "The wallet's first transaction is less than 7 days before the as-of time, and its history is complete.",
      "Nothing to send; new wallets carry less history to judge."),
    s("dormant_reactivated", "behaviour", Medium,
      "The wallet was silent for more than 365 days, then became active in the last 30 days: a common sign of a sold or stolen key.",
      "Confirm the owner before trusting new activity."),
    // data_quality
    s("partial_history", "data_quality", Info,
      "The history depth limit cut the wallet's history: older findings may be missing and confidence is lowered.",
      "Nothing to send; raise the history depth for a deeper analysis."),
    s("missing_transactions", "data_quality", Info,
      "Some listed signatures had no transaction at the ledger source.",
      "Nothing to send; retry later or use a source with full history."),
    s("no_activity", "data_quality", Info,
      "The ledger source shows no account and no transaction for the address: nothing bad is known, and nothing is known at all. Confidence is halved.",
      "Nothing to send; check the address was typed right, and analyze again once it has history."),
];

/// The signal kinds that carry `fixInstructions` (the wallet signs every one), and what they
/// are. Every other kind carries none: the wallet has nothing to sign that removes it.
pub const FIXES: &[(&str, &str)] = &[
    ("open_token_delegation", "spl-token / Token-2022 `revoke` of the delegated token account (none while the account is frozen: the program refuses until it is thawed)."),
    ("outsider_nonce_authority", "system `withdrawNonceAccount` of the nonce account's whole balance to the wallet, which closes it."),
    ("foreign_stake_authority", "stake `authorize` (Staker) naming the wallet again, when the wallet is still the withdrawer; none when the withdrawer is foreign."),
    ("rent_locked_empty_accounts", "spl-token / Token-2022 `closeAccount` of each empty account the wallet alone can close (not frozen, no other close authority, no transfer-fee or confidential-transfer extension, which the program refuses to close while they hold amounts the view does not show), rent to the wallet; at most 20."),
];

/// docs/signals.md, generated: `xray signals --markdown > docs/signals.md`.
pub fn catalogue_markdown() -> String {
    use std::fmt::Write;
    let mut out = String::from(
        "# Signal catalogue\n\n\
         Generated from `src/engine/signals/catalogue.rs` by `xray signals --markdown`; a test fails\n\
         when this file and the code differ. Severities are defaults: each rule says when it moves.\n\n\
         A signal's `facts` name their unit in their key: lamports are JSON integers (`lamports`,\n\
         `reclaimableLamports`), counts, seconds and block times integers, flags booleans; a token amount\n\
         (`amount`, `balance`, `delegatedAmount`, …) is a string of base units beside the token's `mint` and\n\
         `decimals` (each when the ledger gave it). A signal the account's own deny list causes or raises\n\
         carries `reason: \"deny_list\"`.\n",
    );
    for (dimension, _) in crate::engine::scoring::DIMENSIONS {
        let _ =
            write!(out, "\n## {dimension}\n\n| kind | severity | detection rule | remediation |\n|---|---|---|---|\n");
        for s in CATALOGUE.iter().filter(|s| s.dimension == *dimension) {
            let _ = writeln!(out, "| `{}` | {} | {} | {} |", s.kind, s.severity.as_str(), s.rule, s.remediation);
        }
    }
    out.push_str("\n## Attack paths\n\n| kind | rests on | composition | fix instructions |\n|---|---|---|---|\n");
    for (kind, rests_on, what, fix) in crate::engine::attack_paths::ATTACK_PATH_KINDS {
        let _ = writeln!(out, "| `{kind}` | {rests_on} | {what} | {fix} |");
    }
    out.push_str(
        "\n## Fix instructions\n\n\
         Signals of these kinds carry `fixInstructions`: unsigned instructions (`programId`, `accounts` with\n\
         `isSigner`/`isWritable`, base58 `data`, `description`) the wallet signs to remove the finding. Their\n\
         bytes are checked in tests against the official interface crates. Every attack path carries\n\
         `fixInstructions`; where none can help it is `[]` and `fixNote` says why and what to do instead.\n\n\
         | signal kind | fix instructions |\n|---|---|\n",
    );
    for (kind, fix) in FIXES {
        let _ = writeln!(out, "| `{kind}` | {fix} |");
    }
    out
}

/// The catalogue as JSON-ready records.
pub fn catalogue_json() -> Vec<std::collections::BTreeMap<&'static str, &'static str>> {
    CATALOGUE
        .iter()
        .map(|s| {
            std::collections::BTreeMap::from([
                ("kind", s.kind),
                ("dimension", s.dimension),
                ("severity", s.severity.as_str()),
                ("rule", s.rule),
                ("remediation", s.remediation),
            ])
        })
        .collect()
}

/// The catalogue entry of `kind`.
pub fn spec(kind: &str) -> Option<&'static SignalSpec> {
    CATALOGUE.iter().find(|s| s.kind == kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::scoring::DIMENSIONS;

    #[test]
    fn docs_match_the_catalogue() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/signals.md");
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        // The scan's catalogue follows (`scan::catalogue` checks the whole file).
        assert!(
            on_disk.starts_with(&catalogue_markdown()),
            "docs/signals.md is out of date: run `cargo run -- signals --markdown > docs/signals.md`"
        );
    }

    #[test]
    fn fixes_name_catalogued_kinds() {
        for (kind, _) in FIXES {
            assert!(spec(kind).is_some(), "{kind}");
        }
    }

    #[test]
    fn kinds_are_unique_and_dimensions_known() {
        for (i, a) in CATALOGUE.iter().enumerate() {
            assert!(DIMENSIONS.iter().any(|d| d.0 == a.dimension), "{}", a.kind);
            assert!(CATALOGUE[i + 1..].iter().all(|b| b.kind != a.kind), "{} twice", a.kind);
        }
    }
}
