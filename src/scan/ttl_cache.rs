//! A small cache of what the scan lane read recently, by address, each entry trusted for a
//! fixed time: lookup tables (which can be extended) and a wallet's counterparties.
//!
//! Owns: `TtlCache`. Used on the scan lane's thread only (not `Sync`, no lock).
//!
//! Invariant: at most `len` entries (least recently used out first), none served older than
//! `ttl`. Deliberately absent: invalidation (an entry simply ages out).

use std::num::NonZeroUsize;
use std::time::{Duration, Instant};

use crate::pubkey::Pubkey;

pub struct TtlCache<V> {
    entries: lru::LruCache<Pubkey, (Instant, V)>,
    ttl: Duration,
}

impl<V: Clone> TtlCache<V> {
    pub fn new(len: usize, ttl_ms: u64) -> TtlCache<V> {
        let len = NonZeroUsize::new(len).unwrap_or(NonZeroUsize::MIN);
        TtlCache { entries: lru::LruCache::new(len), ttl: Duration::from_millis(ttl_ms) }
    }

    pub fn get(&mut self, key: &Pubkey) -> Option<V> {
        match self.entries.get(key) {
            Some((read_at, value)) if read_at.elapsed() < self.ttl => Some(value.clone()),
            _ => None,
        }
    }

    pub fn put(&mut self, key: Pubkey, value: V) {
        self.entries.put(key, (Instant::now(), value));
    }
}
