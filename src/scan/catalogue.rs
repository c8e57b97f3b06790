//! The scan's findings and effects as a catalogue: `docs/signals.md` ends with it (after the
//! engine's signals), written by `xray signals --markdown`.
//!
//! Owns: `SCAN_FINDINGS` (kind, severity, when, fix) and `catalogue_markdown`. Pure.
//!
//! Invariant: every kind `findings` emits is listed (a test of `findings` checks the kinds it
//! produces against this list); the document on disk is this text (a test checks it).

/// `(kind, severity, found when, fixInstructions)` of every scan finding.
pub const SCAN_FINDINGS: &[(&str, &str, &str, &str)] = &[
    (
        "wallet_assign",
        "critical",
        "System `assign` of the signer's own wallet to a program other than System: the program then owns the wallet and its SOL",
        "none: only the new owner program can give it back",
    ),
    (
        "token_owner_change",
        "critical",
        "token `setAuthority` (accountOwner) on an account the signer owns",
        "none",
    ),
    (
        "token_close_authority_change",
        "high (critical to a flagged address)",
        "token `setAuthority` (closeAccount) handing the close authority to another key",
        "none",
    ),
    (
        "token_approval",
        "critical when the delegate is flagged, or unlimited and never seen; high when unlimited or never seen; else medium",
        "token `approve` / `approveChecked` by the signer",
        "the `revoke` — only while the transaction leaves the account the signer's (none after an owner change or a close in the same transaction)",
    ),
    (
        "nonce_authority_change",
        "critical",
        "System `authorizeNonceAccount` by the signer to another key",
        "none",
    ),
    (
        "nonce_withdraw",
        "medium (critical to a flagged address)",
        "System `withdrawNonceAccount` by the signer",
        "none",
    ),
    (
        "stake_authority_change",
        "critical (withdrawer), high (staker)",
        "stake `authorize` by the signer to another key",
        "staker only: authorize the signer back, signed as the withdrawer — not when the same transaction also hands the withdrawer away",
    ),
    (
        "durable_nonce",
        "medium",
        "the first instruction advances a nonce account: the signature never expires and can be executed at any later time",
        "none",
    ),
    (
        "sanctioned_recipient",
        "critical",
        "SOL or tokens sent to an address the labels list as sanctioned",
        "none",
    ),
    (
        "flagged_recipient",
        "critical",
        "SOL or tokens sent to an address the labels flag",
        "none",
    ),
    (
        "lookalike_recipient",
        "critical",
        "sent to an address whose first and last four characters match one of the signer's earlier counterparties but is not it (address poisoning) — only when those counterparties are known (`counterparties.checked`)",
        "none",
    ),
    (
        "token2022_permanent_delegate",
        "high (critical when the delegate is flagged)",
        "the simulation shows the signer receiving tokens of a Token-2022 mint with a permanent delegate, which can move or burn them from any account at any time",
        "none",
    ),
    (
        "token2022_transfer_hook",
        "medium",
        "the simulation shows the signer receiving tokens of a Token-2022 mint with a transfer hook: its program runs on (and can refuse) every later transfer",
        "none",
    ),
    (
        "phishing_origin",
        "critical",
        "`origin` (the dApp that asked for the signature) is, or is a subdomain of, a phishing site the labels list (`[[domain]]`, e.g. imported from a phishing-domain list)",
        "none",
    ),
    (
        "lookalike_origin",
        "high",
        "`origin` imitates a trusted dApp domain: within two edits of it, or wearing it as the first labels of another domain (`phantom.app.claim-now.io`)",
        "none",
    ),
    (
        "invalid_signature",
        "critical",
        "a signature slot holds bytes that are not its signer's Ed25519 signature of this message (`transaction.signatures`): the message was changed after signing, or the signature is someone else's",
        "none",
    ),
    (
        "flagged_program",
        "critical",
        "an instruction of a flagged program",
        "none",
    ),
    (
        "unknown_program_writable",
        "medium",
        "a program the labels do not know given the signer as a writable account",
        "none",
    ),
];

const INTRO: &str = "## Scan findings (`POST /v1/developer/intelligence/transaction`)\n\
\n\
A pre-sign scan judges a transaction the user has not signed yet, from its decoded\n\
instructions alone (`src/scan/findings.rs`, version `engineVersions.scan`); the simulation adds\n\
the `effects` and never removes a finding. Each finding names the outer instruction it is about\n\
(`instruction`; absent for the transaction-wide `durable_nonce`, `invalid_signature` and the origin's). The verdict\n\
is the worst finding's: critical → `malicious`; high or medium → `warning`; otherwise `benign`.\n\
A finding is about the signer: an instruction that moves nothing of the signer's and changes\n\
none of its authorities yields none.\n\
\n\
| kind | severity | found when | fixInstructions |\n\
|---|---|---|---|\n";

const EFFECTS: &str = "`effects` are the signer's changes between the accounts before the transaction\n\
(`getMultipleAccounts`) and after it (`simulateTransaction`'s post-state): `sol` (the signer's\n\
own balance, fee included), `token` (per mint: what the signer owns after less what it owned\n\
before — an account given away counts as its whole balance lost), `account_created`,\n\
`account_closed`, `account_owner_change`, `token_owner_change`, `token_delegate_change`,\n\
`token_close_authority_change`, `nonce_authority_change`, `stake_authority_change` (with its\n\
`role`). An account is the signer's when it is the signer's address, or a token account it\n\
owns, a nonce account it is the authority of, a stake account it stakes or withdraws. The\n\
rules are checked against LiteSVM's real post-state (`tests/litesvm`).\n\
\n\
The signer's counterparties (for `lookalike_recipient` and never-seen delegates) are those of\n\
its newest 25 meaningful transactions (not failed; signed by it, or moving value above dust to\n\
or from it), read when the transaction sends or approves something of the signer's and kept a\n\
minute per wallet. Failed transactions and others' dust take no place in the window, so a\n\
flood of look-alike dust cannot push the real counterparty out; the read is bounded (1,000\n\
signatures listed, 150 transactions fetched, 2 MiB, the scan's deadline). `counterparties` in\n\
the answer says whether they were read, from how many transactions, how far back, what was\n\
passed over, and whether a bound stopped the read first (`exhausted`).\n";

/// The section `docs/signals.md` ends with.
pub fn catalogue_markdown() -> String {
    use std::fmt::Write as _;
    let mut out = String::from("\n");
    out.push_str(INTRO);
    out.push_str("\n| kind | severity | found when | fixInstructions |\n|---|---|---|---|\n");
    for (kind, severity, when, fix) in SCAN_FINDINGS {
        let _ = writeln!(out, "| `{kind}` | {severity} | {when} | {fix} |");
    }
    out.push('\n');
    out.push_str(EFFECTS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_end_with_the_scan_catalogue() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/signals.md");
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        let whole = crate::engine::signals::catalogue_markdown() + &catalogue_markdown();
        assert!(
            on_disk == whole,
            "docs/signals.md is out of date: run `cargo run -- signals --markdown > docs/signals.md`"
        );
    }
}
