//! Accounts and transactions for tests that run the runtime (its own, the guards'): accounts
//! in their on-chain layouts, packed by the official crates, and transactions compiled by the
//! official message builder.

use solana_address::Address;
use solana_instruction::Instruction;
use solana_message::{Message, VersionedMessage};
use solana_program_pack::Pack;
use solana_transaction::versioned::VersionedTransaction;
use spl_token_interface::state::{Account as TokenAccount, AccountState, Mint};

use super::{Moment, Outcome, PostAccount, PreAccount, Ran};
use crate::pubkey::Pubkey;

pub const SOL: u64 = 1_000_000_000;
pub const MOMENT: Moment = Moment { slot: 400_000_000, epoch: 925, unix_timestamp_s: 1_764_000_000 };

pub fn key(seed: u8) -> Pubkey {
    Pubkey([seed; 32])
}

pub fn addr(p: Pubkey) -> Address {
    Address::new_from_array(p.0)
}

pub fn token_program() -> Pubkey {
    Pubkey(spl_token_interface::id().to_bytes())
}

/// An unsigned legacy transaction of `ixs` paid by `payer` (signature slots zeroed).
pub fn transaction(payer: Pubkey, ixs: &[Instruction]) -> Vec<u8> {
    let message = Message::new(ixs, Some(&addr(payer)));
    let signatures = vec![Default::default(); usize::from(message.header.num_required_signatures)];
    let tx = VersionedTransaction { signatures, message: VersionedMessage::Legacy(message) };
    bincode::serialize(&tx).expect("serializes")
}

pub fn wallet(address: Pubkey, lamports: u64) -> PreAccount {
    PreAccount { address, lamports, owner: Pubkey::default(), data: Vec::new(), executable: false }
}

pub fn mint(address: Pubkey) -> PreAccount {
    let mut data = vec![0; Mint::LEN];
    let m = Mint {
        mint_authority: None.into(),
        supply: 1_000_000,
        decimals: 6,
        is_initialized: true,
        freeze_authority: None.into(),
    };
    m.pack_into_slice(&mut data);
    PreAccount { address, lamports: 1_461_600, owner: token_program(), data, executable: false }
}

pub fn token_account(address: Pubkey, mint: Pubkey, owner: Pubkey, amount: u64) -> PreAccount {
    let mut data = vec![0; TokenAccount::LEN];
    let a = TokenAccount {
        mint: addr(mint),
        owner: addr(owner),
        amount,
        delegate: None.into(),
        state: AccountState::Initialized,
        is_native: None.into(),
        delegated_amount: 0,
        close_authority: None.into(),
    };
    a.pack_into_slice(&mut data);
    PreAccount { address, lamports: 2_039_280, owner: token_program(), data, executable: false }
}

pub fn ran(outcome: Outcome) -> Ran {
    match outcome {
        Outcome::Ran(ran) => ran,
        Outcome::Skipped(why) => panic!("skipped: {why}"),
    }
}

pub fn token_state(post: &Option<PostAccount>) -> TokenAccount {
    TokenAccount::unpack(&post.as_ref().expect("exists").data).expect("a token account")
}

/// The SPL Memo v3 ELF (tests/fixtures/programs/README.md says where it comes from).
pub const MEMO_ELF: &[u8] = include_bytes!("../../tests/fixtures/programs/spl_memo-3.0.0.so");

/// An upgradeable program account at `id` naming its program-data account `data`.
pub fn upgradeable_program(id: Pubkey, data: Pubkey) -> PreAccount {
    let mut state = 2u32.to_le_bytes().to_vec();
    state.extend_from_slice(&data.0);
    PreAccount {
        address: id,
        lamports: 1_141_440,
        owner: Pubkey(super::programs::UPGRADEABLE_LOADER.to_bytes()),
        data: state,
        executable: true,
    }
}

/// The program-data account `address` holding `elf`, deployed at `slot`, no upgrade authority.
pub fn program_data(address: Pubkey, slot: u64, elf: &[u8]) -> PreAccount {
    let mut data = 3u32.to_le_bytes().to_vec();
    data.extend_from_slice(&slot.to_le_bytes());
    data.resize(super::PROGRAM_DATA_HEADER_LEN, 0);
    data.extend_from_slice(elf);
    PreAccount {
        address,
        lamports: SOL,
        owner: Pubkey(super::programs::UPGRADEABLE_LOADER.to_bytes()),
        data,
        executable: false,
    }
}
