//! Ledger hot paths: parsing a getTransaction response (typed wire structs, and on to the
//! domain transaction) against simd-json's generic value on the same bytes, and building the
//! wallet view of the busiest demo archetype.
//!
//! Run: `cargo bench --bench hot_paths -- 'parse_|build_view'` (release profile). Results and
//! the machine they ran on are recorded in docs/benchmarks.md.

use criterion::{criterion_group, BatchSize, Criterion, Throughput};

use xray::ledger::demo::DemoLedger;
use xray::ledger::model::Transaction;
use xray::ledger::view::{build_view, ViewOptions};
use xray::ledger::wire::{self, TransactionResult};

const GET_TRANSACTION: &[u8] = include_bytes!("../../tests/fixtures/solana-rpc/solders-getTransaction-jsonParsed.json");
const GET_BLOCK: &[u8] = include_bytes!("../../tests/fixtures/solana-rpc/solders-getBlock-jsonParsed.json");

fn parse_get_transaction(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse_getTransaction");
    group.throughput(Throughput::Bytes(GET_TRANSACTION.len() as u64));
    group.bench_function("simd_json_owned_value", |b| {
        b.iter_batched(
            || GET_TRANSACTION.to_vec(),
            |mut bytes| simd_json::to_owned_value(&mut bytes).map(|_| ()),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("typed_wire", |b| {
        b.iter_batched(
            || GET_TRANSACTION.to_vec(),
            |mut bytes| wire::parse_response::<TransactionResult>(&mut bytes).map(|_| ()),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("typed_wire_to_domain", |b| {
        b.iter_batched(
            || GET_TRANSACTION.to_vec(),
            |mut bytes| {
                let response = wire::parse_response::<TransactionResult>(&mut bytes).ok()?;
                let result = response.into_result().ok()??;
                Transaction::from_wire(&result.tx, result.slot, result.block_time)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn parse_get_block(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse_getBlock_25tx");
    group.throughput(Throughput::Bytes(GET_BLOCK.len() as u64));
    group.bench_function("simd_json_owned_value", |b| {
        b.iter_batched(
            || GET_BLOCK.to_vec(),
            |mut bytes| simd_json::to_owned_value(&mut bytes).map(|_| ()),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("typed_wire", |b| {
        b.iter_batched(
            || GET_BLOCK.to_vec(),
            |mut bytes| wire::parse_response::<wire::UiBlock>(&mut bytes).map(|_| ()),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// The whole fetch plan over the demo source for its busiest archetype (history depth 1000:
/// 1000 transactions generated, emitted as wire types and decoded into the domain model).
fn build_view_busy_trader(c: &mut Criterion) {
    let demo = DemoLedger::new(xray::config::DEMO_SEED_DEFAULT);
    let wallet = demo.archetype("busy_trader").expect("busy_trader is an archetype");
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let mut group = c.benchmark_group("build_view");
    group.sample_size(20);
    group.bench_function("demo_busy_trader_depth_1000", |b| {
        b.iter(|| rt.block_on(build_view(&demo, &wallet, ViewOptions::default())).map(|v| v.transactions.len()))
    });
    group.finish();
}

criterion_group!(benches, parse_get_transaction, parse_get_block, build_view_busy_trader);
