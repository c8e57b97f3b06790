//! Request ids: the `X-Request-Id` every response carries (contract §1).
//!
//! Owns: the rule for echoing a client's id and the generator of fresh ones. Called on listener
//! threads once per request; the generator uses fastrand's per-thread generator (no lock, no
//! syscall).
//!
//! Invariant: a `RequestId` is always 1–64 characters of `[A-Za-z0-9._-]`, so it is a valid
//! header value and safe to log and to put in JSON without escaping. Generated ids are
//! `req_` + 17 base58 digits of 96 random bits (a `u64` as 11 digits, a `u32` as 6, each
//! zero-padded with `1`, base58's zero): fixed length, and written with two constant divisions
//! per digit instead of a big-number encoder, because every request that brings no id of its
//! own gets one. Deliberately absent: uniqueness guarantees for client ids (they are the
//! client's business) and cryptographic randomness (ids are not secrets).

use crate::config::REQUEST_ID_LEN_MAX;
use std::fmt;

/// Prefix of generated ids.
pub const REQUEST_ID_PREFIX: &str = "req_";
/// Base58 digits of a generated id's random `u64` (58^11 > 2^64).
const U64_DIGITS: usize = 11;
/// Base58 digits of a generated id's random `u32` (58^6 > 2^32).
const U32_DIGITS: usize = 6;
/// Characters of a generated id.
pub const GENERATED_ID_LEN: usize = REQUEST_ID_PREFIX.len() + U64_DIGITS + U32_DIGITS;
/// Bitcoin's base58 alphabet, as Solana uses it.
const BASE58_ALPHABET: &[u8; 58] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/// A request id that satisfies the contract's character rule.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RequestId(String);

impl RequestId {
    /// The client's `X-Request-Id` when it qualifies, else a fresh id.
    pub fn resolve(header: Option<&[u8]>) -> RequestId {
        match header {
            Some(value) if is_valid(value) => {
                // Every byte is ASCII (checked by is_valid), so this never fails.
                RequestId(std::str::from_utf8(value).unwrap_or(REQUEST_ID_PREFIX).to_owned())
            }
            _ => RequestId::generate(),
        }
    }

    /// A fresh `req_…` id.
    pub fn generate() -> RequestId {
        let mut text = [0u8; GENERATED_ID_LEN];
        let (prefix, digits) = text.split_at_mut(REQUEST_ID_PREFIX.len());
        prefix.copy_from_slice(REQUEST_ID_PREFIX.as_bytes());
        let (high, low) = digits.split_at_mut(U64_DIGITS);
        put_base58(high, fastrand::u64(..));
        put_base58(low, u64::from(fastrand::u32(..)));
        // Every byte is the prefix or from the base58 alphabet: ASCII, so this never fails.
        RequestId(std::str::from_utf8(&text).unwrap_or(REQUEST_ID_PREFIX).to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `value` in base58, its last `slot.len()` digits, zero-padded.
fn put_base58(slot: &mut [u8], mut value: u64) {
    for digit in slot.iter_mut().rev() {
        // The remainder is below 58.
        *digit = BASE58_ALPHABET[(value % 58) as usize];
        value /= 58;
    }
}

/// 1–64 bytes, each one of `[A-Za-z0-9._-]`.
pub fn is_valid(value: &[u8]) -> bool {
    (1..=REQUEST_ID_LEN_MAX).contains(&value.len())
        && value.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestId({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoes_valid_ids() {
        for id in ["a", "abc-DEF_1.2", &"x".repeat(64)] {
            assert_eq!(RequestId::resolve(Some(id.as_bytes())).as_str(), id);
        }
    }

    #[test]
    fn replaces_invalid_ids() {
        let long = "x".repeat(65);
        for bad in ["", "has space", "slash/", "ünïcode", "semi;colon", long.as_str()] {
            let id = RequestId::resolve(Some(bad.as_bytes()));
            assert_ne!(id.as_str(), bad);
            assert!(id.as_str().starts_with(REQUEST_ID_PREFIX), "{id}");
        }
        assert!(RequestId::resolve(Some(b"\xff\xfe")).as_str().starts_with(REQUEST_ID_PREFIX));
    }

    #[test]
    fn base58_digits_are_the_numbers_digits() {
        let mut slot = [0u8; U64_DIGITS];
        put_base58(&mut slot, u64::MAX);
        assert_eq!(&slot, b"jpXCZedGfVQ", "u64::MAX is jpXCZedGfVQ in base58");
        put_base58(&mut slot, 57);
        assert_eq!(&slot, b"1111111111z");
        let mut short = [0u8; U32_DIGITS];
        put_base58(&mut short, u64::from(u32::MAX));
        assert_eq!(&short, b"7YXq9G");
    }

    #[test]
    fn generated_ids_are_valid_and_differ() {
        let a = RequestId::generate();
        let b = RequestId::generate();
        assert_ne!(a, b);
        for id in [a, b] {
            assert!(is_valid(id.as_str().as_bytes()), "{id}");
            assert_eq!(id.as_str().len(), GENERATED_ID_LEN, "{id}");
            let digits = &id.as_str()[REQUEST_ID_PREFIX.len()..];
            assert!(bs58::decode(digits).into_vec().is_ok(), "base58: {id}");
        }
    }
}
