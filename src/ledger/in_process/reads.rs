//! What an in-process run reads: accounts as bytes from the source, once per call (a sequence's
//! transactions share one read of each account), under what the transactions before left.
//!
//! Owns: `Reads` (the accounts a scan or a sequence read, and the ones its transactions left),
//! `MintDecimals` (the decimals of SPL Token mints, kept by a source across scans), and the
//! conversions from a source's base64 answer (`raw`) and a lookup table's bytes (`tables`).
//! Called by `in_process::run` on the thread that owns the source.
//!
//! Invariant: an address is asked of the source at most once per `Reads` (what it answered is
//! kept, `None` too), so the transactions of a sequence run on one read of the ledger; what a
//! transaction left (`leave`) wins over what was read. Bounded: at most
//! `MULTIPLE_ACCOUNTS_LEN_MAX` addresses a call, and a `Reads` holds what one sequence names —
//! at most `SEQUENCE_TRANSACTIONS_MAX` transactions of at most 256 accounts, their tables and
//! their token accounts' mints — each answer within the source's own byte caps and the scan's
//! read budget. Deliberately absent: any reuse across calls besides `MintDecimals` (accounts
//! change; a mint's decimals at an SPL Token mint's address do not).

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;

use crate::config::{MULTIPLE_ACCOUNTS_LEN_MAX, RPC_MINT_DECIMALS_CACHE_LEN};
use crate::ledger::demo::bytes;
use crate::ledger::demo::state::Data;
use crate::ledger::read::LedgerSource;
use crate::ledger::transaction::message::Parsed;
use crate::ledger::wire::{UiAccount, UiAccountData};
use crate::ledger::LedgerError;
use crate::pubkey::Pubkey;
use crate::runtime::PreAccount;

/// The accounts of one in-process call (a scan, or every transaction of a sequence).
#[derive(Default)]
pub struct Reads {
    /// Accounts as earlier transactions of the sequence left them (`None`: closed).
    left: BTreeMap<Pubkey, Option<PreAccount>>,
    /// What the source answered (`None`: it holds no such account).
    read: BTreeMap<Pubkey, Option<PreAccount>>,
    /// The lowest context slot the source answered at (`None` before any answer).
    slot: Option<u64>,
}

impl Reads {
    pub fn new() -> Reads {
        Reads::default()
    }

    /// Whether a transaction before left `address` (so its bytes are the sequence's, not the
    /// ledger's: never kept across calls).
    pub fn was_left(&self, address: &Pubkey) -> bool {
        self.left.contains_key(address)
    }

    /// What a transaction leaves for the ones after it.
    pub fn leave(&mut self, applies: impl IntoIterator<Item = (Pubkey, Option<PreAccount>)>) {
        self.left.extend(applies);
    }

    /// The lowest context slot the source answered at, 0 before any answer.
    pub fn slot(&self) -> u64 {
        self.slot.unwrap_or(0)
    }

    /// `addresses` as bytes, in order: as a transaction before left them, else as the source
    /// answered them (asked once, 100 to a call).
    pub async fn get<S: LedgerSource>(
        &mut self,
        source: &S,
        addresses: &[Pubkey],
    ) -> Result<Vec<Option<PreAccount>>, LedgerError> {
        let asked: Vec<Pubkey> = addresses
            .iter()
            .filter(|a| !self.left.contains_key(a) && !self.read.contains_key(a))
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        for chunk in asked.chunks(MULTIPLE_ACCOUNTS_LEN_MAX) {
            let page = source.get_multiple_accounts_base64(chunk).await?;
            self.slot = Some(self.slot.map_or(page.context.slot, |s| s.min(page.context.slot)));
            for (at, account) in chunk.iter().zip(page.value) {
                self.read.insert(*at, account.map(|a| raw(*at, &a)).transpose()?);
            }
        }
        Ok(addresses
            .iter()
            .map(|at| match self.left.get(at) {
                Some(left) => left.clone(),
                None => self.read.get(at).cloned().flatten(),
            })
            .collect())
    }
}

/// A source's base64 account as the runtime takes it.
pub(super) fn raw(at: Pubkey, account: &UiAccount) -> Result<PreAccount, LedgerError> {
    let malformed = |what: &str| LedgerError::Malformed(format!("getMultipleAccounts (base64) of {at}: {what}"));
    let data = match &account.data {
        UiAccountData::Binary(parts) if parts.get(1).map(String::as_str) == Some("base64") => {
            let text = parts.first().ok_or_else(|| malformed("no data"))?;
            base64::engine::general_purpose::STANDARD.decode(text).map_err(|_| malformed("data is not base64"))?
        }
        _ => return Err(malformed("data is not [\"…\", \"base64\"]")),
    };
    let owner = account.owner.parse::<Pubkey>().map_err(|_| malformed("owner is not an address"))?;
    Ok(PreAccount { address: at, lamports: account.lamports, owner, data, executable: account.executable })
}

/// Each lookup table's addresses, in message order (`None` when one is absent or not a table).
pub fn tables(parsed: &Parsed, accounts: &[Option<PreAccount>]) -> Option<Vec<Vec<Pubkey>>> {
    accounts
        .iter()
        .take(parsed.lookups.len())
        .map(|a| match a.as_ref().map(|a| bytes::decode(a.owner, a.lamports, &a.data, |_| None).data) {
            Some(Data::LookupTable { addresses, .. }) => Some(addresses),
            _ => None,
        })
        .collect()
}

/// The decimals of SPL Token mints a source answered, kept across scans (at most
/// `RPC_MINT_DECIMALS_CACHE_LEN`, least recently used out first): such a mint cannot be
/// closed, so its decimals never change at its address, and a later scan need not read it.
/// Boxed: the cache is larger than the source that holds it.
pub struct MintDecimals(parking_lot::Mutex<Box<lru::LruCache<Pubkey, u8>>>);

impl Default for MintDecimals {
    fn default() -> MintDecimals {
        let len = std::num::NonZeroUsize::new(RPC_MINT_DECIMALS_CACHE_LEN).unwrap_or(std::num::NonZeroUsize::MIN);
        MintDecimals(parking_lot::Mutex::new(Box::new(lru::LruCache::new(len))))
    }
}

impl MintDecimals {
    /// The decimals kept of `mints`, those it has.
    pub fn get(&self, mints: &BTreeSet<Pubkey>) -> BTreeMap<Pubkey, u8> {
        let mut cache = self.0.lock();
        mints.iter().filter_map(|m| cache.get(m).map(|d| (*m, *d))).collect()
    }

    /// Keeps `decimals` for later scans.
    pub fn remember(&self, decimals: &BTreeMap<Pubkey, u8>) {
        let mut cache = self.0.lock();
        for (mint, d) in decimals {
            cache.put(*mint, *d);
        }
    }
}
