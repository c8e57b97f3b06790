//! Solana addresses and transaction signatures as fixed-size byte arrays.
//!
//! Owns: `Pubkey` (32 bytes) and `Signature` (64 bytes), their base58 text form, and the
//! ed25519 curve test that tells a possible user wallet from a program-derived address.
//! Called from every thread; all functions are pure.
//!
//! Invariant: a `Pubkey` always holds exactly 32 bytes and a `Signature` 64; parsing never
//! panics, it returns an `AddressError` naming why the text was refused.
//! Base58 of these fixed sizes goes through `five8` (Firedancer's algorithm, which Solana's own
//! crates use): every address and signature of a ledger read and of a request is decoded or
//! encoded here, and the general big-number codec (`bs58`) cost several times more. `bs58`
//! stays only to name why a refused text was refused. The curve test is memoized per thread
//! (`CURVE_MEMO_ENTRIES` addresses): it costs a field square root, and the same wallets and
//! counterparties come back request after request. So is the base58 text of an address
//! (`TEXT_MEMO_SLOTS`, direct-mapped: answers name the same addresses again and again, and
//! encoding is a big-number division per address).
//! Deliberately absent: key generation and signature verification (the service never signs).

use std::fmt;

use curve25519_dalek::edwards::CompressedEdwardsY;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Longest base58 text of 64 bytes; anything longer is refused before decoding.
pub const SIGNATURE_TEXT_LEN_MAX: usize = 88;
/// Longest base58 text of 32 bytes.
pub const PUBKEY_TEXT_LEN_MAX: usize = 44;

/// Why a text is not an address; the values are the contract's `details.reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressError {
    NotBase58,
    WrongLength,
}

impl AddressError {
    pub fn reason(self) -> &'static str {
        match self {
            AddressError::NotBase58 => "not_base58",
            AddressError::WrongLength => "wrong_length",
        }
    }
}

impl fmt::Display for AddressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

impl std::error::Error for AddressError {}

/// Decodes `text` into exactly `N` bytes with `fast` (five8); a text it refuses is examined
/// again by the general codec only to say why.
fn decode_fixed<const N: usize>(
    text: &str,
    text_len_max: usize,
    fast: fn(&[u8], &mut [u8; N]) -> bool,
) -> Result<[u8; N], AddressError> {
    let mut out = [0u8; N];
    if text.is_empty() {
        return Err(AddressError::WrongLength);
    }
    if text.len() > text_len_max {
        // Still tell a non-base58 string from a too-long one.
        return Err(if text.bytes().all(is_base58_byte) { AddressError::WrongLength } else { AddressError::NotBase58 });
    }
    if fast(text.as_bytes(), &mut out) {
        return Ok(out);
    }
    match bs58::decode(text).onto(&mut out) {
        // five8 and bs58 accept the same texts of N bytes (tested below); this arm is only
        // reached should they ever disagree, and then the general codec's answer stands.
        Ok(n) if n == N => Ok(out),
        Ok(_) => Err(AddressError::WrongLength),
        Err(bs58::decode::Error::BufferTooSmall) => Err(AddressError::WrongLength),
        Err(_) => Err(AddressError::NotBase58),
    }
}

fn five8_32(text: &[u8], out: &mut [u8; 32]) -> bool {
    five8::decode_32(text, out).is_ok()
}

fn five8_64(text: &[u8], out: &mut [u8; 64]) -> bool {
    five8::decode_64(text, out).is_ok()
}

/// The base58 digits five8 wrote into `buf` (always ASCII from the alphabet).
fn written(buf: &[u8], len: u8) -> Result<&str, fmt::Error> {
    std::str::from_utf8(buf.get(..usize::from(len)).ok_or(fmt::Error)?).map_err(|_| fmt::Error)
}

/// Addresses whose curve test each thread remembers.
pub const CURVE_MEMO_ENTRIES: usize = 4096;

thread_local! {
    static CURVE_MEMO: std::cell::RefCell<lru::LruCache<[u8; 32], bool>> =
        std::cell::RefCell::new(lru::LruCache::new(std::num::NonZeroUsize::new(CURVE_MEMO_ENTRIES).unwrap_or(std::num::NonZeroUsize::MIN)));
}

/// Addresses whose base58 text each thread keeps (a power of two: one slot per address, by its
/// first bytes, the newest in a slot wins; 1024 × 80 bytes per thread). A collision costs an
/// encoding, never a wrong text: a slot answers only for the exact bytes it holds.
pub const TEXT_MEMO_SLOTS: usize = 1024;
const _: () = assert!(TEXT_MEMO_SLOTS.is_power_of_two());

