//! Attack paths: how the findings combine into concrete ways to lose assets, each with
//! ordered steps, the assets at risk with amounts, the signals it rests on and the
//! remediation (which instruction to send, by whom).
//!
//! Owns: composition rules from signals to paths. Pure; called by the engine after signal
//! detection. Invariant: a path cites only signals that exist, and its severity is never
//! above the most severe signal it rests on unless the rule says why (a poisoning that already
//! misdirected funds).

use std::borrow::Cow;

use crate::engine::fixes::FixInstruction;
use crate::engine::report::{AssetAtRisk, AttackPath, AttackStep, Fact, Severity, Signal};
use crate::ledger::model::WalletView;

/// Every attack path kind: (kind, the signals it rests on, what composes it, its fix
/// instructions). Listed in docs/signals.md by the catalogue generator.
pub const ATTACK_PATH_KINDS: &[(&str, &str, &str, &str)] = &[
    (
        "delegate_drain",
        "open_token_delegation",
        "One path per open delegation: the delegate transfers up to the delegated amount without the owner.",
        "The signal's: spl-token / Token-2022 `revoke` of the token account.",
    ),
    (
        "owner_change_takeover",
        "token_account_owner_changed",
        "The new owner controls the token account and every later deposit.",
        "None (`[]` and `fixNote`): the change happened; only the new owner can hand the account back.",
    ),
    ("assign_takeover", "wallet_assigned", "The program that owns the wallet account controls its lamports.", "None: only the program that owns the account now can give it back."),
    (
        "nonce_replay",
        "foreign_nonce_authority",
        "A transaction presigned against a foreign-controlled durable nonce is submitted when the authority chooses.",
        "None: only the foreign nonce authority can re-authorize or withdraw.",
    ),
    (
        "presigned_nonce_phish",
        "outsider_nonce_authority",
        "A nonce account someone else created in the wallet's name lets a phishing site obtain a signature that never expires.",
        "The signal's: system `withdrawNonceAccount` of the whole balance to the wallet, which closes the nonce.",
    ),
    (
        "stake_theft",
        "foreign_stake_authority (foreign withdrawer)",
        "The withdrawer deactivates and withdraws the stake.",
        "None: only the foreign withdrawer can hand the stake back.",
    ),
    (
        "permanent_delegate_seizure",
        "permanent_delegate_mint",
        "The mint's permanent delegate moves or burns the wallet's balance.",
        "None: nothing revokes a permanent delegate; move the balance out.",
    ),
    (
        "freeze_honeypot",
        "freeze_authority_mint + frozen_token_account or unsolicited_token of the same mint",
        "Tokens handed out by a freezable mint, then frozen so they cannot be sold.",
        "None: only the freeze authority can thaw.",
    ),
    (
        "poisoning_misdirect",
        "address_poisoning_received (+ sent_to_lookalike)",
        "Dust from a look-alike leads the owner to pay it; critical once funds went out.",
        "None: no instruction undoes a transfer.",
    ),
];

/// A text fact of `signal` (an address, a label, a token amount); `""` when absent.
fn fact<'a>(signal: &'a Signal, key: &str) -> &'a str {
    match signal.facts.get(key) {
        Some(Fact::Text(text)) => text,
        _ => "",
    }
}

/// An amount fact of `signal` (lamports or token base units) as decimal text; `"0"` when
/// absent.
fn amount<'a>(signal: &'a Signal, key: &str) -> Cow<'a, str> {
    signal.facts.get(key).map_or(Cow::Borrowed("0"), Fact::text)
}

fn steps(list: &[(&str, String)]) -> Vec<AttackStep> {
    list.iter()
        .enumerate()
        .map(|(i, (actor, action))| AttackStep {
            order: (i + 1) as u8,
            actor: (*actor).to_owned(),
            action: action.clone(),
        })
        .collect()
}

/// The `decimals` fact of `signal` (a token amount's), when it has one.
fn decimals(signal: &Signal) -> Option<u8> {
    match signal.facts.get("decimals") {
        Some(Fact::Unsigned(d)) => u8::try_from(*d).ok(),
        _ => None,
    }
}

/// SOL at risk: lamports as a number.
fn sol(lamports: impl ToString) -> AssetAtRisk {
    let text = lamports.to_string();
    let amount = text.parse::<u64>().map_or(Fact::Text(text), Fact::Unsigned);
    AssetAtRisk { mint: "SOL".to_owned(), amount, decimals: None }
}

