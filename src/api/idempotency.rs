//! The `Idempotency-Key` header of the work-creating endpoints, read at the edge of the
//! API: checked (1–255 printable ASCII characters, else `400 INVALID_REQUEST` naming the
//! header) and turned into the digests admission keeps (`jobs::admission::IdempotencyKey`).
//!
//! Owns: the key's digest and the request's fingerprint, a batch's per-item keys, and `Asked`
//! (what a request asks besides its subject, which the fingerprint covers). Pure; listener
//! threads.
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

/// What a work-creating request asks besides its subject: part of its fingerprint. Declared
/// here, below the endpoints that fill it in, so this module imports nothing of theirs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked<'b> {
    pub refresh: bool,
    /// Checked by the webhook policy.
    pub callback_url: Option<&'b str>,
}

/// Domain separator of the fingerprint hash.
const FINGERPRINT_DOMAIN: &[u8] = b"xray-idempotency-v1";

/// Domain separator of a batch item's key digest.
const BATCH_ITEM_DOMAIN: &[u8] = b"xray-idempotency-batch-item-v1";

/// The request's idempotency key, if it sent one.
pub(crate) fn idempotency_key(
    request: &ApiRequest,
    work: &Work,
    asked: Asked<'_>,
) -> Result<Option<IdempotencyKey>, ApiError> {
    let Some(key_digest) = key_digest(request)? else { return Ok(None) };
    Ok(Some(IdempotencyKey { key_digest, fingerprint: fingerprint(work, asked) }))
}

/// The keys of a batch's items, if it sent an `Idempotency-Key`: item `i` keeps its answer
/// under SHA-256(domain ‖ SHA-256(key) ‖ i), with a fingerprint of the whole batch (every
/// address as sent, in order, and `refresh`) and `i`. So a retry of the batch replays every
/// item that got an answer and admits the others anew (refusals are not kept), and the same
/// key with another batch — or on the single endpoint — never meets the other's answers as
/// its own.
pub(crate) fn batch_item_keys(
    request: &ApiRequest,
    wallets: &[String],
    asked: Asked<'_>,
) -> Result<Option<Vec<IdempotencyKey>>, ApiError> {
    let Some(key_digest) = key_digest(request)? else { return Ok(None) };
    let mut batch = Sha256::new();
    batch.update(FINGERPRINT_DOMAIN);
    batch.update([3]);
    for wallet in wallets {
        // Length-prefixed: the items as sent, whatever they hold.
        batch.update((wallet.len() as u64).to_le_bytes());
        batch.update(wallet.as_bytes());
    }
    asked_flags(&mut batch, asked);
    let batch_digest: [u8; 32] = batch.finalize().into();
    let item = |domain: &[u8], digest: &[u8; 32], index: u32| -> [u8; 32] {
        Sha256::new().chain_update(domain).chain_update(digest).chain_update(index.to_le_bytes()).finalize().into()
    };
    let keys = (0..wallets.len() as u32).map(|index| IdempotencyKey {
        key_digest: item(BATCH_ITEM_DOMAIN, &key_digest, index),
        fingerprint: item(FINGERPRINT_DOMAIN, &batch_digest, index),
    });
    Ok(Some(keys.collect()))
}

/// SHA-256 of the request's `Idempotency-Key`, if it sent a well-formed one.
fn key_digest(request: &ApiRequest) -> Result<Option<[u8; 32]>, ApiError> {
    let Some(text) = request.idempotency_key.as_deref() else { return Ok(None) };
    if !is_well_formed(text) {
        return Err(ApiError::InvalidRequest {
            field: "Idempotency-Key",
            message: "Idempotency-Key must be 1 to 255 printable ASCII characters",
        });
    }
    Ok(Some(Sha256::digest(text.as_bytes()).into()))
}

