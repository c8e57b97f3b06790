//! Instruction data of the programs the service understands, decoded into the ledger's domain
//! `Instruction` (the same `InstructionKind` the X-Ray engine reasons about), by the official
//! interface crates: `solana-system-interface`, `spl-token-interface`,
//! `spl-token-2022-interface`, `solana-stake-interface`, `spl-associated-token-account-interface`,
//! `solana-compute-budget-interface`; memo data is its UTF-8 text.
//!
//! Owns: `decode` (one compiled instruction → `Instruction`, named as the node's jsonParsed
//! names it). Pure; called on listener threads.
//!
//! Invariant: decoding never fails and never guesses — as in `ledger::instruction`, data a
//! program's layout does not read, or an account list too short for it, becomes
//! `InstructionKind::Raw` (its data in base58) with the program and accounts kept; an
//! instruction the service does not model becomes `Other` with its name.
//! Invariant: system and stake data are read as the runtime reads them: bincode with a byte
//! limit (a packet) and no trailing bytes.
//! Deliberately absent: inner instructions (a scan sees only what the message says; CPIs are
//! the simulation's), Token-2022's `Batch` contents (named `batch`, its data kept raw).

use bincode::Options;
use solana_stake_interface::instruction::StakeInstruction;
use solana_stake_interface::state::StakeAuthorize;
use solana_system_interface::instruction::SystemInstruction;
use spl_token_2022_interface::instruction::{AuthorityType, TokenInstruction};

use crate::ledger::instruction::{
    Instruction, InstructionIndex, InstructionKind as K, MintExtensionInit, Program, StakeAuthorityType,
    TokenAuthorityType,
};
use crate::pubkey::Pubkey;

/// One instruction's program, accounts and data, as the resolved message names them.
pub struct Call<'a> {
    pub index: u16,
    pub program_id: Pubkey,
    pub accounts: Vec<Pubkey>,
    pub data: &'a [u8],
}

impl Call<'_> {
    fn account(&self, i: usize) -> Option<Pubkey> {
        self.accounts.get(i).copied()
    }
}

/// Decodes one instruction. Never fails: see the module invariant.
pub fn decode(call: Call<'_>) -> Instruction {
    let program = Program::from_id(&call.program_id.to_string());
    let decoded = match program {
        Program::System => system(&call),
        Program::Token | Program::Token2022 => token(&call),
        Program::Stake => stake(&call),
        Program::AssociatedToken => ata(&call),
        Program::ComputeBudget => compute_budget(call.data),
        Program::Memo => memo(call.data),
        Program::Vote | Program::Other => None,
    };
    let (name, kind) = decoded.unwrap_or_else(|| ("unknown", K::Raw { data: bs58::encode(call.data).into_string() }));
    Instruction {
        index: InstructionIndex { outer: call.index, inner: None },
        program_id: call.program_id,
        program,
        name: name.to_owned(),
        kind,
        accounts: call.accounts,
    }
}

