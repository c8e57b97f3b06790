//! The demo's accounts in their on-chain byte layouts, and back: what the real runtime
//! (`crate::runtime`) executes on, and how its post-state returns to the demo's model (which
//! `emit` renders as a node's jsonParsed answer).
//!
//! Owns: `encode` (an `Acct` → the runtime's `PreAccount`) and `decode` (an account's owner,
//! lamports and bytes → an `Acct`). Pure; called where the demo simulates (a listener thread,
//! the local JSON-RPC server).
//!
//! Layouts are the official interface crates' wherever they can build the value: SPL Token and
//! Token-2022 accounts and mints (`Pack`, `StateWithExtensions`, extension by extension), stake
//! (`StakeStateV2`, bincode), lookup tables (`ProgramState` and the 56-byte header). Two are
//! written by hand, each checked in the tests against the official reader: a nonce account
//! (`DurableNonce` keeps its hash private, and the demo stores the nonce value itself) and an
//! upgradeable program's 36 bytes (never executed from here: the runtime runs only its own).
//!
//! Invariant: `decode(encode(a))` renders (`emit::account`) as `a` does for every account the
//! demo holds (tested over the whole world of a seed); it is `a` itself except for raw bytes
//! that are all zeros, which read back as the uninitialized account they are on the wire.
//! Invariant: bounded: an uninitialized account's zeros are at most the runtime's 10 MiB.
//! Deliberately absent: extensions the demo never creates (confidential transfers, metadata,
//! groups…): a mint or account carrying one decodes as raw `Bytes`, never a partial reading.

use solana_address::Address;
use solana_program_pack::Pack;
use spl_pod::optional_keys::OptionalNonZeroPubkey;
use spl_pod::primitives::{PodBool, PodU16, PodU64};
use spl_token_2022_interface::extension::default_account_state::DefaultAccountState;
use spl_token_2022_interface::extension::immutable_owner::ImmutableOwner;
use spl_token_2022_interface::extension::mint_close_authority::MintCloseAuthority;
use spl_token_2022_interface::extension::non_transferable::{NonTransferable, NonTransferableAccount};
use spl_token_2022_interface::extension::permanent_delegate::PermanentDelegate;
use spl_token_2022_interface::extension::transfer_fee::{TransferFee, TransferFeeAmount, TransferFeeConfig};
use spl_token_2022_interface::extension::transfer_hook::{TransferHook, TransferHookAccount};
use spl_token_2022_interface::extension::{
    BaseStateWithExtensions, BaseStateWithExtensionsMut, ExtensionType, StateWithExtensions, StateWithExtensionsMut,
};
use spl_token_2022_interface::state::{Account as TokenState, AccountState, Mint as MintState};

use super::keys::BUILTIN;
use super::state::{
    token_program_of, AccountExts, Acct, Data, Delegation, MintAcct, MintExt, StakeAcct, TokenAcct, NONCE_LEN,
    STAKE_LEN,
};
use crate::ledger::model::TokenProgram;
use crate::pubkey::Pubkey;
use crate::runtime::PreAccount;

/// The most zeros an uninitialized account is given as (the runtime's account data limit).
const UNINITIALIZED_BYTES_MAX: u64 = 10 * 1024 * 1024;

/// A nonce account's layout (`Versions::Current(State::Initialized(Data))`, bincode): the
/// version tag, the state tag, the authority, the nonce, the fee calculator's lamports.
const NONCE_VERSION_CURRENT: u32 = 1;
const NONCE_STATE_INITIALIZED: u32 = 1;
const NONCE_LAMPORTS_PER_SIGNATURE: u64 = 5_000;

/// `UpgradeableLoaderState::Program { programdata_address }`: tag 2, then the address.
const UPGRADEABLE_PROGRAM_TAG: u32 = 2;

/// The epoch a delegation that never deactivates names, and the rate stake accounts carry.
const STAKE_DEACTIVATION_EPOCH_NONE: u64 = u64::MAX;
const STAKE_WARMUP_COOLDOWN_RATE: f64 = 0.25;

fn address(p: &Pubkey) -> Address {
    Address::new_from_array(p.0)
}

