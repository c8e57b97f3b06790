//! Webhook signatures: each delivery carries `Xray-Signature: t=<unix seconds>,v1=<hex>`, where
//! `v1` is HMAC-SHA256 under the account's webhook secret of `<t>.<body>` — the scheme Stripe
//! made familiar, so a receiver checks the body it got and the time it was signed, and refuses
//! a replay older than its own tolerance.
//!
//! Owns: secret generation, signing and verification. Pure; any thread.
//!
//! Invariant: verification compares in constant time (`Mac::verify_slice`).
//! Deliberately absent: several signatures per header during a secret's rotation (a rotated
//! secret signs from the next delivery on; receivers update when the operator rotates).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Prefix of every webhook secret (so one is recognised in a config or a leak scan).
pub const SECRET_PREFIX: &str = "whsec_";
/// Random bytes in a secret.
pub const SECRET_RANDOM_BYTES: usize = 32;
/// The header a delivery's signature travels in.
pub const SIGNATURE_HEADER: &str = "xray-signature";

/// A new secret: `whsec_` + base58 of 32 random bytes.
pub fn new_secret() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; SECRET_RANDOM_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(format!("{SECRET_PREFIX}{}", bs58::encode(bytes).into_string()))
}

fn mac(secret: &str, unix_s: u64, body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length: this never fails.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap_or_else(|_| unreachable!());
    mac.update(unix_s.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The `Xray-Signature` value of `body` signed at `unix_s`.
pub fn sign(secret: &str, unix_s: u64, body: &[u8]) -> String {
    let digest = mac(secret, unix_s, body).finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("t={unix_s},v1={hex}")
}

/// Checks a `Xray-Signature` value against `body`: the signature must be the secret's and
/// its time within `tolerance_s` of `now_s`. Returns the signing time.
pub fn verify(secret: &str, header: &str, body: &[u8], now_s: u64, tolerance_s: u64) -> Result<u64, &'static str> {
    let mut unix_s = None;
    let mut signature = None;
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => unix_s = t.parse::<u64>().ok(),
            Some(("v1", hex)) => signature = decode_hex(hex),
            _ => {}
        }
    }
    let (unix_s, signature) = (unix_s.ok_or("no timestamp")?, signature.ok_or("no v1 signature")?);
    if now_s.abs_diff(unix_s) > tolerance_s {
        return Err("signed outside the tolerance");
    }
    mac(secret, unix_s, body).verify_slice(&signature).map_err(|_| "signature mismatch")?;
    Ok(unix_s)
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_is_hmac_sha256_of_time_dot_body() {
        // RFC 4231-style check against an independent computation: HMAC-SHA256(key, "1.{}").
        let header = sign("whsec_test", 1, b"{}");
        let expected = {
            let mut m = <Hmac<Sha256> as Mac>::new_from_slice(b"whsec_test").unwrap();
            m.update(b"1.{}");
            m.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect::<String>()
        };
        assert_eq!(header, format!("t=1,v1={expected}"));
        assert_eq!(verify("whsec_test", &header, b"{}", 100, 300), Ok(1));
    }

    #[test]
    fn verification_refuses_another_body_secret_or_time() {
        let header = sign("whsec_a", 1_000, b"body");
        assert_eq!(verify("whsec_a", &header, b"body", 1_200, 300), Ok(1_000));
        assert_eq!(verify("whsec_a", &header, b"bodY", 1_000, 300), Err("signature mismatch"));
        assert_eq!(verify("whsec_b", &header, b"body", 1_000, 300), Err("signature mismatch"));
        assert_eq!(verify("whsec_a", &header, b"body", 1_301, 300), Err("signed outside the tolerance"));
        assert_eq!(verify("whsec_a", "v1=00", b"body", 1_000, 300), Err("no timestamp"));
        assert_eq!(verify("whsec_a", "t=1000,v1=zz", b"body", 1_000, 300), Err("no v1 signature"));
    }

    #[test]
    fn secrets_are_prefixed_random_and_short_enough_to_store() {
        let (a, b) = (new_secret().unwrap(), new_secret().unwrap());
        assert!(a.starts_with(SECRET_PREFIX) && a != b);
        assert!(a.len() <= crate::config::WEBHOOK_SECRET_CHARS_MAX, "{}", a.len());
    }
}
