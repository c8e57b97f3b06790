//! Request ids: the `X-Request-Id` every response carries (contract §1).
//!
//! Owns: the rule for echoing a client's id and the generator of fresh ones. Called on listener
//! threads once per request; the generator uses fastrand's per-thread generator (no lock, no
//! syscall).
//!
//! Invariant: a `RequestId` is always 1–64 characters of `[A-Za-z0-9._-]`, so it is a valid
//! header value and safe to log and to put in JSON without escaping. Generated ids are
//! `req_` + base58 of 12 random bytes. Deliberately absent: uniqueness guarantees for client
//! ids (they are the client's business) and cryptographic randomness (ids are not secrets).

use crate::config::REQUEST_ID_LEN_MAX;
use std::fmt;

/// Random bytes in a generated id.
pub const REQUEST_ID_RANDOM_BYTES: usize = 12;
/// Prefix of generated ids.
pub const REQUEST_ID_PREFIX: &str = "req_";

/// A request id that satisfies the contract's character rule.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RequestId(String);

impl RequestId {
    /// The client's `X-Request-Id` when it qualifies, else a fresh id.
    pub fn resolve(header: Option<&[u8]>) -> RequestId {
        match header {
            Some(value) if is_valid(value) => {
                // Every byte is ASCII (checked by is_valid), so this is valid UTF-8.
                RequestId(value.iter().map(|&b| b as char).collect())
            }
            _ => RequestId::generate(),
        }
    }

    /// A fresh `req_…` id.
    pub fn generate() -> RequestId {
        let mut random = [0u8; REQUEST_ID_RANDOM_BYTES];
        fastrand::fill(&mut random);
        let mut text = String::with_capacity(REQUEST_ID_PREFIX.len() + 17);
        text.push_str(REQUEST_ID_PREFIX);
        text.push_str(&bs58::encode(random).into_string());
        RequestId(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
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
    fn generated_ids_are_valid_and_differ() {
        let a = RequestId::generate();
        let b = RequestId::generate();
        assert_ne!(a, b);
        for id in [a, b] {
            assert!(is_valid(id.as_str().as_bytes()), "{id}");
            let decoded = bs58::decode(&id.as_str()[REQUEST_ID_PREFIX.len()..]).into_vec().unwrap();
            assert_eq!(decoded.len(), REQUEST_ID_RANDOM_BYTES);
        }
    }
}
