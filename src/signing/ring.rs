//! The signing key ring: the current Ed25519 key and the retired public keys, their stored
//! form, the key set they publish, and where they are kept.
//!
//! Owns: `Ring` (in memory: the signing key, its id, the retired keys, the key set made once),
//! `Stored` (the JSON kept: `{"version":1,"current":{kid, privateKey, createdAtMs},
//! "retired":[{kid, x, createdAtMs, retiredAtMs}…]}`, newest retired first), and `KeyHome`:
//! a single node's file `<data-dir>/signing-keys.json` (mode 0600, created in one step and
//! replaced by an atomic rename), or a cluster's store record (`DocKind::SigningKeys`, created
//! with `Expect::Absent` so one node's key wins, replaced by compare-and-set on its revision).
//! Called on the main thread (start), the admin listener (rotation) and the housekeeping
//! thread (a cluster node's reload).
//!
//! Key id: the first 16 hex digits of SHA-256 of the 32-byte public key.
//! Invariant: a private key is only in `Stored::current` and the `SigningKey` of a `Ring` —
//! both wiped on drop, neither printed by `Debug` — and, in transit, in the JSON buffers this
//! module makes, each wiped after use (`Zeroizing`, moved into the store write and taken back,
//! never copied). An existing key file is opened without following a symbolic link and judged
//! on the open handle: a regular file, owned by this process's user, that others cannot read
//! (chmod 600 it), as the admin token is.
//! Deliberately absent: encryption of the key at rest (the data directory is 0700, the file
//! 0600; on a cluster, whoever can read etcd can read the key — guard etcd as the data dir),
//! and wiping the copies the store's own clients make (RocksDB's write batch, etcd's gRPC
//! buffers) or etcd's history: a rotated-out key stays in etcd's older revisions until its
//! compaction (`--auto-compaction-retention`), so a retired key is not secret from etcd's
//! readers. Also absent: withdrawing a published key — a retired key keeps verifying whatever
//! its private half signs, so rotation is hygiene, not a remedy for a leak (README says so).

use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use bytes::Bytes;
use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zeroize::{Zeroize, Zeroizing};

use crate::clock::rfc3339_ms;
use crate::config::{SIGNING_KEYS_FILE_BYTES_MAX, SIGNING_KEYS_RETIRED_MAX};
use crate::store::{DocKind, DocWrite, Expect, Store, StoreError};

/// The key file's name in the data directory (single node).
pub const KEY_FILE_NAME: &str = "signing-keys.json";
/// Permission bits of the key file: owner read/write only.
const KEY_FILE_MODE: u32 = 0o600;
/// The shared record's key (`DocKind::SigningKeys`).
const SHARED_KEY: &[u8] = b"signing-keys";
/// `alg` of every signature and key: Ed25519 (RFC 8037's JOSE name).
pub const ALG: &str = "EdDSA";
/// Version of the stored form.
const STORED_VERSION: u32 = 1;

/// A retired key: its public half only, and when it signed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Retired {
    pub kid: String,
    /// The public key, base64url without padding (the JWK's `x`).
    pub x: String,
    pub created_at_ms: u64,
    pub retired_at_ms: u64,
}

/// The current key as stored: its seed (32 bytes, base64url), wiped on drop.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredCurrent {
    kid: String,
    private_key: String,
    created_at_ms: u64,
}

impl Drop for StoredCurrent {
    fn drop(&mut self) {
        self.private_key.zeroize();
    }
}

/// The ring as kept in its file or record.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stored {
    version: u32,
    current: StoredCurrent,
    retired: Vec<Retired>,
}

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stored").field("current", &self.current.kid).field("retired", &self.retired).finish()
    }
}

