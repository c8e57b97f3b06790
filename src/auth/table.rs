//! The in-memory key table: digest → key entry, read by every listener thread without a lock.
//!
//! Owns: `KeyTable` (an `ArcSwap` snapshot of two maps, by digest and by id), `KeyEntry` (a
//! key's record, its revocation as an atomic, its token bucket and its quota counter),
//! `authenticate` (the `Authorization: Bearer` header → an active key, or the contract's failure
//! reason), and the admin operations insert, revoke, rotate, remove. Called from listener threads
//! (`authenticate`, `get`), compute threads (`get`, to settle quota) and the admin path
//! (writers).
//!
//! Invariant: the read path takes no lock: `authenticate` is one SHA-256, one `ArcSwap::load`,
//! one hash-map probe (whose digest equality is constant-time) and atomic loads. A presented
//! key's base58 is decoded (to tell `malformed` from `unknown`) only when its digest is not in
//! the table: every stored digest is the digest of a well-formed key, so a hit proves the text
//! well formed and the decode, the costliest step, is spent only on refusals — and never on
//! those of a client the failed-authentication limiter blocks (`active_key`).
//! Invariant: writers are serialized by one mutex and publish a whole new snapshot
//! (clone-and-swap), so a new or rotated key is visible to every thread at its next request;
//! revocation flips an atomic in the shared entry and is visible at once, without a swap.
//! Invariant: at most `KEY_TABLE_LEN_MAX` keys (revoked ones included, until removed).
//! Rotation (decided here): rotating key K issues a NEW key with a new id and secret and the
//! same account, name, scopes, limits and expiry, inserts it, and revokes K with `replaced_by`
//! naming the successor. The successor starts with a full token bucket; its quota starts with K's
//! used, refunded and per-operation counts of the current period, so rotating does not reset the
//! quota. K's in-flight reservations stay K's `reserved` until they end; their outcome (used or
//! refunded) is then counted on the key at the end of K's `replaced_by` chain (`successor_of`),
//! so the successor's usage is exact once they end (while they run, up to K's reserved units
//! are not counted against the successor). The store does the same in the completion's batch,
//! and `settlement_gate` keeps a rotation (memory and store) from interleaving with a
//! completion (store and memory), so the two copies name the same key.
//! Deliberately absent: persistence. Each writer returns the records to persist; the admin path
//! writes them to the store (and can undo in memory with `remove`/`revoke` if that fails).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arc_swap::ArcSwap;
use thiserror::Error;

use super::key::{self, ApiKey, KeyDigest, KeyId};
use super::record::{KeyRecord, KeySpec, KeyState, KeyStatus, RecordError};
use super::scope::Scopes;
use crate::config::{AUTHORIZATION_LEN_MAX, KEY_SUCCESSION_HOPS_MAX, KEY_TABLE_LEN_MAX};
use crate::limits::quota::{QuotaCounter, UsageRecord};
use crate::limits::rate::RateCell;

/// Why a request is not authenticated: the contract's `details.reason` of `401 UNAUTHENTICATED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum AuthFailure {
    #[error("no API key was presented")]
    Missing,
    #[error("the API key is not well formed")]
    Malformed,
    #[error("the API key is not known")]
    Unknown,
    #[error("the API key has been revoked")]
    Revoked,
    #[error("the API key has expired")]
    Expired,
}

impl AuthFailure {
    /// The message of the contract's `401 UNAUTHENTICATED` body.
    pub fn message(self) -> &'static str {
        match self {
            AuthFailure::Missing => "an API key is required: send Authorization: Bearer <key>",
            AuthFailure::Malformed => "the API key is malformed",
            AuthFailure::Unknown => "the API key is not known",
            AuthFailure::Revoked => "the API key has been revoked",
            AuthFailure::Expired => "the API key has expired",
        }
    }

    /// The contract's `details.reason`.
    pub fn reason(self) -> &'static str {
        match self {
            AuthFailure::Missing => "missing",
            AuthFailure::Malformed => "malformed",
            AuthFailure::Unknown => "unknown",
            AuthFailure::Revoked => "revoked",
            AuthFailure::Expired => "expired",
        }
    }
}

/// Why an admin operation on the table was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TableError {
    #[error("no key with this id")]
    UnknownId,
    #[error("a key with this id or digest already exists")]
    Duplicate,
    #[error("the key table is full")]
    Full,
    #[error("the key is revoked or expired and cannot be rotated")]
    NotActive,
    #[error(transparent)]
    Record(#[from] RecordError),
}

