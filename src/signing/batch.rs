//! Batched signatures (issue #41 item 9): the scans answered in one tick of a listener thread
//! share one Ed25519 signature over the root of a Merkle tree of their signed messages; each
//! scan's signature carries its salt and the path from its leaf to that root.
//!
//! Owns: the tree (`leaf`, `node`, `tree`, `fold`), the signed envelope (`envelope`), the
//! wire form of a path step (`store::MerkleStep`, read and written here) and the limits.
//!
//! The form, as every verifier computes it (README, "Signed reports"):
//! - `leaf = SHA-256(0x00 ‖ salt ‖ message)`, `message` the bytes a direct signature signs
//!   (the JCS of the covered members plus `"type"`), `salt` 16 random bytes (base64url in
//!   `batch.salt`);
//! - `node = SHA-256(0x01 ‖ left ‖ right)`; a level's last node without a partner moves up
//!   unchanged; `batch.path` lists the siblings from the leaf up, each `{"left": hex}` or
//!   `{"right": hex}` (its side of the pair);
//! - the Ed25519 signature (`value`) is over the JCS bytes of
//!   `{"root": <hex of the root>, "type": "xray.batch.v1"}`.
//!
//! Invariant: a leaf and a node never hash the same input (the 0x00/0x01 prefixes, RFC 6962's
//! domain separation), and no report's message is an envelope (no report type is
//! `xray.batch.v1`; the envelope has none of a report's members), so a batch signature never
//! passes for a direct one or the reverse.
//! Invariant: a path shows only sibling hashes, and every leaf is salted with 16 random bytes
//! its own report alone carries: a scan's path reveals nothing of the other accounts' scans
//! signed with it — not even whether a guessed report was among them.
//! Invariant: a batch holds at most `BATCH_LEAVES_MAX` leaves (a path of at most 8 steps);
//! a verifier refuses a path longer than `PATH_STEPS_MAX` as malformed.
//! Deliberately absent: batching job and event signatures (one per job, off the hot path) and
//! an index or tree size in the signature (the sides in the path say where the leaf is).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::store::MerkleStep;

/// The `type` of the signed envelope.
pub const BATCH_TYPE: &str = "xray.batch.v1";
/// Random bytes salting each leaf.
pub const SALT_BYTES: usize = 16;
/// Leaves in one batch at most: the scans of one tick beyond it start another.
pub const BATCH_LEAVES_MAX: usize = 256;
/// Steps a verifier reads at most (a tree of 65,536 leaves; this server makes ≤ 8).
pub const PATH_STEPS_MAX: usize = 16;

const LEAF_PREFIX: u8 = 0x00;
const NODE_PREFIX: u8 = 0x01;

/// A SHA-256 digest.
pub type Hash = [u8; 32];

/// The leaf of a salted message.
pub fn leaf(salt: &[u8; SALT_BYTES], message: &[u8]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([LEAF_PREFIX]);
    hasher.update(salt);
    hasher.update(message);
    hasher.finalize().into()
}

/// The parent of two nodes.
pub fn node(left: &Hash, right: &Hash) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([NODE_PREFIX]);
    hasher.update(left);
    hasher.update(right);
    hasher.finalize().into()
}

/// One step of a path: the sibling, and its side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Left(Hash),
    Right(Hash),
}

impl Step {
    /// Its wire form.
    pub fn to_wire(self) -> MerkleStep {
        match self {
            Step::Left(hash) => MerkleStep::Left(hex::encode(hash)),
            Step::Right(hash) => MerkleStep::Right(hex::encode(hash)),
        }
    }

    /// A wire step, when its sibling is 64 lowercase hex digits.
    pub fn from_wire(step: &MerkleStep) -> Option<Step> {
        let digits = match step {
            MerkleStep::Left(digits) | MerkleStep::Right(digits) => digits,
        };
        if digits.bytes().any(|b| b.is_ascii_uppercase()) {
            return None;
        }
        let hash: Hash = hex::decode(digits).ok()?.try_into().ok()?;
        Some(match step {
            MerkleStep::Left(_) => Step::Left(hash),
            MerkleStep::Right(_) => Step::Right(hash),
        })
    }
}

/// The root over `leaves` (at least one) and each leaf's path to it, in the leaves' order.
pub fn tree(leaves: &[Hash]) -> (Hash, Vec<Vec<Step>>) {
    assert!(!leaves.is_empty(), "a tree has a leaf");
    let mut paths = vec![Vec::new(); leaves.len()];
    // Where each leaf's ancestor is in the current level.
    let mut places: Vec<usize> = (0..leaves.len()).collect();
    let mut level = leaves.to_vec();
    while level.len() > 1 {
        for (path, place) in paths.iter_mut().zip(places.iter_mut()) {
            let sibling = *place ^ 1;
            if let Some(hash) = level.get(sibling) {
                path.push(if sibling < *place { Step::Left(*hash) } else { Step::Right(*hash) });
            }
            *place /= 2;
        }
        level = level.chunks(2).map(|pair| if let [l, r] = pair { node(l, r) } else { pair[0] }).collect();
    }
    (level[0], paths)
}