fn pubkey(a: &Address) -> Pubkey {
    Pubkey(a.to_bytes())
}

fn optional(p: Option<Pubkey>) -> OptionalNonZeroPubkey {
    OptionalNonZeroPubkey::try_from(p.map(|p| address(&p))).unwrap_or_default()
}

fn from_optional(p: OptionalNonZeroPubkey) -> Option<Pubkey> {
    Option::<Address>::from(p).map(|a| pubkey(&a))
}

/// `a` at `at` as the runtime takes it, or why its layout could not be written (an error of
/// the demo's, never of a request's: every account of the demo's worlds is written in tests).
pub fn encode(at: Pubkey, a: &Acct) -> Result<PreAccount, String> {
    let data = data(a).map_err(|e| format!("account {at} cannot be written in its on-chain layout ({e})"))?;
    Ok(PreAccount { address: at, lamports: a.lamports, owner: a.owner, data, executable: a.executable() })
}

fn data(a: &Acct) -> Result<Vec<u8>, String> {
    let token_2022 = token_program_of(&a.owner) == Some(TokenProgram::Token2022);
    Ok(match &a.data {
        Data::Empty => Vec::new(),
        Data::Uninitialized { space } => vec![0; usize::try_from((*space).min(UNINITIALIZED_BYTES_MAX)).unwrap_or(0)],
        Data::Token(t) if token_2022 => token_2022_account(t)?,
        Data::Token(t) => {
            let mut out = vec![0; TokenState::LEN];
            token_state(t).pack_into_slice(&mut out);
            out
        }
        Data::Mint(m) if token_2022 => token_2022_mint(m)?,
        Data::Mint(m) => {
            let mut out = vec![0; MintState::LEN];
            mint_state(m).pack_into_slice(&mut out);
            out
        }
        Data::Nonce { authority, blockhash } => {
            let mut out = Vec::with_capacity(NONCE_LEN as usize);
            out.extend(NONCE_VERSION_CURRENT.to_le_bytes());
            out.extend(NONCE_STATE_INITIALIZED.to_le_bytes());
            out.extend(authority.0);
            out.extend(blockhash.0);
            out.extend(NONCE_LAMPORTS_PER_SIGNATURE.to_le_bytes());
            out
        }
        Data::Stake(s) => stake(s)?,
        Data::Program { program_data } => [&UPGRADEABLE_PROGRAM_TAG.to_le_bytes()[..], &program_data.0].concat(),
        Data::LookupTable { authority, addresses } => lookup_table(*authority, addresses)?,
        Data::Bytes(b) => b.clone(),
    })
}

fn token_state(t: &TokenAcct) -> TokenState {
    TokenState {
        mint: address(&t.mint),
        owner: address(&t.owner),
        amount: t.amount,
        delegate: t.delegate.map(|d| address(&d)).into(),
        state: if t.frozen { AccountState::Frozen } else { AccountState::Initialized },
        is_native: None.into(),
        delegated_amount: t.delegated_amount,
        close_authority: t.close_authority.map(|c| address(&c)).into(),
    }
}

fn mint_state(m: &MintAcct) -> MintState {
    MintState {
        mint_authority: m.mint_authority.map(|a| address(&a)).into(),
        supply: m.supply,
        decimals: m.decimals,
        is_initialized: true,
        freeze_authority: m.freeze_authority.map(|a| address(&a)).into(),
    }
}

