//! API keys and the ids of keys and accounts (contract §2).
//!
//! Owns: the key format `svc_live_` + base58(32 random bytes ‖ big-endian CRC-32/IEEE of them),
//! its generation from OS randomness, its parsing (refused before any lookup when the prefix,
//! alphabet, length or checksum is wrong), its SHA-256 digest (the only form ever stored), its
//! display prefix, and the `key_…` / `acct_…` ids. Called from listener threads (`parse`,
//! `digest`) and from the admin path (`generate`, ids).
//!
//! Invariant: a secret key never appears in `Debug` output (`ApiKey` and `ParsedKey` redact it)
//! and has no `Display`; only `ApiKey::expose_secret` gives it out, once, to the creator.
//! Invariant: parsing is bounded: text longer than `KEY_TEXT_LEN_MAX` is refused before decoding.
//! Invariant: base58 is canonical (one text per byte string), so equal keys have equal digests.
//! Deliberately absent: zeroizing memory on drop (no such dependency; the key lives only for one
//! request or one admin response).

use std::fmt;

use crate::config::ACCOUNT_ID_LEN_MAX;
use crate::pubkey::is_base58_byte;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use thiserror::Error;

/// Every key starts with this.
pub const KEY_PREFIX: &str = "svc_live_";
/// Random bytes of a key.
pub const KEY_SECRET_LEN_BYTES: usize = 32;
/// Bytes of the key's payload: the secret then its CRC-32.
pub const KEY_PAYLOAD_LEN_BYTES: usize = KEY_SECRET_LEN_BYTES + 4;
/// Longest base58 text of 36 bytes (⌈36 × log 256 / log 58⌉ = 50).
pub const KEY_BASE58_LEN_MAX: usize = 50;
/// Longest key text accepted for decoding.
pub const KEY_TEXT_LEN_MAX: usize = KEY_PREFIX.len() + KEY_BASE58_LEN_MAX;
/// Characters of the base58 part shown in `prefix`.
pub const KEY_DISPLAY_CHARS: usize = 4;
/// Random bytes of a key id or a generated account id.
pub const ID_RANDOM_LEN_BYTES: usize = 16;
/// Key id prefix.
pub const KEY_ID_PREFIX: &str = "key_";
/// Generated account id prefix.
pub const ACCOUNT_ID_PREFIX: &str = "acct_";

/// Why a key text was refused before lookup. Every variant is the contract's reason
/// `malformed`; the variants exist for tests and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum KeyRefusal {
    #[error("key does not start with {KEY_PREFIX}")]
    WrongPrefix,
    #[error("key is not base58")]
    NotBase58,
    #[error("key does not encode {KEY_PAYLOAD_LEN_BYTES} bytes")]
    WrongLength,
    #[error("key checksum does not match")]
    BadChecksum,
}

impl KeyRefusal {
    /// The contract's `details.reason`.
    pub fn reason(self) -> &'static str {
        "malformed"
    }
}

/// The operating system could not provide randomness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("operating system randomness unavailable")]
pub struct RandomUnavailable;

fn random_bytes<const N: usize>() -> Result<[u8; N], RandomUnavailable> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|_| RandomUnavailable)?;
    Ok(bytes)
}

fn checksum(secret: &[u8]) -> [u8; 4] {
    crc32fast::hash(secret).to_be_bytes()
}

/// A full secret key. Shown once to its creator; never logged.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A new key from 32 bytes of OS randomness.
    pub fn generate() -> Result<Self, RandomUnavailable> {
        Ok(Self::from_secret(&random_bytes::<KEY_SECRET_LEN_BYTES>()?))
    }

    /// The key of given secret bytes (tests and `generate`).
    pub fn from_secret(secret: &[u8; KEY_SECRET_LEN_BYTES]) -> Self {
        let mut payload = [0u8; KEY_PAYLOAD_LEN_BYTES];
        payload[..KEY_SECRET_LEN_BYTES].copy_from_slice(secret);
        payload[KEY_SECRET_LEN_BYTES..].copy_from_slice(&checksum(secret));
        Self(format!("{KEY_PREFIX}{}", bs58::encode(payload).into_string()))
    }

    /// The secret text, for the one response that shows it.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }

    pub fn digest(&self) -> KeyDigest {
        digest(&self.0)
    }

    pub fn display_prefix(&self) -> String {
        display_prefix(&self.0)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({}…)", display_prefix(&self.0))
    }
}

/// A key text that passed every check that needs no lookup.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ParsedKey<'a>(&'a str);

impl<'a> ParsedKey<'a> {
    pub fn digest(self) -> KeyDigest {
        digest(self.0)
    }

