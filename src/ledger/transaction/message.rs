//! The message layer of a serialized transaction: bytes → signatures, header, account keys
//! (static, then those its address lookup tables load) and compiled instructions.
//!
//! Owns: `parse` (the wire bytes, read by the official `solana-transaction` /
//! `solana-message` types through their serde layout with bincode — as the runtime's
//! `limited_deserialize` does: fixed-width integers, a byte limit, no trailing bytes — then
//! sanitized), `Parsed`, `TableLookup`,
//! `resolve` (the full account list once the tables are loaded, with each account's signer and
//! writable flags) and `lookup_table_addresses` (a table account's data, read by the official
//! `solana-address-lookup-table-interface` layout). Pure; called on listener threads (a scan) and by the demo source (its simulation).
//!
//! Invariant: `parse` reads at most `config::TRANSACTION_BYTES_MAX` bytes (Solana's packet
//! size) and rejects trailing bytes, so every length it allocates is bounded by the input.
//! Invariant: every index an instruction holds is checked against the resolved key list before
//! use (`Resolved::key`): a malformed message is an error, never a panic or a guess.
//! Invariant: `Parsed::message_offset` is where the message starts in the bytes read, so
//! `bytes[message_offset..]` is exactly what every signature signs (and what a scan digests).
//! Deliberately absent: signature verification (`scan::signatures` does it: a scan runs
//! before signing, and the client may send an unsigned message) and the runtime's demotion of
//! reserved accounts to read-only.

use bincode::Options;
use solana_message::VersionedMessage;
use solana_transaction::versioned::VersionedTransaction;

use super::TransactionError;
use crate::config::TRANSACTION_BYTES_MAX;
use crate::pubkey::Pubkey;

/// The message formats a scan reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageVersion {
    Legacy,
    V0,
}

impl MessageVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageVersion::Legacy => "legacy",
            MessageVersion::V0 => "v0",
        }
    }
}

/// One address lookup table a v0 message loads from: the table and the indexes it uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableLookup {
    pub table: Pubkey,
    pub writable: Vec<u8>,
    pub readonly: Vec<u8>,
}

/// One compiled instruction: indexes into the resolved account list, and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageInstruction {
    pub program: u8,
    pub accounts: Vec<u8>,
    pub data: Vec<u8>,
}

/// A transaction as sent, before its lookup tables are loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub version: MessageVersion,
    /// The signature slots, in signer order (all zeros: a signature still to be made).
    pub signatures: Vec<[u8; 64]>,
    /// Where the message starts in the bytes `parse` read: after the signature section
    /// (its compact-u16 count and 64 bytes a signature). What every signature signs.
    pub message_offset: usize,
    pub required_signatures: u8,
    readonly_signed: u8,
    readonly_unsigned: u8,
    pub static_keys: Vec<Pubkey>,
    pub lookups: Vec<TableLookup>,
    pub recent_blockhash: [u8; 32],
    pub instructions: Vec<MessageInstruction>,
}

/// How an account of the resolved list came into the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    Static,
    Table { table: Pubkey, index: u8 },
}

/// One account of the resolved list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountRef {
    pub address: Pubkey,
    pub signer: bool,
    pub writable: bool,
    pub source: KeySource,
}

/// The full account list: static keys, then every table's writable, then readonly loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub accounts: Vec<AccountRef>,
}

impl Resolved {
    /// The account at `index`, or the error a malformed message gets.
    pub fn key(&self, index: u8) -> Result<&AccountRef, TransactionError> {
        self.accounts.get(usize::from(index)).ok_or_else(|| {
            TransactionError::malformed(format!(
                "an instruction names account {index}, past the {} accounts of the message",
                self.accounts.len()
            ))
        })
    }

    pub fn fee_payer(&self) -> Pubkey {
        self.accounts.first().map(|a| a.address).unwrap_or_default()
    }

    /// True when `address` is one of the message's signers.
    pub fn is_signer(&self, address: &Pubkey) -> bool {
        self.accounts.iter().any(|a| a.signer && a.address == *address)
    }
}

