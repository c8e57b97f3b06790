//! The ledger cache's database: one RocksDB of its own, column families `tx` (signature →
//! transaction) and `history` (address → finalized signature list, and the account hints of
//! a wallet), each FIFO-compacted to its share of the configured bytes.
//!
//! Owns: `LedgerCache`, `CacheOptions`, the key and value layouts. Called from compute
//! threads (lookups and writes of their jobs) and the admin listener (nothing: the size is
//! pushed to `metrics::LEDGER_CACHE` after each write).
//!
//! Invariant: bounded — FIFO compaction drops the oldest files of a column family once its
//! files pass `max_table_files_size` (its share of `bytes_max`); memtables add at most
//! `LEDGER_CACHE_WRITE_BUFFER_BYTES` per family. Writes skip the WAL: a cache loses only speed.
//! Invariant: histories and hints are keyed by the source too (`source_tag`: a digest of the
//! `--ledger` setting), so a node pointed at another endpoint never reads the old one's lists;
//! transactions are not (a finalized transaction is the same on every node).
//! Invariant: a value that does not read back (another build's layout, a torn file) is a miss.
//! Deliberately absent: a WAL, a schema version (the values carry a format byte instead: a
//! newer layout is a miss, then overwritten), and `Store` (this is no shared state).

use std::path::Path;

use rocksdb::{
    BlockBasedOptions, ColumnFamily, DBCompactionStyle, DBCompressionType, FifoCompactOptions, Options, WriteBatch,
    WriteOptions, DB,
};
use sha2::{Digest, Sha256};

use crate::config;
use crate::ledger::read::History;
use crate::ledger::wire::{self, TransactionResult};
use crate::metrics::LEDGER_CACHE;
use crate::pubkey::{Pubkey, Signature};

const CF_TX: &str = "tx";
const CF_HISTORY: &str = "history";
/// First byte of every value: its layout.
const FORMAT_V1: u8 = 1;
/// Key prefixes in `history`.
const HISTORY_PREFIX: u8 = b'h';
const HINTS_PREFIX: u8 = b'a';
/// Bytes of the source tag in history keys.
const SOURCE_TAG_LEN: usize = 8;

/// How big the cache may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheOptions {
    /// SST bytes of both column families together.
    pub bytes_max: u64,
}

/// The node's ledger cache.
pub struct LedgerCache {
    db: DB,
    source_tag: [u8; SOURCE_TAG_LEN],
    unlogged: WriteOptions,
}

impl LedgerCache {
    /// Opens (or creates) the cache in `dir` for the source named `source` (the `--ledger`
    /// setting as given: the tag is a digest, the text is not kept).
    pub fn open(dir: &Path, source: &str, options: CacheOptions) -> Result<LedgerCache, String> {
        let history_bytes = options.bytes_max / 100 * config::LEDGER_CACHE_HISTORY_PERCENT;
        let tx_bytes = options.bytes_max - history_bytes;
        let mut db_options = Options::default();
        db_options.create_if_missing(true);
        db_options.create_missing_column_families(true);
        db_options.set_max_background_jobs(1);
        db_options.set_keep_log_file_num(2);
        let families = [(CF_TX, tx_bytes), (CF_HISTORY, history_bytes)]
            .map(|(name, bytes)| rocksdb::ColumnFamilyDescriptor::new(name, family_options(bytes)));
        let db = DB::open_cf_descriptors(&db_options, dir, families)
            .map_err(|e| format!("open the ledger cache in {}: {e}", dir.display()))?;
        let digest = Sha256::digest(source.as_bytes());
        let mut source_tag = [0u8; SOURCE_TAG_LEN];
        source_tag.copy_from_slice(&digest[..SOURCE_TAG_LEN]);
        let mut unlogged = WriteOptions::default();
        unlogged.disable_wal(true);
        let cache = LedgerCache { db, source_tag, unlogged };
        cache.publish_size();
        Ok(cache)
    }

    fn family(&self, name: &str) -> Option<&ColumnFamily> {
        self.db.cf_handle(name)
    }

    /// The cached transactions among `signatures`, in order, each with its stored size.
    pub fn transactions(&self, signatures: &[Signature]) -> Vec<Option<(TransactionResult, usize)>> {
        let Some(cf) = self.family(CF_TX) else { return signatures.iter().map(|_| None).collect() };
        let keys = signatures.iter().map(|s| (cf, s.0.to_vec()));
        self.db
            .multi_get_cf(keys)
            .into_iter()
            .map(|found| {
                let mut value = found.ok().flatten()?;
                let len = value.len();
                let body = value.strip_prefix(&[FORMAT_V1]).map(<[u8]>::len)?;
                let start = len - body;
                let tx: TransactionResult = wire::parse(&mut value[start..]).ok()?;
                Some((tx, len))
            })
            .collect()
    }