/// Tokens at risk: base units as a string, with the `decimals` the signal carries.
fn token(mint: &str, base_units: impl ToString, signal: &Signal) -> AssetAtRisk {
    AssetAtRisk { mint: mint.to_owned(), amount: Fact::Text(base_units.to_string()), decimals: decimals(signal) }
}

struct Draft {
    kind: &'static str,
    title: String,
    severity: Severity,
    steps: Vec<AttackStep>,
    assets: Vec<AssetAtRisk>,
    signal_ids: Vec<String>,
    remediation: String,
    fix: Fix,
}

/// What closes a path: the instructions of the signal it rests on, or nothing the wallet can
/// sign, and why.
enum Fix {
    Instructions(Vec<FixInstruction>),
    Unavailable(String),
}

/// The fix instructions the signal carries (a path resting on a fixable signal).
fn fix_of(s: &Signal) -> Fix {
    Fix::Instructions(s.fix_instructions.clone())
}

/// Composes every path the signals support, in signal order.
pub fn compose(signals: &[Signal], view: &WalletView) -> Vec<AttackPath> {
    let sol_balance = view.account.as_ref().map_or(0, |a| a.lamports);
    let mut drafts: Vec<Draft> = Vec::new();
    for s in signals {
        drafts.extend(match s.kind {
            "open_token_delegation" => Some(delegate_drain(s)),
            "token_account_owner_changed" => Some(owner_change_takeover(s)),
            "wallet_assigned" => Some(assign_takeover(s)),
            "foreign_nonce_authority" => Some(nonce_replay(s, sol_balance)),
            "outsider_nonce_authority" => Some(presigned_nonce_phish(s, sol_balance)),
            "foreign_stake_authority" if fact(s, "withdrawer") != view.address.to_string() => Some(stake_theft(s)),
            "permanent_delegate_mint" => Some(permanent_delegate_seizure(s)),
            "freeze_authority_mint" if s.severity > Severity::Info && !fact(s, "mint").is_empty() => {
                freeze_honeypot(s, signals)
            }
            "address_poisoning_received" => Some(poisoning_misdirect(s, signals)),
            _ => None,
        });
    }
    drafts
        .into_iter()
        .enumerate()
        .inspect(|(_, d)| debug_assert!(ATTACK_PATH_KINDS.iter().any(|k| k.0 == d.kind), "{} not listed", d.kind))
        .map(|(i, d)| {
            let (fix_instructions, fix_note) = match d.fix {
                Fix::Instructions(list) => (list, None),
                Fix::Unavailable(note) => (Vec::new(), Some(note)),
            };
            AttackPath {
                id: format!("ap_{}", i + 1),
                kind: d.kind,
                title: d.title,
                severity: d.severity,
                steps: d.steps,
                assets_at_risk: d.assets,
                signal_ids: d.signal_ids,
                remediation: d.remediation,
                fix_instructions,
                fix_note,
            }
        })
        .collect()
}

fn delegate_drain(s: &Signal) -> Draft {
    let (delegate, account, mint) = (fact(s, "delegate"), fact(s, "tokenAccount"), fact(s, "mint"));
    let balance: u64 = fact(s, "balance").parse().unwrap_or(0);
    let delegated: u64 = fact(s, "delegatedAmount").parse().unwrap_or(0);
    Draft {
        kind: "delegate_drain",
        title: "Delegate drains the approved token account".into(),
        severity: s.severity,
        steps: steps(&[
            (delegate, format!("calls spl-token transfer on {account} as delegate, without the owner's signature")),
            (delegate, "moves the tokens to an address it controls".into()),
        ]),
        assets: vec![token(mint, balance.min(delegated), s)],
        signal_ids: vec![s.id.clone()],
        remediation: format!("The wallet owner sends spl-token `revoke` for token account {account}."),
        fix: fix_of(s),
    }
}

