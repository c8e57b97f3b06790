//! Fix instructions byte for byte against the official encoders (spl-token-interface 3,
//! spl-token-2022-interface 4, solana-system-interface 3.3, solana-stake-interface 4.4): the
//! same program id, the same account metas in the same order, and the same data bytes (ours
//! decoded from base58). Every builder, both token programs, every authority kind with and
//! without a new authority, stake with and without a custodian — on fixed keys and on random
//! ones.

use proptest::prelude::*;
use solana_address::Address;
use solana_instruction::Instruction;
use solana_stake_interface::state::StakeAuthorize;

use xray::engine::fixes::{self, FixInstruction, StakeAuthority, TokenAuthority};
use xray::ledger::model::TokenProgram;
use xray::pubkey::Pubkey;

const PROGRAMS: [TokenProgram; 2] = [TokenProgram::Token, TokenProgram::Token2022];
const TOKEN_AUTHORITIES: [TokenAuthority; 4] = [
    TokenAuthority::MintTokens,
    TokenAuthority::FreezeAccount,
    TokenAuthority::AccountOwner,
    TokenAuthority::CloseAccount,
];
const STAKE_AUTHORITIES: [StakeAuthority; 2] = [StakeAuthority::Staker, StakeAuthority::Withdrawer];

/// Program id, (pubkey, signer, writable) of each account, data — all as bytes.
type Decoded = ([u8; 32], Vec<([u8; 32], bool, bool)>, Vec<u8>);

/// Runs `$call` with `$module` the interface crate of `$program` and `$id` its program id.
macro_rules! official_token {
    ($program:expr, |$module:ident, $id:ident| $call:expr) => {
        match $program {
            TokenProgram::Token => {
                use spl_token_interface as $module;
                let $id = $module::id();
                $call
            }
            TokenProgram::Token2022 => {
                use spl_token_2022_interface as $module;
                let $id = $module::id();
                $call
            }
        }
    };
}

/// `kind` as the `AuthorityType` of the interface crate `$module`.
macro_rules! authority_type {
    ($module:ident, $kind:expr) => {
        match $kind {
            TokenAuthority::MintTokens => $module::instruction::AuthorityType::MintTokens,
            TokenAuthority::FreezeAccount => $module::instruction::AuthorityType::FreezeAccount,
            TokenAuthority::AccountOwner => $module::instruction::AuthorityType::AccountOwner,
            TokenAuthority::CloseAccount => $module::instruction::AuthorityType::CloseAccount,
        }
    };
}

fn key(b: u8) -> Pubkey {
    Pubkey([b; 32])
}

fn address(key: &Pubkey) -> Address {
    Address::new_from_array(key.0)
}

fn decode_ours(ix: &FixInstruction) -> Decoded {
    let bytes = |text: &str| Pubkey::parse(text).unwrap().0;
    let accounts = ix.accounts.iter().map(|a| (bytes(&a.pubkey), a.is_signer, a.is_writable)).collect();
    (bytes(&ix.program_id), accounts, bs58::decode(&ix.data).into_vec().unwrap())
}

fn decode_official(ix: &Instruction) -> Decoded {
    let accounts = ix.accounts.iter().map(|m| (m.pubkey.to_bytes(), m.is_signer, m.is_writable)).collect();
    (ix.program_id.to_bytes(), accounts, ix.data.clone())
}

fn same(ours: &FixInstruction, official: &Instruction) -> Result<(), TestCaseError> {
    prop_assert_eq!(decode_ours(ours), decode_official(official), "{:?}", ours);
    Ok(())
}

fn check_revoke(program: TokenProgram, account: &Pubkey, owner: &Pubkey) -> Result<(), TestCaseError> {
    let ours = fixes::token_revoke(program, account, owner, "revoke".to_owned());
    let (account, owner) = (address(account), address(owner));
    let official = official_token!(program, |t, id| t::instruction::revoke(&id, &account, &owner, &[]).unwrap());
    same(&ours, &official)
}

fn check_close(
    program: TokenProgram,
    account: &Pubkey,
    destination: &Pubkey,
    owner: &Pubkey,
) -> Result<(), TestCaseError> {
    let ours = fixes::token_close_account(program, account, destination, owner, "close".to_owned());
    let (account, destination, owner) = (address(account), address(destination), address(owner));
    let official =
        official_token!(program, |t, id| t::instruction::close_account(&id, &account, &destination, &owner, &[])
            .unwrap());
    same(&ours, &official)
}

fn check_set_authority(
    program: TokenProgram,
    owned: &Pubkey,
    kind: TokenAuthority,
    new: Option<&Pubkey>,
    current: &Pubkey,
) -> Result<(), TestCaseError> {
    let ours = fixes::token_set_authority(program, owned, kind, new, current, "set authority".to_owned());
    let (owned, new, current) = (address(owned), new.map(address), address(current));
    let official = official_token!(program, |t, id| t::instruction::set_authority(
        &id,
        &owned,
        new.as_ref(),
        authority_type!(t, kind),
        &current,
        &[]
    )
    .unwrap());
    same(&ours, &official)
}

