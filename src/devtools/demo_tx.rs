//! `xray ledger demo-tx <case>`: serialized transactions against the demo ledger's wallets,
//! built with Solana's official instruction builders, for the scan's README example, its
//! tests and its load test.
//!
//! Owns: `CASES` (name, signer archetype, what it does) and `build` (a case → the base64 of an
//! unsigned transaction). Runs on the CLI's thread, reading the demo ledger for the accounts a
//! case needs (a wallet's token account, its nonce account).
//!
//! Invariant: every case is signed by a named archetype and touches only accounts the demo
//! holds (plus fresh addresses derived from the case's name), so the demo ledger simulates it.
//! Deliberately absent: signatures (a scan reads unsigned transactions; the demo has no
//! secret keys).

use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::instruction_parts;
use crate::ledger::demo::DemoLedger;
use crate::ledger::model::{NonceAccount, TokenAccount, TokenProgram};
use crate::ledger::read::LedgerSource;
use crate::ledger::transaction::message::{compile, sdk_address, InstructionParts};
use crate::pubkey::Pubkey;

/// `(case, signer archetype, what the transaction does)`.
pub const CASES: &[(&str, &str, &str)] = &[
    ("sol-transfer", "clean", "sends 0.25 SOL to a new address"),
    ("token-transfer", "clean", "sends one token of its first holding to a new address (its account created first)"),
    ("approve", "clean", "approves an unlimited delegate on its first token account"),
    ("revoke", "open_delegation", "revokes the delegate of its delegated token account"),
    ("set-owner", "clean", "gives its first token account to another owner"),
    ("close-authority", "clean", "gives its first token account's close authority away"),
    ("assign", "clean", "assigns its wallet to an unknown program"),
    ("nonce-authorize", "outsider_nonce", "hands the nonce account it is the authority of to another key"),
    ("durable-nonce", "outsider_nonce", "advances its nonce account, then sends 1 SOL: a signature that never expires"),
    ("nonce-withdraw", "outsider_nonce", "withdraws its nonce account's whole balance to another address (closing it)"),
    ("drain", "clean", "approve + owner change + 90 % of its SOL to a flagged drainer, in one transaction"),
    ("lookalike-send", "poisoning_victim", "sends 1 SOL to the look-alike of a friend it pays (address poisoning)"),
    ("split-drain-1", "clean", "sends 89 % of its SOL to a new address (the first part of a split drain)"),
    ("split-drain-2", "clean", "sends 8 % of its SOL (as it was) to the same address (the second part)"),
];

const LAMPORTS_PER_SOL: u64 = 1_000_000_000;

/// A fresh address for a case's counterparty (not on the demo ledger).
fn fresh(name: &str) -> Pubkey {
    Pubkey(Sha256::digest(format!("xray demo-tx {name}").as_bytes()).into())
}

fn token_program(program: TokenProgram) -> solana_address::Address {
    sdk_address(&Pubkey::parse(program.id()).unwrap_or_default())
}

