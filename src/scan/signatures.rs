//! What a scanned transaction's signatures say: for each signer, whether its signature is
//! there and made over exactly this message — and the message's digest, which binds a signed
//! verdict to the bytes it judged.
//!
//! Owns: `SignatureCheck` / `SignatureStatus` (one per required signer, in message order),
//! `check` (Ed25519, strict as the runtime verifies: `verify_strict` refuses small-order keys
//! and non-canonical `R`/`s`) and `message_sha256` (SHA-256 of the message bytes: the
//! transaction after its signature section, what every signature signs). Pure; called on
//! listener threads.
//!
//! Invariant: a slot of 64 zero bytes is `missing` (wallets send zeros for signatures still to
//! be made) and costs nothing; any other slot is verified, so `valid` is a checked claim, never
//! "non-zero". A transaction of at most `TX_SIGNATURES_MAX` signers costs at most that many
//! verifications — measured by `signature_check_cost` (an ignored test: `cargo test --release
//! --lib signature_check_cost -- --ignored --nocapture`), figures in the README's scan section.
//! Deliberately absent: batch verification. A scanned transaction carries one signature in
//! the common case and at most a dozen (64 bytes each in a 1,232-byte packet); a batch saves
//! little below ~8 and, when it fails, says nothing of which one is bad, which the answer must
//! name — so every slot is checked on its own.

use ed25519_dalek::{Signature, VerifyingKey};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::ledger::transaction::message::Parsed;
use crate::pubkey::Pubkey;

/// What one required signer's slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SignatureStatus {
    /// A signature of this signer over exactly this message.
    Valid,
    /// 64 zero bytes: still to be signed.
    Missing,
    /// Bytes that are not this signer's signature of this message: the message was changed
    /// after it was signed, or the slot holds someone else's signature.
    Invalid,
}

/// One required signer and its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureCheck {
    pub signer: Pubkey,
    pub status: SignatureStatus,
}

/// Every required signer's slot, checked against the message `bytes[parsed.message_offset..]`
/// (`bytes`: what `message::parse` read).
pub fn check(parsed: &Parsed, bytes: &[u8]) -> Vec<SignatureCheck> {
    let message = bytes.get(parsed.message_offset..).unwrap_or_default();
    let signers = parsed.static_keys.iter().take(usize::from(parsed.required_signatures));
    signers
        .zip(&parsed.signatures)
        .map(|(signer, slot)| SignatureCheck { signer: *signer, status: status_of(signer, slot, message) })
        .collect()
}

fn status_of(signer: &Pubkey, slot: &[u8; 64], message: &[u8]) -> SignatureStatus {
    if slot.iter().all(|&b| b == 0) {
        return SignatureStatus::Missing;
    }
    let Ok(key) = VerifyingKey::from_bytes(&signer.0) else { return SignatureStatus::Invalid };
    match key.verify_strict(message, &Signature::from_bytes(slot)) {
        Ok(()) => SignatureStatus::Valid,
        Err(_) => SignatureStatus::Invalid,
    }
}

/// Whether every required signature is there and valid.
pub fn all_valid(checks: &[SignatureCheck]) -> bool {
    !checks.is_empty() && checks.iter().all(|c| c.status == SignatureStatus::Valid)
}

/// SHA-256 of the message (`bytes` after the signature section), as 64 lowercase hex digits.
pub fn message_sha256(parsed: &Parsed, bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes.get(parsed.message_offset..).unwrap_or_default());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    hex
}

const HEX: &[u8; 16] = b"0123456789abcdef";

#[cfg(test)]
mod tests {
    use ed25519_dalek::{Signer as _, SigningKey};

    use super::*;
    use crate::ledger::transaction::message;

