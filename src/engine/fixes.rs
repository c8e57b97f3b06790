//! Fix instructions: unsigned Solana instructions the wallet owner can sign to remove an
//! exposure — revoke a token delegation, close or take back a token account, hand a nonce or
//! stake authority back, drain a nonce account.
//!
//! Owns: `FixInstruction` and `FixAccount` (the JSON form `{programId, accounts: [{pubkey,
//! isSigner, isWritable}], data, description}`, `data` the instruction bytes in base58) and one
//! builder per instruction. The signal detectors and attack paths call them on compute threads
//! and write the human `description`. Pure: no I/O, no clock. `token_set_authority` has no
//! caller yet: in every exposure the engine finds, only the foreign authority could sign it.
//!
//! Invariant: every builder's bytes and account metas are checked byte for byte by
//! tests/integration/engine/fixes.rs against the official interface crates (spl-token,
//! spl-token-2022, solana-system, solana-stake); accounts stand in the order the program
//! expects, with the signer and writable flags those crates give them.
//! Invariant: the owner or authority is a single signer — in the X-Ray always the wallet; stake `Authorize` keeps the Clock
//! sysvar in its accounts, the layout every version of the stake program accepts.
//! Deliberately absent: signing, recent blockhashes and transaction assembly, multisig owners
//! (their extra signer accounts), compute-budget instructions.

use serde::Serialize;

use crate::ledger::instruction::ids;
use crate::ledger::model::TokenProgram;
use crate::pubkey::Pubkey;

/// The RecentBlockhashes sysvar, read by `WithdrawNonceAccount`.
pub const SYSVAR_RECENT_BLOCKHASHES: &str = "SysvarRecentB1ockHashes11111111111111111111";
/// The Rent sysvar, read by `WithdrawNonceAccount`.
pub const SYSVAR_RENT: &str = "SysvarRent111111111111111111111111111111111";
/// The Clock sysvar, read by stake `Authorize`.
pub const SYSVAR_CLOCK: &str = "SysvarC1ock11111111111111111111111111111111";

/// Token instruction tags (the first data byte).
const TOKEN_REVOKE: u8 = 5;
const TOKEN_SET_AUTHORITY: u8 = 6;
const TOKEN_CLOSE_ACCOUNT: u8 = 9;
/// System instruction tags (u32 little-endian).
const SYSTEM_WITHDRAW_NONCE_ACCOUNT: u32 = 5;
const SYSTEM_AUTHORIZE_NONCE_ACCOUNT: u32 = 7;
/// Stake instruction tag (u32 little-endian).
const STAKE_AUTHORIZE: u32 = 1;

/// One unsigned instruction, as the client receives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FixInstruction {
    pub program_id: String,
    pub accounts: Vec<FixAccount>,
    /// The instruction bytes in base58.
    pub data: String,
    pub description: String,
}

/// One account of a `FixInstruction`, in the program's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FixAccount {
    pub pubkey: String,
    pub is_signer: bool,
    pub is_writable: bool,
}

/// Which authority of a mint or token account `SetAuthority` replaces; the values are the
/// token program's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenAuthority {
    MintTokens = 0,
    FreezeAccount = 1,
    AccountOwner = 2,
    CloseAccount = 3,
}

/// Which authority of a stake account `Authorize` replaces; the values are the stake program's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StakeAuthority {
    Staker = 0,
    Withdrawer = 1,
}

/// Token `Revoke`: ends `account`'s delegation. Accounts: account (writable), owner (signer).
pub fn token_revoke(program: TokenProgram, account: &Pubkey, owner: &Pubkey, description: String) -> FixInstruction {
    fix(program.id(), vec![writable(account), signer(owner)], vec![TOKEN_REVOKE], description)
}

/// Token `CloseAccount`: closes `account`, its lamports to `destination`. Accounts: account
/// (writable), destination (writable), owner or close authority (signer).
pub fn token_close_account(
    program: TokenProgram,
    account: &Pubkey,
    destination: &Pubkey,
    owner: &Pubkey,
    description: String,
) -> FixInstruction {
    let accounts = vec![writable(account), writable(destination), signer(owner)];
    fix(program.id(), accounts, vec![TOKEN_CLOSE_ACCOUNT], description)
}

/// Token `SetAuthority`: gives `kind` of `owned` (a mint or token account) to `new_authority`,
/// or removes it with `None`. Accounts: owned (writable), current authority (signer).
pub fn token_set_authority(
    program: TokenProgram,
    owned: &Pubkey,
    kind: TokenAuthority,
    new_authority: Option<&Pubkey>,
    current_authority: &Pubkey,
    description: String,
) -> FixInstruction {
    let mut data = vec![TOKEN_SET_AUTHORITY, kind as u8];
    match new_authority {
        Some(key) => {
            data.push(1);
            data.extend_from_slice(key.as_bytes());
        }
        None => data.push(0),
    }
    fix(program.id(), vec![writable(owned), signer(current_authority)], data, description)
}