const NOT_REVOKED: u64 = u64::MAX;

/// One key as the request path sees it.
#[derive(Debug)]
pub struct KeyEntry {
    /// As issued or loaded; revocation is tracked by the atomics below, not here.
    record: KeyRecord,
    revoked_at_ms: AtomicU64,
    replaced_by: OnceLock<KeyId>,
    /// The key's token bucket, shared by every thread.
    pub rate: RateCell,
    /// The key's quota counters, shared by every thread.
    pub quota: QuotaCounter,
}

impl KeyEntry {
    /// An entry for a validated record; `now_ms` places its quota in the current period.
    pub fn new(record: KeyRecord, now_ms: u64) -> Result<Self, RecordError> {
        Self::with_rate_share(record, now_ms, 1)
    }

    /// An entry whose token bucket is this node's share of the key's rate when `nodes` nodes
    /// serve it (`RateLimit::share`; 1 for a single node).
    pub fn with_rate_share(record: KeyRecord, now_ms: u64, nodes: u32) -> Result<Self, RecordError> {
        record.validate()?;
        let rate = RateCell::new(record.rate_limit()?.share(nodes));
        let quota = QuotaCounter::new(record.quota_limit, record.quota_period, now_ms);
        let revoked_at_ms = match record.status {
            KeyStatus::Revoked => record.revoked_at_ms.unwrap_or(record.created_at_ms),
            KeyStatus::Active => NOT_REVOKED,
        };
        let replaced_by = OnceLock::new();
        if let Some(id) = &record.replaced_by {
            let _ = replaced_by.set(id.clone()); // fresh cell: cannot be set already
        }
        Ok(Self { record, revoked_at_ms: AtomicU64::new(revoked_at_ms), replaced_by, rate, quota })
    }

    pub fn id(&self) -> &KeyId {
        &self.record.id
    }

    pub fn account(&self) -> &key::AccountId {
        &self.record.account
    }

    pub fn scopes(&self) -> Scopes {
        self.record.scopes
    }

    /// The record as issued or loaded (its `status` may be stale; see `current_record`).
    pub fn record(&self) -> &KeyRecord {
        &self.record
    }

    pub fn is_revoked(&self) -> bool {
        self.revoked_at_ms.load(Ordering::Acquire) != NOT_REVOKED
    }

    pub fn state_at(&self, now_ms: u64) -> KeyState {
        if self.is_revoked() {
            return KeyState::Revoked;
        }
        self.record.state_at(now_ms)
    }

    /// The record with its current revocation: what the store should hold.
    pub fn current_record(&self) -> KeyRecord {
        let mut record = self.record.clone();
        let revoked_at_ms = self.revoked_at_ms.load(Ordering::Acquire);
        if revoked_at_ms != NOT_REVOKED {
            record.status = KeyStatus::Revoked;
            record.revoked_at_ms = Some(revoked_at_ms);
        }
        record.replaced_by = self.replaced_by.get().cloned().or(record.replaced_by);
        record
    }

    /// Revokes the key (first revocation wins; later ones change nothing).
    fn revoke(&self, now_ms: u64, replaced_by: Option<KeyId>) {
        let first =
            self.revoked_at_ms.compare_exchange(NOT_REVOKED, now_ms, Ordering::AcqRel, Ordering::Acquire).is_ok();
        if let (true, Some(id)) = (first, replaced_by) {
            let _ = self.replaced_by.set(id); // set only by the first revocation
        }
    }
}

/// One immutable snapshot of the table.
#[derive(Debug, Default, Clone)]
struct KeyMap {
    by_digest: HashMap<KeyDigest, Arc<KeyEntry>, BuildHasherDefault<DigestHasher>>,
    by_id: HashMap<KeyId, Arc<KeyEntry>>,
}

/// Hashes a `KeyDigest` to its first eight bytes: a SHA-256 output is already uniform, and the
/// map's entries are digests of keys the server generated, so no client can crowd a bucket
/// (a lookup never inserts). Saves a SipHash round per request.
#[derive(Debug, Default, Clone, Copy)]
struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    /// Only `KeyDigest::hash` feeds this hasher, through `write_u64`; other input is folded
    /// in so the hasher stays correct for any `Hash` type.
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 ^= value;
    }
}