fn is_well_formed(text: &str) -> bool {
    (1..=IDEMPOTENCY_KEY_CHARS_MAX).contains(&text.len()) && text.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

/// `refresh`, then the `callbackUrl` when there is one (length-prefixed): a request without
/// one hashes as it did before webhooks, so answers kept before them still match.
fn asked_flags(hasher: &mut Sha256, asked: Asked<'_>) {
    hasher.update([u8::from(asked.refresh)]);
    if let Some(url) = asked.callback_url {
        hasher.update((url.len() as u64).to_le_bytes());
        hasher.update(url.as_bytes());
    }
}

/// SHA-256 of the route, the addresses (32 bytes each, in the order sent), `refresh` and the
/// `callbackUrl`.
fn fingerprint(work: &Work, asked: Asked<'_>) -> [u8; 32] {
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
    asked_flags(&mut hasher, asked);
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Method;
    use crate::pubkey::Pubkey;

    fn asked(refresh: bool) -> Asked<'static> {
        Asked { refresh, callback_url: None }
    }

    #[test]
    fn a_callback_url_is_part_of_what_is_asked() {
        let work = Work::Analysis { wallet: Pubkey([1; 32]) };
        let key = |asked| idempotency_key(&with_key(Some("k")), &work, asked).unwrap().unwrap().fingerprint;
        let hook = |url| Asked { refresh: false, callback_url: Some(url) };
        assert_ne!(key(asked(false)), key(hook("https://a.example/")));
        assert_ne!(key(hook("https://a.example/")), key(hook("https://b.example/")));
        assert_eq!(key(hook("https://a.example/")), key(hook("https://a.example/")));
    }

    fn with_key(key: Option<&str>) -> ApiRequest {
        let mut request = ApiRequest::new(Method::Post, "/v1/developer/intelligence/wallet");
        request.idempotency_key = key.map(str::to_owned);
        request
    }

    #[test]
    fn keys_are_1_to_255_printable_ascii_characters() {
        let work = Work::Analysis { wallet: Pubkey([1; 32]) };
        assert_eq!(idempotency_key(&with_key(None), &work, asked(false)).unwrap(), None);
        for good in ["a", "order-42/retry ok", &"k".repeat(255), "~!@#$%^&*()"] {
            assert!(idempotency_key(&with_key(Some(good)), &work, asked(false)).unwrap().is_some(), "{good:?}");
        }
        for bad in ["", &"k".repeat(256), "tab\there", "é", "nul\0", "\u{fffd}"] {
            let err = idempotency_key(&with_key(Some(bad)), &work, asked(false)).unwrap_err();
            assert!(matches!(err, ApiError::InvalidRequest { field: "Idempotency-Key", .. }), "{bad:?}");
        }
    }

    #[test]
    fn batch_items_have_their_own_keys_bound_to_the_whole_batch() {
        let wallets = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let keys = |key: &str, list: &[&str], refresh| {
            batch_item_keys(&with_key(Some(key)), &wallets(list), refresh).unwrap().unwrap()
        };
        assert_eq!(batch_item_keys(&with_key(None), &wallets(&["a"]), asked(false)).unwrap(), None);
        assert!(batch_item_keys(&with_key(Some("")), &wallets(&["a"]), asked(false)).is_err());
        let first = keys("k", &["a", "b", "a"], asked(false));
        assert_eq!(first, keys("k", &["a", "b", "a"], asked(false)), "deterministic");
        assert_eq!(first.len(), 3);
        let digests: std::collections::HashSet<_> = first.iter().map(|k| k.key_digest).collect();
        assert_eq!(digests.len(), 3, "one key per item, even for a repeated address");
        let single = idempotency_key(&with_key(Some("k")), &Work::Analysis { wallet: Pubkey([1; 32]) }, asked(false));
        assert!(!digests.contains(&single.unwrap().unwrap().key_digest), "the single endpoint's key is its own");
        for other in [
            keys("k", &["a", "b"], asked(false)),
            keys("k", &["a", "b", "a"], asked(true)),
            keys("k", &["ab", "", "a"], asked(false)),
        ] {
            assert_ne!(other[0].fingerprint, first[0].fingerprint, "another batch");
            assert_eq!(other[0].key_digest, first[0].key_digest, "the same key");
        }
        assert_ne!(keys("k2", &["a", "b", "a"], asked(false))[0].key_digest, first[0].key_digest);
    }

    #[test]
    fn the_fingerprint_is_what_is_asked_and_the_digest_is_the_key() {
        let (a, b) = (Pubkey([1; 32]), Pubkey([2; 32]));
        let key =
            |text: &str, work: &Work, refresh| idempotency_key(&with_key(Some(text)), work, refresh).unwrap().unwrap();
        let one = key("k1", &Work::Analysis { wallet: a }, asked(false));
        assert_eq!(one, key("k1", &Work::Analysis { wallet: a }, asked(false)), "deterministic");
        assert_ne!(one.key_digest, key("k2", &Work::Analysis { wallet: a }, asked(false)).key_digest);
        assert_eq!(one.fingerprint, key("k2", &Work::Analysis { wallet: a }, asked(false)).fingerprint);
        for other in [
            key("k1", &Work::Analysis { wallet: b }, asked(false)),
            key("k1", &Work::Analysis { wallet: a }, asked(true)),
            key("k1", &Work::Comparison { wallet_a: a, wallet_b: b }, asked(false)),
        ] {
            assert_ne!(one.fingerprint, other.fingerprint);
        }
        let ab = key("k1", &Work::Comparison { wallet_a: a, wallet_b: b }, asked(false));
        assert_ne!(ab.fingerprint, key("k1", &Work::Comparison { wallet_a: b, wallet_b: a }, asked(false)).fingerprint);
        assert_eq!(one.key_digest, <[u8; 32]>::from(Sha256::digest(b"k1")));
    }
}