fn token_2022_account(t: &TokenAcct) -> Result<Vec<u8>, String> {
    let mut types = vec![ExtensionType::ImmutableOwner];
    types.extend(t.exts.hook.then_some(ExtensionType::TransferHookAccount));
    types.extend(t.exts.fee.then_some(ExtensionType::TransferFeeAmount));
    types.extend(t.exts.non_transferable.then_some(ExtensionType::NonTransferableAccount));
    let len = ExtensionType::try_calculate_account_len::<TokenState>(&types).map_err(|e| e.to_string())?;
    let mut out = vec![0; len];
    let mut s = StateWithExtensionsMut::<TokenState>::unpack_uninitialized(&mut out).map_err(|e| e.to_string())?;
    s.init_extension::<ImmutableOwner>(true).map_err(|e| e.to_string())?;
    if t.exts.hook {
        s.init_extension::<TransferHookAccount>(true).map_err(|e| e.to_string())?.transferring = PodBool::from(false);
    }
    if t.exts.fee {
        s.init_extension::<TransferFeeAmount>(true).map_err(|e| e.to_string())?.withheld_amount =
            PodU64::from(t.withheld);
    }
    if t.exts.non_transferable {
        s.init_extension::<NonTransferableAccount>(true).map_err(|e| e.to_string())?;
    }
    s.base = token_state(t);
    s.pack_base();
    s.init_account_type().map_err(|e| e.to_string())?;
    Ok(out)
}

fn token_2022_mint(m: &MintAcct) -> Result<Vec<u8>, String> {
    let types: Vec<ExtensionType> = m.extensions.iter().map(extension_type).collect();
    let len = ExtensionType::try_calculate_account_len::<MintState>(&types).map_err(|e| e.to_string())?;
    let mut out = vec![0; len];
    let mut s = StateWithExtensionsMut::<MintState>::unpack_uninitialized(&mut out).map_err(|e| e.to_string())?;
    for e in &m.extensions {
        init_mint_extension(&mut s, e)?;
    }
    s.base = mint_state(m);
    s.pack_base();
    s.init_account_type().map_err(|e| e.to_string())?;
    Ok(out)
}

fn extension_type(e: &MintExt) -> ExtensionType {
    match e {
        MintExt::PermanentDelegate(_) => ExtensionType::PermanentDelegate,
        MintExt::TransferHook { .. } => ExtensionType::TransferHook,
        MintExt::TransferFee { .. } => ExtensionType::TransferFeeConfig,
        MintExt::NonTransferable => ExtensionType::NonTransferable,
        MintExt::DefaultFrozen => ExtensionType::DefaultAccountState,
        MintExt::CloseAuthority(_) => ExtensionType::MintCloseAuthority,
    }
}

fn init_mint_extension(s: &mut StateWithExtensionsMut<'_, MintState>, e: &MintExt) -> Result<(), String> {
    let written = match e {
        MintExt::PermanentDelegate(d) => {
            s.init_extension::<PermanentDelegate>(true).map(|x| x.delegate = optional(Some(*d)))
        }
        MintExt::TransferHook { authority, program } => s.init_extension::<TransferHook>(true).map(|x| {
            x.authority = optional(Some(*authority));
            x.program_id = optional(Some(*program));
        }),
        MintExt::TransferFee { authority, basis_points, maximum_fee, epoch } => {
            let fee = TransferFee {
                epoch: PodU64::from(*epoch),
                maximum_fee: PodU64::from(*maximum_fee),
                transfer_fee_basis_points: PodU16::from(*basis_points),
            };
            s.init_extension::<TransferFeeConfig>(true).map(|x| {
                x.transfer_fee_config_authority = optional(Some(*authority));
                x.withdraw_withheld_authority = optional(Some(*authority));
                x.older_transfer_fee = fee;
                x.newer_transfer_fee = fee;
            })
        }
        MintExt::NonTransferable => s.init_extension::<NonTransferable>(true).map(|_| ()),
        MintExt::DefaultFrozen => {
            s.init_extension::<DefaultAccountState>(true).map(|x| x.state = AccountState::Frozen as u8)
        }
        MintExt::CloseAuthority(c) => {
            s.init_extension::<MintCloseAuthority>(true).map(|x| x.close_authority = optional(Some(*c)))
        }
    };
    written.map_err(|e| e.to_string())
}