impl KeyMap {
    fn add(&mut self, entry: Arc<KeyEntry>, len_max: usize) -> Result<(), TableError> {
        if self.by_id.len() >= len_max {
            return Err(TableError::Full);
        }
        if self.by_id.contains_key(entry.id()) || self.by_digest.contains_key(&entry.record.digest) {
            return Err(TableError::Duplicate);
        }
        self.by_digest.insert(entry.record.digest, Arc::clone(&entry));
        self.by_id.insert(entry.id().clone(), entry);
        Ok(())
    }
}

/// A rotated key: the new secret (shown once) and the records the store must persist together.
#[derive(Debug)]
pub struct Rotation {
    pub key: ApiKey,
    pub new_record: KeyRecord,
    pub old_record: KeyRecord,
    /// Start of the period `new_usage` belongs to.
    pub new_usage_period_start_ms: u64,
    /// The successor's usage of that period (carried over from the old key, nothing reserved).
    pub new_usage: UsageRecord,
}

/// The key table shared by all threads.
#[derive(Debug)]
pub struct KeyTable {
    map: ArcSwap<KeyMap>,
    /// Serializes writers only; readers never take it.
    writer: Mutex<()>,
    /// Read by a completion around its store write and quota settlement, written by a rotation
    /// around its table change and store write (never on the request path).
    settlement: parking_lot::RwLock<()>,
    len_max: usize,
    /// Nodes that share each key's rate (1 unless a cluster said otherwise: `reshare`).
    rate_share: std::sync::atomic::AtomicU32,
}

impl Default for KeyTable {
    fn default() -> Self {
        Self::with_len_max(KEY_TABLE_LEN_MAX)
    }
}