    pub fn display_prefix(self) -> String {
        display_prefix(self.0)
    }
}

impl fmt::Debug for ParsedKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ParsedKey({}…)", display_prefix(self.0))
    }
}

/// Checks prefix, length, alphabet and checksum, in that order; no allocation.
pub fn parse(text: &str) -> Result<ParsedKey<'_>, KeyRefusal> {
    let encoded = text.strip_prefix(KEY_PREFIX).ok_or(KeyRefusal::WrongPrefix)?;
    if encoded.is_empty() || encoded.len() > KEY_BASE58_LEN_MAX {
        return Err(if encoded.bytes().all(is_base58_byte) { KeyRefusal::WrongLength } else { KeyRefusal::NotBase58 });
    }
    let mut payload = [0u8; KEY_PAYLOAD_LEN_BYTES];
    match bs58::decode(encoded).onto(&mut payload) {
        Ok(KEY_PAYLOAD_LEN_BYTES) => {}
        Ok(_) | Err(bs58::decode::Error::BufferTooSmall) => return Err(KeyRefusal::WrongLength),
        Err(_) => return Err(KeyRefusal::NotBase58),
    }
    let (secret, sum) = payload.split_at(KEY_SECRET_LEN_BYTES);
    if checksum(secret) != sum {
        return Err(KeyRefusal::BadChecksum);
    }
    Ok(ParsedKey(text))
}

/// SHA-256 of the whole key text, prefix included: what the server stores.
pub fn digest(key: &str) -> KeyDigest {
    KeyDigest(Sha256::digest(key.as_bytes()).into())
}

/// `svc_live_` + the first 4 characters of the base58 part (fewer if the text is shorter).
pub fn display_prefix(key: &str) -> String {
    let encoded = key.strip_prefix(KEY_PREFIX).unwrap_or(key);
    let shown: String = encoded.chars().take(KEY_DISPLAY_CHARS).collect();
    format!("{KEY_PREFIX}{shown}")
}

/// The SHA-256 digest of a key; serialized as 64 lowercase hex characters.
///
/// Equality is constant-time (`subtle`), so the key table's lookup compares a presented digest
/// with a stored one without a timing signal on the length of the common prefix.
#[derive(Clone, Copy)]
pub struct KeyDigest(pub [u8; 32]);

impl std::hash::Hash for KeyDigest {
    /// The first eight bytes: a digest is uniform already (see the key table's hasher).
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let [a, b, c, d, e, f, g, h, ..] = self.0;
        state.write_u64(u64::from_le_bytes([a, b, c, d, e, f, g, h]));
    }
}

impl PartialEq for KeyDigest {
    fn eq(&self, other: &Self) -> bool {
        bool::from(self.0.ct_eq(&other.0))
    }
}

impl Eq for KeyDigest {}

impl KeyDigest {
    pub fn to_hex(&self) -> String {
        let mut hex = String::with_capacity(64);
        for byte in self.0 {
            hex.push(char::from(HEX_DIGITS[usize::from(byte >> 4)]));
            hex.push(char::from(HEX_DIGITS[usize::from(byte & 0x0f)]));
        }
        hex
    }

    pub fn from_hex(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            *slot = (hex_value(pair[0])? << 4) | hex_value(pair[1])?;
        }
        Some(Self(out))
    }
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

impl fmt::Debug for KeyDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Enough to tell digests apart in a log; the digest is not secret, but it is long.
        write!(f, "KeyDigest({}…)", &self.to_hex()[..12])
    }
}

impl Serialize for KeyDigest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for KeyDigest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        KeyDigest::from_hex(&text).ok_or_else(|| serde::de::Error::custom("key digest is not 64 lowercase hex digits"))
    }
}

/// Why an id text was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum IdError {
    #[error("key id is not key_ + base58 of 16 bytes")]
    BadKeyId,
    #[error("account id must be 1..={ACCOUNT_ID_LEN_MAX} characters of [A-Za-z0-9._-]")]
    BadAccountId,
}

fn random_id(prefix: &str) -> Result<String, RandomUnavailable> {
    Ok(format!("{prefix}{}", bs58::encode(random_bytes::<ID_RANDOM_LEN_BYTES>()?).into_string()))
}

/// A key's id: `key_` + base58 of 16 random bytes. Not secret.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct KeyId(String);

impl KeyId {
    pub fn generate() -> Result<Self, RandomUnavailable> {
        random_id(KEY_ID_PREFIX).map(Self)
    }