/// The root a leaf's path leads to.
pub fn fold(leaf: Hash, path: &[Step]) -> Hash {
    path.iter().fold(leaf, |hash, step| match step {
        Step::Left(sibling) => node(sibling, &hash),
        Step::Right(sibling) => node(&hash, sibling),
    })
}

/// The signed bytes of a batch: the JCS form of `{"root": hex, "type": "xray.batch.v1"}`
/// (members already in JCS order; both values ASCII with nothing to escape).
pub fn envelope(root: &Hash) -> Vec<u8> {
    format!(r#"{{"root":"{}","type":"{BATCH_TYPE}"}}"#, hex::encode(root)).into_bytes()
}

/// A new leaf salt, from this thread's cryptographic generator (`rand::rng()`: ChaCha12,
/// seeded from the operating system and reseeded by it periodically) — the OS's randomness
/// through a userspace stream, not a `getrandom` syscall per scan (docs/benchmarks.md,
/// 2026-11-29 afternoon). A salt has to be unpredictable to the other members of its batch,
/// which see its leaf's hash, never the salt. (The signing key's seed still comes straight
/// from the OS: `ring::new_key`.) The generator seeds itself at a thread's first salt and
/// panics if the OS has no randomness to give (the request answers 500, as any panic does);
/// a running Linux always has.
pub fn salt() -> [u8; SALT_BYTES] {
    let mut salt = [0u8; SALT_BYTES];
    rand::Rng::fill_bytes(&mut rand::rng(), &mut salt);
    salt
}

/// A salt's wire form.
pub fn salt_text(salt: &[u8; SALT_BYTES]) -> String {
    URL_SAFE_NO_PAD.encode(salt)
}

/// A salt read back from its wire form (exactly `SALT_BYTES`, canonical base64url).
pub fn salt_of(text: &str) -> Option<[u8; SALT_BYTES]> {
    URL_SAFE_NO_PAD.decode(text).ok()?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn leaves(n: usize) -> Vec<Hash> {
        (0..n).map(|i| leaf(&[u8::try_from(i % 256).unwrap_or(0); SALT_BYTES], &i.to_le_bytes())).collect()
    }

    #[test]
    fn one_leaf_is_its_own_root_with_an_empty_path() {
        let one = leaves(1);
        let (root, paths) = tree(&one);
        assert_eq!(root, one[0]);
        assert_eq!(paths, vec![Vec::new()]);
    }

    #[test]
    fn three_leaves_promote_the_odd_one() {
        let l = leaves(3);
        let (root, paths) = tree(&l);
        assert_eq!(root, node(&node(&l[0], &l[1]), &l[2]));
        assert_eq!(paths[2], vec![Step::Left(node(&l[0], &l[1]))]);
        assert_eq!(paths[0], vec![Step::Right(l[1]), Step::Right(l[2])]);
    }

    #[test]
    fn the_envelope_is_its_jcs_form() {
        let root = [0xabu8; 32];
        let value = serde_json::json!({"type": BATCH_TYPE, "root": hex::encode(root)});
        let map = value.as_object().expect("object");
        assert_eq!(envelope(&root), super::super::jcs::canonicalize_members(map));
    }

    #[test]
    fn no_report_type_is_the_envelopes() {
        // What keeps a report's message from ever being an envelope: no report is of its type,
        // and none covers only `root`.
        for report_type in super::super::ReportType::ALL {
            assert_ne!(report_type.name(), BATCH_TYPE);
            assert_ne!(report_type.covers(), ["root"]);
        }
    }

    #[test]
    fn a_full_batch_has_paths_within_the_limit() {
        let (_, paths) = tree(&leaves(BATCH_LEAVES_MAX));
        assert!(paths.iter().all(|p| p.len() <= 8 && p.len() <= PATH_STEPS_MAX));
    }

    #[test]
    fn wire_steps_round_trip_and_refuse_other_text() {
        let step = Step::Left([7u8; 32]);
        assert_eq!(Step::from_wire(&step.to_wire()), Some(step));
        assert_eq!(Step::from_wire(&MerkleStep::Right("00".into())), None);
        assert_eq!(Step::from_wire(&MerkleStep::Right("AB".repeat(32))), None);
        assert_eq!(salt_of(&salt_text(&[9u8; SALT_BYTES])), Some([9u8; SALT_BYTES]));
        assert_eq!(salt_of("AAAA"), None);
    }

    proptest! {
        #[test]
        fn every_path_folds_to_the_root_and_a_changed_leaf_does_not(n in 1usize..300, pick in 0usize..300) {
            let l = leaves(n);
            let (root, paths) = tree(&l);
            for (leaf, path) in l.iter().zip(&paths) {
                prop_assert_eq!(fold(*leaf, path), root);
            }
            let i = pick % n;
            let mut changed = l[i];
            changed[0] ^= 1;
            prop_assert_ne!(fold(changed, &paths[i]), root);
        }
    }
}