    /// A legacy transaction of one System transfer from `payer`, signed by it or not.
    fn transaction(payer: &SigningKey, sign: bool) -> Vec<u8> {
        let from = Pubkey(payer.verifying_key().to_bytes());
        let mut data = 2u32.to_le_bytes().to_vec();
        data.extend_from_slice(&5_000u64.to_le_bytes());
        let transfer = message::InstructionParts {
            program: Pubkey::default(),
            metas: vec![(from, true, true), (Pubkey([7; 32]), false, true)],
            data,
        };
        let mut bytes = message::compile(from, &[transfer], [3; 32], false).expect("compiles");
        assert_eq!(bytes[0], 1, "one signature slot");
        if sign {
            let signature = payer.sign(&bytes[65..]).to_bytes();
            bytes[1..65].copy_from_slice(&signature);
        }
        bytes
    }

    fn checked(bytes: &[u8]) -> Vec<SignatureStatus> {
        let parsed = message::parse(bytes).expect("parses");
        check(&parsed, bytes).into_iter().map(|c| c.status).collect()
    }

    #[test]
    fn a_signature_is_valid_only_over_exactly_its_message() {
        let payer = SigningKey::from_bytes(&[9; 32]);
        let unsigned = transaction(&payer, false);
        assert_eq!(checked(&unsigned), [SignatureStatus::Missing]);
        let signed = transaction(&payer, true);
        assert_eq!(checked(&signed), [SignatureStatus::Valid]);
        // 0x41 bytes in the slot: non-zero, and no signature.
        let mut forged = signed.clone();
        forged[1..65].fill(0x41);
        assert_eq!(checked(&forged), [SignatureStatus::Invalid]);
        // One byte of the message changed after signing (the last: the transfer's amount).
        let mut tampered = signed.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert_eq!(checked(&tampered), [SignatureStatus::Invalid]);
        // Another key's signature of the same message.
        let other = SigningKey::from_bytes(&[10; 32]);
        let mut swapped = signed.clone();
        swapped[1..65].copy_from_slice(&other.sign(&signed[65..]).to_bytes());
        assert_eq!(checked(&swapped), [SignatureStatus::Invalid]);
    }

    /// Prints what one check and one digest cost on this machine (run by hand, release build).
    #[test]
    #[ignore]
    fn signature_check_cost() {
        const ROUNDS: u32 = 4_000;
        let payer = SigningKey::from_bytes(&[9; 32]);
        for (name, sign) in [("missing (zeros)", false), ("valid", true)] {
            let bytes = transaction(&payer, sign);
            let parsed = message::parse(&bytes).expect("parses");
            let start = std::time::Instant::now();
            for _ in 0..ROUNDS {
                std::hint::black_box(check(std::hint::black_box(&parsed), &bytes));
            }
            let check_ns = start.elapsed().as_nanos() / u128::from(ROUNDS);
            let start = std::time::Instant::now();
            for _ in 0..ROUNDS {
                std::hint::black_box(message_sha256(std::hint::black_box(&parsed), &bytes));
            }
            let digest_ns = start.elapsed().as_nanos() / u128::from(ROUNDS);
            println!("{name}: check {check_ns} ns, digest of {} bytes {digest_ns} ns", bytes.len() - 65);
        }
    }

    #[test]
    fn the_digest_is_the_messages_and_changes_with_any_byte_of_it() {
        let payer = SigningKey::from_bytes(&[9; 32]);
        let (unsigned, signed) = (transaction(&payer, false), transaction(&payer, true));
        let digest = |bytes: &[u8]| message_sha256(&message::parse(bytes).expect("parses"), bytes);
        // Signing does not change what was judged.
        assert_eq!(digest(&unsigned), digest(&signed));
        let expected: String = Sha256::digest(&unsigned[65..]).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(digest(&unsigned), expected);
        for i in 65..unsigned.len() {
            let mut changed = unsigned.clone();
            changed[i] ^= 0x01;
            if let Ok(parsed) = message::parse(&changed) {
                assert_ne!(message_sha256(&parsed, &changed), expected, "byte {i} changed, digest equal");
            }
        }
    }
}