/// The key id of a public key: 16 hex digits of its SHA-256.
pub fn key_id(public: &[u8; 32]) -> String {
    Sha256::digest(public).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn new_key() -> Result<SigningKey, String> {
    let mut seed = Zeroizing::new([0u8; 32]);
    getrandom::fill(&mut *seed).map_err(|e| format!("random: {e}"))?;
    Ok(SigningKey::from_bytes(&seed))
}

impl Stored {
    /// A ring with a fresh current key and nothing retired.
    pub fn new(now_ms: u64) -> Result<Stored, String> {
        Ok(Stored { version: STORED_VERSION, current: current_of(&new_key()?, now_ms), retired: Vec::new() })
    }

    pub fn current_kid(&self) -> &str {
        &self.current.kid
    }

    /// The ring after a rotation at `now_ms`: a fresh current key, the old one's public half
    /// first among the retired, at most `SIGNING_KEYS_RETIRED_MAX` of them.
    pub fn rotated(&self, now_ms: u64) -> Result<Stored, String> {
        let old = signing_key_of(&self.current)?;
        let retired_old = Retired {
            kid: self.current.kid.clone(),
            x: URL_SAFE_NO_PAD.encode(old.verifying_key().as_bytes()),
            created_at_ms: self.current.created_at_ms,
            retired_at_ms: now_ms,
        };
        let mut retired = Vec::with_capacity(self.retired.len() + 1);
        retired.push(retired_old);
        retired.extend(self.retired.iter().cloned());
        retired.truncate(SIGNING_KEYS_RETIRED_MAX);
        Ok(Stored { version: STORED_VERSION, current: current_of(&new_key()?, now_ms), retired })
    }

    fn to_json(&self) -> Result<Zeroizing<Vec<u8>>, String> {
        serde_json::to_vec(self).map(Zeroizing::new).map_err(|e| format!("signing keys: {e}"))
    }

    fn parse(bytes: &[u8]) -> Result<Stored, String> {
        let stored: Stored = serde_json::from_slice(bytes).map_err(|e| format!("signing keys do not parse: {e}"))?;
        if stored.version != STORED_VERSION {
            return Err(format!("signing keys of an unknown version {}", stored.version));
        }
        Ok(stored)
    }
}

fn current_of(key: &SigningKey, now_ms: u64) -> StoredCurrent {
    StoredCurrent {
        kid: key_id(key.verifying_key().as_bytes()),
        private_key: URL_SAFE_NO_PAD.encode(key.to_bytes()),
        created_at_ms: now_ms,
    }
}

fn signing_key_of(current: &StoredCurrent) -> Result<SigningKey, String> {
    let seed: Zeroizing<Vec<u8>> =
        Zeroizing::new(URL_SAFE_NO_PAD.decode(&current.private_key).map_err(|_| "a private key is not base64url")?);
    let seed: &[u8; 32] = seed.as_slice().try_into().map_err(|_| "a private key is not 32 bytes")?;
    let key = SigningKey::from_bytes(seed);
    if key_id(key.verifying_key().as_bytes()) != current.kid {
        return Err("the current key's id does not match its key".to_owned());
    }
    Ok(key)
}

/// The ring in force: the current signing key and the published key set.
pub struct Ring {
    key: SigningKey,
    kid: String,
    retired: usize,
    /// The store record's revision it was read at (0 for a file).
    revision: u64,
    key_set: Bytes,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring").field("kid", &self.kid).field("retired", &self.retired).finish_non_exhaustive()
    }
}

/// One key of the published set (RFC 7517 / RFC 8037), with its status and times.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Jwk<'a> {
    kty: &'static str,
    crv: &'static str,
    x: String,
    kid: &'a str,
    alg: &'static str,
    #[serde(rename = "use")]
    use_: &'static str,
    status: &'static str,
    created_at: String,
    retired_at: Option<String>,
}

#[derive(Serialize)]
struct KeySet<'a> {
    keys: Vec<Jwk<'a>>,
}

impl Ring {
    pub fn of(stored: Stored, revision: u64) -> Result<Ring, String> {
        let key = signing_key_of(&stored.current)?;
        let current = Jwk {
            kty: "OKP",
            crv: "Ed25519",
            x: URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes()),
            kid: &stored.current.kid,
            alg: ALG,
            use_: "sig",
            status: "current",
            created_at: rfc3339_ms(stored.current.created_at_ms),
            retired_at: None,
        };
        let retired = stored.retired.iter().map(|r| Jwk {
            kty: "OKP",
            crv: "Ed25519",
            x: r.x.clone(),
            kid: &r.kid,
            alg: ALG,
            use_: "sig",
            status: "retired",
            created_at: rfc3339_ms(r.created_at_ms),
            retired_at: Some(rfc3339_ms(r.retired_at_ms)),
        });
        let keys = std::iter::once(current).chain(retired).collect();
        let key_set = serde_json::to_vec(&KeySet { keys }).map_err(|e| format!("key set: {e}"))?;
        Ok(Ring {
            kid: stored.current.kid.clone(),
            retired: stored.retired.len(),
            key,
            revision,
            key_set: Bytes::from(key_set),
        })
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    pub fn retired_len(&self) -> usize {
        self.retired
    }