    /// Keeps the transactions a node answered (`None`: it had none; not kept).
    pub fn keep_transactions<'a>(
        &self,
        answered: impl Iterator<Item = (&'a Signature, &'a Option<TransactionResult>)>,
    ) {
        let Some(cf) = self.family(CF_TX) else { return };
        let mut batch = WriteBatch::default();
        for (signature, result) in answered {
            let Some(result) = result else { continue };
            // Kept under a signature only when it is that transaction's (a node's wrong answer
            // must not poison the cache).
            if result.tx.transaction.signatures.first().map(String::as_str) != Some(signature.to_string().as_str()) {
                tracing::warn!(signature = %signature, "a node answered a transaction under another signature: not kept");
                continue;
            }
            match wire::to_vec(result) {
                Ok(body) => batch.put_cf(cf, signature.0, with_format(body)),
                Err(e) => tracing::warn!(error = %e, "a transaction could not be encoded for the ledger cache"),
            }
        }
        self.write(batch);
    }

    fn history_key(&self, prefix: u8, address: &Pubkey) -> Vec<u8> {
        let mut key = Vec::with_capacity(1 + SOURCE_TAG_LEN + 32);
        key.push(prefix);
        key.extend_from_slice(&self.source_tag);
        key.extend_from_slice(address.as_bytes());
        key
    }

    fn read_history_cf(&self, key: &[u8]) -> Option<Vec<u8>> {
        let cf = self.family(CF_HISTORY)?;
        let value = self.db.get_cf(cf, key).ok().flatten()?;
        value.strip_prefix(&[FORMAT_V1]).map(<[u8]>::to_vec)
    }

    fn write_history_cf(&self, key: &[u8], body: Vec<u8>) {
        let Some(cf) = self.family(CF_HISTORY) else { return };
        let mut batch = WriteBatch::default();
        batch.put_cf(cf, key, with_format(body));
        self.write(batch);
    }

    /// The signature list an earlier read of `address` kept.
    pub fn history(&self, address: &Pubkey) -> Option<History> {
        let mut body = self.read_history_cf(&self.history_key(HISTORY_PREFIX, address))?;
        wire::parse(&mut body).ok()
    }

    pub fn keep_history(&self, address: &Pubkey, history: &History) {
        match wire::to_vec(history) {
            Ok(body) => self.write_history_cf(&self.history_key(HISTORY_PREFIX, address), body),
            Err(e) => tracing::warn!(error = %e, "a history could not be encoded for the ledger cache"),
        }
    }

    /// The accounts the last read of wallet `address` read beside it.
    pub fn account_hints(&self, address: &Pubkey) -> Vec<Pubkey> {
        let Some(body) = self.read_history_cf(&self.history_key(HINTS_PREFIX, address)) else { return Vec::new() };
        body.chunks_exact(32)
            .take(config::LEDGER_CACHE_ACCOUNT_HINTS_MAX)
            .filter_map(|bytes| <[u8; 32]>::try_from(bytes).ok().map(Pubkey::new))
            .collect()
    }

    pub fn keep_account_hints(&self, address: &Pubkey, accounts: &[Pubkey]) {
        let accounts = &accounts[..accounts.len().min(config::LEDGER_CACHE_ACCOUNT_HINTS_MAX)];
        let body: Vec<u8> = accounts.iter().flat_map(|a| *a.as_bytes()).collect();
        self.write_history_cf(&self.history_key(HINTS_PREFIX, address), body);
    }

    fn write(&self, batch: WriteBatch) {
        if batch.is_empty() {
            return;
        }
        if let Err(e) = self.db.write_opt(batch, &self.unlogged) {
            tracing::warn!(error = %e, "a ledger cache write failed; the cache misses it");
        }
        self.publish_size();
    }

    /// Pushes the cache's bytes (SST files and memtables) to `/metrics`.
    fn publish_size(&self) {
        let mut bytes = 0u64;
        for name in [CF_TX, CF_HISTORY] {
            let Some(cf) = self.family(name) else { continue };
            for property in ["rocksdb.total-sst-files-size", "rocksdb.cur-size-all-mem-tables"] {
                bytes += self.db.property_int_value_cf(cf, property).ok().flatten().unwrap_or(0);
            }
        }
        LEDGER_CACHE.set_bytes(bytes);
    }

    /// SST bytes of both column families now (for tests of the bound).
    pub fn sst_bytes(&self) -> u64 {
        [CF_TX, CF_HISTORY]
            .iter()
            .filter_map(|name| self.family(name))
            .filter_map(|cf| self.db.property_int_value_cf(cf, "rocksdb.total-sst-files-size").ok().flatten())
            .sum()
    }

    /// Writes the memtables out (tests: so the bound applies to everything written).
    pub fn flush(&self) -> Result<(), String> {
        for name in [CF_TX, CF_HISTORY] {
            if let Some(cf) = self.family(name) {
                self.db.flush_cf(cf).map_err(|e| e.to_string())?;
            }
        }
        self.publish_size();
        Ok(())
    }
}