impl KeyTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty table holding at most `len_max` keys (at most `KEY_TABLE_LEN_MAX`).
    pub fn with_len_max(len_max: usize) -> Self {
        let (writer, settlement) = (Mutex::new(()), parking_lot::RwLock::new(()));
        let rate_share = std::sync::atomic::AtomicU32::new(1);
        Self { map: ArcSwap::default(), writer, settlement, len_max: len_max.min(KEY_TABLE_LEN_MAX), rate_share }
    }

    /// A table of stored records (server start). The store then restores usage with
    /// `entry.quota.restore`.
    pub fn from_records(records: impl IntoIterator<Item = KeyRecord>, now_ms: u64) -> Result<Self, TableError> {
        let table = Self::new();
        let mut map = KeyMap::default();
        for record in records {
            map.add(Arc::new(KeyEntry::new(record, now_ms)?), table.len_max)?;
        }
        table.map.store(Arc::new(map));
        Ok(table)
    }

    pub fn len(&self) -> usize {
        self.map.load().by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, id: &KeyId) -> Option<Arc<KeyEntry>> {
        self.map.load().by_id.get(id).cloned()
    }

    /// The key at the end of `entry`'s rotation chain (`entry` itself when it was not
    /// replaced), following at most `KEY_SUCCESSION_HOPS_MAX` links, as the store does; a link
    /// to a key no longer in the table ends the chain there.
    pub fn successor_of(&self, entry: &Arc<KeyEntry>) -> Arc<KeyEntry> {
        let map = self.map.load();
        let mut head = Arc::clone(entry);
        for _ in 0..KEY_SUCCESSION_HOPS_MAX {
            match head.replaced_by.get().and_then(|id| map.by_id.get(id)) {
                Some(next) => head = Arc::clone(next),
                None => break,
            }
        }
        head
    }

    /// Held (shared) by a job's completion from its store write to its quota settlement.
    pub fn settlement_gate(&self) -> parking_lot::RwLockReadGuard<'_, ()> {
        self.settlement.read_recursive()
    }

    /// Held (exclusive) by a rotation from its table change to its store write.
    pub fn rotation_gate(&self) -> parking_lot::RwLockWriteGuard<'_, ()> {
        self.settlement.write()
    }

    /// Every key's current record, oldest first (ties by id), for the admin listing.
    pub fn list(&self) -> Vec<KeyRecord> {
        let mut records: Vec<KeyRecord> = self.map.load().by_id.values().map(|e| e.current_record()).collect();
        records.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
        records
    }

    /// The active key named by an `Authorization` header value, or why there is none.
    pub fn authenticate(&self, header_value: Option<&str>, now_ms: u64) -> Result<Arc<KeyEntry>, AuthFailure> {
        let text = bearer_token(header_value)?;
        let map = self.map.load();
        // The probe's final comparison is `KeyDigest::eq`, which is constant-time: that is the
        // constant-time check of the stored digest against the computed one.
        let Some(entry) = map.by_digest.get(&key::digest(text)) else {
            // Prefix, alphabet, length and checksum tell a malformed key from an unknown one.
            key::parse(text).map_err(|_| AuthFailure::Malformed)?;
            return Err(AuthFailure::Unknown);
        };
        match entry.state_at(now_ms) {
            KeyState::Active => Ok(Arc::clone(entry)),
            KeyState::Revoked => Err(AuthFailure::Revoked),
            KeyState::Expired => Err(AuthFailure::Expired),
        }
    }

    /// The active key `header_value` names, or `None` without saying why not: for a client the
    /// failed-authentication limiter blocks, whose every failure gets the same 429, so the
    /// base58 decode that tells `malformed` from `unknown` is never spent. A text that cannot
    /// be a key (no `svc_live_` prefix, longer than any key) is refused before its digest.
    pub fn active_key(&self, header_value: Option<&str>, now_ms: u64) -> Option<Arc<KeyEntry>> {
        let text = bearer_token(header_value).ok()?;
        if !text.starts_with(key::KEY_PREFIX) || text.len() > key::KEY_TEXT_LEN_MAX {
            return None;
        }
        let map = self.map.load();
        let entry = map.by_digest.get(&key::digest(text))?;
        (entry.state_at(now_ms) == KeyState::Active).then(|| Arc::clone(entry))
    }

    /// As `authenticate`, for a raw header value: one that is not UTF-8 is `malformed`.
    pub fn authenticate_bytes(&self, header_value: Option<&[u8]>, now_ms: u64) -> Result<Arc<KeyEntry>, AuthFailure> {
        let text = header_value.map(std::str::from_utf8).transpose().map_err(|_| AuthFailure::Malformed)?;
        self.authenticate(text, now_ms)
    }

    /// Applies `change` to a copy of the current snapshot and publishes it.
    fn write<T>(&self, change: impl FnOnce(&mut KeyMap) -> Result<T, TableError>) -> Result<T, TableError> {
        // A poisoned lock only means another writer panicked; the snapshot it guards is the
        // ArcSwap, which is always whole, so carry on.
        let _guard = self.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut map = KeyMap::clone(&self.map.load());
        let out = change(&mut map)?;
        self.map.store(Arc::new(map));
        Ok(out)
    }

    /// Adds a new (or stored) key.
    pub fn insert(&self, record: KeyRecord, now_ms: u64) -> Result<Arc<KeyEntry>, TableError> {
        let entry = Arc::new(self.entry(record, now_ms)?);
        self.write(|map| map.add(Arc::clone(&entry), self.len_max))?;
        Ok(entry)
    }

    /// Issues a key from `spec` and adds it; the key is returned once.
    pub fn issue(&self, spec: &KeySpec, now_ms: u64) -> Result<(ApiKey, KeyRecord), TableError> {
        let (key, record) = spec.issue(now_ms)?;
        self.insert(record.clone(), now_ms)?;
        Ok((key, record))
    }

    /// Revokes a key; visible to every thread at its next request. Revoking twice keeps the
    /// first revocation time. Returns the record to persist.
    pub fn revoke(&self, id: &KeyId, now_ms: u64) -> Result<KeyRecord, TableError> {
        let entry = self.get(id).ok_or(TableError::UnknownId)?;
        entry.revoke(now_ms, None);
        Ok(entry.current_record())
    }

    /// Replaces an active key by a new one (see the module comment for what carries over).
    pub fn rotate(&self, id: &KeyId, now_ms: u64) -> Result<Rotation, TableError> {
        self.write(|map| {
            let old = map.by_id.get(id).cloned().ok_or(TableError::UnknownId)?;
            if old.state_at(now_ms) != KeyState::Active {
                return Err(TableError::NotActive);
            }
            let (key, new_record) = KeySpec::successor_of(old.record()).issue(now_ms)?;
            let new = Arc::new(self.entry(new_record.clone(), now_ms)?);
            let (new_usage_period_start_ms, carried) = old.quota.snapshot(now_ms);
            let new_usage = UsageRecord { reserved: 0, ..carried };
            new.quota.restore(new_usage_period_start_ms, &new_usage, now_ms);
            map.add(new, self.len_max)?;
            old.revoke(now_ms, Some(new_record.id.clone()));
            Ok(Rotation { key, new_record, old_record: old.current_record(), new_usage_period_start_ms, new_usage })
        })
    }

    fn entry(&self, record: KeyRecord, now_ms: u64) -> Result<KeyEntry, RecordError> {
        KeyEntry::with_rate_share(record, now_ms, self.rate_share.load(Ordering::Acquire))
    }

    /// A record another node wrote (the cluster's key watch): a new key is added; a known one
    /// takes its revocation and successor (the only changes a stored key ever sees), keeping
    /// its counters.
    pub fn upsert(&self, record: KeyRecord, now_ms: u64) -> Result<(), TableError> {
        match self.get(&record.id) {
            Some(entry) => {
                if record.status == KeyStatus::Revoked {
                    entry.revoke(record.revoked_at_ms.unwrap_or(now_ms), record.replaced_by.clone());
                }
                Ok(())
            }
            None => self.insert(record, now_ms).map(drop),
        }
    }

    /// Makes the table hold exactly `records` (the key watch lost its place and reloaded).
    pub fn reload(&self, records: Vec<KeyRecord>, now_ms: u64) -> Result<(), TableError> {
        let keep: std::collections::HashSet<KeyId> = records.iter().map(|r| r.id.clone()).collect();
        for record in records {
            self.upsert(record, now_ms)?;
        }
        let gone: Vec<KeyId> = self.map.load().by_id.keys().filter(|id| !keep.contains(*id)).cloned().collect();
        for id in gone {
            let _ = self.remove(&id);
        }
        Ok(())
    }

    /// Every key's token bucket becomes its share of the key's rate among `nodes` live nodes
    /// (a cluster's node count changed). Buckets start full; quota counters are rebuilt from
    /// the records (a cluster's quota is read from etcd, not from these counters).
    pub fn reshare(&self, nodes: u32, now_ms: u64) -> Result<(), TableError> {
        if self.rate_share.swap(nodes.max(1), Ordering::AcqRel) == nodes.max(1) {
            return Ok(());
        }
        self.write(|map| {
            let mut next = KeyMap::default();
            for entry in map.by_id.values() {
                next.add(Arc::new(self.entry(entry.current_record(), now_ms)?), self.len_max)?;
            }
            *map = next;
            Ok(())
        })
    }

    /// Drops a key from memory (a pruned revoked key, or an insert the store refused). Requests
    /// with it are then `unknown`.
    pub fn remove(&self, id: &KeyId) -> Result<KeyRecord, TableError> {
        self.write(|map| {
            let entry = map.by_id.remove(id).ok_or(TableError::UnknownId)?;
            map.by_digest.remove(&entry.record.digest);
            Ok(entry.current_record())
        })
    }
}