    pub fn parse(text: &str) -> Result<Self, IdError> {
        let encoded = text.strip_prefix(KEY_ID_PREFIX).ok_or(IdError::BadKeyId)?;
        let mut bytes = [0u8; ID_RANDOM_LEN_BYTES];
        // 16 bytes are at most 22 base58 characters; longer text is refused before decoding.
        match encoded.len() <= 22 && !encoded.is_empty() {
            true => match bs58::decode(encoded).onto(&mut bytes) {
                Ok(ID_RANDOM_LEN_BYTES) => Ok(Self(text.to_owned())),
                _ => Err(IdError::BadKeyId),
            },
            false => Err(IdError::BadKeyId),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An account id: generated (`acct_` + base58 of 16 random bytes) or chosen by the operator
/// (1..=64 characters of `[A-Za-z0-9._-]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AccountId(String);

impl AccountId {
    pub fn generate() -> Result<Self, RandomUnavailable> {
        random_id(ACCOUNT_ID_PREFIX).map(Self)
    }

    pub fn parse(text: &str) -> Result<Self, IdError> {
        let valid = (1..=ACCOUNT_ID_LEN_MAX).contains(&text.len())
            && text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(IdError::BadAccountId)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! id_conversions {
    ($id:ident) => {
        impl TryFrom<String> for $id {
            type Error = IdError;
            fn try_from(text: String) -> Result<Self, IdError> {
                Self::parse(&text)
            }
        }

        impl From<$id> for String {
            fn from(id: $id) -> String {
                id.0
            }
        }

        impl fmt::Display for $id {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_conversions!(KeyId);
id_conversions!(AccountId);

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(seed: u8) -> ApiKey {
        ApiKey::from_secret(&[seed; KEY_SECRET_LEN_BYTES])
    }

    /// The key text with its base58 payload replaced by the encoding of `payload`.
    fn with_payload(payload: &[u8]) -> String {
        format!("{KEY_PREFIX}{}", bs58::encode(payload).into_string())
    }

    #[test]
    fn generated_keys_parse_and_differ() {
        let a = ApiKey::generate().expect("randomness");
        let b = ApiKey::generate().expect("randomness");
        assert_ne!(a, b);
        for key in [&a, &b] {
            assert!(parse(key.expose_secret()).is_ok(), "{key:?}");
            assert!(key.expose_secret().len() <= KEY_TEXT_LEN_MAX);
        }
    }

    #[test]
    fn key_format_is_prefix_base58_of_secret_and_crc() {
        let secret = [7u8; KEY_SECRET_LEN_BYTES];
        let key = ApiKey::from_secret(&secret);
        let encoded = key.expose_secret().strip_prefix(KEY_PREFIX).expect("prefix");
        let payload = bs58::decode(encoded).into_vec().expect("base58");
        assert_eq!(payload.len(), 36);
        assert_eq!(&payload[..32], &secret);
        assert_eq!(payload[32..], crc32fast::hash(&secret).to_be_bytes());
        // CRC-32/IEEE check value: crc32("123456789") = 0xCBF43926.
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn parse_refusals() {
        let good = key_of(1).expose_secret().to_owned();
        let encoded = &good[KEY_PREFIX.len()..];
        let mut bad_sum = [1u8; 36];
        bad_sum[35] ^= 1;
        let mut zero_secret = [0u8; 36];
        zero_secret[32..].copy_from_slice(&checksum(&[0u8; 32]));
        let cases: Vec<(String, Result<(), KeyRefusal>)> = vec![
            (good.clone(), Ok(())),
            (with_payload(&zero_secret), Ok(())),
            (String::new(), Err(KeyRefusal::WrongPrefix)),
            (format!("svc_test_{encoded}"), Err(KeyRefusal::WrongPrefix)),
            (format!("SVC_LIVE_{encoded}"), Err(KeyRefusal::WrongPrefix)),
            (encoded.to_owned(), Err(KeyRefusal::WrongPrefix)),
            (KEY_PREFIX.to_owned(), Err(KeyRefusal::WrongLength)),
            // One more digit multiplies by 58: with a small first byte it still fits 36 bytes.
            (format!("{good}1"), Err(KeyRefusal::BadChecksum)),
            (with_payload(&[0xff; 36]) + "1", Err(KeyRefusal::WrongLength)),
            (format!("{good}{}", "2".repeat(100)), Err(KeyRefusal::WrongLength)),
            (format!("{good}{}", "0".repeat(100)), Err(KeyRefusal::NotBase58)),
            (good[..good.len() - 1].to_owned(), Err(KeyRefusal::WrongLength)),
            (with_payload(&[1u8; 35]), Err(KeyRefusal::WrongLength)),
            (with_payload(&[1u8; 37]), Err(KeyRefusal::WrongLength)),
            (format!("{}0", &good[..good.len() - 1]), Err(KeyRefusal::NotBase58)),
            (format!("{}l", &good[..good.len() - 1]), Err(KeyRefusal::NotBase58)),
            (format!("{} ", &good[..good.len() - 1]), Err(KeyRefusal::NotBase58)),
            (format!("{}é", &good[..good.len() - 2]), Err(KeyRefusal::NotBase58)),
            (with_payload(&bad_sum), Err(KeyRefusal::BadChecksum)),
        ];
        for (text, want) in cases {
            let got = parse(&text).map(|_| ());
            assert_eq!(got, want, "{text:?}");
            if let Err(refusal) = got {
                assert_eq!(refusal.reason(), "malformed");
            }
        }
    }

    #[test]
    fn any_single_character_change_is_caught() {
        let good = key_of(9).expose_secret().to_owned();
        for at in KEY_PREFIX.len()..good.len() {
            let mut bytes = good.clone().into_bytes();
            bytes[at] = if bytes[at] == b'2' { b'3' } else { b'2' };
            let text = String::from_utf8(bytes).expect("ascii");
            assert!(parse(&text).is_err(), "change at {at} accepted");
        }
    }

    #[test]
    fn digest_is_sha256_of_the_whole_text() {
        let key = key_of(3);
        let want: [u8; 32] = Sha256::digest(key.expose_secret().as_bytes()).into();
        assert_eq!(key.digest().0, want);
        assert_eq!(digest("abc").to_hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn digest_hex_round_trip_and_serde() {
        let d = digest("svc_live_x");
        assert_eq!(KeyDigest::from_hex(&d.to_hex()), Some(d));
        let cases = ["", "00", &"g".repeat(64), &"A".repeat(64), &"0".repeat(65)];
        for text in cases {
            assert_eq!(KeyDigest::from_hex(text), None, "{text}");
        }
        let json = serde_json::to_string(&d).expect("serializes");
        assert_eq!(json, format!("\"{}\"", d.to_hex()));
        assert_eq!(serde_json::from_str::<KeyDigest>(&json).expect("parses"), d);
        assert!(serde_json::from_str::<KeyDigest>("\"zz\"").is_err());
    }

    #[test]
    fn display_prefix_is_four_base58_chars() {
        let key = key_of(5);
        let text = key.expose_secret();
        let want = &text[..KEY_PREFIX.len() + 4];
        assert_eq!(key.display_prefix(), want);
        assert_eq!(parse(text).expect("valid").display_prefix(), want);
        assert_eq!(display_prefix("svc_live_ab"), "svc_live_ab");
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let key = key_of(11);
        let secret = key.expose_secret();
        let tail = &secret[KEY_PREFIX.len() + 4..];
        for shown in [format!("{key:?}"), format!("{:?}", parse(secret).expect("valid")), format!("{:#?}", Some(&key))]
        {
            assert!(!shown.contains(tail), "{shown}");
            assert!(shown.contains(&key.display_prefix()), "{shown}");
        }
    }

    #[test]
    fn ids() {
        let key_id = KeyId::generate().expect("randomness");
        assert!(key_id.as_str().starts_with("key_"));
        assert_eq!(KeyId::parse(key_id.as_str()), Ok(key_id.clone()));
        let account = AccountId::generate().expect("randomness");
        assert!(account.as_str().starts_with("acct_"));
        assert_eq!(AccountId::parse(account.as_str()), Ok(account));
        let key_cases = [
            ("key_", false),
            ("key_0", false),
            ("acct_4vJ9JU1bJJE96FWSJKvHsmmF", false),
            ("key_4vJ9JU1bJJE96FWSJKvHsmmF", false), // 24 characters: more than 16 bytes
            ("key_11111111111111111111111", false),
        ];
        for (text, ok) in key_cases {
            assert_eq!(KeyId::parse(text).is_ok(), ok, "{text}");
        }
        let sixteen = format!("key_{}", bs58::encode([0xab; 16]).into_string());
        assert!(KeyId::parse(&sixteen).is_ok());
        let account_cases = [("ops-team_1.prod", true), ("", false), ("a b", false), ("é", false)];
        for (text, ok) in account_cases {
            assert_eq!(AccountId::parse(text).is_ok(), ok, "{text}");
        }
        assert!(AccountId::parse(&"a".repeat(64)).is_ok());
        assert!(AccountId::parse(&"a".repeat(65)).is_err());
        let json = serde_json::to_string(&key_id).expect("serializes");
        assert_eq!(serde_json::from_str::<KeyId>(&json).expect("parses"), key_id);
        assert!(serde_json::from_str::<AccountId>("\"bad id\"").is_err());
    }
}
