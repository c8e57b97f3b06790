//! The scan's findings and effects as a catalogue: `docs/signals.md` ends with it (after the
//! engine's signals), written by `xray signals --markdown`.
//!
//! Owns: `SCAN_FINDINGS` (kind, severity, when, fix), `POLICY_KINDS` (the kinds an account's
//! policy may override, with their severity as found) and `catalogue_markdown`. Pure.
//!
//! Invariant: every kind `findings` emits is listed (a test of `findings` checks the kinds it
//! produces against this list); the document on disk is this text (a test checks it).

use crate::engine::policy::OtherKind;
use crate::engine::report::Severity::{self, Critical, High, Low, Medium};

/// Every scan finding kind as an account's policy names it (`severityOverrides`): its severity
/// as found (the highest its rule gives), and whether it may only be raised — a sanctions
/// finding is a compliance finding, not a preference, as in the X-Ray.
pub const POLICY_KINDS: &[OtherKind] = &[
    kind("wallet_assign", Critical, false),
    kind("token_owner_change", Critical, false),
    kind("token_close_authority_change", Critical, false),
    kind("token_approval", Critical, false),
    kind("nonce_authority_change", Critical, false),
    kind("nonce_withdraw", Critical, false),
    kind("stake_authority_change", Critical, false),
    kind("durable_nonce", Low, false),
    kind("sanctioned_recipient", Critical, true),
    kind("flagged_recipient", Critical, false),
    kind("lookalike_recipient", Critical, false),
    kind("token2022_permanent_delegate", Critical, false),
    kind("token2022_transfer_hook", Medium, false),
    kind("flagged_program", Critical, false),
    kind("invalid_signature", Critical, false),
    kind("phishing_origin", Critical, false),
    kind("lookalike_origin", High, false),
    kind("ip_origin", Medium, false),
    kind("unknown_program_writable", Medium, false),
    kind("hidden_authority_change", Critical, false),
    kind("asset_sweep", Critical, false),
];

const fn kind(kind: &'static str, severity: Severity, raise_only: bool) -> OtherKind {
    OtherKind { kind, severity, raise_only }
}

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
        "critical",
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
        "low",
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
        "SOL or tokens sent to an address the labels flag, or on the account's own deny list (then the text says so and `facts.reason` is `deny_list`)",
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
        "`origin` imitates a trusted dApp domain (`facts.resemblance`): its confusable skeleton (Unicode TS #39, the host decoded from punycode) is the trusted domain's or a subdomain's (`confusable`: `phаntom.app` with a Cyrillic `а`); it wears the trusted domain inside another (`worn`: `phantom.app.claim-now.io`); a label or hyphen-separated part of one is the trusted name (of six characters or more) or its labels joined (`name`: `phantom.io`, `phantom-app.com`, `app-phantom.xyz`, `phantomapp.io`); or it is within two edits (`edits`: `phantorn.app`). The trusted domains, their subdomains and `allowed` exceptions never are; `facts.scripts` is `mixed` when a label mixes scripts, `facts.unicode` the host as shown",
        "none",
    ),
    (
        "ip_origin",
        "medium",
        "`origin` is a web origin on a public IP address instead of a domain name (`https://203.0.113.7`, `http://[2001:db8::1]`): real dApps are served from names. None for loopback, private (10/8, 172.16/12, 192.168/16), link-local, unique-local or unspecified addresses, nor `localhost` (a developer's own machine or network)",
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
        "an instruction of a flagged program (or one on the account's deny list: `facts.reason` `deny_list`)",
        "none",
    ),
    (
        "unknown_program_writable",
        "medium",
        "a program the labels do not know given the signer as a writable account, and no simulation to show what it does (skipped, timed out or unavailable; the finding says which): when it ran, its effects are judged instead, and when it ran and failed nothing but the fee changes",
        "none",
    ),
    (
        "hidden_authority_change",
        "critical",
        "the simulation shows an authority over one of the signer's accounts (the wallet's owning program, a token account's owner, delegate or close authority, a nonce or stake authority) going to another key, and no instruction's finding names it: a program did it through a CPI, known or not",
        "none",
    ),
    (
        "asset_sweep",
        "medium for one asset, high for more; critical when an `origin` was sent (a dApp asked) or the transaction also hands an authority away",
        "the transaction moves at least 90 % of the signer's SOL (net of the fee), or at least 99 % of its balance of a token, to addresses it never dealt with (not a counterparty, not labelled) and the signer gains nothing beyond dust in return — from the simulation's balances, else from the decoded transfers applied to the accounts before; the shares and the dust are the defaults, which the asking account's policy may move (`sweepThresholds`). In a scan of several transactions (`transactions`) also judged on the whole — the signer's balances from before the first to after the last applied one — and listed in the sequence's own `findings` (its `detail` starts \"Run in order, the N applied transactions together\")",
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
none of its authorities yields none. Its `facts` are typed as a signal's: lamports are JSON\n\
integers under a key that names them (`lamports`), counts and percentages integers, a token\n\
amount a string of base units (`amount`) beside its `mint` and `decimals` (each when known);\n\
`reason: \"deny_list\"` marks a finding the account's own deny list causes or raises.\n";

const EFFECTS: &str = "`effects` are the signer's changes between the accounts before the transaction\n\
(`getMultipleAccounts`) and after it (`simulateTransaction`'s post-state): `sol` (the signer's\n\
own balance, fee included), `token` (per mint: what the signer owns after less what it owned\n\
before — an account given away counts as its whole balance lost; `delta` base units with\n\
`decimals`), `sol_sent` / `token_sent` (per recipient of what the signer lost: `lamports`, or\n\
`amount` with `mint` and `decimals`), `account_created`,\n\
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

    #[test]
    fn a_policy_can_name_every_scan_finding_and_no_other() {
        let listed: Vec<&str> = SCAN_FINDINGS.iter().map(|(kind, ..)| *kind).collect();
        let named: Vec<&str> = POLICY_KINDS.iter().map(|k| k.kind).collect();
        for kind in &listed {
            assert!(named.contains(kind), "{kind} cannot be overridden");
        }
        assert_eq!(listed.len(), named.len(), "{named:?}");
        // Scan kinds never shadow an X-Ray signal kind (one name, one meaning).
        assert!(named.iter().all(|k| crate::engine::signals::spec(k).is_none()));
        let severity = |k: &str| POLICY_KINDS.iter().find(|p| p.kind == k).map(|p| p.severity);
        assert_eq!(severity("unknown_program_writable"), Some(Severity::Medium));
        // Where the docs give one severity, it is the one the policy overrides.
        let name = |s: Severity| serde_json::to_value(s).ok().and_then(|v| v.as_str().map(str::to_owned));
        for (kind, said, ..) in SCAN_FINDINGS {
            if ["info", "low", "medium", "high", "critical"].contains(said) {
                assert_eq!(severity(kind).and_then(name).as_deref(), Some(*said), "{kind}: the docs say {said}");
            }
        }
    }
}