fn owner_change_takeover(s: &Signal) -> Draft {
    let (owner, account) = (fact(s, "newOwner"), fact(s, "tokenAccount"));
    Draft {
        kind: "owner_change_takeover",
        title: "Token account taken over by an owner change".into(),
        severity: s.severity,
        steps: steps(&[
            (
                "wallet",
                format!("signed setAuthority(accountOwner) on {account}, often disguised as a claim or airdrop"),
            ),
            (owner, format!("now owns {account} and transfers or closes it at will")),
            (owner, format!("receives every future deposit into {account}")),
        ]),
        // The mint and balance come from the handover transaction's token balances; when the
        // ledger gave none, no asset is listed rather than a guess (a mint, base units).
        assets: match fact(s, "mint") {
            "" => Vec::new(),
            mint => vec![token(mint, fact(s, "balanceAtHandover"), s)],
        },
        signal_ids: vec![s.id.clone()],
        remediation: format!(
            "Stop sending tokens to {account}; ownership can only be returned by {owner} via setAuthority."
        ),
        fix: Fix::Unavailable(format!("The owner change already happened: no instruction the wallet signs undoes it; only {owner} can hand {account} back (spl-token setAuthority accountOwner). Receive tokens at a new account the wallet owns instead.")),
    }
}

fn assign_takeover(s: &Signal) -> Draft {
    let owner = fact(s, "owner");
    Draft {
        kind: "assign_takeover",
        title: "Wallet account taken over by assign".into(),
        severity: s.severity,
        steps: steps(&[
            ("wallet", "signed a system assign of its own account, handing it to a program".into()),
            (owner, "debits the account's lamports and rejects the owner's transfers".into()),
        ]),
        assets: vec![sol(amount(s, "lamports"))],
        signal_ids: vec![s.id.clone()],
        remediation: "Move remaining token holdings with a fresh wallet's transactions where possible; the SOL account cannot be reassigned by its key.".into(),
        fix: Fix::Unavailable(format!("The wallet account belongs to program {owner} now: no instruction its key signs gives it back. Create a new wallet and move to it what the old key still controls (its token accounts).")),
    }
}

fn nonce_replay(s: &Signal, sol_balance: u64) -> Draft {
    let (authority, nonce) = (fact(s, "authority"), fact(s, "nonceAccount"));
    Draft {
        kind: "nonce_replay",
        title: "Presigned transaction replayed through a foreign durable nonce".into(),
        severity: s.severity,
        steps: steps(&[
            ("wallet", format!("signs a transaction that uses durable nonce {nonce}")),
            (authority, "keeps the signed transaction, which never expires while the nonce is unadvanced".into()),
            (authority, "submits it at a moment of its choosing".into()),
        ]),
        assets: vec![sol(sol_balance)],
        signal_ids: vec![s.id.clone()],
        remediation: format!("{authority} sends system `authorizeNonceAccount` naming the wallet, or the wallet advances or withdraws the nonce once it holds the authority."),
        fix: Fix::Unavailable(format!("Only the nonce's authority {authority} can sign `authorizeNonceAccount` or `withdrawNonceAccount`: the wallet has nothing to sign. Never sign a transaction that uses nonce {nonce}; if one was signed, move the funds to a new wallet.")),
    }
}

fn presigned_nonce_phish(s: &Signal, sol_balance: u64) -> Draft {
    let nonce = fact(s, "nonceAccount");
    let creator = match fact(s, "creator") {
        "" => "its creator",
        creator => creator,
    };
    Draft {
        kind: "presigned_nonce_phish",
        title: "A transaction you sign with this nonce never expires".into(),
        severity: s.severity,
        steps: steps(&[
            (creator, format!("creates durable nonce {nonce} naming the wallet as its authority")),
            ("phishing site", format!("asks the wallet to sign a transaction that uses nonce {nonce}, then reports it as failed")),
            ("phishing site", "keeps the signature, valid until the nonce advances, and submits it when the wallet holds the most".into()),
        ]),
        assets: vec![sol(sol_balance)],
        signal_ids: vec![s.id.clone()],
        remediation: format!("The wallet sends system `withdrawNonceAccount` of {nonce}'s whole balance to itself, which closes it and invalidates every transaction presigned with it; never sign a transaction that starts with `advanceNonceAccount` unless you created the nonce."),
        fix: fix_of(s),
    }
}

