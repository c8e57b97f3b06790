//! The Lighthouse program's assertions, as its instructions carry them on chain: the program id,
//! the instruction discriminators and the borsh layout of the assertions a guard uses, both ways
//! (`encode`, `decode`), and `holds` — what the program checks, over an account as it is after
//! the transaction (used by the tests: the answer never needs it).
//!
//! Owns: `Assertion`, `GuardInstruction` and their bytes. Pure.
//!
//! The layout is the program's published one (github.com/Jac0xb/lighthouse, MIT,
//! `programs/lighthouse/src/instruction.rs` and `types/assert/`): one discriminator byte
//! (`AssertAccountInfoMulti` = 6, `AssertTokenAccountMulti` = 10), the log level (a byte;
//! `Silent` = 0), a LEB128 count, then the assertions — each an enum as borsh writes it (a
//! variant byte, then its fields: addresses as 32 bytes, `u64` little-endian, `Option` as 0 or
//! 1 and the value; then its operator, a byte). Written by hand: the published `lighthouse-sdk`
//! crate pins `solana-program` 1.17. Checked against the program's official TypeScript client
//! (`lighthouse-sdk` on npm, pinned, in `tests/litesvm`).
//!
//! Invariant: `decode(encode(x)) == x` for every instruction this module makes, and `decode`
//! refuses trailing bytes, unknown variants and operators it does not make.
//! Invariant: `holds` reads an account as the program does — a token account only when a token
//! program owns it (else `AccountOwnerMismatch`), its fields at their fixed offsets (mint 0,
//! owner 32, amount 64, delegate 72 as a `COption`, delegated amount 121, close authority 129 as
//! a `COption`), an account's owner and lamports as the runtime gives them — so a
//! guard that holds here holds on chain, and one that fails here fails there.
//! Deliberately absent: the assertions no guard makes (account data, deltas, mints, stake,
//! clock, Merkle trees) and the log levels but `Silent` (the cheapest; a failure still names
//! the program's error code).

use crate::pubkey::Pubkey;

/// `L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95`, the program's id on mainnet and devnet.
pub const PROGRAM_ID: Pubkey = Pubkey([
    0x04, 0xdf, 0xad, 0x79, 0x62, 0xff, 0xb1, 0xdd, 0x92, 0x5d, 0x0a, 0x9f, 0xb5, 0xe6, 0xd0, 0x0c, 0xe6, 0x19, 0x5b,
    0xa8, 0xbb, 0x3a, 0x91, 0xfd, 0x07, 0xef, 0x98, 0x60, 0xc5, 0xe9, 0x7b, 0xb8,
]);
/// The program's name for the id, as it publishes it.
pub const PROGRAM_ID_TEXT: &str = "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95";

const ASSERT_ACCOUNT_INFO_MULTI: u8 = 6;
const ASSERT_TOKEN_ACCOUNT_MULTI: u8 = 10;
const LOG_LEVEL_SILENT: u8 = 0;
/// `AccountInfoAssertion` variants.
const ACCOUNT_INFO_LAMPORTS: u8 = 0;
const ACCOUNT_INFO_OWNER: u8 = 2;
/// `TokenAccountAssertion` variants.
const TOKEN_OWNER: u8 = 1;
const TOKEN_AMOUNT: u8 = 2;
const TOKEN_DELEGATE: u8 = 3;
const TOKEN_DELEGATED_AMOUNT: u8 = 6;
const TOKEN_CLOSE_AUTHORITY: u8 = 7;
/// `EquatableOperator::Equal`; `IntegerOperator::GreaterThanOrEqual`, `::LessThanOrEqual`.
const EQUAL: u8 = 0;
const GREATER_THAN_OR_EQUAL: u8 = 4;
const LESS_THAN_OR_EQUAL: u8 = 5;
/// The SPL Token and Token-2022 programs (the only owners the program reads a token account of).
const TOKEN_PROGRAMS: [&str; 2] =
    ["TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "TokenzQdBNbLqP5VEhdkAS6EPFLC1PE4tFEhVN5VdrFb6Cn4w"];
/// A token account's base layout is 165 bytes; the fields read end at 165 (close authority).
const TOKEN_ACCOUNT_BASE_BYTES: usize = 165;
/// Assertions in one `…Multi` instruction at most (a guard makes four).
const ASSERTIONS_PER_INSTRUCTION_MAX: u64 = 16;

/// One assertion about one account after the transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assertion {
    /// The account holds at least this many lamports.
    LamportsAtLeast(u64),
    /// The program that owns the account (a wallet: the System program).
    AccountOwner(Pubkey),
    /// A token account's owner is this address.
    TokenOwner(Pubkey),
    /// A token account's delegate is this one (`None`: it has none).
    TokenDelegate(Option<Pubkey>),
    /// A token account's delegate may move at most this many base units.
    TokenDelegatedAmountAtMost(u64),
    /// A token account's close authority is this one (`None`: it has none).
    TokenCloseAuthority(Option<Pubkey>),
    /// A token account holds at least this many base units.
    TokenAmountAtLeast(u64),
}

