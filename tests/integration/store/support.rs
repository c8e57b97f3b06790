//! Shared builders of the store integration tests (`tests/store_*.rs`): job records and an
//! opened store in a temporary directory.

use std::path::Path;

use xray::store::{JobKind, JobRecord, RocksStore, StoreOptions};

pub const ACCOUNT: &str = "acc_1";
pub const KEY_ID: &str = "key_1";
pub const PERIOD_MS: u64 = 1_800_000_000_000;
pub const ENGINE: &str = "1.0.0";
/// Idempotent answers per account of the stores the contract runs on (the server's cap,
/// `IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX`, is too large to pass in a test).
pub const ANSWER_CAP: usize = 8;

pub fn open(dir: &Path) -> RocksStore {
    let options =
        StoreOptions { block_cache_bytes: 8 << 20, answers_per_account_max: ANSWER_CAP, ..StoreOptions::default() };
    open_with(dir, options)
}

pub fn open_with(dir: &Path, options: StoreOptions) -> RocksStore {
    match RocksStore::open(dir, &options) {
        Ok(store) => store,
        Err(e) => panic!("open {}: {e}", dir.display()),
    }
}

pub fn analysis(id: &str, wallet: &str, created_at_ms: u64) -> JobRecord {
    JobRecord::queued(
        id.into(),
        JobKind::Analysis { wallet: wallet.into() },
        ACCOUNT.into(),
        KEY_ID.into(),
        created_at_ms,
        false,
        true,
        PERIOD_MS,
        ENGINE.into(),
    )
}

pub fn comparison(id: &str, pair_id: &str, created_at_ms: u64) -> JobRecord {
    let kind = JobKind::Comparison { wallet_a: "WalletA".into(), wallet_b: "WalletB".into(), pair_id: pair_id.into() };
    JobRecord { kind, ..analysis(id, "unused", created_at_ms) }
}

pub fn payload(id: &str) -> Vec<u8> {
    format!(r#"{{"wallet":"W","id":"{id}","score":{{"value":82}}}}"#).into_bytes()
}
