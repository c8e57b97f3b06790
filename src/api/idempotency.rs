//! The `Idempotency-Key` header of the two work-creating endpoints, read at the edge of the
//! API: checked (1–255 printable ASCII characters, else `400 INVALID_REQUEST` naming the
//! header) and turned into the digests admission keeps (`jobs::admission::IdempotencyKey`).
//!
//! Owns: the key's digest and the request's fingerprint. Pure; listener threads.
//!
//! Invariant: the fingerprint covers what the request asks — the route, the addresses in the
//! order sent, `refresh` — and nothing of its spelling (whitespace, field order, unknown
//! fields), so a retry of the same request always matches its first answer.
//! Deliberately absent: the key's text anywhere past this module (only its SHA-256).

use sha2::{Digest, Sha256};

use super::ApiError;
use crate::config::IDEMPOTENCY_KEY_CHARS_MAX;
use crate::http::ApiRequest;
use crate::jobs::admission::{IdempotencyKey, Work};

/// Domain separator of the fingerprint hash.
const FINGERPRINT_DOMAIN: &[u8] = b"xray-idempotency-v1";

/// The request's idempotency key, if it sent one.
pub(crate) fn idempotency_key(
    request: &ApiRequest,
    work: &Work,
    refresh: bool,
) -> Result<Option<IdempotencyKey>, ApiError> {
    let Some(text) = request.idempotency_key.as_deref() else { return Ok(None) };
    if !is_well_formed(text) {
        return Err(ApiError::InvalidRequest {
            field: "Idempotency-Key",
            message: "Idempotency-Key must be 1 to 255 printable ASCII characters",
        });
    }
    Ok(Some(IdempotencyKey {
        key_digest: Sha256::digest(text.as_bytes()).into(),
        fingerprint: fingerprint(work, refresh),
    }))
}

fn is_well_formed(text: &str) -> bool {
    (1..=IDEMPOTENCY_KEY_CHARS_MAX).contains(&text.len()) && text.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

/// SHA-256 of the route, the addresses (32 bytes each, in the order sent) and `refresh`.
fn fingerprint(work: &Work, refresh: bool) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(FINGERPRINT_DOMAIN);
    match work {
        Work::Analysis { wallet } => {
            hasher.update([1]);
            hasher.update(wallet.as_bytes());
        }
        Work::Comparison { wallet_a, wallet_b } => {
            hasher.update([2]);
            hasher.update(wallet_a.as_bytes());
            hasher.update(wallet_b.as_bytes());
        }
    }
    hasher.update([u8::from(refresh)]);
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Method;
    use crate::pubkey::Pubkey;

    fn with_key(key: Option<&str>) -> ApiRequest {
        let mut request = ApiRequest::new(Method::Post, "/v1/developer/intelligence/wallet");
        request.idempotency_key = key.map(str::to_owned);
        request
    }

    #[test]
    fn keys_are_1_to_255_printable_ascii_characters() {
        let work = Work::Analysis { wallet: Pubkey([1; 32]) };
        assert_eq!(idempotency_key(&with_key(None), &work, false).unwrap(), None);
        for good in ["a", "order-42/retry ok", &"k".repeat(255), "~!@#$%^&*()"] {
            assert!(idempotency_key(&with_key(Some(good)), &work, false).unwrap().is_some(), "{good:?}");
        }
        for bad in ["", &"k".repeat(256), "tab\there", "é", "nul\0", "\u{fffd}"] {
            let err = idempotency_key(&with_key(Some(bad)), &work, false).unwrap_err();
            assert!(matches!(err, ApiError::InvalidRequest { field: "Idempotency-Key", .. }), "{bad:?}");
        }
    }

    #[test]
    fn the_fingerprint_is_what_is_asked_and_the_digest_is_the_key() {
        let (a, b) = (Pubkey([1; 32]), Pubkey([2; 32]));
        let key =
            |text: &str, work: &Work, refresh| idempotency_key(&with_key(Some(text)), work, refresh).unwrap().unwrap();
        let one = key("k1", &Work::Analysis { wallet: a }, false);
        assert_eq!(one, key("k1", &Work::Analysis { wallet: a }, false), "deterministic");
        assert_ne!(one.key_digest, key("k2", &Work::Analysis { wallet: a }, false).key_digest);
        assert_eq!(one.fingerprint, key("k2", &Work::Analysis { wallet: a }, false).fingerprint);
        for other in [
            key("k1", &Work::Analysis { wallet: b }, false),
            key("k1", &Work::Analysis { wallet: a }, true),
            key("k1", &Work::Comparison { wallet_a: a, wallet_b: b }, false),
        ] {
            assert_ne!(one.fingerprint, other.fingerprint);
        }
        let ab = key("k1", &Work::Comparison { wallet_a: a, wallet_b: b }, false);
        assert_ne!(ab.fingerprint, key("k1", &Work::Comparison { wallet_a: b, wallet_b: a }, false).fingerprint);
        assert_eq!(one.key_digest, <[u8; 32]>::from(Sha256::digest(b"k1")));
    }
}