impl Assertion {
    fn is_token(&self) -> bool {
        !matches!(self, Assertion::LamportsAtLeast(_) | Assertion::AccountOwner(_))
    }
}

/// One Lighthouse instruction: its target account (read-only, never a signer) and assertions
/// about it — account-info assertions (lamports, owner) or token-account assertions, together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardInstruction {
    pub target: Pubkey,
    pub assertions: Vec<Assertion>,
}

/// An account as the program sees it after the transaction (`None` of them: it was closed).
#[derive(Debug, Clone, Copy)]
pub struct AccountAfter<'a> {
    pub owner: Pubkey,
    pub lamports: u64,
    pub data: &'a [u8],
}

/// Why an assertion does not hold, as the program would fail it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failed {
    /// The assertion at this index of the instruction, and what the account holds instead.
    Assertion { index: usize, actual: String },
    /// The target is not a token account (closed, or another program's).
    AccountOwnerMismatch,
}

impl GuardInstruction {
    /// The instruction's data, as the program reads it.
    pub fn encode(&self) -> Vec<u8> {
        let token = self.assertions.iter().all(Assertion::is_token);
        debug_assert!(token || !self.assertions.iter().any(Assertion::is_token), "one kind: {:?}", self.assertions);
        let mut out = Vec::with_capacity(8 + 40 * self.assertions.len());
        let discriminator = if token { ASSERT_TOKEN_ACCOUNT_MULTI } else { ASSERT_ACCOUNT_INFO_MULTI };
        out.extend([discriminator, LOG_LEVEL_SILENT]);
        leb128(&mut out, self.assertions.len() as u64);
        for assertion in &self.assertions {
            write_assertion(&mut out, assertion);
        }
        out
    }

    /// The instruction `data` encodes, for `target`; `Err` names what it is not.
    pub fn decode(target: Pubkey, data: &[u8]) -> Result<GuardInstruction, String> {
        let mut r = Reader { data, at: 0 };
        let (discriminator, log_level) = (r.byte()?, r.byte()?);
        if log_level != LOG_LEVEL_SILENT {
            return Err(format!("log level {log_level}"));
        }
        let token = match discriminator {
            ASSERT_ACCOUNT_INFO_MULTI => false,
            ASSERT_TOKEN_ACCOUNT_MULTI => true,
            other => return Err(format!("instruction {other}")),
        };
        let count = r.leb128()?;
        if count == 0 || count > ASSERTIONS_PER_INSTRUCTION_MAX {
            return Err(format!("{count} assertions"));
        }
        let assertions = (0..count).map(|_| r.assertion(token)).collect::<Result<_, _>>()?;
        if r.at != data.len() {
            return Err(format!("{} trailing bytes", data.len() - r.at));
        }
        Ok(GuardInstruction { target, assertions })
    }