    pub fn revision(&self) -> u64 {
        self.revision
    }

    pub fn key_set(&self) -> Bytes {
        self.key_set.clone()
    }

    pub fn signing_key(&self) -> &SigningKey {
        &self.key
    }
}

/// Where the ring is kept.
pub enum KeyHome {
    /// A single node: the key file.
    File(PathBuf),
    /// A cluster: one store record every node reads.
    Shared(Arc<dyn Store>),
}

impl KeyHome {
    pub fn is_shared(&self) -> bool {
        matches!(self, KeyHome::Shared(_))
    }

    /// The ring kept here, created on the first call (one creator wins on a cluster).
    pub fn load_or_create(&self, now_ms: u64) -> Result<Ring, String> {
        // Twice at most: a creation that lost to another node's reads the winner's.
        for _ in 0..2 {
            if let Some((stored, revision)) = self.load()? {
                return Ring::of(stored, revision);
            }
            let fresh = Stored::new(now_ms)?;
            if self.create(&fresh)? {
                tracing::info!(key_id = %fresh.current.kid, "created the report signing key");
            }
        }
        Err("the signing keys could not be created".to_owned())
    }

    /// The stored ring and its revision (0 for a file), if any.
    pub fn load(&self) -> Result<Option<(Stored, u64)>, String> {
        match self {
            KeyHome::File(path) => {
                // O_NOFOLLOW: a link planted in the data directory is refused, not read;
                // O_NONBLOCK: a FIFO planted there cannot hold the start (it fails the check below).
                let flags = libc::O_NOFOLLOW | libc::O_NONBLOCK;
                let opened = std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path);
                let file = match opened {
                    Ok(file) => file,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(format!("{}: {e} (it must be a regular file, not a link)", path.display())),
                };
                let meta = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?;
                key_file_is_private(&meta).map_err(|why| format!("{}: {why}", path.display()))?;
                let mut bytes = Zeroizing::new(Vec::new());
                file.take(SIGNING_KEYS_FILE_BYTES_MAX + 1)
                    .read_to_end(&mut bytes)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                if bytes.len() as u64 > SIGNING_KEYS_FILE_BYTES_MAX {
                    return Err(format!("{}: larger than {SIGNING_KEYS_FILE_BYTES_MAX} bytes", path.display()));
                }
                Stored::parse(&bytes).map(|s| Some((s, 0))).map_err(|e| format!("{}: {e}", path.display()))
            }
            KeyHome::Shared(store) => match store.get_doc(DocKind::SigningKeys, SHARED_KEY) {
                Ok(Some(doc)) => {
                    let value = Zeroizing::new(doc.value);
                    Stored::parse(&value).map(|s| Some((s, doc.revision)))
                }
                Ok(None) => Ok(None),
                Err(e) => Err(format!("reading the shared signing keys: {e}")),
            },
        }
    }

    /// Writes `stored` where nothing is yet; false when another writer was first.
    fn create(&self, stored: &Stored) -> Result<bool, String> {
        match self {
            KeyHome::File(path) => {
                if path.exists() {
                    return Ok(false);
                }
                write_file(path, &stored.to_json()?).map(|()| true)
            }
            KeyHome::Shared(store) => shared_write(&**store, stored.to_json()?, Expect::Absent),
        }
    }

    /// Replaces the ring read at `revision` with `stored`; false when another writer changed
    /// it meanwhile (a cluster's concurrent rotation).
    pub fn replace(&self, stored: &Stored, revision: u64) -> Result<bool, String> {
        match self {
            KeyHome::File(path) => write_file(path, &stored.to_json()?).map(|()| true),
            KeyHome::Shared(store) => shared_write(&**store, stored.to_json()?, Expect::Revision(revision)),
        }
    }
}