/// The base64 of `case`'s unsigned transaction on the demo ledger of `seed`.
pub async fn build(case: &str, seed: u64) -> Result<String, String> {
    let ledger = DemoLedger::new(seed);
    let (_, archetype, _) = CASES
        .iter()
        .find(|(name, ..)| *name == case)
        .ok_or_else(|| format!("unknown case {case:?}; the cases: {}", names()))?;
    let signer = ledger.archetype(archetype).ok_or_else(|| format!("the demo has no archetype {archetype}"))?;
    let ixs = instructions(&ledger, case, signer).await?;
    let bytes = compile(signer, &ixs, [9; 32], false)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

pub fn names() -> String {
    CASES.iter().map(|(name, ..)| *name).collect::<Vec<_>>().join(", ")
}

async fn instructions(ledger: &DemoLedger, case: &str, me: Pubkey) -> Result<Vec<InstructionParts>, String> {
    let (a, stranger) = (sdk_address(&me), sdk_address(&fresh("stranger")));
    match case {
        "sol-transfer" => Ok(vec![instruction_parts!(solana_system_interface::instruction::transfer(
            &a,
            &stranger,
            LAMPORTS_PER_SOL / 4
        ))]),
        "assign" => Ok(vec![instruction_parts!(solana_system_interface::instruction::assign(
            &a,
            &sdk_address(&fresh("program"))
        ))]),
        "token-transfer" => {
            let t = holding(ledger, &me, |t| t.amount > 0).await?;
            let (mint, program) = (sdk_address(&t.mint), token_program(t.program));
            let to = spl_associated_token_account_interface::address::get_associated_token_address_with_program_id(
                &stranger, &mint, &program,
            );
            let create =
                spl_associated_token_account_interface::instruction::create_associated_token_account_idempotent(
                    &a, &stranger, &mint, &program,
                );
            let send = spl_token_interface::instruction::transfer_checked(
                &program,
                &sdk_address(&t.address),
                &mint,
                &to,
                &a,
                &[],
                1,
                t.decimals,
            )
            .map_err(|e| e.to_string())?;
            Ok(vec![instruction_parts!(create), instruction_parts!(send)])
        }
        "approve" => Ok(vec![approve(&holding(ledger, &me, |t| t.amount > 0).await?, &me)?]),
        "revoke" => {
            let t = holding(ledger, &me, |t| t.delegate.is_some()).await?;
            let ix =
                spl_token_interface::instruction::revoke(&token_program(t.program), &sdk_address(&t.address), &a, &[])
                    .map_err(|e| e.to_string())?;
            Ok(vec![instruction_parts!(ix)])
        }
        "set-owner" => Ok(vec![set_owner(&holding(ledger, &me, |t| t.amount > 0).await?, &me)?]),
        "close-authority" => {
            let t = holding(ledger, &me, |t| t.amount > 0).await?;
            let ix = spl_token_interface::instruction::set_authority(
                &token_program(t.program),
                &sdk_address(&t.address),
                Some(&stranger),
                spl_token_interface::instruction::AuthorityType::CloseAccount,
                &a,
                &[],
            )
            .map_err(|e| e.to_string())?;
            Ok(vec![instruction_parts!(ix)])
        }
        "nonce-authorize" => {
            let nonce = sdk_address(&nonce_of(ledger, &me).await?.address);
            Ok(vec![instruction_parts!(solana_system_interface::instruction::authorize_nonce_account(
                &nonce, &a, &stranger
            ))])
        }
        "durable-nonce" => {
            let nonce = sdk_address(&nonce_of(ledger, &me).await?.address);
            let advance = solana_system_interface::instruction::advance_nonce_account(&nonce, &a);
            let send = solana_system_interface::instruction::transfer(&a, &stranger, LAMPORTS_PER_SOL);
            Ok(vec![instruction_parts!(advance), instruction_parts!(send)])
        }
        "nonce-withdraw" => {
            // All of it: the planted account holds its rent-exempt minimum, and the runtime
            // refuses a withdrawal that would leave a nonce account below it (a whole balance
            // closes the account instead).
            let nonce = nonce_of(ledger, &me).await?;
            Ok(vec![instruction_parts!(solana_system_interface::instruction::withdraw_nonce_account(
                &sdk_address(&nonce.address),
                &a,
                &stranger,
                nonce.lamports
            ))])
        }
        "drain" => {
            let t = holding(ledger, &me, |t| t.amount > 0).await?;
            let drainer = DemoLedger::flagged_addresses()
                .into_iter()
                .find(|(_, _, kind)| *kind == "attacker")
                .map(|(k, ..)| k)
                .ok_or("the demo flags no attacker")?;
            let lamports =
                ledger.get_account_info(&me).await.map_err(|e| e.to_string())?.value.map_or(0, |w| w.lamports);
            let sweep = solana_system_interface::instruction::transfer(&a, &sdk_address(&drainer), lamports / 10 * 9);
            Ok(vec![approve(&t, &drainer)?, set_owner(&t, &drainer)?, instruction_parts!(sweep)])
        }
        "split-drain-1" | "split-drain-2" => {
            // Each below the sweep threshold (90 % of the SOL) alone, and the second also in
            // its place (8 % of the first balance is 73 % of what the first leaves); together
            // 97 %: only the sequence's whole (`transactions: [...]`) shows the drain.
            let percent = if case == "split-drain-1" { 89 } else { 8 };
            let lamports =
                ledger.get_account_info(&me).await.map_err(|e| e.to_string())?.value.map_or(0, |w| w.lamports);
            let to = sdk_address(&fresh("split-drain"));
            Ok(vec![instruction_parts!(solana_system_interface::instruction::transfer(
                &a,
                &to,
                lamports / 100 * percent
            ))])
        }
        "lookalike-send" => {
            let friend = ledger
                .auxiliary_accounts()
                .into_iter()
                .find(|(_, name, _)| name.starts_with("friend"))
                .map(|(k, ..)| k)
                .ok_or("the demo has no friend")?;
            let fake = crate::ledger::demo::keys::lookalike(&friend, "lookalike:friend").ok_or("no look-alike")?;
            let send = solana_system_interface::instruction::transfer(&a, &sdk_address(&fake), LAMPORTS_PER_SOL);
            Ok(vec![instruction_parts!(send)])
        }
        other => Err(format!("unknown case {other:?}; the cases: {}", names())),
    }
}

/// An unlimited approval of `t` to `delegate` (a fresh address when `delegate` is the owner).
fn approve(t: &TokenAccount, delegate: &Pubkey) -> Result<InstructionParts, String> {
    let delegate = if *delegate == t.owner { fresh("delegate") } else { *delegate };
    let ix = spl_token_interface::instruction::approve(
        &token_program(t.program),
        &sdk_address(&t.address),
        &sdk_address(&delegate),
        &sdk_address(&t.owner),
        &[],
        u64::MAX,
    )
    .map_err(|e| e.to_string())?;
    Ok(instruction_parts!(ix))
}

/// `t`'s owner changed to `to` (a fresh address when `to` is the owner).
fn set_owner(t: &TokenAccount, to: &Pubkey) -> Result<InstructionParts, String> {
    let to = if *to == t.owner { fresh("new-owner") } else { *to };
    let ix = spl_token_interface::instruction::set_authority(
        &token_program(t.program),
        &sdk_address(&t.address),
        Some(&sdk_address(&to)),
        spl_token_interface::instruction::AuthorityType::AccountOwner,
        &sdk_address(&t.owner),
        &[],
    )
    .map_err(|e| e.to_string())?;
    Ok(instruction_parts!(ix))
}

/// The first of `owner`'s SPL Token accounts that `wanted` accepts.
async fn holding(
    ledger: &DemoLedger,
    owner: &Pubkey,
    wanted: fn(&TokenAccount) -> bool,
) -> Result<TokenAccount, String> {
    let accounts = ledger.get_token_accounts_by_owner(owner, TokenProgram::Token).await.map_err(|e| e.to_string())?;
    accounts
        .value
        .iter()
        .filter_map(|k| TokenAccount::from_wire(Pubkey::parse(&k.pubkey).ok()?, &k.account))
        .find(wanted)
        .ok_or_else(|| format!("{owner} holds no token account this case can use"))
}

async fn nonce_of(ledger: &DemoLedger, authority: &Pubkey) -> Result<NonceAccount, String> {
    let accounts = ledger.get_nonce_accounts_by_authority(authority).await.map_err(|e| e.to_string())?;
    accounts
        .value
        .iter()
        .find_map(|k| NonceAccount::from_wire(Pubkey::parse(&k.pubkey).ok()?, &k.account))
        .ok_or_else(|| format!("{authority} is the authority of no nonce account"))
}