/// Reads a serialized transaction (legacy or v0, signed or not).
pub fn parse(bytes: &[u8]) -> Result<Parsed, TransactionError> {
    if bytes.len() > TRANSACTION_BYTES_MAX {
        return Err(TransactionError::TooLarge { bytes: bytes.len() });
    }
    let tx: VersionedTransaction = wire_options().deserialize(bytes).map_err(|e| match message_version(bytes) {
        Some(version) if version > 0 => {
            TransactionError::malformed(format!("message version {version} is not supported (legacy and v0 are)"))
        }
        _ => TransactionError::malformed(format!("not a serialized transaction ({e})")),
    })?;
    tx.sanitize().map_err(|e| TransactionError::malformed(format!("the message is inconsistent ({e})")))?;
    let signatures: Vec<[u8; 64]> = tx.signatures.iter().map(|s| <[u8; 64]>::from(*s)).collect();
    let message_offset = signature_section_len(signatures.len());
    if message_offset > bytes.len() {
        return Err(TransactionError::malformed("the signature section runs past the bytes".into()));
    }
    let (version, lookups) = match &tx.message {
        VersionedMessage::Legacy(_) => (MessageVersion::Legacy, Vec::new()),
        VersionedMessage::V0(m) => (MessageVersion::V0, m.address_table_lookups.iter().map(table_lookup).collect()),
    };
    let header = tx.message.header();
    Ok(Parsed {
        version,
        signatures,
        message_offset,
        required_signatures: header.num_required_signatures,
        readonly_signed: header.num_readonly_signed_accounts,
        readonly_unsigned: header.num_readonly_unsigned_accounts,
        static_keys: tx.message.static_account_keys().iter().map(|k| Pubkey(k.to_bytes())).collect(),
        lookups,
        recent_blockhash: tx.message.recent_blockhash().to_bytes(),
        instructions: tx
            .message
            .instructions()
            .iter()
            .map(|ix| MessageInstruction {
                program: ix.program_id_index,
                accounts: ix.accounts.clone(),
                data: ix.data.clone(),
            })
            .collect(),
    })
}

/// Bytes of a signature section of `count` signatures: the compact-u16 count (7 bits a byte;
/// Solana's `short_vec` refuses any longer encoding, so this is the one the bytes hold) and
/// 64 bytes each.
fn signature_section_len(count: usize) -> usize {
    let count_len = match count {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        _ => 3,
    };
    count_len + count * 64
}

/// The version a versioned message's prefix byte names (`0x80 | version`), read past the
/// signature section; `None` for a legacy message or bytes too short to hold one. Read only to
/// word the error of bytes the official types refuse (a version they do not know).
fn message_version(bytes: &[u8]) -> Option<u8> {
    let mut count = 0usize;
    let mut count_len = 0;
    for (i, byte) in bytes.iter().take(3).enumerate() {
        count |= usize::from(byte & 0x7f) << (7 * i);
        count_len = i + 1;
        if byte & 0x80 == 0 {
            break;
        }
    }
    let prefix = *bytes.get(count_len + count * 64)?;
    (prefix & 0x80 != 0).then_some(prefix & 0x7f)
}

/// Solana's wire encoding: bincode with fixed-width integers, at most a packet, nothing after.
pub fn wire_options() -> impl bincode::Options {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
        .with_limit(TRANSACTION_BYTES_MAX as u64)
}

fn table_lookup(l: &solana_message::v0::MessageAddressTableLookup) -> TableLookup {
    TableLookup {
        table: Pubkey(l.account_key.to_bytes()),
        writable: l.writable_indexes.clone(),
        readonly: l.readonly_indexes.clone(),
    }
}

impl Parsed {
    /// The full account list, `tables[i]` holding the addresses of `lookups[i]`'s table.
    pub fn resolve(&self, tables: &[Vec<Pubkey>]) -> Result<Resolved, TransactionError> {
        if tables.len() != self.lookups.len() {
            return Err(TransactionError::malformed(format!(
                "{} lookup tables given for {} lookups",
                tables.len(),
                self.lookups.len()
            )));
        }
        let mut accounts: Vec<AccountRef> = (0..self.static_keys.len()).map(|i| self.static_ref(i)).collect();
        for writable in [true, false] {
            for (lookup, addresses) in self.lookups.iter().zip(tables) {
                let indexes = if writable { &lookup.writable } else { &lookup.readonly };
                for &index in indexes {
                    let address = *addresses.get(usize::from(index)).ok_or_else(|| {
                        TransactionError::malformed(format!(
                            "lookup table {} has {} addresses; the message loads index {index}",
                            lookup.table,
                            addresses.len()
                        ))
                    })?;
                    let source = KeySource::Table { table: lookup.table, index };
                    accounts.push(AccountRef { address, signer: false, writable, source });
                }
            }
        }
        if accounts.len() > usize::from(u8::MAX) + 1 {
            return Err(TransactionError::malformed(format!(
                "the message loads {} accounts (256 at most)",
                accounts.len()
            )));
        }
        Ok(Resolved { accounts })
    }

    fn static_ref(&self, i: usize) -> AccountRef {
        let signers = usize::from(self.required_signatures);
        let signer = i < signers;
        let writable = if signer {
            i < signers.saturating_sub(usize::from(self.readonly_signed))
        } else {
            i < self.static_keys.len().saturating_sub(usize::from(self.readonly_unsigned))
        };
        AccountRef { address: self.static_keys[i], signer, writable, source: KeySource::Static }
    }
}