fn stake(s: &StakeAcct) -> Result<Vec<u8>, String> {
    use solana_stake_interface::stake_flags::StakeFlags;
    use solana_stake_interface::state::{self as st, Authorized, Lockup, Meta, StakeStateV2};
    let meta = Meta {
        rent_exempt_reserve: super::state::rent(STAKE_LEN),
        authorized: Authorized { staker: address(&s.staker), withdrawer: address(&s.withdrawer) },
        lockup: Lockup::default(),
    };
    let state = match &s.delegation {
        None => StakeStateV2::Initialized(meta),
        Some(d) => {
            #[allow(deprecated)] // the field is still in the layout
            let delegation = st::Delegation {
                voter_pubkey: address(&d.voter),
                stake: d.stake,
                activation_epoch: d.activation_epoch,
                deactivation_epoch: STAKE_DEACTIVATION_EPOCH_NONE,
                warmup_cooldown_rate: STAKE_WARMUP_COOLDOWN_RATE,
            };
            let stake = st::Stake { delegation, credits_observed: s.credits_observed };
            StakeStateV2::Stake(meta, stake, StakeFlags::empty())
        }
    };
    let mut out = bincode::serialize(&state).map_err(|e| e.to_string())?;
    out.resize(STAKE_LEN as usize, 0);
    Ok(out)
}

fn lookup_table(authority: Pubkey, addresses: &[Pubkey]) -> Result<Vec<u8>, String> {
    use solana_address_lookup_table_interface::state::{LookupTableMeta, ProgramState, LOOKUP_TABLE_META_SIZE};
    let meta = LookupTableMeta { authority: Some(address(&authority)), ..LookupTableMeta::default() };
    let mut out = bincode::serialize(&ProgramState::LookupTable(meta)).map_err(|e| e.to_string())?;
    out.resize(LOOKUP_TABLE_META_SIZE, 0);
    for a in addresses {
        out.extend(a.0);
    }
    Ok(out)
}

/// The demo's reading of an account the runtime left: `decimals` answers a mint's decimals
/// (a token account's bytes do not hold them). A layout the demo's model holds only in part (a
/// stake account's lockup and deactivation epoch, a table's deactivation slot, a fee config's
/// second authority and older fee, a Token-2022 account without `immutableOwner`…) reads as raw
/// `Bytes`: read only when writing the reading back gives the same bytes, so a change the model
/// cannot hold is never rendered as no change.
pub fn decode(owner: Pubkey, lamports: u64, bytes: &[u8], decimals: impl Fn(&Pubkey) -> Option<u8>) -> Acct {
    let read = Acct { lamports, owner, data: decode_data(&owner, bytes, decimals) };
    match data(&read) {
        Ok(written) if same_reading(&owner, &written, bytes) => read,
        _ => Acct { lamports, owner, data: Data::Bytes(bytes.to_vec()) },
    }
}

/// Whether `a` and `b` say the same by the official readers of `owner`'s layouts. Not byte
/// equality: the token programs leave a cleared option's old key in place (`COption::None`
/// writes only its tag), and a program may leave stale bytes past what it serialized.
fn same_reading(owner: &Pubkey, a: &[u8], b: &[u8]) -> bool {
    if token_program_of(owner).is_some() {
        return same_token_reading(a, b);
    }
    fn read<T: serde::de::DeserializeOwned + PartialEq>(a: &[u8], b: &[u8]) -> Option<bool> {
        Some(bincode::deserialize::<T>(a).ok()? == bincode::deserialize::<T>(b).ok()?)
    }
    let same = if *owner == BUILTIN.stake {
        read::<solana_stake_interface::state::StakeStateV2>(a, b)
    } else if *owner == BUILTIN.system && a.len() == NONCE_LEN as usize {
        read::<solana_nonce::versions::Versions>(a, b)
    } else if *owner == BUILTIN.lookup_table_program {
        use solana_address_lookup_table_interface::state::AddressLookupTable;
        let (x, y) = (AddressLookupTable::deserialize(a).ok(), AddressLookupTable::deserialize(b).ok());
        x.zip(y).map(|(x, y)| x.meta == y.meta && x.addresses == y.addresses)
    } else {
        None
    };
    same.unwrap_or(a == b)
}