#[derive(Clone, Copy)]
struct TextSlot {
    key: [u8; 32],
    /// 0: empty (a 32-byte address is at least 32 characters).
    len: u8,
    text: [u8; PUBKEY_TEXT_LEN_MAX],
}

thread_local! {
    static TEXT_MEMO: std::cell::RefCell<Box<[TextSlot]>> = std::cell::RefCell::new(
        vec![TextSlot { key: [0; 32], len: 0, text: [0; PUBKEY_TEXT_LEN_MAX] }; TEXT_MEMO_SLOTS].into_boxed_slice(),
    );
}

/// True for a character of the base58 alphabet (digits and letters but `0`, `O`, `I`, `l`).
pub fn is_base58_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() && !matches!(b, b'0' | b'O' | b'I' | b'l')
}

/// A 32-byte Solana account address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Pubkey(pub [u8; 32]);

impl Pubkey {
    pub const fn new(bytes: [u8; 32]) -> Self {
        Pubkey(bytes)
    }

    pub fn parse(text: &str) -> Result<Self, AddressError> {
        decode_fixed::<32>(text, PUBKEY_TEXT_LEN_MAX, five8_32).map(Pubkey)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// True when the bytes are a valid compressed ed25519 point, i.e. the address can have a
    /// private key. Program-derived addresses are off the curve by construction.
    pub fn is_on_curve(&self) -> bool {
        let decide = || CompressedEdwardsY(self.0).decompress().is_some();
        // A re-entrant call (none exists) would find the memo borrowed and just decide.
        CURVE_MEMO.with(|memo| match memo.try_borrow_mut() {
            Ok(mut memo) => *memo.get_or_insert(self.0, decide),
            Err(_) => decide(),
        })
    }

    pub fn to_base58(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Pubkey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; PUBKEY_TEXT_LEN_MAX];
        let len = self.encode_memoized(&mut buf);
        f.write_str(written(&buf, len)?)
    }
}

impl Pubkey {
    /// The base58 text into `buf`, its length returned: from this thread's memo, or encoded
    /// and kept there.
    fn encode_memoized(&self, buf: &mut [u8; PUBKEY_TEXT_LEN_MAX]) -> u8 {
        let mut first = [0u8; 8];
        first.copy_from_slice(&self.0[..8]);
        let slot = (u64::from_le_bytes(first) as usize) & (TEXT_MEMO_SLOTS - 1);
        TEXT_MEMO.with(|memo| match memo.try_borrow_mut() {
            Ok(mut memo) => {
                let kept = &mut memo[slot];
                if kept.len != 0 && kept.key == self.0 {
                    *buf = kept.text;
                    return kept.len;
                }
                let len = five8::encode_32(&self.0, buf);
                *kept = TextSlot { key: self.0, len, text: *buf };
                len
            }
            Err(_) => five8::encode_32(&self.0, buf),
        })
    }
}

impl fmt::Debug for Pubkey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pubkey({self})")
    }
}

impl std::str::FromStr for Pubkey {
    type Err = AddressError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Pubkey::parse(s)
    }
}

/// A 64-byte transaction signature (the transaction's id).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Signature(pub [u8; 64]);

impl Signature {
    pub fn parse(text: &str) -> Result<Self, AddressError> {
        decode_fixed::<64>(text, SIGNATURE_TEXT_LEN_MAX, five8_64).map(Signature)
    }

    pub fn to_base58(&self) -> String {
        self.to_string()
    }
}

impl Default for Signature {
    fn default() -> Self {
        Signature([0; 64])
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; SIGNATURE_TEXT_LEN_MAX];
        let len = five8::encode_64(&self.0, &mut buf);
        f.write_str(written(&buf, len)?)
    }
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signature({self})")
    }
}

macro_rules! serde_as_base58 {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
                <$t>::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}