type Decoded = Option<(&'static str, K)>;

/// An address of any of the interface crates' address types (they differ by crate version).
fn key<A: AsRef<[u8]>>(a: &A) -> Pubkey {
    Pubkey(a.as_ref().try_into().unwrap_or([0; 32]))
}

fn system(c: &Call<'_>) -> Decoded {
    let ix: SystemInstruction = super::message::wire_options().deserialize(c.data).ok()?;
    let a = |i| c.account(i);
    Some(match ix {
        SystemInstruction::Transfer { lamports } => {
            ("transfer", K::SystemTransfer { from: a(0)?, to: a(1)?, lamports })
        }
        SystemInstruction::TransferWithSeed { lamports, .. } => {
            ("transferWithSeed", K::SystemTransfer { from: a(0)?, to: a(2)?, lamports })
        }
        SystemInstruction::CreateAccount { lamports, space, owner }
        | SystemInstruction::CreateAccountWithSeed { lamports, space, owner, .. } => {
            let account = a(1)?;
            ("createAccount", K::SystemCreateAccount { funder: a(0)?, account, lamports, space, owner: key(&owner) })
        }
        SystemInstruction::CreateAccountAllowPrefund { lamports, space, owner } => {
            let k = K::SystemCreateAccount { funder: a(1)?, account: a(0)?, lamports, space, owner: key(&owner) };
            ("createAccountAllowPrefund", k)
        }
        SystemInstruction::Assign { owner } => ("assign", K::SystemAssign { account: a(0)?, owner: key(&owner) }),
        SystemInstruction::AssignWithSeed { owner, .. } => {
            ("assignWithSeed", K::SystemAssign { account: a(0)?, owner: key(&owner) })
        }
        SystemInstruction::InitializeNonceAccount(authority) => {
            ("initializeNonce", K::NonceInitialize { nonce: a(0)?, authority: key(&authority) })
        }
        SystemInstruction::AdvanceNonceAccount => ("advanceNonce", K::NonceAdvance { nonce: a(0)?, authority: a(2)? }),
        SystemInstruction::AuthorizeNonceAccount(new_authority) => {
            let k = K::NonceAuthorize { nonce: a(0)?, authority: a(1)?, new_authority: key(&new_authority) };
            ("authorizeNonce", k)
        }
        SystemInstruction::WithdrawNonceAccount(lamports) => {
            ("withdrawFromNonce", K::NonceWithdraw { nonce: a(0)?, authority: a(4)?, to: a(1)?, lamports })
        }
        SystemInstruction::Allocate { .. } => ("allocate", K::Other),
        SystemInstruction::AllocateWithSeed { .. } => ("allocateWithSeed", K::Other),
        SystemInstruction::UpgradeNonceAccount => ("upgradeNonce", K::Other),
    })
}

/// Token-2022's `Batch` instruction tag (its contents are instructions of their own, kept raw).
/// Read by tag: the interface version that agrees with litesvm 0.13 (2.0) predates it.
const TOKEN_2022_BATCH_TAG: u8 = 255;

/// Both token programs: the classic instructions share their layout; Token-2022's extension
/// instructions are read by its interface. `spl-token-2022-interface` unpacks the classic
/// program's instructions too (the same tags 0–24).
fn token(c: &Call<'_>) -> Decoded {
    if c.data.first() == Some(&TOKEN_2022_BATCH_TAG) {
        return Some(("batch", K::Raw { data: bs58::encode(c.data).into_string() }));
    }
    let ix = TokenInstruction::unpack(c.data).ok()?;
    let a = |i| c.account(i);
    #[allow(deprecated)] // Token-2022 deprecates plain `Transfer`; a scan still reads it.
    Some(match ix {
        TokenInstruction::Transfer { amount } => {
            let k = K::TokenTransfer { source: a(0)?, destination: a(1)?, authority: a(2)?, amount, mint: None };
            ("transfer", k)
        }
        TokenInstruction::TransferChecked { amount, .. } => {
            let k = K::TokenTransfer { source: a(0)?, destination: a(2)?, authority: a(3)?, amount, mint: a(1) };
            ("transferChecked", k)
        }
        TokenInstruction::Approve { amount } => {
            ("approve", K::TokenApprove { account: a(0)?, delegate: a(1)?, owner: a(2)?, amount, mint: None })
        }
        TokenInstruction::ApproveChecked { amount, .. } => {
            let k = K::TokenApprove { account: a(0)?, delegate: a(2)?, owner: a(3)?, amount, mint: a(1) };
            ("approveChecked", k)
        }
        TokenInstruction::Revoke => ("revoke", K::TokenRevoke { account: a(0)?, owner: a(1)? }),
        TokenInstruction::SetAuthority { authority_type, new_authority } => {
            let new_authority: Option<solana_address::Address> = new_authority.into();
            let k = K::TokenSetAuthority {
                target: a(0)?,
                authority_type: token_authority_type(authority_type),
                authority: a(1),
                new_authority: new_authority.as_ref().map(key),
            };
            ("setAuthority", k)
        }
        TokenInstruction::CloseAccount => {
            ("closeAccount", K::TokenCloseAccount { account: a(0)?, destination: a(1)?, owner: a(2)? })
        }
        TokenInstruction::InitializeAccount => {
            ("initializeAccount", K::TokenInitializeAccount { account: a(0)?, mint: a(1)?, owner: a(2)? })
        }
        TokenInstruction::InitializeAccount2 { owner } => {
            ("initializeAccount2", K::TokenInitializeAccount { account: a(0)?, mint: a(1)?, owner: key(&owner) })
        }
        TokenInstruction::InitializeAccount3 { owner } => {
            ("initializeAccount3", K::TokenInitializeAccount { account: a(0)?, mint: a(1)?, owner: key(&owner) })
        }
        TokenInstruction::InitializeMint { decimals, mint_authority, freeze_authority }
        | TokenInstruction::InitializeMint2 { decimals, mint_authority, freeze_authority } => {
            let freeze: Option<solana_address::Address> = freeze_authority.into();
            let k = K::TokenInitializeMint {
                mint: a(0)?,
                decimals,
                mint_authority: Some(key(&mint_authority)),
                freeze_authority: freeze.as_ref().map(key),
            };
            ("initializeMint", k)
        }
        TokenInstruction::MintTo { amount } | TokenInstruction::MintToChecked { amount, .. } => {
            ("mintTo", K::TokenMintTo { mint: a(0)?, account: a(1)?, amount, authority: a(2) })
        }
        TokenInstruction::Burn { amount } | TokenInstruction::BurnChecked { amount, .. } => {
            ("burn", K::TokenBurn { account: a(0)?, mint: a(1)?, amount, authority: a(2) })
        }
        TokenInstruction::FreezeAccount => {
            ("freezeAccount", K::TokenFreeze { account: a(0)?, mint: a(1)?, authority: a(2) })
        }
        TokenInstruction::ThawAccount => ("thawAccount", K::TokenThaw { account: a(0)?, mint: a(1)?, authority: a(2) }),
        TokenInstruction::InitializeMintCloseAuthority { close_authority } => {
            let authority: Option<solana_address::Address> = close_authority.into();
            let extension = MintExtensionInit::MintCloseAuthority { authority: authority.as_ref().map(key) };
            ("initializeMintCloseAuthority", K::TokenMintExtension { mint: a(0)?, extension })
        }
        TokenInstruction::InitializePermanentDelegate { delegate } => {
            let extension = MintExtensionInit::PermanentDelegate { delegate: Some(key(&delegate)) };
            ("initializePermanentDelegate", K::TokenMintExtension { mint: a(0)?, extension })
        }
        TokenInstruction::InitializeNonTransferableMint => {
            let extension = MintExtensionInit::NonTransferable;
            ("initializeNonTransferableMint", K::TokenMintExtension { mint: a(0)?, extension })
        }
        TokenInstruction::TransferFeeExtension => return transfer_fee(c),
        TokenInstruction::TransferHookExtension => return transfer_hook(c),
        TokenInstruction::SyncNative => ("syncNative", K::Other),
        TokenInstruction::InitializeImmutableOwner => ("initializeImmutableOwner", K::Other),
        _ => ("other", K::Other),
    })
}

fn token_authority_type(t: AuthorityType) -> TokenAuthorityType {
    match t {
        AuthorityType::AccountOwner => TokenAuthorityType::AccountOwner,
        AuthorityType::CloseAccount => TokenAuthorityType::CloseAccount,
        AuthorityType::MintTokens => TokenAuthorityType::MintTokens,
        AuthorityType::FreezeAccount => TokenAuthorityType::FreezeAccount,
        other => TokenAuthorityType::Other(format!("{other:?}")),
    }
}

fn transfer_fee(c: &Call<'_>) -> Decoded {
    use spl_token_2022_interface::extension::transfer_fee::instruction::TransferFeeInstruction as F;
    let a = |i| c.account(i);
    Some(match F::unpack(c.data.get(1..)?).ok()? {
        F::TransferCheckedWithFee { amount, .. } => {
            let k = K::TokenTransfer { source: a(0)?, destination: a(2)?, authority: a(3)?, amount, mint: a(1) };
            ("transferCheckedWithFee", k)
        }
        F::InitializeTransferFeeConfig { transfer_fee_basis_points, maximum_fee, .. } => {
            let extension =
                MintExtensionInit::TransferFeeConfig { basis_points: transfer_fee_basis_points, maximum_fee };
            ("initializeTransferFeeConfig", K::TokenMintExtension { mint: a(0)?, extension })
        }
        _ => ("transferFeeExtension", K::Other),
    })
}

fn transfer_hook(c: &Call<'_>) -> Decoded {
    use spl_token_2022_interface::extension::transfer_hook::instruction::{
        InitializeInstructionData, TransferHookInstruction,
    };
    use spl_token_2022_interface::instruction::{decode_instruction_data, decode_instruction_type};
    let rest = c.data.get(1..)?;
    match decode_instruction_type::<TransferHookInstruction>(rest).ok()? {
        TransferHookInstruction::Initialize => {
            let d: &InitializeInstructionData = decode_instruction_data(rest).ok()?;
            let authority = Option::<solana_address::Address>::from(d.authority);
            let program_id = Option::<solana_address::Address>::from(d.program_id);
            let extension = MintExtensionInit::TransferHook {
                authority: authority.as_ref().map(key),
                program_id: program_id.as_ref().map(key),
            };
            Some(("initializeTransferHook", K::TokenMintExtension { mint: c.account(0)?, extension }))
        }
        TransferHookInstruction::Update => Some(("updateTransferHook", K::Other)),
    }
}

fn stake(c: &Call<'_>) -> Decoded {
    let ix: StakeInstruction = super::message::wire_options().deserialize(c.data).ok()?;
    let a = |i| c.account(i);
    let authority_type = |t: StakeAuthorize| match t {
        StakeAuthorize::Staker => StakeAuthorityType::Staker,
        StakeAuthorize::Withdrawer => StakeAuthorityType::Withdrawer,
    };
    let custodian = |p| Some(key(&p)).filter(|c| *c != Pubkey::default());
    Some(match ix {
        StakeInstruction::Initialize(authorized, lockup) => {
            let k = K::StakeInitialize {
                stake: a(0)?,
                staker: key(&authorized.staker),
                withdrawer: key(&authorized.withdrawer),
                custodian: custodian(lockup.custodian),
            };
            ("initialize", k)
        }
        StakeInstruction::InitializeChecked => {
            let k = K::StakeInitialize { stake: a(0)?, staker: a(2)?, withdrawer: a(3)?, custodian: None };
            ("initializeChecked", k)
        }
        StakeInstruction::Authorize(new_authority, t) => {
            let k = K::StakeAuthorize {
                stake: a(0)?,
                authority: a(2)?,
                new_authority: key(&new_authority),
                authority_type: authority_type(t),
            };
            ("authorize", k)
        }
        StakeInstruction::AuthorizeChecked(t) => {
            let k = K::StakeAuthorize {
                stake: a(0)?,
                authority: a(2)?,
                new_authority: a(3)?,
                authority_type: authority_type(t),
            };
            ("authorizeChecked", k)
        }
        StakeInstruction::AuthorizeWithSeed(args) => {
            let k = K::StakeAuthorize {
                stake: a(0)?,
                authority: a(1)?,
                new_authority: key(&args.new_authorized_pubkey),
                authority_type: authority_type(args.stake_authorize),
            };
            ("authorizeWithSeed", k)
        }
        StakeInstruction::AuthorizeCheckedWithSeed(args) => {
            let k = K::StakeAuthorize {
                stake: a(0)?,
                authority: a(1)?,
                new_authority: a(3)?,
                authority_type: authority_type(args.stake_authorize),
            };
            ("authorizeCheckedWithSeed", k)
        }
        StakeInstruction::DelegateStake => {
            ("delegate", K::StakeDelegate { stake: a(0)?, vote: a(1)?, authority: a(5)? })
        }
        StakeInstruction::Deactivate => ("deactivate", K::StakeDeactivate { stake: a(0)?, authority: a(2)? }),
        StakeInstruction::Withdraw(lamports) => {
            ("withdraw", K::StakeWithdraw { stake: a(0)?, to: a(1)?, authority: a(4)?, lamports })
        }
        StakeInstruction::Split(_) => ("split", K::Other),
        StakeInstruction::Merge => ("merge", K::Other),
        _ => ("other", K::Other),
    })
}

fn ata(c: &Call<'_>) -> Decoded {
    use borsh::BorshDeserialize;
    use spl_associated_token_account_interface::instruction::AssociatedTokenAccountInstruction as A;
    // An empty data field is the original `Create`.
    let ix = if c.data.is_empty() { A::Create } else { A::try_from_slice(c.data).ok()? };
    let a = |i| c.account(i);
    let create = || Some(K::AtaCreate { funder: a(0)?, account: a(1)?, wallet: a(2)?, mint: a(3)? });
    Some(match ix {
        A::Create => ("create", create()?),
        A::CreateIdempotent => ("createIdempotent", create()?),
        A::RecoverNested => ("recoverNested", K::Other),
    })
}

fn compute_budget(data: &[u8]) -> Decoded {
    use borsh::BorshDeserialize;
    use solana_compute_budget_interface::ComputeBudgetInstruction as B;
    Some(match B::try_from_slice(data).ok()? {
        B::RequestHeapFrame(_) => ("requestHeapFrame", K::Other),
        B::SetComputeUnitLimit(_) => ("setComputeUnitLimit", K::Other),
        B::SetComputeUnitPrice(_) => ("setComputeUnitPrice", K::Other),
        B::SetLoadedAccountsDataSizeLimit(_) => ("setLoadedAccountsDataSizeLimit", K::Other),
        B::Unused => return None,
    })
}

/// What a Compute Budget instruction sets that the fee depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComputeBudgetSetting {
    UnitLimit(u32),
    /// Micro-lamports per compute unit.
    UnitPrice(u64),
    /// Heap frame, loaded data size: no bearing on the fee.
    Other,
}

/// The setting a Compute Budget instruction's data makes, when it reads.
pub fn compute_budget_setting(data: &[u8]) -> Option<ComputeBudgetSetting> {
    use borsh::BorshDeserialize;
    use solana_compute_budget_interface::ComputeBudgetInstruction as B;
    Some(match B::try_from_slice(data).ok()? {
        B::SetComputeUnitLimit(units) => ComputeBudgetSetting::UnitLimit(units),
        B::SetComputeUnitPrice(price) => ComputeBudgetSetting::UnitPrice(price),
        B::Unused => return None,
        _ => ComputeBudgetSetting::Other,
    })
}

fn memo(data: &[u8]) -> Decoded {
    let text = std::str::from_utf8(data).ok()?;
    Some(("memo", K::Memo { text: text.to_owned() }))
}