/// Token accounts and mints: the same base by `unpack`, and the same extension bytes (their
/// fields have no options that keep stale bytes: an absent key is 32 zeros).
fn same_token_reading(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let tail_same = a.get(TokenState::LEN..) == b.get(TokenState::LEN..);
    if let (Ok(x), Ok(y)) = (StateWithExtensions::<TokenState>::unpack(a), StateWithExtensions::<TokenState>::unpack(b))
    {
        return x.base == y.base && tail_same;
    }
    if let (Ok(x), Ok(y)) = (StateWithExtensions::<MintState>::unpack(a), StateWithExtensions::<MintState>::unpack(b)) {
        return x.base == y.base && a.get(MintState::LEN..) == b.get(MintState::LEN..);
    }
    a == b
}

fn decode_data(owner: &Pubkey, bytes: &[u8], decimals: impl Fn(&Pubkey) -> Option<u8>) -> Data {
    if bytes.is_empty() {
        return Data::Empty;
    }
    if bytes.iter().all(|b| *b == 0) {
        return Data::Uninitialized { space: bytes.len() as u64 };
    }
    let read = match token_program_of(owner) {
        Some(_) => token_data(bytes, decimals),
        None if *owner == BUILTIN.system && bytes.len() == NONCE_LEN as usize => nonce(bytes),
        None if *owner == BUILTIN.stake => stake_data(bytes),
        None if *owner == BUILTIN.lookup_table_program => lookup_table_data(bytes),
        None if *owner == BUILTIN.bpf_upgradeable_loader && bytes.len() == 36 => {
            let tag = u32::from_le_bytes(bytes[..4].try_into().unwrap_or_default());
            let program_data = <[u8; 32]>::try_from(&bytes[4..]).ok().map(Pubkey);
            program_data.filter(|_| tag == UPGRADEABLE_PROGRAM_TAG).map(|program_data| Data::Program { program_data })
        }
        None => None,
    };
    read.unwrap_or_else(|| Data::Bytes(bytes.to_vec()))
}

fn token_data(bytes: &[u8], decimals: impl Fn(&Pubkey) -> Option<u8>) -> Option<Data> {
    if let Ok(s) = StateWithExtensions::<TokenState>::unpack(bytes) {
        let types = s.get_extension_types().ok()?;
        let known = [
            ExtensionType::ImmutableOwner,
            ExtensionType::TransferHookAccount,
            ExtensionType::TransferFeeAmount,
            ExtensionType::NonTransferableAccount,
        ];
        if types.iter().any(|t| !known.contains(t)) {
            return None;
        }
        let b = &s.base;
        let mint = pubkey(&b.mint);
        let exts = AccountExts {
            hook: types.contains(&ExtensionType::TransferHookAccount),
            fee: types.contains(&ExtensionType::TransferFeeAmount),
            non_transferable: types.contains(&ExtensionType::NonTransferableAccount),
        };
        let withheld = s.get_extension::<TransferFeeAmount>().map_or(0, |f| u64::from(f.withheld_amount));
        return Some(Data::Token(TokenAcct {
            mint,
            owner: pubkey(&b.owner),
            amount: b.amount,
            decimals: decimals(&mint)?,
            delegate: Option::<Address>::from(b.delegate).map(|d| pubkey(&d)),
            delegated_amount: b.delegated_amount,
            close_authority: Option::<Address>::from(b.close_authority).map(|c| pubkey(&c)),
            exts,
            withheld,
            frozen: b.state == AccountState::Frozen,
        }));
    }
    let s = StateWithExtensions::<MintState>::unpack(bytes).ok()?;
    let mut extensions = Vec::new();
    for t in s.get_extension_types().ok()? {
        extensions.push(mint_extension(&s, t)?);
    }
    let b = &s.base;
    Some(Data::Mint(MintAcct {
        decimals: b.decimals,
        supply: b.supply,
        mint_authority: Option::<Address>::from(b.mint_authority).map(|a| pubkey(&a)),
        freeze_authority: Option::<Address>::from(b.freeze_authority).map(|a| pubkey(&a)),
        extensions,
    }))
}