serde_as_base58!(Pubkey);
serde_as_base58!(Signature);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_base58() {
        let text = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
        let key = Pubkey::parse(text).unwrap();
        assert_eq!(key.to_string(), text);
        assert_eq!(key.to_base58(), text);
        assert_eq!(Pubkey::parse("11111111111111111111111111111111").unwrap(), Pubkey::default());
    }

    #[test]
    fn refuses_bad_text_with_reason() {
        assert_eq!(Pubkey::parse("0OIl"), Err(AddressError::NotBase58));
        assert_eq!(Pubkey::parse(""), Err(AddressError::WrongLength));
        assert_eq!(Pubkey::parse("abc"), Err(AddressError::WrongLength));
        let long = "1".repeat(45);
        assert_eq!(Pubkey::parse(&long), Err(AddressError::WrongLength));
        let long_bad = "0".repeat(45);
        assert_eq!(Pubkey::parse(&long_bad), Err(AddressError::NotBase58));
        // 33 bytes of base58 must not be truncated into a key.
        let thirty_three = bs58::encode([7u8; 33]).into_string();
        assert_eq!(Pubkey::parse(&thirty_three), Err(AddressError::WrongLength));
    }

    #[test]
    fn curve_check_separates_wallets_from_pdas() {
        // A real wallet (fee payer in a mainnet fixture) is on the curve.
        assert!(Pubkey::parse("5p8qKVyKthA9DUb1rwQDzjcmTkaZdwN97J3LiaEywUjd").unwrap().is_on_curve());
        // The token program's associated-token-account PDA of that wallet would be off-curve;
        // a well-known PDA: the Metaplex metadata program's config is not needed — use an
        // address known to be off-curve: the ATA of USDC for the system program id.
        let off = (0u8..=255)
            .map(|b| Pubkey([b; 32]))
            .find(|k| !k.is_on_curve())
            .expect("some constant byte arrays are off the curve");
        assert!(!off.is_on_curve());
    }

    #[test]
    fn the_text_memo_answers_only_for_the_bytes_it_holds() {
        // Two addresses sharing a slot (same first 8 bytes), in turn: each keeps its own text.
        let a = Pubkey([9u8; 32]);
        let mut b_bytes = [9u8; 32];
        b_bytes[31] = 10;
        let b = Pubkey(b_bytes);
        for _ in 0..3 {
            assert_eq!(a.to_string(), bs58::encode(a.0).into_string());
            assert_eq!(b.to_string(), bs58::encode(b.0).into_string());
        }
        assert_eq!(Pubkey::default().to_string(), "11111111111111111111111111111111");
    }

    proptest::proptest! {
        /// five8 and the general codec agree on every 32- and 64-byte value, both ways.
        #[test]
        fn five8_agrees_with_bs58(bytes in proptest::array::uniform32(proptest::prelude::any::<u8>()), zeros in 0usize..6) {
            let mut key = bytes;
            key[..zeros].fill(0);
            let text = bs58::encode(key).into_string();
            proptest::prop_assert_eq!(Pubkey(key).to_string(), text.clone());
            proptest::prop_assert_eq!(Pubkey::parse(&text), Ok(Pubkey(key)));
            let mut signature = [0u8; 64];
            signature[..32].copy_from_slice(&key);
            signature[32..].copy_from_slice(&bytes);
            let text = bs58::encode(signature).into_string();
            proptest::prop_assert_eq!(Signature(signature).to_string(), text.clone());
            proptest::prop_assert_eq!(Signature::parse(&text), Ok(Signature(signature)));
        }

        /// Any text: five8's verdict for 32 bytes is the general codec's.
        #[test]
        fn five8_refuses_what_bs58_refuses(text in "[1-9A-HJ-NP-Za-km-z]{1,44}") {
            let mut general = [0u8; 32];
            let bs58_ok = matches!(bs58::decode(&text).onto(&mut general), Ok(32));
            let mut fast = [0u8; 32];
            let five8_ok = five8_32(text.as_bytes(), &mut fast);
            proptest::prop_assert_eq!(five8_ok, bs58_ok, "{}", text);
            if five8_ok {
                proptest::prop_assert_eq!(fast, general);
            }
        }
    }

    #[test]
    fn memoized_curve_test_matches_the_direct_one() {
        for b in 0u8..=255 {
            let key = Pubkey([b; 32]);
            let direct = CompressedEdwardsY(key.0).decompress().is_some();
            assert_eq!(key.is_on_curve(), direct);
            assert_eq!(key.is_on_curve(), direct, "second call, from the memo");
        }
    }

    #[test]
    fn signatures_round_trip() {
        let text = "2xRnwfAMxAvv5z2eiWC1YCR6bdcPj7ebPRTKFiFZuBHvWNc8QjM33W4Ev71T8C18g3yARJcHtMzC3VWTdASDybkU";
        let sig = Signature::parse(text).unwrap();
        assert_eq!(sig.to_string(), text);
        assert_eq!(Signature::parse("abc"), Err(AddressError::WrongLength));
    }
}
