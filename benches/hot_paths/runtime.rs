//! The scan's simulation: the demo ledger's own executor on the `drain` case (what a scan on the
//! demo source runs today) against the real SVM (`xray::runtime`) executing a transaction of the
//! same shape — approve, owner change, 90 % of the SOL — on the same number of accounts in their
//! on-chain layouts (issue #44 item 1: what the runtime costs a scan before it replaces the
//! executor).
//!
//! Run: `cargo bench --bench hot_paths -- simulate_drain`. Results: docs/benchmarks.md.

use base64::Engine;
use criterion::{criterion_group, Criterion};
use solana_address::Address;
use solana_message::{Message, VersionedMessage};
use solana_program_pack::Pack;
use solana_transaction::versioned::VersionedTransaction;
use spl_token_interface::state::{Account as TokenAccount, AccountState, Mint};

use xray::ledger::demo::simulate::simulate;
use xray::ledger::demo::DemoLedger;
use xray::ledger::transaction::message;
use xray::pubkey::Pubkey;
use xray::runtime::{Moment, PreAccount, Runtime};

const SEED: u64 = 42;

fn demo_executor(c: &mut Criterion) {
    let ledger = DemoLedger::new(SEED);
    let tx = pollster::block_on(xray::devtools::demo_tx::build("drain", SEED)).expect("the drain case builds");
    let bytes = base64::engine::general_purpose::STANDARD.decode(tx).expect("base64");
    let parsed = message::parse(&bytes).expect("parses");
    let wanted: Vec<Pubkey> = parsed.static_keys.clone();
    c.bench_function("simulate_drain/demo_executor", |b| b.iter(|| simulate(&ledger, &bytes, &wanted).map(|_| ())));
}

fn key(seed: u8) -> Pubkey {
    Pubkey([seed; 32])
}

fn addr(p: Pubkey) -> Address {
    Address::new_from_array(p.0)
}

fn packed<T: Pack>(value: T) -> Vec<u8> {
    let mut data = vec![0; T::LEN];
    value.pack_into_slice(&mut data);
    data
}

fn svm(c: &mut Criterion) {
    let (me, drainer, mint, holding) = (key(1), key(9), key(3), key(4));
    let token = Pubkey(spl_token_interface::id().to_bytes());
    let account = TokenAccount {
        mint: addr(mint),
        owner: addr(me),
        amount: 500,
        delegate: None.into(),
        state: AccountState::Initialized,
        is_native: None.into(),
        delegated_amount: 0,
        close_authority: None.into(),
    };
    let m = Mint {
        mint_authority: None.into(),
        supply: 500,
        decimals: 6,
        is_initialized: true,
        freeze_authority: None.into(),
    };
    let pre = [
        PreAccount {
            address: me,
            lamports: 10_000_000_000,
            owner: Pubkey::default(),
            data: Vec::new(),
            executable: false,
        },
        PreAccount { address: mint, lamports: 1_461_600, owner: token, data: packed(m), executable: false },
        PreAccount { address: holding, lamports: 2_039_280, owner: token, data: packed(account), executable: false },
    ];
    let t = spl_token_interface::id();
    let ixs = [
        spl_token_interface::instruction::approve(&t, &addr(holding), &addr(drainer), &addr(me), &[], u64::MAX)
            .expect("builds"),
        spl_token_interface::instruction::set_authority(
            &t,
            &addr(holding),
            Some(&addr(drainer)),
            spl_token_interface::instruction::AuthorityType::AccountOwner,
            &addr(me),
            &[],
        )
        .expect("builds"),
        solana_system_interface::instruction::transfer(&addr(me), &addr(drainer), 9_000_000_000),
    ];
    let message = Message::new(&ixs, Some(&addr(me)));
    let tx = VersionedTransaction { signatures: vec![Default::default()], message: VersionedMessage::Legacy(message) };
    let bytes = bincode::serialize(&tx).expect("serializes");
    let wanted = [me, drainer, holding, mint];
    let moment = Moment { slot: 400_000_000, epoch: 925, unix_timestamp_s: 1_764_000_000 };
    let mut runtime = Runtime::new();
    c.bench_function("simulate_drain/svm", |b| b.iter(|| runtime.execute(&bytes, &pre, &wanted, moment).map(|_| ())));
}

criterion_group!(benches, demo_executor, svm);