fn stake_theft(s: &Signal) -> Draft {
    let (withdrawer, stake) = (fact(s, "withdrawer"), fact(s, "stakeAccount"));
    Draft {
        kind: "stake_theft",
        title: "Stake withdrawn by a foreign withdrawer".into(),
        severity: s.severity,
        steps: steps(&[
            (withdrawer, format!("deactivates {stake} (as staker or with the staker's help)")),
            (withdrawer, "withdraws the lamports to its own address after cooldown".into()),
        ]),
        assets: vec![sol(amount(s, "lamports"))],
        signal_ids: vec![s.id.clone()],
        remediation: format!("{withdrawer} sends stake `authorize` (Withdrawer, then Staker) naming the wallet."),
        fix: Fix::Unavailable(format!("The withdraw authority {withdrawer} alone can hand {stake} back (stake `authorize`): the wallet has nothing to sign.")),
    }
}

fn permanent_delegate_seizure(s: &Signal) -> Draft {
    let (delegate, mint) = (fact(s, "permanentDelegate"), fact(s, "mint"));
    Draft {
        kind: "permanent_delegate_seizure",
        title: "Tokens seized by the mint's permanent delegate".into(),
        severity: s.severity,
        steps: steps(&[(
            delegate,
            format!("transfers or burns the wallet's {mint} tokens using its permanent delegation"),
        )]),
        assets: vec![token(mint, fact(s, "amount"), s)],
        signal_ids: vec![s.id.clone()],
        remediation: format!(
            "The wallet moves its {mint} balance out (sell or redeem); nothing revokes a permanent delegate."
        ),
        fix: Fix::Unavailable(format!("No instruction revokes a mint's permanent delegate: the wallet moves its {mint} balance out (sells or redeems it).")),
    }
}

fn freeze_honeypot(s: &Signal, all: &[Signal]) -> Option<Draft> {
    let mint = fact(s, "mint");
    let related: Vec<&Signal> = all
        .iter()
        .filter(|o| matches!(o.kind, "frozen_token_account" | "unsolicited_token") && fact(o, "mint") == mint)
        .collect();
    if related.is_empty() {
        return None; // a freezable mint alone is an ordinary asset risk, not a honeypot
    }
    let freezer = fact(s, "freezeAuthority");
    let mut signal_ids = vec![s.id.clone()];
    signal_ids.extend(related.iter().map(|o| o.id.clone()));
    Some(Draft {
        kind: "freeze_honeypot",
        title: "Freeze honeypot: tokens that cannot be sold".into(),
        severity: related.iter().map(|o| o.severity).max().unwrap_or(s.severity).max(Severity::Medium),
        steps: steps(&[
            (freezer, format!("hands out or sells {mint} to the wallet")),
            (freezer, "freezes the wallet's token account so it cannot sell".into()),
        ]),
        assets: vec![token(mint, fact(s, "amount"), s)],
        signal_ids,
        remediation: "Do not buy more; only the freeze authority can send `thawAccount`. Burn and close the account to reclaim rent.".into(),
        fix: Fix::Unavailable(format!("Only the freeze authority {freezer} can thaw the account: the wallet has nothing to sign that frees the tokens.")),
    })
}

fn poisoning_misdirect(s: &Signal, all: &[Signal]) -> Draft {
    let (lookalike, imitated) = (fact(s, "lookalike"), fact(s, "imitated"));
    let sent: Vec<&Signal> =
        all.iter().filter(|o| o.kind == "sent_to_lookalike" && fact(o, "lookalike") == lookalike).collect();
    let mut signal_ids = vec![s.id.clone()];
    signal_ids.extend(sent.iter().map(|o| o.id.clone()));
    // A look-alike was paid in SOL (`lamports`) or in tokens (`amount`, with its mint as `asset`).
    let assets = sent
        .iter()
        .map(|o| match fact(o, "asset") {
            "SOL" => sol(amount(o, "lamports")),
            mint => token(mint, amount(o, "amount"), o),
        })
        .collect();
    Draft {
        kind: "poisoning_misdirect",
        title: "Transfer misdirected to a poisoned look-alike".into(),
        severity: if sent.is_empty() { Severity::Medium } else { Severity::Critical },
        steps: steps(&[
            (lookalike, format!("sends dust so it appears in the wallet's history next to {imitated}")),
            ("wallet", "copies the recipient from history and pays the look-alike".into()),
        ]),
        assets,
        signal_ids,
        remediation: format!("Verify every character of {imitated} before sending; add it to an address book."),
        fix: Fix::Unavailable(format!("No instruction undoes a transfer or removes a transaction from history: verify every character of {imitated} before sending.")),
    }
}
