//! Engine throughput: analyses per second on one core for a typical archetype and for the
//! busiest one, end to end as a compute thread runs a job (read the wallet from the demo
//! ledger, classify, analyze, serialize the payload) and the engine alone; and — for the
//! busiest — the time spent parsing its JSON-RPC responses into the domain model against the
//! time spent analyzing it.
//!
//! Run: `cargo bench --bench hot_paths -- 'analyze|job_end_to_end|busy_trader_share'`.
//! Results and machine: docs/benchmarks.md.

use criterion::{criterion_group, BatchSize, Criterion, Throughput};

use xray::engine;
use xray::jobs::execute::{execute, JobSpec, Outcome};
use xray::labels::Labels;
use xray::ledger::demo::DemoLedger;
use xray::ledger::model::Transaction;
use xray::ledger::read::LedgerSource;
use xray::ledger::view::{build_view, ViewOptions};
use xray::ledger::wire::{self, RpcResponse, TransactionResult};
use xray::ledger::WalletView;
use xray::pubkey::{Pubkey, Signature};

fn demo_view(demo: &DemoLedger, name: &str) -> (Pubkey, WalletView) {
    let wallet = demo.archetype(name).expect("archetype exists");
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    (wallet, rt.block_on(build_view(demo, &wallet, ViewOptions::default())).expect("view"))
}

fn analyze(c: &mut Criterion) {
    let demo = DemoLedger::new(xray::config::DEMO_SEED_DEFAULT);
    let labels = Labels::builtin();
    let mut group = c.benchmark_group("analyze");
    for name in ["permanent_delegate_holder", "poisoning_victim", "busy_trader"] {
        let (_, view) = demo_view(&demo, name);
        group.throughput(Throughput::Elements(1));
        group.bench_function(format!("{name}_{}tx", view.transactions.len()), |b| {
            b.iter(|| engine::analyze(&view, &labels))
        });
    }
    group.finish();
}

/// One analysis job as a compute thread runs it, storage aside: `jobs::execute` over the demo
/// ledger (its responses generated, decoded, classified, analyzed and serialized).
fn end_to_end(c: &mut Criterion) {
    let demo = DemoLedger::new(xray::config::DEMO_SEED_DEFAULT);
    let labels = Labels::builtin();
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let mut group = c.benchmark_group("job_end_to_end");
    group.sample_size(20);
    group.throughput(Throughput::Elements(1));
    for name in ["poisoning_victim", "busy_trader"] {
        let spec = JobSpec::Analysis { wallet: demo.archetype(name).expect("archetype exists") };
        group.bench_function(name, |b| {
            b.iter(|| match rt.block_on(execute(&demo, &labels, &spec, ViewOptions::default(), &())) {
                Outcome::Ready { payload } => payload.len(),
                _ => panic!("{name} is an eligible demo wallet"),
            })
        });
    }
    group.finish();
}

/// The busiest wallet's getTransaction responses as a node would send them (JSON bytes).
fn busy_trader_bodies(demo: &DemoLedger, view: &WalletView) -> Vec<Vec<u8>> {
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let sigs: Vec<Signature> = view.transactions.iter().map(|t| t.signature).collect();
    let results = rt.block_on(demo.get_transactions(&sigs)).expect("transactions");
    results
        .into_iter()
        .map(|r| {
            wire::to_vec(&RpcResponse::ok(wire::Value::from(1u64), r.expect("demo has every transaction")))
                .expect("json")
        })
        .collect()
}

fn parse_versus_analyze(c: &mut Criterion) {
    let demo = DemoLedger::new(xray::config::DEMO_SEED_DEFAULT);
    let labels = Labels::builtin();
    let (_, view) = demo_view(&demo, "busy_trader");
    let bodies = busy_trader_bodies(&demo, &view);
    let bytes: usize = bodies.iter().map(Vec::len).sum();
    let mut group = c.benchmark_group("busy_trader_share");
    group.sample_size(20);
    group.throughput(Throughput::Bytes(bytes as u64));
    // The reference for the decode's speed: simd-json's generic value of the same bytes.
    group.bench_function("simd_json_owned_value_1000", |b| {
        b.iter_batched(
            || bodies.clone(),
            |bodies| bodies.into_iter().filter_map(|mut body| simd_json::to_owned_value(&mut body).ok()).count(),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("parse_1000_getTransaction_to_domain", |b| {
        b.iter_batched(
            || bodies.clone(),
            |bodies| {
                bodies
                    .into_iter()
                    .filter_map(|mut body| {
                        let r = wire::parse_response::<TransactionResult>(&mut body).ok()?.into_result().ok()??;
                        Transaction::from_wire(&r.tx, r.slot, r.block_time)
                    })
                    .count()
            },
            BatchSize::LargeInput,
        )
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("analyze", |b| b.iter(|| engine::analyze(&view, &labels)));
    group.finish();
}

criterion_group!(benches, end_to_end, analyze, parse_versus_analyze);