fn with_format(body: Vec<u8>) -> Vec<u8> {
    let mut value = Vec::with_capacity(body.len() + 1);
    value.push(FORMAT_V1);
    value.extend(body);
    value
}

/// A column family that keeps at most `bytes` of files, dropping the oldest past it.
fn family_options(bytes: u64) -> Options {
    let mut table = BlockBasedOptions::default();
    table.set_bloom_filter(config::ROCKSDB_BLOOM_BITS_PER_KEY, false);
    let mut fifo = FifoCompactOptions::default();
    fifo.set_max_table_files_size(bytes.max(1));
    let mut options = Options::default();
    options.set_block_based_table_factory(&table);
    options.set_compression_type(DBCompressionType::Lz4);
    options.set_compaction_style(DBCompactionStyle::Fifo);
    options.set_fifo_compaction_options(&fifo);
    options.set_write_buffer_size(config::LEDGER_CACHE_WRITE_BUFFER_BYTES);
    options
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::wire::SignatureInfo;

    fn tx(slot: u64, signature: &Signature) -> TransactionResult {
        let mut json = format!(
            r#"{{"slot":{slot},"blockTime":7,"transaction":{{"signatures":["{signature}"],"message":{{"accountKeys":[],
            "recentBlockhash":"h","instructions":[]}}}},"meta":null}}"#
        )
        .into_bytes();
        wire::parse(&mut json).unwrap()
    }

    fn open(dir: &Path, source: &str) -> LedgerCache {
        LedgerCache::open(dir, source, CacheOptions { bytes_max: config::LEDGER_CACHE_BYTES_MIN }).unwrap()
    }

    #[test]
    fn keeps_answered_transactions_and_not_missing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let cache = open(dir.path(), "rpc:http://a");
        let (a, b) = (Signature([1; 64]), Signature([2; 64]));
        let c = Signature([3; 64]);
        // c's answer is another transaction's: not kept under c.
        cache.keep_transactions([(&a, &Some(tx(5, &a))), (&b, &None), (&c, &Some(tx(6, &a)))].into_iter());
        let found = cache.transactions(&[b, a, c]);
        assert!(found[0].is_none());
        assert_eq!(found[1].as_ref().map(|(t, _)| t.slot), Some(5));
        assert!(found[1].as_ref().is_some_and(|(_, len)| *len > 10));
        assert!(found[2].is_none(), "a transaction answered under another signature is not kept");
    }

    #[test]
    fn histories_are_kept_per_source() {
        let dir = tempfile::tempdir().unwrap();
        let wallet = Pubkey::new([9; 32]);
        let entry = SignatureInfo {
            signature: "s".into(),
            slot: 3,
            err: None,
            memo: None,
            block_time: Some(1),
            confirmation_status: None,
        };
        let history = History { depth: 10, truncated: false, entries: vec![entry] };
        {
            let cache = open(dir.path(), "rpc:http://a");
            cache.keep_history(&wallet, &history);
            cache.keep_account_hints(&wallet, &[Pubkey::new([4; 32])]);
            assert_eq!(cache.history(&wallet), Some(history.clone()));
            assert_eq!(cache.account_hints(&wallet), vec![Pubkey::new([4; 32])]);
        }
        let other = open(dir.path(), "rpc:http://b");
        assert_eq!(other.history(&wallet), None);
        assert!(other.account_hints(&wallet).is_empty());
    }

    #[test]
    fn a_value_of_another_layout_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = open(dir.path(), "rpc:http://a");
        let a = Signature([1; 64]);
        let cf = cache.family(CF_TX).unwrap();
        cache.db.put_cf(cf, a.0, b"\x02{}").unwrap();
        assert!(cache.transactions(&[a])[0].is_none());
        cache.db.put_cf(cf, a.0, b"\x01{not json").unwrap();
        assert!(cache.transactions(&[a])[0].is_none());
    }
}