/// The token of `Bearer <token>`: scheme case-insensitive, one or more spaces before the token
/// (RFC 7235 `1*SP`), surrounding spaces and tabs ignored.
pub fn bearer_token(header_value: Option<&str>) -> Result<&str, AuthFailure> {
    let value = header_value.ok_or(AuthFailure::Missing)?;
    if value.len() > AUTHORIZATION_LEN_MAX {
        return Err(AuthFailure::Malformed);
    }
    // Byte-wise (space and tab are ASCII, so every cut is a char boundary): this runs on every
    // request, and char-wise trimming showed in profiles.
    let is_blank = |b: &u8| matches!(b, b' ' | b'\t');
    let bytes = value.as_bytes();
    let start = bytes.iter().position(|b| !is_blank(b)).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !is_blank(b)).map_or(start, |last| last + 1);
    let value = value.get(start..end).unwrap_or_default();
    if value.is_empty() {
        return Err(AuthFailure::Missing);
    }
    let (scheme, rest) = value.split_once(' ').ok_or(AuthFailure::Malformed)?;
    let token = rest.trim_start_matches(' ');
    if !scheme.eq_ignore_ascii_case("Bearer") || token.is_empty() || token.as_bytes().iter().any(is_blank) {
        return Err(AuthFailure::Malformed);
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::record::tests::spec;
    use crate::limits::quota::{Operation, ReleaseCause, Reservation};

    const NOW: u64 = 1_795_342_530_123;

    fn table_with_key() -> (KeyTable, ApiKey, KeyRecord) {
        let table = KeyTable::new();
        let (key, record) = table.issue(&spec(), NOW).expect("issued");
        (table, key, record)
    }

    fn bearer(key: &ApiKey) -> String {
        format!("Bearer {}", key.expose_secret())
    }

    #[test]
    fn a_watched_change_revokes_adds_and_a_reload_drops_what_is_gone() {
        let (table, key, record) = table_with_key();
        // Another node revoked it (and rotated it to a successor it also wrote).
        let (_, successor) = spec().issue(NOW).expect("issued");
        let revoked = KeyRecord {
            status: KeyStatus::Revoked,
            revoked_at_ms: Some(NOW + 5),
            replaced_by: Some(successor.id.clone()),
            ..record.clone()
        };
        table.upsert(successor.clone(), NOW).expect("new key added");
        table.upsert(revoked.clone(), NOW).expect("revocation applied");
        assert_eq!(table.authenticate(Some(&bearer(&key)), NOW + 6).err(), Some(AuthFailure::Revoked));
        let entry = table.get(&record.id).expect("kept");
        assert_eq!(entry.current_record(), revoked, "revocation time and successor as written");
        assert_eq!(table.successor_of(&entry).id(), &successor.id);
        // A reload keeps exactly the records it is given.
        table.reload(vec![successor.clone()], NOW).expect("reloaded");
        assert_eq!(table.list(), vec![successor]);
        assert_eq!(table.authenticate(Some(&bearer(&key)), NOW).err(), Some(AuthFailure::Unknown));
    }

    #[test]
    fn a_reshare_divides_every_keys_rate_and_new_keys_take_the_share() {
        let (table, key, record) = table_with_key();
        let limit = record.rate_limit().expect("limit");
        table.reshare(3, NOW).expect("reshared");
        let shared = table.authenticate(Some(&bearer(&key)), NOW).expect("still authenticates").rate.limit();
        assert_eq!(shared, limit.share(3));
        let (_, later) = table.issue(&spec(), NOW).expect("issued");
        assert_eq!(table.get(&later.id).expect("added").rate.limit(), later.rate_limit().expect("limit").share(3));
        table.reshare(1, NOW).expect("back to one node");
        assert_eq!(table.get(&record.id).expect("kept").rate.limit(), limit);
    }

    #[test]
    fn bearer_parsing() {
        let key = "svc_live_abc";
        let cases: [(Option<&str>, Result<&str, AuthFailure>); 13] = [
            (None, Err(AuthFailure::Missing)),
            (Some(""), Err(AuthFailure::Missing)),
            (Some("  "), Err(AuthFailure::Missing)),
            (Some("Bearer svc_live_abc"), Ok(key)),
            (Some("bearer svc_live_abc"), Ok(key)),
            (Some("BEARER   svc_live_abc"), Ok(key)),
            (Some(" Bearer svc_live_abc \t"), Ok(key)),
            (Some("Bearer"), Err(AuthFailure::Malformed)),
            (Some("Bearer "), Err(AuthFailure::Malformed)),
            (Some("Bearer\tsvc_live_abc"), Err(AuthFailure::Malformed)),
            (Some("Basic dXNlcjpwYXNz"), Err(AuthFailure::Malformed)),
            (Some("Bearer svc_live_abc extra"), Err(AuthFailure::Malformed)),
            (Some("svc_live_abc"), Err(AuthFailure::Malformed)),
        ];
        for (header, want) in cases {
            assert_eq!(bearer_token(header), want, "{header:?}");
        }
        let long = format!("Bearer {}", "a".repeat(AUTHORIZATION_LEN_MAX));
        assert_eq!(bearer_token(Some(&long)), Err(AuthFailure::Malformed));
    }

    #[test]
    fn failure_reasons_are_the_contract_strings() {
        let cases = [
            (AuthFailure::Missing, "missing"),
            (AuthFailure::Malformed, "malformed"),
            (AuthFailure::Unknown, "unknown"),
            (AuthFailure::Revoked, "revoked"),
            (AuthFailure::Expired, "expired"),
        ];
        for (failure, reason) in cases {
            assert_eq!(failure.reason(), reason);
        }
    }

    #[test]
    fn authenticate_outcomes() {
        let (table, key, record) = table_with_key();
        let expiring = KeySpec { expires_at_ms: Some(NOW + 1_000), ..spec() };
        let (expiring_key, expiring_record) = table.issue(&expiring, NOW).expect("issued");
        let (revoked_key, revoked) = table.issue(&spec(), NOW).expect("issued");
        table.revoke(&revoked.id, NOW).expect("revoked");
        let stranger = ApiKey::generate().expect("randomness");
        let mut bad_checksum = key.expose_secret().to_owned();
        let last = bad_checksum.pop();
        bad_checksum.push(if last == Some('2') { '3' } else { '2' });
        let cases: Vec<(Option<String>, u64, Result<&KeyId, AuthFailure>)> = vec![
            (Some(bearer(&key)), NOW, Ok(&record.id)),
            (None, NOW, Err(AuthFailure::Missing)),
            (Some("Bearer nope".into()), NOW, Err(AuthFailure::Malformed)),
            (Some(format!("Bearer {bad_checksum}")), NOW, Err(AuthFailure::Malformed)),
            (Some(bearer(&stranger)), NOW, Err(AuthFailure::Unknown)),
            (Some(bearer(&revoked_key)), NOW, Err(AuthFailure::Revoked)),
            (Some(bearer(&expiring_key)), NOW + 999, Ok(&expiring_record.id)),
            (Some(bearer(&expiring_key)), NOW + 1_000, Err(AuthFailure::Expired)),
        ];
        for (header, now, want) in cases {
            let got = table.authenticate(header.as_deref(), now).map(|e| e.id().clone());
            assert_eq!(got.as_ref().map_err(|e| *e), want, "{header:?} at {now}");
        }
        assert_eq!(table.authenticate_bytes(Some(b"Bearer \xff"), NOW).err(), Some(AuthFailure::Malformed));
        assert!(table.authenticate_bytes(Some(bearer(&key).as_bytes()), NOW).is_ok());
        assert_eq!(table.authenticate_bytes(None, NOW).err(), Some(AuthFailure::Missing));
    }

    #[test]
    fn active_key_finds_only_a_key_that_works() {
        let (table, key, record) = table_with_key();
        let (revoked_key, revoked) = table.issue(&spec(), NOW).expect("issued");
        table.revoke(&revoked.id, NOW).expect("revoked");
        let stranger = ApiKey::generate().expect("randomness");
        let found = table.active_key(Some(&bearer(&key)), NOW).map(|e| e.id().clone());
        assert_eq!(found.as_ref(), Some(&record.id));
        let too_long = format!("Bearer {}{}", key.expose_secret(), "1".repeat(key::KEY_BASE58_LEN_MAX));
        for header in
            [None, Some("Bearer nope".to_owned()), Some(bearer(&stranger)), Some(bearer(&revoked_key)), Some(too_long)]
        {
            assert!(table.active_key(header.as_deref(), NOW).is_none(), "{header:?}");
        }
    }

    #[test]
    fn revoked_wins_over_expired() {
        let table = KeyTable::new();
        let (key, record) = table.issue(&KeySpec { expires_at_ms: Some(NOW + 10), ..spec() }, NOW).expect("issued");
        table.revoke(&record.id, NOW + 5).expect("revoked");
        assert_eq!(table.authenticate(Some(&bearer(&key)), NOW + 20).err(), Some(AuthFailure::Revoked));
        let again = table.revoke(&record.id, NOW + 50).expect("idempotent");
        assert_eq!((again.status, again.revoked_at_ms), (KeyStatus::Revoked, Some(NOW + 5)));
    }

    #[test]
    fn revocation_is_seen_by_every_thread_at_the_next_request() {
        let (table, key, record) = table_with_key();
        let header = bearer(&key);
        let barrier = std::sync::Barrier::new(5);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        let before = table.authenticate(Some(&header), NOW).map(|e| e.id().clone());
                        barrier.wait(); // main revokes between the two waits
                        barrier.wait();
                        let after = table.authenticate(Some(&header), NOW).err();
                        (before, after)
                    })
                })
                .collect();
            barrier.wait();
            table.revoke(&record.id, NOW).expect("revoked");
            barrier.wait();
            for worker in workers {
                let (before, after) = worker.join().expect("worker finished");
                assert_eq!(before, Ok(record.id.clone()));
                assert_eq!(after, Some(AuthFailure::Revoked));
            }
        });
    }

    #[test]
    fn rotation_issues_a_successor_and_carries_the_quota() {
        let (table, old_key, old_record) = table_with_key();
        let old = table.authenticate(Some(&bearer(&old_key)), NOW).expect("active");
        let charged = old.quota.reserve(Operation::WalletAnalysis, NOW).expect("unit");
        old.quota.commit(charged).expect("commit");
        let in_flight = old.quota.reserve(Operation::Comparison, NOW).expect("unit");
        assert_eq!(old.rate.check(0).remaining_tokens, 99);

        let rotation = table.rotate(&old_record.id, NOW + 1).expect("rotated");
        assert_ne!(rotation.new_record.id, old_record.id);
        assert_ne!(rotation.new_record.digest, old_record.digest);
        assert_eq!(KeySpec::successor_of(&rotation.new_record), KeySpec::successor_of(&old_record));
        assert_eq!(rotation.old_record.status, KeyStatus::Revoked);
        assert_eq!(rotation.old_record.revoked_at_ms, Some(NOW + 1));
        assert_eq!(rotation.old_record.replaced_by.as_ref(), Some(&rotation.new_record.id));
        assert_eq!((rotation.new_usage.used, rotation.new_usage.reserved), (1, 0));

        assert_eq!(table.authenticate(Some(&bearer(&old_key)), NOW + 2).err(), Some(AuthFailure::Revoked));
        let new = table.authenticate(Some(&bearer(&rotation.key)), NOW + 2).expect("successor active");
        assert_eq!(new.id(), &rotation.new_record.id);
        assert_eq!(new.rate.peek(0).remaining_tokens, 100, "successor starts with a full bucket");
        assert_eq!(new.quota.view(NOW + 2).used, 1, "rotation does not reset the quota");
        // The old key's in-flight work leaves the old key's reserved count and is counted on
        // the successor, the end of the chain.
        assert!(Arc::ptr_eq(&table.successor_of(&old), &new));
        assert!(Arc::ptr_eq(&table.successor_of(&new), &new));
        let period_start_ms = in_flight.period_start_ms;
        old.quota.release(in_flight, ReleaseCause::Inherited).expect("released");
        new.quota.inherit(Reservation::recovered(period_start_ms, Operation::Comparison), true).expect("counted");
        let (old_view, new_view) = (old.quota.view(NOW + 2), new.quota.view(NOW + 2));
        assert_eq!((old_view.used, old_view.reserved, old_view.refunded), (1, 0, 0));
        assert_eq!((new_view.used, new_view.reserved, new_view.by_operation.comparison), (2, 0, 1));
        assert_eq!(table.rotate(&old_record.id, NOW + 3).err(), Some(TableError::NotActive));
        assert_eq!(table.len(), 2);
        assert_eq!(table.list().iter().map(|r| r.status).collect::<Vec<_>>(), [KeyStatus::Revoked, KeyStatus::Active]);
    }

    #[test]
    fn admin_errors_and_bounds() {
        let table = KeyTable::with_len_max(2);
        let (_, record) = table.issue(&spec(), NOW).expect("issued");
        assert_eq!(table.insert(record.clone(), NOW).err(), Some(TableError::Duplicate));
        let same_digest = KeyRecord { id: KeyId::generate().expect("randomness"), ..record.clone() };
        assert_eq!(table.insert(same_digest, NOW).err(), Some(TableError::Duplicate));
        table.issue(&spec(), NOW).expect("second key");
        assert_eq!(table.issue(&spec(), NOW).err(), Some(TableError::Full));
        let unknown = KeyId::generate().expect("randomness");
        assert_eq!(table.revoke(&unknown, NOW).err(), Some(TableError::UnknownId));
        assert_eq!(table.rotate(&unknown, NOW).err(), Some(TableError::UnknownId));
        let bad = KeyRecord { burst: 0, ..record.clone() };
        assert!(matches!(KeyTable::new().insert(bad, NOW), Err(TableError::Record(_))));
        let removed = table.remove(&record.id).expect("removed");
        assert_eq!(removed.id, record.id);
        assert_eq!(table.len(), 1);
        assert!(table.get(&record.id).is_none());
    }

    #[test]
    fn loading_stored_records_keeps_their_status() {
        let (_, active) = spec().issue(NOW).expect("issued");
        let (revoked_key, issued) = spec().issue(NOW).expect("issued");
        let revoked = KeyRecord { status: KeyStatus::Revoked, revoked_at_ms: Some(NOW + 7), ..issued };
        let table = KeyTable::from_records([active.clone(), revoked.clone()], NOW).expect("loaded");
        assert_eq!(table.list(), {
            let mut want = vec![active, revoked];
            want.sort_by(|a, b| a.id.cmp(&b.id));
            want
        });
        assert_eq!(table.authenticate(Some(&bearer(&revoked_key)), NOW).err(), Some(AuthFailure::Revoked));
        let dup = spec().issue(NOW).expect("issued").1;
        assert_eq!(KeyTable::from_records([dup.clone(), dup], NOW).err(), Some(TableError::Duplicate));
    }
}