    /// Whether every assertion holds on `account` (`None`: closed), as the program checks them
    /// in order; the first that fails says why.
    pub fn holds(&self, account: Option<AccountAfter<'_>>) -> Result<(), Failed> {
        for (index, assertion) in self.assertions.iter().enumerate() {
            let failed = |actual: String| Failed::Assertion { index, actual };
            match assertion {
                Assertion::LamportsAtLeast(at_least) => {
                    let lamports = account.map_or(0, |a| a.lamports);
                    if lamports < *at_least {
                        return Err(failed(format!("{lamports} lamports")));
                    }
                    continue;
                }
                Assertion::AccountOwner(owner) => {
                    // A closed account is the System program's, with nothing in it.
                    let actual = account.map_or(Pubkey::default(), |a| a.owner);
                    if actual != *owner {
                        return Err(failed(format!("owner {actual}")));
                    }
                    continue;
                }
                _ => {}
            }
            let data = match account {
                Some(a) if TOKEN_PROGRAMS.contains(&a.owner.to_string().as_str()) => a.data,
                _ => return Err(Failed::AccountOwnerMismatch),
            };
            if data.len() < TOKEN_ACCOUNT_BASE_BYTES {
                return Err(failed(format!("{} bytes of data", data.len())));
            }
            let holds = match assertion {
                Assertion::TokenOwner(owner) => key_at(data, 32) == *owner,
                Assertion::TokenAmountAtLeast(at_least) => u64_at(data, 64) >= *at_least,
                Assertion::TokenDelegate(delegate) => coption_at(data, 72) == Ok(*delegate),
                Assertion::TokenDelegatedAmountAtMost(at_most) => u64_at(data, 121) <= *at_most,
                Assertion::TokenCloseAuthority(authority) => coption_at(data, 129) == Ok(*authority),
                Assertion::LamportsAtLeast(_) | Assertion::AccountOwner(_) => true,
            };
            if !holds {
                return Err(failed(actual(assertion, data)));
            }
        }
        Ok(())
    }
}

/// What the account holds where `assertion` looked (for a failure's message).
fn actual(assertion: &Assertion, data: &[u8]) -> String {
    let key = |k: Result<Option<Pubkey>, u32>| match k {
        Ok(Some(k)) => k.to_string(),
        Ok(None) => "none".into(),
        Err(tag) => format!("COption tag {tag}"),
    };
    match assertion {
        Assertion::TokenOwner(_) => format!("owner {}", key_at(data, 32)),
        Assertion::TokenAmountAtLeast(_) => format!("amount {}", u64_at(data, 64)),
        Assertion::TokenDelegate(_) => format!("delegate {}", key(coption_at(data, 72))),
        Assertion::TokenDelegatedAmountAtMost(_) => format!("delegated amount {}", u64_at(data, 121)),
        Assertion::TokenCloseAuthority(_) => format!("close authority {}", key(coption_at(data, 129))),
        Assertion::LamportsAtLeast(_) | Assertion::AccountOwner(_) => String::new(),
    }
}

fn key_at(data: &[u8], at: usize) -> Pubkey {
    let mut k = [0u8; 32];
    k.copy_from_slice(&data[at..at + 32]);
    Pubkey(k)
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&data[at..at + 8]);
    u64::from_le_bytes(b)
}

/// A `COption<Pubkey>`: a little-endian `u32` tag (0 none, 1 some) and 32 bytes; another tag
/// is `Err` (the program refuses the account).
fn coption_at(data: &[u8], at: usize) -> Result<Option<Pubkey>, u32> {
    let mut tag = [0u8; 4];
    tag.copy_from_slice(&data[at..at + 4]);
    match u32::from_le_bytes(tag) {
        0 => Ok(None),
        1 => Ok(Some(key_at(data, at + 4))),
        other => Err(other),
    }
}