fn mint_extension(s: &StateWithExtensions<'_, MintState>, t: ExtensionType) -> Option<MintExt> {
    Some(match t {
        ExtensionType::PermanentDelegate => {
            MintExt::PermanentDelegate(from_optional(s.get_extension::<PermanentDelegate>().ok()?.delegate)?)
        }
        ExtensionType::TransferHook => {
            let x = s.get_extension::<TransferHook>().ok()?;
            MintExt::TransferHook { authority: from_optional(x.authority)?, program: from_optional(x.program_id)? }
        }
        ExtensionType::TransferFeeConfig => {
            let x = s.get_extension::<TransferFeeConfig>().ok()?;
            let fee = x.newer_transfer_fee;
            MintExt::TransferFee {
                authority: from_optional(x.transfer_fee_config_authority)?,
                basis_points: u16::from(fee.transfer_fee_basis_points),
                maximum_fee: u64::from(fee.maximum_fee),
                epoch: u64::from(fee.epoch),
            }
        }
        ExtensionType::NonTransferable => MintExt::NonTransferable,
        ExtensionType::DefaultAccountState => {
            let frozen = s.get_extension::<DefaultAccountState>().ok()?.state == AccountState::Frozen as u8;
            frozen.then_some(MintExt::DefaultFrozen)?
        }
        ExtensionType::MintCloseAuthority => {
            MintExt::CloseAuthority(from_optional(s.get_extension::<MintCloseAuthority>().ok()?.close_authority)?)
        }
        _ => return None,
    })
}

fn nonce(bytes: &[u8]) -> Option<Data> {
    use solana_nonce::state::State;
    use solana_nonce::versions::Versions;
    match bincode::deserialize::<Versions>(bytes).ok()?.state() {
        State::Initialized(d) => Some(Data::Nonce {
            authority: pubkey(&d.authority),
            blockhash: Pubkey(d.durable_nonce.as_hash().to_bytes()),
        }),
        State::Uninitialized => None,
    }
}

fn stake_data(bytes: &[u8]) -> Option<Data> {
    use solana_stake_interface::state::StakeStateV2;
    let (meta, stake) = match bincode::deserialize::<StakeStateV2>(bytes).ok()? {
        StakeStateV2::Initialized(meta) => (meta, None),
        StakeStateV2::Stake(meta, stake, _) => (meta, Some(stake)),
        _ => return None,
    };
    let delegation = stake.as_ref().map(|s| Delegation {
        voter: pubkey(&s.delegation.voter_pubkey),
        stake: s.delegation.stake,
        activation_epoch: s.delegation.activation_epoch,
    });
    Some(Data::Stake(StakeAcct {
        staker: pubkey(&meta.authorized.staker),
        withdrawer: pubkey(&meta.authorized.withdrawer),
        delegation,
        credits_observed: stake.map_or(0, |s| s.credits_observed),
    }))
}