/// The addresses an address lookup table account holds (its data as the program stores it).
pub fn lookup_table_addresses(data: &[u8]) -> Result<Vec<Pubkey>, String> {
    let table = solana_address_lookup_table_interface::state::AddressLookupTable::deserialize(data)
        .map_err(|e| format!("not an address lookup table ({e})"))?;
    Ok(table.addresses.iter().map(|a| Pubkey(a.to_bytes())).collect())
}

/// Any Solana SDK `Instruction` — of whichever crate version, the field names are the same —
/// as `InstructionParts`.
#[macro_export]
macro_rules! instruction_parts {
    ($ix:expr) => {{
        let ix = $ix;
        $crate::ledger::transaction::message::InstructionParts {
            program: $crate::ledger::transaction::message::address(&ix.program_id),
            metas: ix
                .accounts
                .iter()
                .map(|m| ($crate::ledger::transaction::message::address(&m.pubkey), m.is_signer, m.is_writable))
                .collect(),
            data: ix.data,
        }
    }};
}

/// An SDK address (32 bytes by construction) as the service's `Pubkey`.
pub fn address<A: AsRef<[u8]>>(sdk: &A) -> Pubkey {
    let mut bytes = [0u8; 32];
    let given = sdk.as_ref();
    bytes[..given.len().min(32)].copy_from_slice(&given[..given.len().min(32)]);
    Pubkey(bytes)
}

/// The service's `Pubkey` as an SDK address.
pub fn sdk_address(key: &Pubkey) -> solana_address::Address {
    solana_address::Address::new_from_array(key.0)
}

/// One instruction as plain parts: its program, its accounts with their signer and writable
/// flags, and its data — what any SDK's `Instruction` holds, whatever its crate version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionParts {
    pub program: Pubkey,
    /// `(address, signer, writable)`, in instruction order.
    pub metas: Vec<(Pubkey, bool, bool)>,
    pub data: Vec<u8>,
}

/// The inverse of `parse`: `instructions` compiled into an unsigned legacy message (or a v0
/// one without lookups) paid by `payer`, serialized with empty signatures. Accounts are in the
/// order the runtime requires: the payer, the other signers (writable first), then the rest
/// (writable first). For the dev tools (`xray ledger demo-tx`) and tests.
pub fn compile(
    payer: Pubkey,
    instructions: &[InstructionParts],
    recent_blockhash: [u8; 32],
    v0: bool,
) -> Result<Vec<u8>, String> {
    use solana_message::compiled_instruction::CompiledInstruction;
    use solana_message::MessageHeader;
    let mut keys: Vec<(Pubkey, bool, bool)> = vec![(payer, true, true)];
    for ix in instructions {
        for &(k, signer, writable) in ix.metas.iter().chain([(ix.program, false, false)].iter()) {
            match keys.iter_mut().find(|e| e.0 == k) {
                Some(e) => {
                    e.1 |= signer;
                    e.2 |= writable;
                }
                None => keys.push((k, signer, writable)),
            }
        }
    }
    keys[1..].sort_by_key(|&(_, signer, writable)| (!signer, !writable));
    let count = |f: fn(&(Pubkey, bool, bool)) -> bool| u8::try_from(keys.iter().filter(|e| f(e)).count());
    let accounts_len = keys.len();
    let too_many = |_: std::num::TryFromIntError| format!("{accounts_len} accounts: a message holds at most 256");
    let header = MessageHeader {
        num_required_signatures: count(|e| e.1).map_err(too_many)?,
        num_readonly_signed_accounts: count(|e| e.1 && !e.2).map_err(too_many)?,
        num_readonly_unsigned_accounts: count(|e| !e.1 && !e.2).map_err(too_many)?,
    };
    let index = |k: &Pubkey| -> Result<u8, String> {
        let i = keys.iter().position(|e| e.0 == *k).unwrap_or(usize::MAX);
        u8::try_from(i).map_err(too_many)
    };
    let mut compiled = Vec::with_capacity(instructions.len());
    for ix in instructions {
        let accounts = ix.metas.iter().map(|m| index(&m.0)).collect::<Result<_, _>>()?;
        compiled.push(CompiledInstruction { program_id_index: index(&ix.program)?, accounts, data: ix.data.clone() });
    }
    let account_keys = keys.iter().map(|e| solana_address::Address::new_from_array(e.0 .0)).collect();
    let recent_blockhash = solana_message::Hash::new_from_array(recent_blockhash);
    let message = match v0 {
        true => VersionedMessage::V0(solana_message::v0::Message {
            header,
            account_keys,
            recent_blockhash,
            instructions: compiled,
            address_table_lookups: Vec::new(),
        }),
        false => VersionedMessage::Legacy(solana_message::legacy::Message {
            header,
            account_keys,
            recent_blockhash,
            instructions: compiled,
        }),
    };
    let signatures = vec![Default::default(); usize::from(header.num_required_signatures)];
    let tx = VersionedTransaction { signatures, message };
    wire_options().serialize(&tx).map_err(|e| format!("the transaction does not serialize ({e})"))
}