/// One assertion as borsh writes it: its variant, its value, its operator.
fn write_assertion(out: &mut Vec<u8>, assertion: &Assertion) {
    let option = |out: &mut Vec<u8>, key: &Option<Pubkey>| match key {
        None => out.push(0),
        Some(k) => {
            out.push(1);
            out.extend(k.0);
        }
    };
    match assertion {
        Assertion::LamportsAtLeast(lamports) => {
            out.push(ACCOUNT_INFO_LAMPORTS);
            out.extend(lamports.to_le_bytes());
        }
        Assertion::AccountOwner(owner) => {
            out.push(ACCOUNT_INFO_OWNER);
            out.extend(owner.0);
        }
        Assertion::TokenOwner(owner) => {
            out.push(TOKEN_OWNER);
            out.extend(owner.0);
        }
        Assertion::TokenAmountAtLeast(amount) => {
            out.push(TOKEN_AMOUNT);
            out.extend(amount.to_le_bytes());
        }
        Assertion::TokenDelegate(delegate) => {
            out.push(TOKEN_DELEGATE);
            option(out, delegate);
        }
        Assertion::TokenDelegatedAmountAtMost(amount) => {
            out.push(TOKEN_DELEGATED_AMOUNT);
            out.extend(amount.to_le_bytes());
        }
        Assertion::TokenCloseAuthority(authority) => {
            out.push(TOKEN_CLOSE_AUTHORITY);
            option(out, authority);
        }
    }
    out.push(operator(assertion));
}

/// The operator each assertion is made with.
fn operator(assertion: &Assertion) -> u8 {
    match assertion {
        Assertion::LamportsAtLeast(_) | Assertion::TokenAmountAtLeast(_) => GREATER_THAN_OR_EQUAL,
        Assertion::TokenDelegatedAmountAtMost(_) => LESS_THAN_OR_EQUAL,
        Assertion::AccountOwner(_)
        | Assertion::TokenOwner(_)
        | Assertion::TokenDelegate(_)
        | Assertion::TokenCloseAuthority(_) => EQUAL,
    }
}

/// Unsigned LEB128 (the program's `LEB128Vec` length).
fn leb128(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.data.len()).ok_or("too short")?;
        let bytes = &self.data[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn byte(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64, String> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }

    fn key(&mut self) -> Result<Pubkey, String> {
        let mut k = [0u8; 32];
        k.copy_from_slice(self.take(32)?);
        Ok(Pubkey(k))
    }

    fn option_key(&mut self) -> Result<Option<Pubkey>, String> {
        match self.byte()? {
            0 => Ok(None),
            1 => Ok(Some(self.key()?)),
            other => Err(format!("Option tag {other}")),
        }
    }

    fn operator(&mut self, expected: u8) -> Result<(), String> {
        match self.byte()? {
            op if op == expected => Ok(()),
            op => Err(format!("operator {op} where {expected} was expected")),
        }
    }

    /// At most ten bytes (a `u64`).
    fn leb128(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f).checked_shl(shift).ok_or("LEB128 overflow")?;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("LEB128 longer than ten bytes".into())
    }

    /// One assertion of an account-info (`token` false) or token-account instruction.
    fn assertion(&mut self, token: bool) -> Result<Assertion, String> {
        let assertion = match (token, self.byte()?) {
            (false, ACCOUNT_INFO_LAMPORTS) => Assertion::LamportsAtLeast(self.u64()?),
            (false, ACCOUNT_INFO_OWNER) => Assertion::AccountOwner(self.key()?),
            (true, TOKEN_OWNER) => Assertion::TokenOwner(self.key()?),
            (true, TOKEN_AMOUNT) => Assertion::TokenAmountAtLeast(self.u64()?),
            (true, TOKEN_DELEGATE) => Assertion::TokenDelegate(self.option_key()?),
            (true, TOKEN_DELEGATED_AMOUNT) => Assertion::TokenDelegatedAmountAtMost(self.u64()?),
            (true, TOKEN_CLOSE_AUTHORITY) => Assertion::TokenCloseAuthority(self.option_key()?),
            (_, other) => return Err(format!("assertion variant {other}")),
        };
        self.operator(operator(&assertion))?;
        Ok(assertion)
    }
}