fn lookup_table_data(bytes: &[u8]) -> Option<Data> {
    use solana_address_lookup_table_interface::state::AddressLookupTable;
    let table = AddressLookupTable::deserialize(bytes).ok()?;
    Some(Data::LookupTable {
        authority: table.meta.authority.map(|a| pubkey(&a))?,
        addresses: table.addresses.iter().map(pubkey).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::demo::DemoLedger;

    #[test]
    fn every_account_of_the_demo_reads_back_as_it_was() {
        let ledger = DemoLedger::new(42);
        let state = &ledger.world.state;
        let decimals = |mint: &Pubkey| match state.get(mint).map(|a| &a.data) {
            Some(Data::Mint(m)) => Some(m.decimals),
            _ => None,
        };
        let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
        for (at, a) in state {
            let pre = encode(*at, a).expect("writes");
            assert_eq!(pre.data.len() as u64, a.space().min(UNINITIALIZED_BYTES_MAX), "{at}: {a:?}");
            let back = decode(pre.owner, pre.lamports, &pre.data, decimals);
            assert_eq!(super::super::emit::account(&back), super::super::emit::account(a), "{at}");
            if !matches!(a.data, Data::Bytes(_)) {
                assert_eq!(&back, a, "{at}");
            }
            *kinds.entry(kind(&a.data)).or_default() += 1;
        }
        // The world holds every kind the demo models (so each layout was read back).
        for k in ["wallet", "token", "mint", "nonce", "stake", "table"] {
            assert!(kinds.contains_key(k), "no {k} in {kinds:?}");
        }
    }

    fn kind(d: &Data) -> &'static str {
        match d {
            Data::Empty => "wallet",
            Data::Uninitialized { .. } => "uninitialized",
            Data::Token(_) => "token",
            Data::Mint(_) => "mint",
            Data::Nonce { .. } => "nonce",
            Data::Stake(_) => "stake",
            Data::Program { .. } => "program",
            Data::LookupTable { .. } => "table",
            Data::Bytes(_) => "bytes",
        }
    }

    #[test]
    fn a_change_the_model_cannot_hold_reads_as_raw_bytes() {
        use solana_stake_interface::state::StakeStateV2;
        let staker = Pubkey([8; 32]);
        let delegation = Some(Delegation { voter: Pubkey([9; 32]), stake: 5, activation_epoch: 1 });
        let s = StakeAcct { staker, withdrawer: staker, delegation, credits_observed: 0 };
        let a = Acct { lamports: 10, owner: BUILTIN.stake, data: Data::Stake(s) };
        let mut bytes = data(&a).expect("writes");
        assert_eq!(decode(a.owner, a.lamports, &bytes, |_| None), a, "a layout the model holds whole");
        // Deactivated: the model holds no deactivation epoch, so the reading is the bytes.
        let Ok(StakeStateV2::Stake(meta, mut stake, flags)) = bincode::deserialize(&bytes) else { panic!("stake") };
        stake.delegation.deactivation_epoch = 700;
        let deactivated = bincode::serialize(&StakeStateV2::Stake(meta, stake, flags)).expect("writes");
        bytes[..deactivated.len()].copy_from_slice(&deactivated);
        let read = decode(a.owner, a.lamports, &bytes, |_| None);
        assert_eq!(read.data, Data::Bytes(bytes), "never read as unchanged");
    }

    #[test]
    fn a_cleared_option_with_its_old_key_left_in_place_reads_as_cleared() {
        let mint = Pubkey([2; 32]);
        let mut t = TokenAcct::new(mint, Pubkey([3; 32]), 6);
        t.delegate = Some(Pubkey([4; 32]));
        let delegated = data(&Acct::token_account(TokenProgram::Token, t.clone())).expect("writes");
        // SPL Token's Revoke writes the option's tag and leaves the key's bytes (offset 72..76
        // is the tag, 76..108 the key).
        let mut revoked = delegated.clone();
        revoked[72..76].copy_from_slice(&[0; 4]);
        let read = decode(BUILTIN.token, 2_039_280, &revoked, |_| Some(6));
        assert_eq!(read.data, Data::Token(TokenAcct { delegate: None, ..t }), "read, not raw bytes");
    }

    #[test]
    fn the_hand_written_layouts_are_what_the_official_readers_read() {
        let (authority, nonce_value, program_data) = (Pubkey([3; 32]), Pubkey([4; 32]), Pubkey([5; 32]));
        let nonce_acct =
            Acct { lamports: 1, owner: BUILTIN.system, data: Data::Nonce { authority, blockhash: nonce_value } };
        let bytes = data(&nonce_acct).expect("writes");
        assert_eq!(bytes.len(), NONCE_LEN as usize);
        let versions: solana_nonce::versions::Versions = bincode::deserialize(&bytes).expect("a nonce account");
        let solana_nonce::state::State::Initialized(d) = versions.state() else { panic!("initialized") };
        assert_eq!((d.authority.to_bytes(), d.durable_nonce.as_hash().to_bytes()), (authority.0, nonce_value.0));
        assert_eq!(d.fee_calculator.lamports_per_signature, NONCE_LAMPORTS_PER_SIGNATURE);

        let program = Acct { lamports: 1, owner: BUILTIN.bpf_upgradeable_loader, data: Data::Program { program_data } };
        let state: solana_loader_v3_interface::state::UpgradeableLoaderState =
            bincode::deserialize(&data(&program).expect("writes")).expect("a program account");
        assert_eq!(
            state,
            solana_loader_v3_interface::state::UpgradeableLoaderState::Program {
                programdata_address: address(&program_data)
            }
        );
    }
}