/// System `AuthorizeNonceAccount`: hands `nonce` to `new_authority`. Accounts: nonce
/// (writable), current authority (signer).
pub fn nonce_authorize(
    nonce: &Pubkey,
    authority: &Pubkey,
    new_authority: &Pubkey,
    description: String,
) -> FixInstruction {
    let mut data = tagged(SYSTEM_AUTHORIZE_NONCE_ACCOUNT);
    data.extend_from_slice(new_authority.as_bytes());
    fix(ids::SYSTEM, vec![writable(nonce), signer(authority)], data, description)
}

/// System `WithdrawNonceAccount`: moves `lamports` out of `nonce` to `to`. Accounts: nonce
/// (writable), to (writable), RecentBlockhashes and Rent sysvars, authority (signer).
pub fn nonce_withdraw(
    nonce: &Pubkey,
    authority: &Pubkey,
    to: &Pubkey,
    lamports: u64,
    description: String,
) -> FixInstruction {
    let mut data = tagged(SYSTEM_WITHDRAW_NONCE_ACCOUNT);
    data.extend_from_slice(&lamports.to_le_bytes());
    let accounts = vec![
        writable(nonce),
        writable(to),
        read_only(SYSVAR_RECENT_BLOCKHASHES),
        read_only(SYSVAR_RENT),
        signer(authority),
    ];
    fix(ids::SYSTEM, accounts, data, description)
}

/// Stake `Authorize`: gives the `which` authority of `stake` to `new_authority`. Accounts:
/// stake (writable), Clock sysvar, current authority (signer), then the lockup custodian
/// (signer) when one is needed.
pub fn stake_authorize(
    stake: &Pubkey,
    authority: &Pubkey,
    new_authority: &Pubkey,
    which: StakeAuthority,
    custodian: Option<&Pubkey>,
    description: String,
) -> FixInstruction {
    let mut data = tagged(STAKE_AUTHORIZE);
    data.extend_from_slice(new_authority.as_bytes());
    data.extend_from_slice(&(which as u32).to_le_bytes());
    let mut accounts = vec![writable(stake), read_only(SYSVAR_CLOCK), signer(authority)];
    accounts.extend(custodian.map(signer));
    fix(ids::STAKE, accounts, data, description)
}

/// The instruction of `program_id` with `data` in base58.
fn fix(program_id: &str, accounts: Vec<FixAccount>, data: Vec<u8>, description: String) -> FixInstruction {
    FixInstruction { program_id: program_id.to_owned(), accounts, data: bs58::encode(data).into_string(), description }
}

/// The data of a system or stake instruction so far: its tag as a u32, little-endian (bincode).
fn tagged(tag: u32) -> Vec<u8> {
    tag.to_le_bytes().to_vec()
}

fn writable(key: &Pubkey) -> FixAccount {
    FixAccount { pubkey: key.to_string(), is_signer: false, is_writable: true }
}

/// A read-only signer: the owners and authorities sign, their accounts are not written.
fn signer(key: &Pubkey) -> FixAccount {
    FixAccount { pubkey: key.to_string(), is_signer: true, is_writable: false }
}

fn read_only(id: &str) -> FixAccount {
    FixAccount { pubkey: id.to_owned(), is_signer: false, is_writable: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> Pubkey {
        Pubkey([b; 32])
    }

    #[test]
    fn json_is_camel_case_with_base58_data() {
        let ix = token_revoke(TokenProgram::Token, &key(1), &key(2), "Revoke the delegation".to_owned());
        let json = serde_json::to_value(&ix).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "programId": ids::TOKEN,
                "accounts": [
                    {"pubkey": key(1).to_string(), "isSigner": false, "isWritable": true},
                    {"pubkey": key(2).to_string(), "isSigner": true, "isWritable": false},
                ],
                "data": bs58::encode([5u8]).into_string(),
                "description": "Revoke the delegation",
            })
        );
    }

    #[test]
    fn data_round_trips_through_base58() {
        let ix = nonce_withdraw(&key(7), &key(8), &key(9), 0x0102_0304_0506_0708, String::new());
        let bytes = bs58::decode(&ix.data).into_vec().unwrap();
        assert_eq!(bytes, [5, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1]);
        let ix = token_set_authority(
            TokenProgram::Token2022,
            &key(1),
            TokenAuthority::CloseAccount,
            None,
            &key(2),
            String::new(),
        );
        assert_eq!(ix.program_id, ids::TOKEN_2022);
        assert_eq!(bs58::decode(&ix.data).into_vec().unwrap(), [6, 3, 0]);
    }

    #[test]
    fn sysvar_ids_are_addresses() {
        for id in [SYSVAR_RECENT_BLOCKHASHES, SYSVAR_RENT, SYSVAR_CLOCK] {
            assert!(Pubkey::parse(id).is_ok(), "{id}");
        }
    }

    #[test]
    fn the_custodian_signs_last() {
        let ix = stake_authorize(&key(1), &key(2), &key(3), StakeAuthority::Withdrawer, Some(&key(4)), String::new());
        let last = ix.accounts.last().unwrap();
        assert_eq!(
            (last.pubkey.as_str(), last.is_signer, last.is_writable),
            (key(4).to_string().as_str(), true, false)
        );
        assert_eq!(ix.accounts.len(), 4);
    }
}