fn check_nonce_authorize(nonce: &Pubkey, authority: &Pubkey, new: &Pubkey) -> Result<(), TestCaseError> {
    let ours = fixes::nonce_authorize(nonce, authority, new, "authorize nonce".to_owned());
    let official = solana_system_interface::instruction::authorize_nonce_account(
        &address(nonce),
        &address(authority),
        &address(new),
    );
    same(&ours, &official)
}

fn check_nonce_withdraw(nonce: &Pubkey, authority: &Pubkey, to: &Pubkey, lamports: u64) -> Result<(), TestCaseError> {
    let ours = fixes::nonce_withdraw(nonce, authority, to, lamports, "withdraw nonce".to_owned());
    let official = solana_system_interface::instruction::withdraw_nonce_account(
        &address(nonce),
        &address(authority),
        &address(to),
        lamports,
    );
    same(&ours, &official)
}

fn check_stake_authorize(
    stake: &Pubkey,
    authority: &Pubkey,
    new: &Pubkey,
    which: StakeAuthority,
    custodian: Option<&Pubkey>,
) -> Result<(), TestCaseError> {
    let ours = fixes::stake_authorize(stake, authority, new, which, custodian, "authorize stake".to_owned());
    let official_which = match which {
        StakeAuthority::Staker => StakeAuthorize::Staker,
        StakeAuthority::Withdrawer => StakeAuthorize::Withdrawer,
    };
    let custodian = custodian.map(address);
    let official = solana_stake_interface::instruction::authorize(
        &address(stake),
        &address(authority),
        &address(new),
        official_which,
        custodian.as_ref(),
    );
    same(&ours, &official)
}

#[test]
fn token_instructions_match_on_fixed_keys() {
    for program in PROGRAMS {
        check_revoke(program, &key(1), &key(2)).unwrap();
        check_close(program, &key(1), &key(3), &key(2)).unwrap();
        // The owner takes the lamports: one key in two roles.
        check_close(program, &key(1), &key(2), &key(2)).unwrap();
        for kind in TOKEN_AUTHORITIES {
            check_set_authority(program, &key(1), kind, Some(&key(4)), &key(2)).unwrap();
            check_set_authority(program, &key(1), kind, None, &key(2)).unwrap();
        }
    }
}

#[test]
fn nonce_instructions_match_on_fixed_keys() {
    check_nonce_authorize(&key(7), &key(8), &key(4)).unwrap();
    for lamports in [0, 1, 1_447_680, 0x0102_0304_0506_0708, u64::MAX] {
        check_nonce_withdraw(&key(7), &key(8), &key(9), lamports).unwrap();
    }
}

#[test]
fn stake_authorize_matches_on_fixed_keys() {
    for which in STAKE_AUTHORITIES {
        check_stake_authorize(&key(10), &key(11), &key(4), which, None).unwrap();
        check_stake_authorize(&key(10), &key(11), &key(4), which, Some(&key(12))).unwrap();
    }
}

fn any_key() -> impl Strategy<Value = Pubkey> {
    any::<[u8; 32]>().prop_map(Pubkey)
}

fn any_program() -> impl Strategy<Value = TokenProgram> {
    prop::sample::select(PROGRAMS.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn token_revoke_matches(program in any_program(), account in any_key(), owner in any_key()) {
        check_revoke(program, &account, &owner)?;
    }

    #[test]
    fn token_close_account_matches(
        program in any_program(),
        account in any_key(),
        destination in any_key(),
        owner in any_key(),
    ) {
        check_close(program, &account, &destination, &owner)?;
    }

    #[test]
    fn token_set_authority_matches(
        program in any_program(),
        owned in any_key(),
        kind in prop::sample::select(TOKEN_AUTHORITIES.to_vec()),
        new in proptest::option::of(any_key()),
        current in any_key(),
    ) {
        check_set_authority(program, &owned, kind, new.as_ref(), &current)?;
    }

    #[test]
    fn nonce_authorize_matches(nonce in any_key(), authority in any_key(), new in any_key()) {
        check_nonce_authorize(&nonce, &authority, &new)?;
    }

    #[test]
    fn nonce_withdraw_matches(nonce in any_key(), authority in any_key(), to in any_key(), lamports in any::<u64>()) {
        check_nonce_withdraw(&nonce, &authority, &to, lamports)?;
    }

    #[test]
    fn stake_authorize_matches(
        stake in any_key(),
        authority in any_key(),
        new in any_key(),
        which in prop::sample::select(STAKE_AUTHORITIES.to_vec()),
        custodian in proptest::option::of(any_key()),
    ) {
        check_stake_authorize(&stake, &authority, &new, which, custodian.as_ref())?;
    }
}