/// Why a key file's metadata (of the open handle) makes it unfit to hold a private key.
fn key_file_is_private(meta: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    if !meta.file_type().is_file() {
        return Err("not a regular file".to_owned());
    }
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(format!("permissions {:o} let others read it; chmod 600 it", mode & 0o777));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!("owned by user {}, not by this process's user {me}; chown it", meta.uid()));
    }
    Ok(())
}

/// Writes the shared record from `json`, moved into the write (no copy) and wiped after it.
fn shared_write(store: &dyn Store, mut json: Zeroizing<Vec<u8>>, expect: Expect) -> Result<bool, String> {
    let value = std::mem::take(&mut *json);
    let mut writes = [DocWrite::put(DocKind::SigningKeys, SHARED_KEY.to_vec(), value, expect)];
    let written = match store.write_docs(&writes) {
        Ok(()) => Ok(true),
        Err(StoreError::Conflict(_)) => Ok(false),
        Err(e) => Err(format!("writing the shared signing keys: {e}")),
    };
    if let Some(value) = writes[0].value.as_mut() {
        value.zeroize();
    }
    written
}

/// Writes `bytes` to `path` as a whole, mode 0600 from the start: a fresh temporary file beside
/// it (`create_new` + mode), synced, renamed over `path`, the directory synced.
fn write_file(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = path.with_extension("json.tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(KEY_FILE_MODE)
        .open(&tmp)
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_created_0600_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = KeyHome::File(dir.path().join(KEY_FILE_NAME));
        let first = home.load_or_create(1).expect("created");
        let mode = std::fs::metadata(dir.path().join(KEY_FILE_NAME)).expect("file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(home.load_or_create(2).expect("read").kid(), first.kid());
    }

    #[test]
    fn a_key_file_others_can_read_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(KEY_FILE_NAME);
        KeyHome::File(path.clone()).load_or_create(1).expect("created");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(KeyHome::File(path).load().expect_err("refused").contains("chmod 600"));
    }

    #[test]
    fn a_linked_or_foreign_key_file_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("elsewhere.json");
        KeyHome::File(real.clone()).load_or_create(1).expect("created");
        let link = dir.path().join(KEY_FILE_NAME);
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let refused = KeyHome::File(link.clone()).load().expect_err("a link is not followed");
        assert!(refused.contains("not a link"), "{refused}");
        std::fs::remove_file(&link).expect("unlink");
        let fifo = std::ffi::CString::new(link.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: a NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "mkfifo");
        let refused = KeyHome::File(link).load().expect_err("a FIFO does not hold the start");
        assert!(refused.contains("not a regular file"), "{refused}");
        // Another user's file (only root can make one here).
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&real, Some(65_534), None).expect("chown");
            let refused = KeyHome::File(real).load().expect_err("not ours");
            assert!(refused.contains("owned by user 65534"), "{refused}");
        }
    }

    #[test]
    fn a_shared_ring_is_created_once_and_rotated_by_compare_and_set() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn Store> =
            Arc::new(crate::store::RocksStore::open(dir.path(), &crate::store::StoreOptions::default()).expect("db"));
        let (a, b) = (KeyHome::Shared(store.clone()), KeyHome::Shared(store));
        let first = a.load_or_create(1).expect("a");
        assert_eq!(b.load_or_create(2).expect("b").kid(), first.kid(), "one key wins");
        let (stored, revision) = a.load().expect("read").expect("present");
        let rotated = stored.rotated(3).expect("rotated");
        assert!(a.replace(&rotated, revision).expect("written"));
        // A second writer still holding the old revision loses, and reads again.
        assert!(!b.replace(&stored.rotated(4).expect("rotated"), revision).expect("refused"));
        let now = b.load_or_create(5).expect("b again");
        assert_eq!(now.kid(), rotated.current_kid());
        assert_eq!(now.retired_len(), 1);
    }

    #[test]
    fn key_ids_are_16_hex_digits_of_the_public_keys_digest() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let kid = key_id(key.verifying_key().as_bytes());
        assert_eq!(kid.len(), 16);
        assert!(kid.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
